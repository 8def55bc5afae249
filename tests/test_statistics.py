"""The paired statistics between cells, checked against independent computations on fixed data:
scipy's exact binomial test and bootstrap, exact integer sums, a plain Python loop over the same
random stream, and brute-force enumeration of tries."""

from __future__ import annotations

import itertools
import math
import random
import re
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binomtest, bootstrap

from agenteval.repeats import INFERRED, RepeatStats
from agenteval.results import CaseResult
from agenteval.statistics import (
    SEED,
    Interval,
    compare_cells,
    mcnemar_exact,
    paired_bootstrap,
    sign_flip_p,
)
from agenteval.tries import pass_at_k, pass_hat_k

# --- McNemar's exact test ---------------------------------------------------------------------------


def _exact_two_sided(a_only: int, b_only: int) -> float:
    """2 * P(X <= min) for X ~ Binomial(a_only + b_only, 1/2), summed in exact integers."""
    total, smaller = a_only + b_only, min(a_only, b_only)
    if total == 0 or 2 * smaller == total:
        return 1.0
    term = tail = 1  # C(total, 0), then each next binomial coefficient from the one before
    for j in range(smaller):
        term = term * (total - j) // (j + 1)
        tail += term
    return min(1.0, 2 * tail / (1 << total))


def test_mcnemar_of_a_small_table_worked_by_hand():
    # 5 discordant pairs, 1 against 4: P(X <= 1) = (1 + 5) / 32, two-sided 12 / 32
    assert mcnemar_exact(1, 4) == 0.375 == mcnemar_exact(4, 1)
    assert mcnemar_exact(0, 5) == 2 / 32
    assert mcnemar_exact(0, 10) == 2 / 1024
    assert mcnemar_exact(2, 2) == 1.0  # a tie is no evidence either way
    assert mcnemar_exact(1, 2) == 1.0  # 2 * (1 + 3) / 8 is capped at 1
    assert mcnemar_exact(0, 0) == 1.0  # no discordant pair: nothing to test


