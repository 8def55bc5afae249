import math

import pytest

from agenteval import matching


def test_exact_is_type_strict():
    assert matching.exact("INV-001", "INV-001").hit
    assert not matching.exact("INV-001", "INV-002").hit
    outcome = matching.exact("100", 100)
    assert (outcome.score, outcome.hit, outcome.reason) == (0.0, False, "type mismatch")
    assert matching.exact(True, 1).reason == "type mismatch"


def test_exact_treats_int_and_float_as_one_number_type():
    assert matching.exact(100, 100.0).hit
    assert matching.exact({"a": [1, 2]}, {"a": [1, 2]}).hit


def test_levenshtein_similarity_ignores_case_and_whitespace_by_default():
    assert matching.similarity("Acme  Corp", "ACME CORP") == 1.0
    assert matching.similarity("Acme Corp", "ACME CORP", case_sensitive=True) == pytest.approx(1 - 6 / 9)


def test_fuzzy_score_is_the_similarity():
    outcome = matching.fuzzy("Acme Corp.", "Acme Corp", threshold=0.8)
    assert outcome.score == pytest.approx(0.9)
    assert outcome.similarity == pytest.approx(0.9)
    assert outcome.hit


def test_fuzzy_below_threshold_is_a_miss_with_its_similarity():
    outcome = matching.fuzzy("XYZ Inc", "Acme Corp", threshold=0.8)
    assert not outcome.hit
    assert outcome.score < 0.3
    assert outcome.reason is None


def test_jaro_winkler_rewards_a_shared_prefix():
    jw = matching.fuzzy("Microsoft Corp", "Microsoft Corporation", 0.85, "jaro_winkler")
    lev = matching.fuzzy("Microsoft Corp", "Microsoft Corporation", 0.85, "levenshtein")
    assert jw.hit and jw.score == pytest.approx(0.9333, abs=1e-3)
    assert not lev.hit and lev.score == pytest.approx(14 / 21)


def test_fuzzy_compares_numbers_as_text_and_rejects_structures():
    assert matching.fuzzy(12345, "12345").hit
    assert matching.fuzzy(["a"], "a").reason == "type mismatch"
    assert matching.fuzzy(None, "a").reason == "type mismatch"


def test_absolute_tolerance():
    assert matching.numeric(100.02, 100.00, 0.05).hit
    assert not matching.numeric(105.0, 100.0, 1.0).hit


def test_tolerance_boundary_is_inclusive():
    assert matching.numeric(101, 100, 1).hit


def test_relative_tolerance():
    assert matching.numeric(101.0, 100.0, 0.02, relative=True).hit
    assert not matching.numeric(103.0, 100.0, 0.02, relative=True).hit


def test_relative_tolerance_with_zero_expected_is_absolute():
    assert matching.numeric(0.01, 0, 0.02, relative=True).hit
    assert not matching.numeric(0.05, 0, 0.02, relative=True).hit


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_fail_with_a_reason(bad):
    assert matching.numeric(bad, 100.0, 1.0).reason == "not a finite number"
    assert matching.numeric(100.0, bad, 1.0).reason == "not a finite number"


def test_numeric_rejects_strings_and_bools():
    assert matching.numeric("100", 100, 1).reason == "type mismatch"
    assert matching.numeric(True, 1, 1).reason == "type mismatch"


@pytest.mark.parametrize(
    "written",
    ["2024-01-15", "2024-01-15T10:30:00", "2024-01-15T10:30:00Z", "2024/01/15", "15.01.2024",
     "15 January 2024", "15 Jan 2024", "January 15, 2024", "Jan 15, 2024", "01/15/2024", "20240115"],
)
def test_dates_match_across_common_formats(written):
    assert matching.date_match(written, "2024-01-15").hit


def test_slash_dates_read_month_first_unless_day_first():
    assert matching.date_match("03/04/2024", "2024-03-04").hit
    assert matching.date_match("03/04/2024", "2024-04-03", day_first=True).hit
    assert not matching.date_match("03/04/2024", "2024-04-03").hit


def test_unparseable_dates_are_misses_with_a_reason():
    assert matching.date_match("next tuesday", "2024-01-15").reason == "not a date"
    assert matching.date_match(20240115, "2024-01-15").reason == "type mismatch"
    assert matching.date_match("2024-01-15", "someday").reason == "expected value is not a date"


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [([True, 0], [1, False]), ({"a": [1]}, {"a": [True]}), ([[0]], [[False]]), ({"a": {"b": True}}, {"a": {"b": 1.0}})],
)
def test_exact_keeps_booleans_and_numbers_apart_at_every_depth(candidate, expected):
    assert matching.exact(candidate, expected).hit is False
    assert matching.equal(candidate, expected) is False


def test_exact_lets_int_equal_float_at_every_depth():
    assert matching.exact([1, {"a": 2}], [1.0, {"a": 2.0}]).hit is True


def test_unicode_forms_decide_whether_composed_and_decomposed_text_are_equal():
    nfc, nfd = "Café", "Cafe\u0301"
    assert matching.exact(nfd, nfc, "nfc").hit is True
    assert matching.exact(nfd, nfc, "raw").hit is False
    assert matching.exact(["ﬁ"], ["fi"], "nfkc").hit is True
    assert matching.exact(["ﬁ"], ["fi"], "nfc").hit is False
    assert matching.fuzzy(nfd, nfc, unicode="nfc").score == 1.0


def test_fuzzy_past_max_chars_is_a_miss_naming_the_limit_without_computing():
    outcome = matching.fuzzy("a" * 11, "a" * 11, max_chars=10)
    assert outcome.hit is False and outcome.limit == "edit_distance_chars"
    assert outcome.reason == "a text of 11 characters is too long for an edit distance (limits.edit_distance_chars: 10)"
    assert matching.fuzzy("a" * 10, "a" * 10, max_chars=10).score == 1.0


@pytest.mark.parametrize(
    ("written", "day"),
    [
        ("2024-015", "2024-01-15"), ("2024015", "2024-01-15"), ("2024-366", "2024-12-31"),
        ("2016-12-31T23:59:60Z", "2016-12-31"), ("2016-12-31T23:59:60.5+00:00", "2016-12-31"),
        ("2017-01-01T05:29:60+05:30", "2017-01-01"),
        ("2024-01-15T24:00:00", "2024-01-15"), ("2024-01-15T24:00", "2024-01-15"), ("2024-W03-1", "2024-01-15"),
    ],
)
def test_every_iso_8601_form_names_its_calendar_date(written, day):
    assert str(matching.parse_date(written)) == day


@pytest.mark.parametrize("written", ["2023-366", "2024-000", "2024-01-15T24:00:01", "2024-01-15T23:59:61", "2024-01-15T25:00"])
def test_impossible_iso_8601_forms_are_not_dates(written):
    assert matching.parse_date(written) is None
