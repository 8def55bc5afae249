"""Every scenario of the structured-data evaluators spec, plus the contract's additions."""

from pathlib import Path

import pytest

from agenteval.evaluators import EvalContext
from agenteval.evaluators.fields import FieldAccuracy


def evaluate(fields, output, expected, **config):
    evaluator = FieldAccuracy.model_validate({"type": "field_accuracy", "fields": fields, **config})
    return evaluator.evaluate(EvalContext("case", None, expected, output, {}, Path(".")))


# --- exact -------------------------------------------------------------------------------------

def test_exact_string_match_succeeds():
    result = evaluate([{"path": "invoice.number", "match": "exact"}],
                      {"invoice": {"number": "INV-001"}}, {"invoice": {"number": "INV-001"}})
    assert result.score == 1.0
    assert result.hits == ["invoice.number"]
    assert result.misses == []


def test_exact_match_fails_on_mismatch():
    result = evaluate([{"path": "invoice.number", "match": "exact"}],
                      {"invoice": {"number": "INV-001"}}, {"invoice": {"number": "INV-002"}})
    assert result.score == 0.0
    assert result.misses == ["invoice.number"]
    assert result.hits == []


def test_missing_required_field_is_a_miss():
    result = evaluate([{"path": "invoice.number", "match": "exact", "required": True}],
                      {"invoice": {}}, {"invoice": {"number": "INV-001"}})
    assert result.score == 0.0
    assert result.misses == ["invoice.number (required, missing)"]


# --- numeric -----------------------------------------------------------------------------------