@pytest.mark.parametrize("a_only, b_only", [
    (1, 4), (0, 1), (3, 17), (40, 60), (60, 40), (12, 30), (250, 300), (4990, 5010), (2500, 2600),
    (9000, 11100), (10300, 10000), (30_000, 30_300), (49_000, 51_000), (400_000, 401_000), (10**6, 10**6 + 3000),
])
def test_mcnemar_matches_scipy_binomtest(a_only, b_only):
    expected = binomtest(min(a_only, b_only), a_only + b_only, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("a_only, b_only", [(100, 400), (10_000, 10_300), (9700, 10_700), (30_000, 30_300), (20_050, 19_700)])
def test_mcnemar_on_large_counts_equals_the_exact_integer_sum(a_only, b_only):
    # above 20,000 discordant pairs the density comes from the saddle-point form: still exact to ~1e-15
    assert mcnemar_exact(a_only, b_only) == pytest.approx(_exact_two_sided(a_only, b_only), rel=1e-13)


def test_mcnemar_with_huge_counts_neither_overflows_nor_approximates():
    assert mcnemar_exact(0, 10**6) == 0.0  # 2 / 2**1000000 underflows to 0, it does not raise
    assert mcnemar_exact(10**7, 10**7) == 1.0
    assert mcnemar_exact(5 * 10**6, 5 * 10**6 + 5000) == pytest.approx(
        binomtest(5 * 10**6, 10**7 + 5000, 0.5).pvalue, rel=1e-11)
    assert 0.0 < mcnemar_exact(9700, 10_700) < 1e-11  # a tiny p-value keeps its digits


def test_mcnemar_rejects_what_is_not_a_count():
    with pytest.raises(ValueError, match="a_only counts pairs: it cannot be negative"):
        mcnemar_exact(-1, 3)
    with pytest.raises(TypeError):
        mcnemar_exact(1.5, 3)  # type: ignore[arg-type]


# --- the paired bootstrap ----------------------------------------------------------------------------


def _quantile(ordered: list[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    if below + 1 >= len(ordered):
        return ordered[below]
    return ordered[below] + (position - below) * (ordered[below + 1] - ordered[below])


def _reference(a: list[float], b: list[float], resamples: int, confidence: float = 0.95, seed: int = SEED) -> tuple[float, float]:
    """The percentile interval, one resample at a time in plain Python, from the same random stream
    (indices into the differences sorted ascending)."""
    n = len(a)
    differences = sorted(y - x for x, y in zip(a, b))
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        picks = rng.integers(0, n, size=n).tolist()
        means.append(math.fsum(differences[i] for i in picks) / n)
    means.sort()
    return _quantile(means, (1 - confidence) / 2), _quantile(means, (1 + confidence) / 2)


def _dyadic(n: int, seed: int) -> tuple[list[float], list[float]]:
    """Scores in multiples of 1/64: every sum of them is exact, in any order, so two ways of
    summing must agree to the last bit."""
    rng = random.Random(seed)
    a = [rng.randrange(65) / 64 for _ in range(n)]
    b = [min(1.0, x + rng.randrange(-16, 24) / 64) if x else rng.randrange(65) / 64 for x in a]
    return a, b


def test_bootstrap_equals_a_plain_python_loop_over_the_same_stream_to_the_last_digit():
    a, b = _dyadic(37, 1)
    for confidence, seed in ((0.95, SEED), (0.9, 7), (0.99, 123)):
        interval = paired_bootstrap(a, b, resamples=3000, confidence=confidence, seed=seed)
        assert (interval.low, interval.high) == _reference(a, b, 3000, confidence, seed)
        assert interval.difference == float(sum(map(Fraction, b)) / 37 - sum(map(Fraction, a)) / 37)  # the exact mean difference, rounded once
        assert interval.n == 37 and interval.confidence == confidence


def test_bootstrap_in_chunks_draws_the_same_stream_as_one_resample_at_a_time():
    rng = random.Random(2)  # multiples of 2**-20: tens of thousands of distinct differences, sums still exact
    a = [rng.randrange(1 << 20) / (1 << 20) for _ in range(80_001)]
    b = [rng.randrange(1 << 20) / (1 << 20) for _ in range(80_001)]
    interval = paired_bootstrap(a, b, resamples=8)  # 262,144 indices at once: resamples 3 at a time, then the last 2
    assert (interval.low, interval.high) == _reference(a, b, 8)


def _reference_by_counts(a: list[float], b: list[float], resamples: int, seed: int = SEED) -> tuple[float, float]:
    """The same interval told by counts: per resample, how many cases of each distinct difference
    (ascending) it picked, one multinomial draw at a time from the same stream."""
    n = len(a)
    differences = [y - x for x, y in zip(a, b)]
    values = sorted(set(differences))
    frequencies = [differences.count(value) / n for value in values]
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        picked = rng.multinomial(n, frequencies).tolist()
        means.append(math.fsum(count * value for count, value in zip(picked, values)) / n)
    means.sort()
    return _quantile(means, 0.025), _quantile(means, 0.975)


def test_pass_fail_differences_are_resampled_by_counts_from_the_same_stream():
    rng = random.Random(12)
    passed_a = [float(rng.random() < 0.6) for _ in range(300)]
    passed_b = [float(rng.random() < 0.7) for _ in range(300)]
    interval = paired_bootstrap(passed_a, passed_b)  # 3 distinct differences among 300 cases: counted
    assert (interval.low, interval.high) == _reference_by_counts(passed_a, passed_b, 10_000)
    # ...which is the same bootstrap as drawing the cases by index: the ends agree to a step of 1/300
    low, high = _reference(passed_a, passed_b, 10_000)
    assert abs(interval.low - low) <= 2 / 300 and abs(interval.high - high) <= 2 / 300
    # rule scores (multiples of 1/8) take few values too, and are counted the same way
    scores_a = [rng.randrange(9) / 8 for _ in range(300)]
    scores_b = [min(1.0, x + rng.randrange(-2, 4) / 8) for x in scores_a]
    interval = paired_bootstrap(scores_a, scores_b, seed=3)
    assert (interval.low, interval.high) == _reference_by_counts(scores_a, scores_b, 10_000, seed=3)


def test_bootstrap_of_real_valued_scores_matches_the_reference_and_numpy_percentile():
    rng = np.random.default_rng(11)
    a = rng.random(150)
    b = np.clip(a + rng.normal(0.04, 0.15, 150), 0, 1)
    interval = paired_bootstrap(a, b, resamples=2000)
    low, high = _reference(a.tolist(), b.tolist(), 2000)
    assert interval.low == pytest.approx(low, abs=1e-15) and interval.high == pytest.approx(high, abs=1e-15)
    # the same quantiles as numpy's default (linear) method
    means = [float(np.sort(b - a)[rng_picks].mean()) for rng_picks in _picks(150, 2000)]
    assert interval.low == pytest.approx(float(np.percentile(means, 2.5)), abs=1e-15)
    assert interval.high == pytest.approx(float(np.percentile(means, 97.5)), abs=1e-15)


def _picks(n: int, resamples: int) -> list[np.ndarray]:
    rng = np.random.default_rng(SEED)
    return [rng.integers(0, n, size=n) for _ in range(resamples)]


def test_bootstrap_agrees_with_scipy_paired_percentile_bootstrap():
    rng = np.random.default_rng(5)
    a = rng.random(200)
    b = np.clip(a + rng.normal(0.05, 0.2, 200), 0, 1)
    ours = paired_bootstrap(a, b)
    theirs = bootstrap(
        (a, b), lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis), paired=True, vectorized=True,
        method="percentile", n_resamples=10_000, confidence_level=0.95, rng=np.random.default_rng(1),
    ).confidence_interval
    # two independent streams of 10,000 resamples: the ends agree to a few thousandths (a 5% of the width here)
    width = theirs.high - theirs.low
    assert abs(ours.low - theirs.low) < 0.05 * width and abs(ours.high - theirs.high) < 0.05 * width
    assert ours.difference == pytest.approx(float(b.mean() - a.mean()), abs=1e-15)
    # pass/fail outcomes too (a difference of -1, 0 or 1 per case: resampled by counts)
    pass_a, pass_b = (rng.random(300) < 0.55).astype(float), (rng.random(300) < 0.7).astype(float)
    ours = paired_bootstrap(pass_a, pass_b)
    theirs = bootstrap(
        (pass_a, pass_b), lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis), paired=True, vectorized=True,
        method="percentile", n_resamples=10_000, rng=np.random.default_rng(2),
    ).confidence_interval
    width = theirs.high - theirs.low
    assert abs(ours.low - theirs.low) < 0.05 * width and abs(ours.high - theirs.high) < 0.05 * width


def test_bootstrap_is_reproducible_and_the_seed_is_the_only_source_of_chance():
    a, b = _dyadic(50, 3)
    assert paired_bootstrap(a, b) == paired_bootstrap(a, b) == paired_bootstrap(a, b, seed=SEED)
    assert paired_bootstrap(a, b, seed=SEED + 1) != paired_bootstrap(a, b)


@pytest.mark.parametrize("passed", [False, True])
def test_the_order_the_cases_come_in_does_not_change_the_interval(passed):
    rng = random.Random(4)
    n = 500
    if passed:  # pass/fail, resampled by counts
        pairs = [(float(rng.random() < 0.6), float(rng.random() < 0.7)) for _ in range(n)]
    else:  # real-valued scores, resampled by index
        pairs = [(rng.random(), rng.random()) for _ in range(n)]
    first = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs])
    rng.shuffle(pairs)
    again = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs])
    assert (again.low, again.high) == (first.low, first.high)
    assert again.difference == first.difference  # exact sums: no rounding that depends on the order


