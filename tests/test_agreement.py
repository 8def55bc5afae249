"""Agreement statistics checked against scikit-learn and the `krippendorff` package on fixed data."""

from __future__ import annotations

import random

import numpy as np
import pytest

from agenteval.agreement import (
    MIN_CASES, cohen_kappa, confusion, fleiss_kappa, judge_agreement, kappa_interval, krippendorff_alpha, self_consistency,
)

krippendorff = pytest.importorskip("krippendorff")
metrics = pytest.importorskip("sklearn.metrics")

RNG = np.random.default_rng(7)
FIRST = RNG.integers(0, 5, 80)
SECOND = np.where(RNG.random(80) < 0.6, FIRST, RNG.integers(0, 5, 80))


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_is_scikit_learns(weights):
    ours = cohen_kappa(list(FIRST), list(SECOND), weights=weights)
    assert ours == pytest.approx(metrics.cohen_kappa_score(FIRST, SECOND, weights=weights), abs=1e-12)


def test_cohen_kappa_on_pass_fail_labels_is_scikit_learns():
    judge = ["pass", "pass", "fail", "pass", "fail", "fail", "pass", "pass", "fail", "pass"]
    human = ["pass", "fail", "fail", "pass", "fail", "pass", "pass", "pass", "fail", "fail"]
    assert cohen_kappa(judge, human) == pytest.approx(metrics.cohen_kappa_score(judge, human))


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_alpha_is_the_krippendorff_packages(level):
    data = RNG.integers(1, 6, (4, 40)).astype(float)
    data[RNG.random((4, 40)) < 0.25] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-9)


def test_krippendorff_alpha_takes_none_for_missing_ratings():
    with_none = [[1, 2, None, 3, 3], [1, 2, 2, None, 3], [None, 2, 2, 3, 1]]
    as_nan = np.array(with_none, dtype=float)
    assert krippendorff_alpha(with_none) == pytest.approx(krippendorff.alpha(reliability_data=as_nan, level_of_measurement="nominal"))


def test_fleiss_kappa_of_fleiss_1971_worked_example_is_0_210():
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-5)


def test_fleiss_kappa_refuses_cases_with_different_numbers_of_ratings():
    with pytest.raises(ValueError, match="same number of ratings"):
        fleiss_kappa([[2, 0], [1, 2]])


def test_kappa_is_undefined_when_both_raters_always_give_one_label():
    assert cohen_kappa(["pass"] * 5, ["pass"] * 5) is None


def test_interval_is_seeded_and_independent_of_case_order():
    pairs = list(zip(["pass", "fail", "pass", "pass", "fail", "pass"] * 8, ["pass", "fail", "fail", "pass", "fail", "pass"] * 8))
    shuffled = pairs[:]
    random.Random(3).shuffle(shuffled)
    one = kappa_interval(confusion(*zip(*pairs)))
    other = kappa_interval(confusion(*zip(*shuffled)))
    assert one == other
    low, high = one
    kappa = cohen_kappa(*zip(*pairs))
    assert low < kappa < high and -1 <= low and high <= 1


def _ratings(judge: list[str], human: list[str]) -> list[tuple[str, list[str]]]:
    return [(j, [h]) for j, h in zip(judge, human)]


def test_judge_agreement_counts_confusion_base_rate_and_constant_answer():
    judge = ["pass"] * 18 + ["fail"] * 12
    human = ["pass"] * 15 + ["fail"] * 3 + ["fail"] * 10 + ["pass"] * 2
    found = judge_agreement("tone", _ratings(judge, human))
    assert found.cases == 30 and not found.small_sample
    assert found.labels == ["fail", "pass"]
    assert found.table == [[10, 2], [3, 15]]  # judge rows x human columns
    assert found.agreement == pytest.approx(25 / 30)
    assert found.base_rate == pytest.approx(17 / 30)
    assert found.constant_agreement == pytest.approx(17 / 30)
    assert found.kappa == pytest.approx(metrics.cohen_kappa_score(judge, human))
    assert found.low < found.kappa < found.high
    assert "kappa 0.66" in found.sentence()


def test_small_sample_says_so_instead_of_a_kappa():
    found = judge_agreement("tone", _ratings(["pass", "fail", "pass"], ["pass", "fail", "fail"]))
    assert found.small_sample and found.cases == 3
    assert "too few for a kappa" in found.sentence() and "kappa 0" not in found.sentence()
    assert MIN_CASES == 20


def test_several_reviewers_vote_and_an_even_split_is_left_out():
    ratings = [("pass", ["pass", "pass", "fail"]), ("fail", ["pass", "fail"]), ("fail", ["fail"])] * 10
    found = judge_agreement("tone", ratings)
    assert found.split == 10 and found.cases == 20 and found.raters == 4
    assert found.agreement == 1.0
    rows = [[j for j, _ in ratings]] + [[(h + [None] * 3)[k] for _, h in ratings] for k in range(3)]
    codes = [[None if v is None else ["fail", "pass"].index(v) for v in row] for row in rows]
    assert found.alpha == pytest.approx(krippendorff.alpha(reliability_data=np.array(codes, dtype=float), level_of_measurement="nominal"))


def test_graded_scale_gives_weighted_kappa_and_mean_absolute_difference():
    judge = [1, 2, 3, 4, 5, 5, 4, 3, 2, 1] * 3
    human = [1, 3, 3, 4, 4, 5, 5, 2, 2, 1] * 3
    found = judge_agreement("helpfulness", _ratings(judge, human), graded=True)
    assert found.weighted_kappa == pytest.approx(metrics.cohen_kappa_score(judge, human, weights="linear"))
    assert found.mean_absolute_difference == pytest.approx(np.mean(np.abs(np.array(judge) - np.array(human))))


def test_self_consistency_is_fleiss_kappa_over_repetitions():
    repetitions = [["pass", "pass", "pass"], ["fail", "fail", "pass"], ["fail", "fail", "fail"], ["pass", "fail", "pass"]]
    table = [[0, 3], [2, 1], [3, 0], [1, 2]]
    assert self_consistency(repetitions) == pytest.approx(fleiss_kappa(table))
    assert self_consistency([["pass"], ["fail"]]) is None


def test_several_reviewers_on_a_graded_scale_count_as_their_mean_level():
    ratings = [(4.0, [4, 5]), (2.0, [1, 2, 2]), (3.0, [3])] * 10
    found = judge_agreement("helpfulness", ratings, graded=True)
    assert found.split == 0 and found.cases == 30
    assert found.labels == [2.0, 3.0, 4.0, 5.0]
    assert found.table == [[10, 0, 0, 0], [0, 10, 0, 0], [0, 0, 0, 10], [0, 0, 0, 0]]  # 4.5 rounds up to 5, 5/3 to 2