def test_absolute_tolerance_succeeds_within_threshold():
    result = evaluate([{"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 0.05, "relative": False}],
                      {"invoice": {"total": 100.02}}, {"invoice": {"total": 100.00}})
    assert result.score == 1.0


def test_relative_tolerance_succeeds_within_percentage():
    result = evaluate([{"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 0.02, "relative": True}],
                      {"invoice": {"total": 101.00}}, {"invoice": {"total": 100.00}})
    assert result.score == 1.0


def test_numeric_tolerance_fails_outside_threshold():
    result = evaluate([{"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 1.0}],
                      {"invoice": {"total": 105.00}}, {"invoice": {"total": 100.00}})
    assert result.score == 0.0
    assert result.misses == ["invoice.total"]


def test_nan_candidate_fails_with_a_clear_message():
    result = evaluate([{"path": "t", "match": "numeric_tolerance", "tolerance": 1.0}], {"t": float("nan")}, {"t": 1.0})
    assert result.misses == ["t (not a finite number)"]


# --- fuzzy -------------------------------------------------------------------------------------

def test_fuzzy_match_succeeds_above_threshold_ignoring_case():
    result = evaluate([{"path": "vendor.name", "match": "fuzzy", "algorithm": "levenshtein", "threshold": 0.80}],
                      {"vendor": {"name": "Acme Corp"}}, {"vendor": {"name": "ACME CORP"}})
    assert result.verdict == "pass"
    assert result.hits == ["vendor.name"]
    assert result.score == 1.0
    assert result.details["fields"][0]["similarity"] == 1.0


def test_fuzzy_field_score_reflects_the_similarity():
    result = evaluate([{"path": "vendor.name", "match": "fuzzy", "threshold": 0.80}],
                      {"vendor": {"name": "Acme Corp."}}, {"vendor": {"name": "ACME CORP"}})
    assert result.score == pytest.approx(0.9)
    assert result.verdict == "pass"


def test_fuzzy_case_sensitive_compares_as_written():
    result = evaluate([{"path": "vendor.name", "match": "fuzzy", "threshold": 0.80, "case_sensitive": True}],
                      {"vendor": {"name": "Acme Corp"}}, {"vendor": {"name": "ACME CORP"}})
    assert result.verdict == "fail"
    assert result.score == pytest.approx(1 - 6 / 9)


def test_fuzzy_jaro_winkler_for_prefix_similarity():
    result = evaluate([{"path": "vendor.name", "match": "fuzzy", "algorithm": "jaro_winkler", "threshold": 0.85}],
                      {"vendor": {"name": "Microsoft Corp"}}, {"vendor": {"name": "Microsoft Corporation"}})
    assert result.verdict == "pass"
    assert result.score > 0.85


def test_fuzzy_match_fails_below_threshold():
    result = evaluate([{"path": "vendor.name", "match": "fuzzy", "threshold": 0.80}],
                      {"vendor": {"name": "XYZ Inc"}}, {"vendor": {"name": "Acme Corp"}})
    assert result.misses == ["vendor.name"]
    assert result.score < 0.80
    assert result.verdict == "fail"


def test_fuzzy_without_threshold_uses_0_85():
    at = evaluate([{"path": "n", "match": "fuzzy"}], {"n": "abcdefghijklmnopqrs"}, {"n": "abcdefghijklmnopqrsXYZ"})
    # similarity 19/22 = 0.8636 passes 0.85; 18/22 = 0.818 does not
    assert at.verdict == "pass"
    below = evaluate([{"path": "n", "match": "fuzzy"}], {"n": "abcdefghijklmnopqr"}, {"n": "abcdefghijklmnopqrXYZW"})
    assert below.verdict == "fail"


# --- paths -------------------------------------------------------------------------------------

def test_nested_object_field_access():
    result = evaluate([{"path": "invoice.vendor.address.city"}],
                      {"invoice": {"vendor": {"address": {"city": "Seattle"}}}},
                      {"invoice": {"vendor": {"address": {"city": "Seattle"}}}})
    assert result.details["fields"][0]["actual"] == "Seattle"
    assert result.score == 1.0


def test_array_index_access_in_path():
    output = {"invoice": {"line_items": [{"amount": 50.00}, {"amount": 75.00}]}}
    result = evaluate([{"path": "invoice.line_items[0].amount", "match": "numeric_tolerance"}], output,
                      {"invoice": {"line_items": [{"amount": 50.0}]}})
    assert result.details["fields"][0]["actual"] == 50.00
    assert result.hits == ["invoice.line_items[0].amount"]


def test_invalid_path_counts_as_a_miss_when_required():
    result = evaluate([{"path": "invoice.vendor.name", "required": True}],
                      {"invoice": {"total": 100}}, {"invoice": {"vendor": {"name": "Acme"}}})
    assert result.misses == ["invoice.vendor.name (required, missing)"]
    assert result.score == 0.0


def test_malformed_path_resolves_to_missing_with_a_warning():
    evaluator = FieldAccuracy.model_validate({"type": "field_accuracy", "fields": [{"path": "invoice..total"}]})
    assert evaluator.warnings() == [(("fields", 0, "path"), "malformed path 'invoice..total': it will resolve to missing")]
    result = evaluator.evaluate(EvalContext("c", None, {"invoice": {"total": 1}}, {"invoice": {"total": 1}}, {}, Path(".")))
    assert result.misses == ["invoice..total (invalid path)"]
    assert result.score == 0.0


# --- aggregation -------------------------------------------------------------------------------

def _three_fields(outcomes, weights=(1.0, 1.0, 1.0), aggregation="weighted_average"):
    fields = [{"path": name, "weight": w} for name, w in zip("abc", weights)]
    expected = {"a": 1, "b": 2, "c": 3}
    output = {name: (expected[name] if ok else -1) for name, ok in zip("abc", outcomes)}
    return evaluate(fields, output, expected, aggregation=aggregation)


def test_weighted_average_aggregation():
    result = _three_fields([True, False, True], weights=(1.0, 0.5, 0.8))
    assert result.score == pytest.approx(1.8 / 2.3)
    assert round(result.score, 3) == 0.783


def test_all_or_nothing_is_zero_when_any_field_fails():
    assert _three_fields([True, True, False], aggregation="all_or_nothing").score == 0.0


def test_all_or_nothing_passes_when_all_fields_match():
    result = _three_fields([True, True, True], aggregation="all_or_nothing")
    assert result.score == 1.0
    assert result.verdict == "pass"


def test_all_or_nothing_counts_a_fuzzy_hit_below_similarity_one_as_matched():
    result = evaluate([{"path": "n", "match": "fuzzy", "threshold": 0.8}], {"n": "Acme Corp."}, {"n": "Acme Corp"},
                      aggregation="all_or_nothing")
    assert result.score == 1.0
    assert result.details["fields"][0]["similarity"] == pytest.approx(0.9)


def test_all_or_nothing_is_zero_when_a_fuzzy_field_is_below_its_threshold():
    fields = [{"path": "n", "match": "fuzzy", "threshold": 0.95}, {"path": "k"}]
    result = evaluate(fields, {"n": "Acme Corp.", "k": 1}, {"n": "Acme Corp", "k": 1}, aggregation="all_or_nothing")
    assert (result.score, result.verdict, result.misses) == (0.0, "partial", ["n"])


def test_zero_total_weight_scores_zero_not_the_unweighted_mean():
    result = _three_fields([True, True, False], weights=(0.0, 0.0, 0.0))
    assert result.score == 0.0
    assert result.hits == ["a", "b"]


def test_fields_of_weight_zero_count_for_the_verdict_but_not_the_score():
    fields = [{"path": "a", "weight": 0}, {"path": "b", "weight": 0}, {"path": "c"}]
    only_weightless_scored = evaluate(fields, {"a": 1, "b": 2}, {"a": 1, "b": 2})  # c's expected value is absent
    assert (only_weightless_scored.score, only_weightless_scored.verdict) == (0.0, "pass")
    weighted = evaluate(fields, {"a": 9, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3})
    assert (weighted.score, weighted.verdict, weighted.misses) == (1.0, "partial", ["a"])


def test_lodash_style_paths_score_like_bracket_paths():
    expected = {"items": [{"amount": 5}, {"amount": 7}]}
    output = {"items": [{"amount": 5}, {"amount": 8}]}
    result = evaluate([{"path": "items.0.amount"}, {"path": "items.1.amount"}], output, expected)
    assert (result.hits, result.misses) == (["items.0.amount"], ["items.1.amount"])
    whole_list = evaluate([{"path": "[1].amount"}], output["items"], expected["items"])
    assert whole_list.misses == ["[1].amount"] and whole_list.details["fields"][0]["expected"] == 7


# --- structured results ------------------------------------------------------------------------

def test_structured_result_for_mixed_match():
    expected = {"invoice": {"number": "INV-1", "date": "2024-01-15", "vendor": "Acme", "total": 100}}
    output = {"invoice": {"number": "INV-1", "date": "Jan 15, 2024", "vendor": "Acme", "total": 90}}
    fields = [{"path": "invoice.number"}, {"path": "invoice.date", "match": "date"},
              {"path": "invoice.vendor"}, {"path": "invoice.total", "match": "numeric_tolerance"}]
    result = evaluate(fields, output, expected)
    assert result.score == 0.75
    assert result.verdict == "partial"
    assert result.hits == ["invoice.number", "invoice.date", "invoice.vendor"]
    assert result.misses == ["invoice.total"]
    assert result.reasoning == "3/4 fields matched"


def test_perfect_match_result():
    data = {"a": 1, "b": "x"}
    result = evaluate([{"path": "a"}, {"path": "b"}], data, data)
    assert (result.score, result.verdict, result.hits, result.misses) == (1.0, "pass", ["a", "b"], [])


def test_verdict_is_fail_when_no_field_hit():
    result = evaluate([{"path": "a"}, {"path": "b"}], {"a": 0, "b": 0}, {"a": 1, "b": 2})
    assert result.verdict == "fail"


def test_min_score_overrides_the_default_verdict():
    result = _three_fields([True, True, False])
    assert result.verdict == "partial"
    fields = [{"path": name} for name in "abc"]
    lenient = evaluate(fields, {"a": 1, "b": 2, "c": 0}, {"a": 1, "b": 2, "c": 3}, min_score=0.6)
    assert lenient.verdict == "pass"
    strict = evaluate(fields, {"a": 1, "b": 2, "c": 0}, {"a": 1, "b": 2, "c": 3}, min_score=0.7)
    assert strict.verdict == "fail"


# --- edge cases --------------------------------------------------------------------------------

def test_null_extracted_value_vs_non_null_expected():
    result = evaluate([{"path": "invoice.total", "match": "numeric_tolerance"}],
                      {"invoice": {"total": None}}, {"invoice": {"total": 100}})
    assert result.score == 0.0
    assert result.misses == ["invoice.total (null value)"]


def test_type_mismatch_string_vs_number():
    result = evaluate([{"path": "invoice.total", "match": "exact"}],
                      {"invoice": {"total": "100"}}, {"invoice": {"total": 100}})
    assert result.score == 0.0
    assert result.misses == ["invoice.total (type mismatch)"]


def test_candidate_that_is_not_an_object_misses_every_field():
    for output in (None, "plain text", [1, 2], 42):
        result = evaluate([{"path": "a"}, {"path": "b.c"}], output, {"a": 1, "b": {"c": 2}})
        assert result.misses == ["a (required, missing)", "b.c (required, missing)"], output
        assert result.verdict == "fail"


def test_expected_null_matches_null_or_absent():
    assert evaluate([{"path": "po"}], {"po": None}, {"po": None}).verdict == "pass"
    assert evaluate([{"path": "po"}], {}, {"po": None}).verdict == "pass"
    assert evaluate([{"path": "po"}], {"po": "PO-1"}, {"po": None}).misses == ["po (expected null)"]


# --- optional fields ---------------------------------------------------------------------------

def test_optional_field_missing_does_not_affect_score():
    result = evaluate([{"path": "invoice.number", "required": True}, {"path": "invoice.notes", "required": False}],
                      {"invoice": {"number": "INV-001"}}, {"invoice": {"number": "INV-001", "notes": "Rush order"}})
    assert result.score == 1.0
    assert result.misses == []
    assert result.verdict == "pass"
    assert result.details["fields"][1]["status"] == "skipped"


def test_optional_field_present_and_wrong_still_counts():
    result = evaluate([{"path": "a"}, {"path": "notes", "required": False}], {"a": 1, "notes": "x"}, {"a": 1, "notes": "y"})
    assert result.misses == ["notes"]
    assert result.score == 0.5


def test_required_field_missing_fails_evaluation():
    result = evaluate([{"path": "invoice.number"}], {"invoice": {}}, {"invoice": {"number": "INV-001"}})
    assert result.score == 0.0
    assert result.misses == ["invoice.number (required, missing)"]
    assert result.verdict == "fail"


def test_field_with_absent_expected_value_is_skipped_not_scored():
    result = evaluate([{"path": "a"}, {"path": "b"}], {"a": 1, "b": 2}, {"a": 1})
    assert result.score == 1.0
    assert result.reasoning == "1/1 fields matched (1 skipped)"
    assert [row["status"] for row in result.details["fields"]] == ["hit", "skipped"]


def test_nothing_scored_is_not_a_pass():
    result = evaluate([{"path": "a"}], {"a": 1}, {"b": 2})
    assert result.verdict == "fail"
    assert result.score == 0.0
    assert result.misses == ["no field was scored: every expected value is absent"]


def test_details_carry_status_similarity_expected_and_actual():
    result = evaluate([{"path": "n", "match": "fuzzy", "threshold": 0.5}], {"n": "Acme Corp."}, {"n": "Acme Corp"})
    row = result.details["fields"][0]
    assert row == {"path": "n", "match": "fuzzy", "status": "hit", "score": pytest.approx(0.9),
                   "similarity": pytest.approx(0.9), "expected": "Acme Corp", "actual": "Acme Corp."}