def test_bootstrap_without_pairs_or_with_one_gives_no_interval():
    assert paired_bootstrap([], []) == Interval(None, None, None, 0)
    assert paired_bootstrap([0.25], [1.0]) == Interval(0.75, None, None, 1)
    assert not paired_bootstrap([0.25], [1.0]).excludes_zero()


def test_bootstrap_of_identical_and_of_all_discordant_pairs():
    same = paired_bootstrap([0.0, 1.0, 0.5, 1.0], [0.0, 1.0, 0.5, 1.0])
    assert same == Interval(0.0, 0.0, 0.0, 4) and not same.excludes_zero()
    better = paired_bootstrap([0.0] * 30, [1.0] * 30)  # every pair: a fails, b passes
    assert better == Interval(1.0, 1.0, 1.0, 30) and better.excludes_zero()
    worse = paired_bootstrap([1.0] * 30, [0.0] * 30)
    assert (worse.difference, worse.low, worse.high) == (-1.0, -1.0, -1.0) and worse.excludes_zero()


def test_bootstrap_refuses_unpaired_or_non_finite_values_and_bad_options():
    with pytest.raises(ValueError, match="paired values need the same number of cases: a has 2, b has 3"):
        paired_bootstrap([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="must be finite numbers"):
        paired_bootstrap([1.0, float("nan")], [1.0, 0.0])
    with pytest.raises(ValueError, match="resamples must be at least 1, not 0"):
        paired_bootstrap([1, 0], [1, 1], resamples=0)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        paired_bootstrap([1, 0], [1, 1], confidence=95)


# --- pass@k and pass^k -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 8))
def test_pass_at_k_and_pass_hat_k_equal_brute_force_enumeration_of_tries(n):
    for c in range(n + 1):
        tries = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            draws = list(itertools.combinations(tries, k))
            assert pass_at_k(n, c, k) == sum(any(d) for d in draws) / len(draws), (n, c, k)
            assert pass_hat_k(n, c, k) == sum(all(d) for d in draws) / len(draws), (n, c, k)


def test_pass_at_k_is_exact_where_floating_products_lose_digits():
    # 200 tries (the usual code-benchmark setting): 1 - C(163, 100) / C(200, 100) as an exact fraction
    assert pass_at_k(200, 37, 100) == float(1 - Fraction(math.comb(163, 100), math.comb(200, 100)))
    assert pass_at_k(200, 1, 1) == 1 / 200 and pass_hat_k(200, 199, 1) == 199 / 200
    assert pass_at_k(10**4, 1, 1) == 1e-4  # no cancellation in 1 - a ratio close to 1
    assert pass_hat_k(1000, 999, 500) == 0.5 and pass_hat_k(1000, 1000, 1000) == 1.0
    assert pass_at_k(5, 0, 5) == 0.0 and pass_at_k(5, 1, 5) == 1.0 and pass_hat_k(5, 4, 5) == 0.0


def test_pass_at_k_refuses_impossible_tries():
    with pytest.raises(ValueError, match=r"passes must be between 0 and the number of tries \(3\), not 4"):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError, match=r"k must be between 1 and the number of tries \(3\), not 0"):
        pass_hat_k(3, 1, 0)
    with pytest.raises(ValueError, match=r"k must be between 1 and the number of tries \(3\), not 4"):
        pass_at_k(3, 1, 4)


