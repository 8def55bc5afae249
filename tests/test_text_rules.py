"""The text rules: equals, contains, not_contains, starts_with, ends_with, regex, length, json_valid, json_schema."""

import json
import pickle
import re
from pathlib import Path

import pytest
from jsonschema.validators import Draft7Validator, Draft202012Validator
from pydantic import TypeAdapter, ValidationError

from agenteval.evaluators import EvalContext, EvaluatorSpec
from agenteval.evaluators.text.base import canonical_json
from agenteval.evaluators.text.json_checks import parse_json
from agenteval.suite.loader import SuiteInvalid, load_suite

from conftest import run_cli, write

SPEC = TypeAdapter(EvaluatorSpec)
HUGE = ("Ünïcode ✓ line of text with a refund policy.\n" * 25_000)  # about 1.1 million characters


def make(kind, **config):
    return SPEC.validate_python({"type": kind, **config})


def ctx(output, expected=None):
    return EvalContext("c", None, expected, output, {}, Path("."))


def check(kind, answer, expected=None, /, **config):
    return make(kind, **config).evaluate(ctx(answer, expected))


def problems(tmp_path, suite_text, **files):
    for name, text in files.items():
        write(tmp_path, name, text)
    with pytest.raises(SuiteInvalid) as caught:
        load_suite(write(tmp_path, "suite.yaml", suite_text))
    return [problem.render().replace(str(tmp_path), "<dir>") for problem in caught.value.problems]


# --- reading the candidate text ---------------------------------------------------------------------


def test_the_whole_answer_is_the_text_by_default_and_path_reads_inside_it():
    assert check("equals", "Paris", reference="Paris").verdict == "pass"
    assert check("equals", {"reply": {"city": "Paris"}}, path="reply.city", reference="Paris").verdict == "pass"


@pytest.mark.parametrize(
    ("output", "miss"),
    [
        ({}, "reply (missing)"),
        ({"reply": 42}, "reply (type mismatch: number, not a string)"),
        ({"reply": None}, "reply (type mismatch: null, not a string)"),
        ({"reply": ["a"]}, "reply (type mismatch: array, not a string)"),
        ({"reply": True}, "reply (type mismatch: boolean, not a string)"),
    ],
)
def test_a_missing_or_non_string_candidate_is_a_miss_for_every_rule(output, miss):
    for kind, config in [
        ("equals", {"reference": "x"}), ("contains", {"reference": "x"}), ("not_contains", {"reference": "x"}),
        ("starts_with", {"reference": "x"}), ("ends_with", {"reference": "x"}), ("regex", {"pattern": "x"}),
        ("length", {"max": 5}), ("json_valid", {}), ("json_schema", {"schema": {}}),
    ]:
        result = check(kind, output, path="reply", **config)
        assert (result.score, result.verdict, result.misses) == (0.0, "fail", [miss]), kind


def test_as_json_serializes_a_structured_candidate_canonically():
    answer = {"b": 1, "a": [1, 2.5, None], "city": "Zürich"}
    assert canonical_json(answer) == '{"a":[1,2.5,null],"b":1,"city":"Zürich"}'
    assert check("equals", answer, as_json=True, reference='{"a":[1,2.5,null],"b":1,"city":"Zürich"}').verdict == "pass"
    assert check("json_valid", answer, as_json=True).verdict == "pass"
    assert check("equals", 42, as_json=True, reference="42").verdict == "pass"
    assert check("equals", None, as_json=True, reference="null").verdict == "pass"
    assert check("contains", {}, path="x", as_json=True, reference="x").misses == ["x (missing)"]


def test_as_json_handles_integers_wider_than_64_bits():
    assert canonical_json({"n": 2**70}) == '{"n":1180591620717411303424}'


def test_as_json_also_serializes_the_reference_from_the_expected_answer():
    expected = {"total": {"amount": 5, "currency": "EUR"}}
    output = {"total": {"currency": "EUR", "amount": 5}}
    assert check("equals", output, expected, path="total", as_json=True).verdict == "pass"
    assert check("equals", output, expected, path="total").misses == ["total (type mismatch: object, not a string)"]


