"""A message template of plain text and `{{ a.b }}` lookups is filled in without jinja2
(`render_text`); for any template and any variables it must give what jinja2 gives, or the same
error."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agenteval.endpoints.templates import TemplateError, _lookups, compile_template, render, render_text

NAMES = st.sampled_from(["input", "q", "x", "items", "none", "True", "if", "_p", "a1", "question"])
LOOKUPS = st.builds(
    lambda names, left, right: "{{" + left + ".".join(names) + right + "}}",
    st.lists(NAMES, min_size=1, max_size=3), st.sampled_from(["", " ", "  ", "- ", "\t"]), st.sampled_from(["", " ", " -"]),
)
TEXT = st.text(alphabet=list("ab {}%#\n\r\t|é-\"'."), max_size=8)
TEMPLATES = st.lists(st.one_of(TEXT, LOOKUPS, st.sampled_from(["{{ x|upper }}", "{% if x %}y{% endif %}", "{# c #}"])), max_size=5).map("".join)
LEAVES = st.one_of(
    st.text(alphabet=list("ab {}\n\r\té\u2028"), max_size=6), st.integers(-10**20, 10**20),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
)
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=2), st.dictionaries(NAMES, inner, max_size=3)), max_leaves=6)
VARIABLES = st.dictionaries(NAMES, VALUES, max_size=4)


def outcome(rendering):
    try:
        return "text", rendering()
    except TemplateError as exc:
        return "error", str(exc)


@settings(max_examples=600, deadline=None)
@given(TEMPLATES, VARIABLES)
def test_a_template_renders_as_jinja_renders_it(source, variables):
    try:
        compiled = compile_template(source)
    except TemplateError:
        assert _lookups(source) is None  # a template the suite's check passes without compiling compiles
        return  # (a template that does not compile is refused when the suite loads)
    assert outcome(lambda: render_text(source, variables)) == outcome(lambda: render(compiled, variables))


PLAIN_NAMES = st.sampled_from(["input", "q", "x", "a1"])
NESTED = st.recursive(LEAVES, lambda inner: st.dictionaries(PLAIN_NAMES, inner, max_size=3), max_leaves=8)
PLAIN_TEXT = st.text(alphabet=list("ab {}\n\t|é-\"'."), max_size=6).filter(lambda text: "{{" not in text and not text.endswith("{"))


def paths(value, prefix=()):
    """Every dotted path into nested dicts (to leaves and to dicts)."""
    if type(value) is dict:
        for key, item in value.items():
            yield (*prefix, key)
            yield from paths(item, (*prefix, key))


def _at(value, path):
    for name in path:
        value = value[name]
    return value


@st.composite
def filled_templates(draw):
    """Variables, and a template of text and lookups mostly of paths they have (sometimes one they lack)."""
    variables = draw(st.dictionaries(PLAIN_NAMES, NESTED, min_size=1, max_size=4))
    known = list(paths(variables))
    leaves = [path for path in known if type(_at(variables, path)) in (str, int, float, bool)] or known
    pieces = []
    for _ in range(draw(st.integers(1, 4))):
        pieces.append(draw(PLAIN_TEXT))
        pick = draw(st.integers(0, 9))
        names = draw(st.sampled_from(leaves if pick > 1 else known)) if pick else tuple(draw(st.lists(PLAIN_NAMES, min_size=1, max_size=3)))
        space = draw(st.sampled_from(["", " "]))
        pieces.append("{{" + space + ".".join(names) + space + "}}")
    return "".join(pieces), variables


@settings(max_examples=600, deadline=None)
@given(filled_templates())
def test_a_template_of_lookups_renders_as_jinja_renders_it(drawn):
    """The same over templates the direct path takes: text and lookups of what the variables hold."""
    source, variables = drawn
    assert outcome(lambda: render_text(source, variables)) == outcome(lambda: render(compile_template(source), variables))


def test_the_usual_message_is_filled_in_directly_and_anything_else_is_left_to_jinja():
    assert _lookups("Q: {{ input.question }} ({{input.id}})") == ("Q: ", ("input", "question"), " (", ("input", "id"), ")")
    assert _lookups('Return JSON like {"total": {{ input.total }}}') == ('Return JSON like {"total": ', ("input", "total"), "}")
    for source in ("{{{ x }}", "{{ input.items }}", "{{ none }}", "{{ x|upper }}", "{% if x %}y{% endif %}", "{# c #}{{ x }}",
                   "{{ x }}\r\n", "{{- x }}", "{{ _p }}"):
        assert _lookups(source) is None, source
    variables = {"input": {"question": "Why?", "id": 7, "total": 1.5, "list": [1]}}
    assert render_text("Q: {{ input.question }} ({{input.id}})", variables) == "Q: Why? (7)"
    assert render_text("{{ input.list }}", variables) == "[1]"  # (not a text or number: jinja renders it)
    for source in ("{{ input.missing }}", "{{ output.x }}"):
        try:
            render_text(source, variables)
        except TemplateError as exc:
            assert "is undefined" in str(exc)
        else:
            raise AssertionError(source)