def _result(case: int, repetition: int, passed: bool) -> CaseResult:
    return CaseResult("run", "s", f"c{case:03d}", 1.0 if passed else 0.0, "pass" if passed else "fail", repetition=repetition)


def test_repeat_statistics_give_pass_at_k_and_pass_hat_k_by_brute_force():
    rng = random.Random(9)
    chance = {case: rng.random() for case in range(60)}
    outcomes = {case: [rng.random() < chance[case] for _ in range(4)] for case in range(60)}
    stats = RepeatStats(4)
    for repetition in range(4):
        for case in range(60):
            stats.add(_result(case, repetition, outcomes[case][repetition]))
    figures = stats.to_dict()
    for k in range(1, 5):
        draws = {case: list(itertools.combinations(tries, k)) for case, tries in outcomes.items()}
        at_k = math.fsum(sum(any(d) for d in ds) / len(ds) for ds in draws.values()) / 60
        hat_k = math.fsum(sum(all(d) for d in ds) / len(ds) for ds in draws.values()) / 60
        assert figures["pass_at_k"][str(k)] == pytest.approx(at_k, abs=1e-15)
        assert figures["pass_hat_k"][str(k)] == pytest.approx(hat_k, abs=1e-15)
    assert list(figures["pass_at_k"]) == ["1", "2", "3", "4"]
    # results read back in any order give the same figures to the last bit
    shuffled = RepeatStats(INFERRED)
    results = [_result(case, r, outcomes[case][r]) for case in range(60) for r in range(4)]
    for result in rng.sample(results, len(results)):
        shuffled.add(result)
    assert shuffled.to_dict() == figures