def test_malformed_path_warns_at_load_and_misses_at_run(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: t
        evaluators: [{type: contains, path: "a..b", reference: x}]
        cases: [{id: c, expected: 1, output: {a: {b: x}}}]
    """)
    loaded = load_suite(suite)
    assert [w.message for w in loaded.warnings] == ["malformed path 'a..b': it will resolve to missing"]
    assert loaded.suite.evaluators[0].evaluate(ctx({"a": {"b": "x"}})).misses == ["a..b (missing)"]


# --- equals and the reference -------------------------------------------------------------------------


def test_equals_is_case_sensitive_by_default_and_folds_case_when_asked():
    assert check("equals", "paris", reference="Paris").misses == ["answer does not equal 'Paris'"]
    assert check("equals", "paris", reference="Paris", case_sensitive=False).hits == ["answer equals 'Paris'"]
    # Unicode case folding, not just lower(): ß folds to ss
    assert check("equals", "STRASSE", reference="straße", case_sensitive=False).verdict == "pass"
    assert check("equals", "STRASSE", reference="straße", case_sensitive=True).verdict == "fail"


def test_normalize_whitespace_folds_runs_and_trims():
    assert check("equals", "  New \t York\n", reference="New York").verdict == "fail"
    assert check("equals", "  New \t York\n", reference="New York", normalize_whitespace=True).verdict == "pass"
    assert check("equals", "  New \t York\n", reference="new york", normalize_whitespace=True, case_sensitive=False).verdict == "pass"


def test_reference_comes_from_the_expected_answer_by_default():
    assert check("equals", {"city": "Paris"}, {"city": "Paris"}, path="city").verdict == "pass"
    assert check("equals", "Paris", "Paris").verdict == "pass"
    result = check("equals", {"city": "Paris"}, {"town": "Paris"}, path="city")
    assert (result.verdict, result.misses) == ("fail", ["expected city (no reference: missing)"])


def test_reference_path_points_elsewhere_in_the_expected_answer():
    expected = {"answers": ["Paris", "Paris, France"], "n": 3}
    assert check("equals", "Paris, France", expected, reference_path="answers").hits == ["answer equals 'Paris, France'"]
    assert check("equals", "Lyon", expected, reference_path="answers").misses == ["answer does not equal any of 2 references"]
    assert check("equals", "3", expected, reference_path="n").misses == ["expected n (no reference: number, not text)"]
    assert check("equals", "x", {"answers": []}, reference_path="answers").misses == ["expected answers (no reference: an empty list)"]
    assert check("equals", "3", expected, reference_path="n", as_json=True).verdict == "pass"


def test_reference_and_reference_path_together_or_an_empty_list_are_config_errors():
    with pytest.raises(ValidationError, match="give `reference` or `reference_path`, not both"):
        make("equals", reference="a", reference_path="b")
    with pytest.raises(ValidationError, match="must not be an empty list"):
        make("contains", reference=[])


# --- contains, not_contains, starts_with, ends_with -------------------------------------------------------


def test_contains_all_scores_the_share_found_and_names_each_string():
    result = check("contains", "Your refund arrives in 5 days.", reference=["refund", "5 days", "apology"])
    assert (result.score, result.verdict) == (pytest.approx(2 / 3), "partial")
    assert result.hits == ["'refund'", "'5 days'"]
    assert result.misses == ["'apology' not found (2 of 3 found; every one is needed, `mode: any` passes with one)"]
    assert result.reasoning == "2/3 found"
    assert check("contains", "Refund issued", reference="refund").misses == ["'refund'"]  # one string: the string alone


def test_contains_any_needs_one():
    assert check("contains", "we apologize", reference=["sorry", "apologize"], mode="any").score == 1.0
    result = check("contains", "ok", reference=["sorry", "apologize"], mode="any")
    assert (result.score, result.verdict, result.misses) == (0.0, "fail", ["'sorry'", "'apologize'"])


def test_contains_one_string_and_min_score_override():
    assert check("contains", "Refund issued", reference="refund").verdict == "fail"
    assert check("contains", "Refund issued", reference="refund", case_sensitive=False).verdict == "pass"
    result = check("contains", "a b", reference=["a", "b", "c", "d"], min_score=0.5)
    assert (result.score, result.verdict) == (0.5, "pass")


def test_not_contains_fails_naming_every_string_found():
    result = check("not_contains", "As an AI language model, I cannot", reference=["as an ai", "cannot", "sorry"], case_sensitive=False)
    assert (result.score, result.verdict) == (0.0, "fail")
    assert result.misses == ["answer contains 'as an ai'", "answer contains 'cannot'"]
    assert check("not_contains", "Here it is.", reference=["sorry", "cannot"]).hits == ["answer contains none of 2"]


def test_starts_with_and_ends_with_accept_any_of_a_list():
    assert check("starts_with", "Dear Ana,", reference=["Hi", "Dear"]).hits == ["answer starts with 'Dear'"]
    assert check("starts_with", "  dear Ana", reference="Dear", normalize_whitespace=True, case_sensitive=False).verdict == "pass"
    assert check("starts_with", "Hello", reference="Dear").misses == ["answer does not start with 'Dear'"]
    assert check("ends_with", "Best regards\n", reference="regards").verdict == "fail"
    assert check("ends_with", "Best regards\n", reference="regards", normalize_whitespace=True).verdict == "pass"
    assert check("ends_with", "Thanks!", reference=["Regards", "Thanks!"]).hits == ["answer ends with 'Thanks!'"]


def test_empty_text_and_empty_reference():
    assert check("equals", "", reference="").verdict == "pass"
    assert check("contains", "", reference="x").verdict == "fail"
    assert check("not_contains", "", reference="x").verdict == "pass"
    assert check("starts_with", "", reference="x").verdict == "fail"
    assert check("contains", "anything", reference="").verdict == "pass"  # the empty string is in every text


def test_unicode_text_is_compared_as_text():
    assert check("contains", "Le café est à Zürich 🙂", reference=["café", "ZÜRICH", "🙂"], case_sensitive=False).score == 1.0
    assert check("ends_with", "naïve 🙂", reference="🙂").verdict == "pass"


def test_long_references_are_shortened_in_messages():
    reference = "x" * 100
    assert check("contains", "y", reference=reference).misses == [repr("x" * 37 + "...")]


def test_huge_text_works_for_every_rule():
    assert check("contains", HUGE, reference=["refund policy", "✓"]).score == 1.0
    assert check("not_contains", HUGE, reference="forbidden").verdict == "pass"
    assert check("starts_with", HUGE, reference="Ünïcode").verdict == "pass"
    assert check("ends_with", HUGE, reference="policy.", normalize_whitespace=True).verdict == "pass"
    assert check("regex", HUGE, pattern=r"policy\.\Z").verdict == "fail"  # ends with a newline
    assert check("length", HUGE, unit="lines", min=25_000, max=25_000).details == {"length": 25_000, "unit": "lines"}
    assert check("equals", HUGE, reference=HUGE).verdict == "pass"


# --- regex -------------------------------------------------------------------------------------------------


def test_regex_searches_anywhere_and_reports_the_match():
    result = check("regex", "Order #12345 shipped", pattern=r"#(\d+)")
    assert (result.verdict, result.hits, result.details) == ("pass", [r"answer matches /#(\d+)/"], {"match": "#12345", "start": 6})
    assert check("regex", "Order shipped", pattern=r"#\d+").misses == [r"answer does not match /#\d+/"]


def test_regex_must_match_false_fails_on_a_match():
    result = check("regex", "call 555-1234 now", pattern=r"\d{3}-\d{4}", must_match=False)
    assert (result.score, result.verdict) == (0.0, "fail")
    assert result.misses == [r"answer matches /\d{3}-\d{4}/ at 5: '555-1234'"]
    assert check("regex", "no phone here", pattern=r"\d{3}-\d{4}", must_match=False).verdict == "pass"


def test_regex_flags_and_case_sensitive():
    text = "first line\nSECOND line"
    assert check("regex", text, pattern="^second").verdict == "fail"
    assert check("regex", text, pattern="^second", flags=["multiline", "ignorecase"]).verdict == "pass"
    assert check("regex", text, pattern="^second", flags=["multiline"], case_sensitive=False).verdict == "pass"
    assert check("regex", text, pattern="line.SECOND").verdict == "fail"
    assert check("regex", text, pattern="line.SECOND", flags=["dotall"]).verdict == "pass"
    assert check("regex", "a1", pattern=r" a  \d  # letter then digit", flags=["verbose"]).verdict == "pass"
    assert check("regex", "café", pattern=r"^\w+$").verdict == "pass"
    assert check("regex", "café", pattern=r"^\w+$", flags=["ascii"]).verdict == "fail"


def test_regex_normalize_whitespace_applies_before_matching():
    assert check("regex", "total:\n   42", pattern="total: 42").verdict == "fail"
    assert check("regex", "total:\n   42", pattern="total: 42", normalize_whitespace=True).verdict == "pass"


def test_an_invalid_pattern_is_a_load_time_error_showing_the_position(tmp_path):
    found = problems(tmp_path, """
        name: t
        evaluators:
          - name: ok
            type: regex
            pattern: "fine"
          - name: broken
            type: regex
            pattern: "total: (\\\\d+"
          - name: verbose
            type: regex
            flags: [verbose]
            pattern: |
              a
              [b
        cases: [{id: c, expected: 1, output: x}]
    """)
    assert found == [
        "<dir>/suite.yaml:8: evaluators[1].pattern: invalid regular expression at position 7: "
        "missing ), unterminated subpattern in 'total: (\\\\d+'",
        "<dir>/suite.yaml:12: evaluators[2].pattern: invalid regular expression at line 2, column 1: "
        "unterminated character set in 'a\\n[b\\n'",
    ]
    with pytest.raises(re.error) as direct:
        re.compile("total: (\\d+")
    assert direct.value.pos == 7


# --- length ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "unit", "size"),
    [
        ("héllo wörld", "chars", 11),
        ("👍🏽", "chars", 2),  # two code points
        ("one  two\tthree\nfour", "words", 4),
        ("a\nb\r\nc", "lines", 3),
        ("a\nb\n", "lines", 2),
        ("", "chars", 0),
        ("", "words", 0),
        ("", "lines", 0),
        ("   ", "words", 0),
    ],
)
def test_length_counts_units(text, unit, size):
    assert check("length", text, unit=unit, max=100).details == {"length": size, "unit": unit}


def test_length_bounds_and_messages():
    assert check("length", "one two three", unit="words", min=2, max=3).hits == ["answer has 3 words"]
    assert check("length", "one", unit="words", min=2).misses == ["answer has 1 words, fewer than 2"]
    assert check("length", "x" * 11, max=10).misses == ["answer has 11 chars, more than 10"]
    assert check("length", "", min=0, max=0).verdict == "pass"


def test_length_normalize_whitespace_joins_lines():
    assert check("length", "a\n\nb", unit="lines", max=10).details["length"] == 3
    assert check("length", "a\n\nb", unit="lines", max=10, normalize_whitespace=True).details["length"] == 1
    assert check("length", "  ab  ", max=10, normalize_whitespace=True).details["length"] == 2


def test_length_needs_a_bound_and_ordered_bounds():
    with pytest.raises(ValidationError, match="give `min`, `max` or both"):
        make("length", unit="words")
    with pytest.raises(ValidationError, match=r"`min` \(5\) is greater than `max` \(2\)"):
        make("length", min=5, max=2)
    with pytest.raises(ValidationError, match="unknown|Extra inputs"):
        make("length", max=2, case_sensitive=False)  # not an option of length


# --- json_valid ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['{"a": 1}', "[1, 2]", '"text"', "3.5", "null", "  {}  ", "123456789012345678901234567890", "[1e400]", '"\\ud800"'])
def test_json_valid_accepts_json_documents(text):
    assert check("json_valid", text).hits == ["answer is valid JSON"]


def json_error(text):
    """What Python's json parser says about a document that is not JSON."""
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    return str(caught.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a": 1,}', json_error('{"a": 1,}')),
        ("[NaN]", "NaN is not JSON"),
        ("Infinity", "Infinity is not JSON"),
        ("", "Expecting value: line 1 column 1 (char 0)"),
        ('{"a": 1} {"b": 2}', "Extra data: line 1 column 10 (char 9)"),
        ("{'a': 1}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ],
)
def test_json_valid_rejects_what_is_not_json(text, problem):
    result = check("json_valid", text)
    assert (result.score, result.verdict, result.misses) == (0.0, "fail", [f"answer (invalid JSON: {problem})"])


def test_json_nested_deeper_than_python_can_parse_is_reported_not_raised():
    value, problem = parse_json("[" * 100_000 + "]" * 100_000)
    assert (value, problem) == (None, "nested too deeply to parse")
    assert check("json_valid", "[" * 1000 + "]" * 1000).verdict == "pass"
    assert check("json_valid", "[" * 1500 + "]" * 1500).misses == ["answer (invalid JSON: nested too deeply to parse)"]


# --- json_schema ------------------------------------------------------------------------------------------------------

ORDER_SCHEMA = {
    "type": "object",
    "required": ["id", "items", "email"],
    "properties": {
        "id": {"type": "integer"},
        "email": {"type": "string", "format": "email"},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku"], "properties": {"price": {"type": "number", "minimum": 0}}}},
    },
    "additionalProperties": False,
}


def library_misses(schema, instance, cls=Draft202012Validator):
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [f"{error.json_path}: {error.message}" for error in validator.iter_errors(instance)]


def test_json_schema_passes_a_valid_document():
    result = check("json_schema", '{"id": 7, "email": "a@b.co", "items": [{"sku": "x", "price": 2}]}', schema=ORDER_SCHEMA)
    assert (result.score, result.verdict, result.hits) == (1.0, "pass", ["answer matches the schema"])


def test_every_violation_is_a_miss_with_its_json_path_as_jsonschema_reports_it():
    instance = {"id": "7", "email": "not-an-email", "items": [{"price": -1}, {"sku": "y", "price": "free"}], "extra": 1}
    result = check("json_schema", json.dumps(instance), schema=ORDER_SCHEMA)
    expected = library_misses(ORDER_SCHEMA, instance)
    assert result.misses == expected
    assert len(expected) == 6
    assert "$.items[0]: 'sku' is a required property" in expected
    assert "$.items[1].price: 'free' is not of type 'number'" in expected
    assert "$.email: 'not-an-email' is not a 'email'" in expected
    assert (result.score, result.verdict, result.details) == (0.0, "fail", {"violations": 6})
    assert result.reasoning == "6 schema violation(s)"


def test_json_schema_caps_the_listed_violations():
    schema = {"type": "array", "items": {"type": "string"}}
    result = check("json_schema", json.dumps(list(range(30))), schema=schema, max_errors=3)
    assert result.misses == library_misses(schema, list(range(30)))[:3] + ["... and 27 more"]


def test_json_schema_follows_the_draft_the_schema_names():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"]}}
    result = check("json_schema", '{"a": 1}', schema=schema)
    assert result.misses == library_misses(schema, {"a": 1}, Draft7Validator) == ["$: 'b' is a dependency of 'a'"]


def test_json_schema_references_resolve_inside_the_schema_and_others_are_an_error():
    schema = {"$defs": {"sku": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"}}, "properties": {"sku": {"$ref": "#/$defs/sku"}}}
    result = check("json_schema", '{"sku": "bl200"}', schema=schema)
    assert result.misses == library_misses(schema, {"sku": "bl200"}) == ["$.sku: 'bl200' does not match '^[A-Z]+-[0-9]+$'"]
    elsewhere = check("json_schema", "{}", schema={"$ref": "other.json"})
    assert (elsewhere.verdict, elsewhere.error) == (
        "error",
        "json_schema 'json_schema': the schema's $ref 'other.json' points outside the schema; "
        "other documents are never fetched or read (only references inside it, like '#/$defs/...', resolve)",
    )


def test_json_schema_with_invalid_json_or_a_structured_candidate():
    assert check("json_schema", "{oops", schema={}).misses == ["answer (invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"]
    assert check("json_schema", {"id": 1}, schema={"required": ["id"]}, as_json=True).verdict == "pass"
    assert check("json_schema", {"id": 1}, schema={"required": ["id"]}).misses == ["answer (type mismatch: object, not a string)"]


def test_json_schema_from_a_file_next_to_the_suite_is_read_at_load(tmp_path, monkeypatch):
    write(tmp_path, "suite/schemas/order.json", json.dumps(ORDER_SCHEMA))
    write(tmp_path, "suite/schemas/tags.yaml", "type: array\nmaxItems: 3\n")
    suite = write(tmp_path, "suite/s.yaml", """
        name: t
        evaluators:
          - {name: order, type: json_schema, schema_file: schemas/order.json}
          - {name: tags, type: json_schema, path: tags, as_json: true, schema_file: schemas/tags.yaml}
        cases: [{id: c, expected: 1, output: {id: 1}}]
    """)
    monkeypatch.chdir(tmp_path / "suite" / "schemas")  # relative to the suite, not the working directory
    loaded = load_suite(suite)
    order, tags = loaded.suite.evaluators
    assert order.evaluate(ctx('{"id": 1, "email": "a@b.co", "items": []}')).verdict == "pass"
    assert tags.evaluate(ctx({"tags": ["a", "b", "c", "d"]})).misses == ["$: ['a', 'b', 'c', 'd'] is too long"]
    assert tags.evaluate(ctx({"tags": ["a"]})).verdict == "pass"


def test_schema_file_problems_are_load_time_errors_with_file_and_line(tmp_path):
    found = problems(tmp_path, """
        name: t
        evaluators:
          - {name: a, type: json_schema, schema_file: missing.json}
          - {name: b, type: json_schema, schema_file: broken.json}
          - {name: c, type: json_schema, schema_file: wrong.json}
          - {name: d, type: json_schema, schema: {type: objekt}}
          - {name: e, type: json_schema}
          - {name: f, type: json_schema, schema: {}, schema_file: good.json}
        cases: [{id: c, expected: 1, output: x}]
    """, **{"broken.json": "{\"type\": ", "wrong.json": '{"minLength": -1}', "good.json": "{}"})
    assert found == [
        "<dir>/suite.yaml:3: evaluators[0].schema_file: schema file not found: missing.json (looked for <dir>/missing.json)",
        "<dir>/suite.yaml:4: evaluators[1].schema_file: schema file broken.json is not valid JSON: Expecting value: line 1 column 10 (char 9)",
        "<dir>/suite.yaml:5: evaluators[2].schema_file: invalid JSON Schema at $.minLength: -1 is less than the minimum of 0",
        "<dir>/suite.yaml:6: evaluators[3].schema: invalid JSON Schema at $.type: 'objekt' is not valid under any of the given schemas",
        "<dir>/suite.yaml:7: evaluators[4]: give the schema inline (`schema`) or as `schema_file`, one of them",
        "<dir>/suite.yaml:8: evaluators[5]: give the schema inline (`schema`) or as `schema_file`, one of them",
    ]


def test_a_case_level_evaluator_reads_its_file_relative_to_the_suite(tmp_path):
    write(tmp_path, "order.json", '{"type": "object", "required": ["id"]}')
    write(tmp_path, "data/cases.jsonl", json.dumps({
        "id": "c1", "expected": 1, "output": {"n": 1},
        "evaluators": [{"type": "json_schema", "as_json": True, "schema_file": "order.json"}],
    }) + "\n")
    suite = write(tmp_path, "s.yaml", "name: t\nevaluators: [{type: json_valid, as_json: true}]\ncases: data/cases.jsonl\n")
    loaded = load_suite(suite)
    case = next(loaded.iter_cases())
    schema_check = loaded.evaluators_for(case)[-1]
    assert schema_check.evaluate(ctx({"n": 1})).misses == ["$: 'id' is a required property"]


# --- the whole run ------------------------------------------------------------------------------------------------


def test_a_suite_of_text_rules_runs_end_to_end(tmp_path):
    write(tmp_path, "reply.schema.json", json.dumps({"type": "object", "required": ["answer", "sources"]}))
    suite = write(tmp_path, "suite.yaml", """
        name: support-replies
        evaluators:
          - {name: mentions, type: contains, path: answer, reference: [refund, days], case_sensitive: false}
          - {name: no-apology, type: not_contains, path: answer, reference: [sorry], case_sensitive: false}
          - {name: short, type: length, path: answer, unit: words, max: 12}
          - {name: ticket, type: regex, path: answer, pattern: "#[0-9]{4}"}
          - {name: shape, type: json_schema, as_json: true, schema_file: reply.schema.json}
        cases:
          - id: good
            expected: null
            output: {answer: "Refund for ticket #1234 arrives in 5 days.", sources: []}
          - id: bad
            expected: null
            output: {answer: "Sorry, we cannot refund this order today because of the policy we have."}
    """)
    done = run_cli("run", suite, "-o", "-", "-q", cwd=Path("/"))
    assert done.returncode == 1, done.stderr
    lines = {line["case_id"]: line for line in map(json.loads, done.stdout.splitlines())}
    good = {r["name"]: r["verdict"] for r in lines["good"]["evaluator_results"]}
    assert good == {"mentions": "pass", "no-apology": "pass", "short": "pass", "ticket": "pass", "shape": "pass"}
    bad = {r["name"]: (r["verdict"], r["misses"]) for r in lines["bad"]["evaluator_results"]}
    assert bad == {
        "mentions": ("partial", ["'days' not found (1 of 2 found; every one is needed, `mode: any` passes with one)"]),
        "no-apology": ("fail", ["answer contains 'sorry'"]),
        "short": ("fail", ["answer has 13 words, more than 12"]),
        "ticket": ("fail", ["answer does not match /#[0-9]{4}/"]),
        "shape": ("fail", ["$: 'sources' is a required property"]),
    }


def test_text_evaluators_survive_pickling_as_sent_to_worker_processes():
    configs = [
        {"type": "equals", "reference": "a", "case_sensitive": False, "normalize_whitespace": True},
        {"type": "contains", "reference": ["a", "b"]}, {"type": "not_contains", "reference": "z"},
        {"type": "starts_with", "reference": "a"}, {"type": "ends_with", "reference": "b"},
        {"type": "regex", "pattern": "a.b"}, {"type": "length", "max": 3}, {"type": "json_valid"},
        {"type": "json_schema", "schema": {"type": "string", "maxLength": 2}},
        {"type": "text_similarity", "reference": "a b"},
        {"type": "keyword_coverage", "keywords": ["a", ["b", "c"]], "whole_word": True},
        {"type": "sentiment"}, {"type": "toxicity", "terms": ["b"]},
    ]
    for config in configs:
        evaluator = SPEC.validate_python(config)
        copy = pickle.loads(pickle.dumps(evaluator))
        for answer in ("a b", '"abc"'):
            before, after = evaluator.evaluate(ctx(answer)), copy.evaluate(ctx(answer))
            assert (after.score, after.verdict, after.hits, after.misses) == (before.score, before.verdict, before.hits, before.misses)


# --- the pattern engine's untimed path ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "steps"),
    [
        (r"#\d{5}", 6),
        (r"refund|return", 10),
        (r"^\d{3}-\d{4}$", 8),
        (r"[a-z]{5}(?=x)", 6),
        (r"^(a|aa)+$", None),  # alternation under a repetition: exponential
        (r"^(a+)+$", None),
        (r"\d+", None),  # variable length: quadratic on a long run of digits
        (r"colou?r", None),
        (r"(?:abc){3}", None),
        (r"(a)\1", None),
        (r"(?:cat|dog) (?:red|blue)", None),  # two alternations multiply
    ],
)
def test_only_patterns_that_cannot_backtrack_skip_the_timer(pattern, steps):
    from agenteval import patterns

    assert patterns.steps_per_position(pattern) == steps


def test_a_pattern_that_skips_the_timer_on_short_texts_is_timed_on_long_ones():
    from agenteval import patterns

    compiled = patterns.compile(r"#\d{5}")
    assert patterns.search(compiled, "order #48213 shipped").group(0) == "#48213"
    long_text = "x" * 2_000_000 + "#12345"  # 6 steps x 2 million positions: past the untimed bound
    assert patterns.search(compiled, long_text, 5.0).start() == 2_000_000
    assert [found.group(0) for found in patterns.findall(compiled, "#11111 #22222")] == ["#11111", "#22222"]
    assert patterns.fullmatch(patterns.compile("refund|return"), "return") is not None
