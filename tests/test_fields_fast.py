"""field_accuracy compares the usual values inline (`CompiledField.row`); every row must be the one
the general `score_field` gives, for any pair of values and every match type and option."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from agenteval.evaluators.fields import FieldSpec, score_field
from agenteval.limits import Limits

SPECS = [
    {"path": "a", "match": "exact"},
    {"path": "a", "match": "exact", "unicode": "raw"},
    {"path": "a.b", "match": "exact"},
    {"path": "a", "match": "fuzzy"},
    {"path": "a", "match": "fuzzy", "algorithm": "jaro_winkler", "threshold": 0.5},
    {"path": "a", "match": "fuzzy", "case_sensitive": True, "unicode": "raw"},
    {"path": "a", "match": "fuzzy", "unicode": "nfkc"},
    {"path": "a.b", "match": "numeric_tolerance", "tolerance": 0.01},
    {"path": "a", "match": "numeric_tolerance", "tolerance": 0.02, "relative": True},
    {"path": "a", "match": "numeric_tolerance"},
    {"path": "a", "match": "date"},
    {"path": "a.b", "match": "date", "day_first": True},
    {"path": "a", "match": "exact", "required": False},
    {"path": "a[0]", "match": "exact"},
    {"path": "a.0", "match": "fuzzy"},
    {"path": "['a.b']", "match": "exact"},
    {"path": "a..b", "match": "exact"},
]

TEXTS = st.sampled_from(["Acme Corp", "ACME  corp", "acme corp", "Café", "Cafe\u0301", "ﬁne", "fine", "", " 2024-03-04 ",
                         "2024-03-04", "03/04/2024", "4 March 2024", "not a date", "x" * 40, "\ud800", "100", "1e3"])
NUMBERS = st.one_of(
    st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, 0.0, 100, 100.0, 100.005, 10**400]),
)
SCALARS = st.one_of(TEXTS, NUMBERS, st.booleans(), st.none())
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=2), st.dictionaries(st.sampled_from(["a", "b", "a.b"]), SCALARS, max_size=2))
ANSWERS = st.one_of(
    st.none(), SCALARS,
    st.fixed_dictionaries({}, optional={"a": VALUES, "a.b": VALUES}),
    st.fixed_dictionaries({"a": st.fixed_dictionaries({}, optional={"b": VALUES})}),
    st.fixed_dictionaries({"a": st.lists(VALUES, max_size=2)}),
)


def same(a: object, b: object) -> bool:
    """Equal rows, NaN equal to NaN (rows carry the answer's own values)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(SPECS), ANSWERS, ANSWERS, st.sampled_from([Limits(), Limits(edit_distance_chars=5)]))
def test_the_inline_row_is_the_general_one(spec: dict, candidate: object, expected: object, limits: Limits) -> None:
    field = FieldSpec.model_validate(spec).compile()
    fast, general = field.row(candidate, expected, limits), score_field(field, candidate, expected, limits)
    assert same(fast, general), (spec, candidate, expected, fast, general)


GRID = ["Acme Corp", "ACME  corp", "abc", "abd", "Café", "Cafe\u0301", "ﬁne", "fine", "", " 2024-03-04 ", "2024-03-04",
        "03/04/2024", "04/03/2024", "4 March 2024", "not a date", "x" * 40, "\ud800", "100", 100, 100.0, 100.005, 99.99, -3,
        0, 0.0, float("nan"), float("inf"), 10**400, True, None, [1], {"b": 1}]


def test_every_pair_of_values_at_the_path_gives_the_general_row() -> None:
    """The inline comparisons themselves, on every pair of a grid of values both answers hold at the path."""
    for spec in SPECS:
        field = FieldSpec.model_validate(spec).compile()
        for limits in (Limits(), Limits(edit_distance_chars=5)):
            for got in GRID:
                for want in GRID:
                    for shape in (lambda value: {"a": value}, lambda value: {"a": {"b": value}}, lambda value: {"a.b": value, "a": [value]}):
                        candidate, expected = shape(got), shape(want)
                        fast, general = field.row(candidate, expected, limits), score_field(field, candidate, expected, limits)
                        assert same(fast, general), (spec, candidate, expected, fast, general)


def test_the_usual_values_take_the_inline_path_and_score_as_written() -> None:
    """The values of a typical invoice, each compared inline: the rows say what each comparison found."""
    expected = {"a": {"b": "2024-03-04"}}
    date = FieldSpec(path="a.b", match="date").compile()
    assert date.row({"a": {"b": "03/04/2024"}}, expected) == {
        "path": "a.b", "match": "date", "status": "hit", "score": 1.0, "expected": "2024-03-04", "actual": "03/04/2024",
    }
    fuzzy = FieldSpec(path="a", match="fuzzy").compile()
    row = fuzzy.row({"a": "ACME Corp."}, {"a": "Acme Corp"})
    assert row["status"] == "hit" and row["similarity"] == round(row["score"], 6) and 0.85 <= row["score"] < 1.0
    numeric = FieldSpec(path="a", match="numeric_tolerance", tolerance=0.01).compile()
    assert numeric.row({"a": 10.02}, {"a": 10.0})["status"] == "miss"
    assert numeric.row({"a": 10}, {"a": 10.005})["status"] == "hit"