def test_an_interrupted_case_counts_only_for_the_k_it_reached():
    stats = RepeatStats(3)
    for repetition, passed in enumerate([True, False, True]):
        stats.add(_result(1, repetition, passed))
    stats.add(_result(2, 0, False))  # the run stopped after one try of case 2
    figures = stats.to_dict()
    assert figures["pass_at_k"] == {"1": (2 / 3 + 0) / 2, "2": 1.0, "3": 1.0}
    assert figures["pass_hat_k"] == {"1": (2 / 3 + 0) / 2, "2": 1 / 3, "3": 0.0}


# --- one comparison of two cells ---------------------------------------------------------------------

KEYS = {"a", "b", "n", "pass_rate", "mean_score", "mcnemar", "significant", "text"}
FIGURES = {"a", "b", "difference", "low", "high", "p_value"}


def _cells(n: int, rate_a: float, rate_b: float, seed: int) -> tuple[list[float], ...]:
    rng = random.Random(seed)
    passed_a = [float(rng.random() < rate_a) for _ in range(n)]
    passed_b = [float(rng.random() < rate_b) for _ in range(n)]
    scores_a = [0.5 + 0.5 * p - rng.randrange(8) / 64 for p in passed_a]
    scores_b = [0.5 + 0.5 * p - rng.randrange(8) / 64 for p in passed_b]
    return passed_a, passed_b, scores_a, scores_b


def test_a_pass_rate_difference_is_said_with_its_interval_and_mcnemar():
    passed_a, passed_b, scores_a, scores_b = _cells(40, 0.55, 0.95, 4)
    comparison = compare_cells("gpt-a", "gpt-b", passed_a, passed_b, scores_a, scores_b, repeated=False)
    assert set(comparison) == KEYS and set(comparison["pass_rate"]) == FIGURES == set(comparison["mean_score"])
    rate = paired_bootstrap(passed_a, passed_b)
    score = paired_bootstrap(scores_a, scores_b)  # each figure: the interval paired_bootstrap gives
    a_only = sum(x == 1 and y == 0 for x, y in zip(passed_a, passed_b))
    b_only = sum(x == 0 and y == 1 for x, y in zip(passed_a, passed_b))
    mcnemar_p = binomtest(a_only, a_only + b_only).pvalue
    assert comparison["pass_rate"] == {
        "a": sum(passed_a) / 40, "b": sum(passed_b) / 40, "difference": rate.difference, "low": rate.low, "high": rate.high,
        "p_value": pytest.approx(mcnemar_p, rel=1e-12),
    }
    assert comparison["mean_score"] == {
        "a": math.fsum(scores_a) / 40, "b": math.fsum(scores_b) / 40, "difference": score.difference, "low": score.low, "high": score.high,
        "p_value": sign_flip_p([b - a for a, b in zip(scores_a, scores_b)]),
    }
    assert comparison["mcnemar"] == {"a_only": a_only, "b_only": b_only, "p_value": mcnemar_p}
    assert comparison["a"] == "gpt-a" and comparison["b"] == "gpt-b" and comparison["n"] == 40
    assert rate.low > 0 and comparison["significant"] is True
    p = comparison["mcnemar"]["p_value"]
    assert comparison["text"] == (
        f"gpt-b vs gpt-a: pass rate {rate.difference * 100:+.1f} points (95% CI {rate.low * 100:+.1f} to {rate.high * 100:+.1f}), "
        + (f"McNemar p = {p:.3f}" if p >= 0.001 else "McNemar p < 0.001")
    )
    assert re.fullmatch(r"gpt-b vs gpt-a: pass rate \+\d+\.\d points \(95% CI \+\d+\.\d to \+\d+\.\d\), McNemar p (= 0\.\d{3}|< 0\.001)", comparison["text"])


def test_the_design_example_of_five_discordant_pairs_is_no_detectable_difference():
    passed_a = [1.0] * 15 + [0.0] * 5  # 15 of 20 pass in a, 18 of 20 in b: 1 case only a passes, 4 only b
    passed_b = [1.0] * 14 + [0.0] + [1.0] * 4 + [0.0]
    comparison = compare_cells("gpt-a/terse", "gpt-b/terse", passed_a, passed_b, passed_a, passed_b, repeated=False)
    assert comparison["mcnemar"] == {"a_only": 1, "b_only": 4, "p_value": 0.375}
    assert comparison["pass_rate"]["a"] == 0.75 and comparison["pass_rate"]["b"] == 0.9
    assert comparison["pass_rate"]["low"] <= 0 <= comparison["pass_rate"]["high"]
    assert comparison["significant"] is False
    assert comparison["text"] == (
        "gpt-b/terse vs gpt-a/terse: no detectable difference (n = 20): "
        f"pass rate +15.0 points (95% CI {comparison['pass_rate']['low'] * 100:+.1f} to {comparison['pass_rate']['high'] * 100:+.1f}), "
        "McNemar p = 0.375, not significant"
    )


def test_when_only_the_mean_score_moves_the_text_says_mean_score():
    passed = [1.0, 0.0] * 20
    scores_a = [0.8 if p else 0.3 for p in passed]
    scores_b = [s + (4 + i % 3) / 64 for i, s in enumerate(scores_a)]  # b scores higher on every case, passes the same
    comparison = compare_cells("gpt-a", "gpt-b", passed, passed, scores_a, scores_b, repeated=False)
    score = paired_bootstrap(scores_a, scores_b)
    assert comparison["pass_rate"]["difference"] == 0.0 and comparison["pass_rate"]["low"] == comparison["pass_rate"]["high"] == 0.0
    assert comparison["mcnemar"] == {"a_only": 0, "b_only": 0, "p_value": 1.0}
    assert comparison["significant"] is True and score.low > 0
    assert comparison["mean_score"]["p_value"] == 1 / 10_001  # no sign pattern of 10,000 is as extreme as all positive
    assert comparison["text"] == (
        f"gpt-b vs gpt-a: mean score {score.difference:+.3f} (95% CI {score.low:+.3f} to {score.high:+.3f}), sign-flip p < 0.001"
    )
    assert comparison["text"].startswith("gpt-b vs gpt-a: mean score +0.0")


def test_no_difference_is_said_with_the_number_of_cases():
    passed_a, _, scores_a, _ = _cells(40, 0.7, 0.7, 6)
    comparison = compare_cells("gpt-a", "gpt-b", passed_a, passed_a, scores_a, scores_a, repeated=False)
    assert comparison["text"] == (
        "gpt-b vs gpt-a: no detectable difference (n = 40): pass rate +0.0 points (95% CI +0.0 to +0.0), McNemar p = 1.000, not significant"
    )
    assert comparison["significant"] is False and comparison["pass_rate"]["difference"] == 0.0


def test_under_repeat_there_is_no_mcnemar_and_the_bootstrap_compares_pass_fractions():
    rng = random.Random(8)
    passed_a = [rng.randrange(4) / 3 for _ in range(50)]  # passes out of 3 tries
    passed_b = [min(1.0, p + 1 / 3) for p in passed_a]
    scores_a, scores_b = passed_a, passed_b
    comparison = compare_cells("a", "b", passed_a, passed_b, scores_a, scores_b, repeated=True)
    rate = paired_bootstrap(passed_a, passed_b)
    assert comparison["mcnemar"] is None
    assert (comparison["pass_rate"]["low"], comparison["pass_rate"]["high"]) == (rate.low, rate.high) and rate.low > 0
    assert comparison["pass_rate"]["p_value"] == 1 / 10_001  # every nonzero difference is positive
    assert comparison["text"] == (
        f"b vs a: pass rate {rate.difference * 100:+.1f} points (95% CI {rate.low * 100:+.1f} to {rate.high * 100:+.1f}), sign-flip p < 0.001"
    )
    # fractions without `repeated` still get no McNemar: it needs one pass or fail per case
    assert compare_cells("a", "b", passed_a, passed_b, scores_a, scores_b, repeated=False)["mcnemar"] is None


def test_cells_without_common_cases_compare_to_nothing():
    comparison = compare_cells("a", "b", [], [], [], [], repeated=False)
    empty = {"a": None, "b": None, "difference": None, "low": None, "high": None, "p_value": 1.0}
    assert comparison == {
        "a": "a", "b": "b", "n": 0, "pass_rate": empty, "mean_score": empty,
        "mcnemar": {"a_only": 0, "b_only": 0, "p_value": 1.0}, "significant": False,
        "text": "b vs a: no case finished in both",
    }
    one = compare_cells("a", "b", [0.0], [1.0], [0.0], [1.0], repeated=False)
    assert one["pass_rate"] == {"a": 0.0, "b": 1.0, "difference": 1.0, "low": None, "high": None, "p_value": 1.0}
    assert one["significant"] is False
    assert one["text"] == "b vs a: no detectable difference (n = 1): pass rate +100.0 points (one case: no interval), McNemar p = 1.000, not significant"
    assert one["mcnemar"] == {"a_only": 0, "b_only": 1, "p_value": 1.0}


def test_a_small_sample_is_not_called_a_difference_though_its_bootstrap_interval_excludes_zero():
    """Six cases, four of which only b passes: every bootstrap resample but a handful favours b, so
    the percentile interval excludes 0; the exact test (p = 0.125) says six cases cannot tell."""
    passed_a, passed_b = [1.0, 1.0, 0.0, 0.0, 0.0, 0.0], [1.0] * 6
    comparison = compare_cells("weak", "strong", passed_a, passed_b, passed_a, passed_b, repeated=False)
    assert comparison["pass_rate"]["low"] > 0
    assert comparison["pass_rate"]["p_value"] == comparison["mean_score"]["p_value"] == 0.125
    assert comparison["significant"] is False and comparison["text"] == (
        "strong vs weak: no detectable difference (n = 6): pass rate +66.7 points (95% CI +33.3 to +100.0), McNemar p = 0.125, not significant"
    )


@pytest.mark.parametrize("discordant", [(0, 4), (3, 9), (1, 15), (7, 7), (2, 14)])
def test_the_sign_flip_test_on_pass_fail_is_mcnemars_exact_test(discordant):
    a_only, b_only = discordant
    differences = [-1.0] * a_only + [1.0] * b_only + [0.0] * 11
    assert sign_flip_p(differences) == pytest.approx(mcnemar_exact(a_only, b_only), rel=1e-12)
    assert sign_flip_p(differences) == pytest.approx(binomtest(a_only, a_only + b_only).pvalue, rel=1e-12)


def test_the_sign_flip_test_matches_scipys_exact_permutation_test():
    from scipy.stats import permutation_test

    rng = random.Random(3)
    a = [rng.random() for _ in range(12)]
    b = [x + rng.uniform(-0.1, 0.3) for x in a]
    reference = permutation_test((a, b), lambda x, y: np.mean(y - x), permutation_type="samples", n_resamples=np.inf).pvalue
    assert sign_flip_p([y - x for x, y in zip(a, b)]) == pytest.approx(reference, rel=1e-9)


def test_the_sign_flip_test_samples_and_its_normal_limit_agree_with_the_exact_binomial():
    """Past 16 nonzero differences the test samples sign patterns (seeded), past 5,000 it uses the
    normal limit: both stay near McNemar's exact p on pass/fail differences."""
    sampled = [1.0] * 30 + [-1.0] * 15
    assert sign_flip_p(sampled) == sign_flip_p(sampled)  # seeded
    assert abs(sign_flip_p(sampled) - mcnemar_exact(15, 30)) < 0.01
    large = [1.0] * 3_100 + [-1.0] * 2_950
    assert abs(sign_flip_p(large) - mcnemar_exact(2_950, 3_100)) < 0.002


def test_misaligned_cells_are_refused_with_the_counts():
    with pytest.raises(ValueError, match="passed_a has 2, passed_b has 1"):
        compare_cells("a", "b", [1.0, 0.0], [1.0], [1.0, 0.0], [1.0, 0.0], repeated=False)
    with pytest.raises(ValueError, match="pass fractions and scores must be aligned: 2 cases vs 3"):
        compare_cells("a", "b", [1.0, 0.0], [1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 0.0, 1.0], repeated=False)
