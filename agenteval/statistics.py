"""Is the difference between two cells more than noise? Paired statistics over the same cases.

Two cells (target x prompt) that ran the same cases are compared case by case, never as two
independent samples: the spread between cases is usually far larger than the effect being
measured, and pairing removes it. The figures:

- `paired_bootstrap`: the difference of the means, b - a, and its percentile interval from
  resampling the cases with replacement. The generator is seeded with `SEED`, so the same data
  always give the same interval (a report of a run says what the run said).
- `mcnemar_exact`: McNemar's exact test on pass/fail: only the cases where the cells disagree
  carry information, and under "no difference" each of them is a fair coin.
- `sign_flip_p`: the paired permutation test of a mean difference: under "no difference" each
  case's difference is as likely to have the other sign. Exact for few cases, otherwise Monte
  Carlo (seeded) or, for thousands of cases, the normal limit. On pass/fail it is McNemar's test.
- `compare_metric`: one metric of two cells (an evaluator's score, a retrieval metric, a judge's
  criterion): its difference, interval and sign-flip p-value, as compare_cells gives the mean score's.
- `compare_cells`: all of it for one pair of cells, in the `comparisons` shape of the summary,
  with one sentence saying it in words. A difference is called real by a test (McNemar's, or the
  sign-flip test) at p < 0.05, never by the bootstrap interval alone: with a few dozen cases a
  percentile interval is too narrow, and it would call noise a difference.

Pure functions of numbers: numpy and the standard library only.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SEED = 20_240_901
"""The bootstrap's seed (numpy's default generator, PCG64): a run and a report of it give the same intervals."""
RESAMPLES = 10_000
CONFIDENCE = 0.95
_CHUNK_VALUES = 1 << 18
"""Resampled indices drawn at once (2 MB of int64, and as much for the values they pick): memory
stays flat however many cases there are, and the arrays stay near the processor's caches."""
_VALUES_PER_CASE = 32
"""Resample by counts of distinct values when there are at most n / 32 of them: a multinomial
category costs about 35 times one random index (benchmarks/bench_statistics.py)."""
ALPHA = 0.05
"""A difference is reported as real when its test gives p below this."""
_FLIPS_EXACT_UP_TO = 16
"""Nonzero differences up to which the sign-flip test enumerates all 2**m sign patterns."""
_FLIPS_SAMPLED_UP_TO = 5_000
"""Above this many nonzero differences the sign-flip test uses its normal limit (the sum of many
bounded independent signs): sampling 10,000 patterns would cost more than it adds."""
_EXACT_UP_TO = 20_000
"""McNemar counts summed as exact integers up to here; above it (math.comb takes seconds at 10**6) a saddle-point density."""


@dataclass(frozen=True)
class Interval:
    """A paired difference b - a and its confidence interval.

    `difference` is None without cases; `low`/`high` are None with fewer than two (one pair says
    nothing about how much the difference varies).
    """

    difference: float | None
    low: float | None
    high: float | None
    n: int
    confidence: float = CONFIDENCE

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0: a difference the resampling keeps."""
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def paired_bootstrap(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = SEED,
) -> Interval:
    """mean(b) - mean(a) over paired values, with the percentile interval of `resamples` bootstrap
    means of the per-pair differences (cases drawn with replacement, the pairs kept together).

    With `rng = numpy.random.default_rng(seed)`, each resample, in order, is one of two draws that
    give the same bootstrap distribution:
    - when the differences take few distinct values (at most n / 32: pass/fail, rule scores), a
      resample's mean depends only on how many cases of each value it picked, and those counts are
      one `rng.multinomial(n, frequencies / n)` draw (the values in ascending order), about
      R * values draws instead of R * n;
    - otherwise `rng.integers(0, n, size=n)`: the indices of the cases picked, in the differences
      sorted ascending.
    Either way the interval depends on the pairs, never on their order (a run whose cases finish
    in any order, and a report of its results, give the same interval).
    Drawing many resamples at once gives the same stream as drawing them one by one, so the result
    does not depend on how the work is chunked. The interval's ends are the (1 - confidence) / 2
    and (1 + confidence) / 2 quantiles of the sorted resampled means, linearly interpolated at
    position q * (resamples - 1).
    """
    _check_options(resamples, confidence)
    left, right = _paired(a, b)
    return _interval(right - left, _mean_difference(left, right), resamples, confidence, seed)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value: the discordant pairs (a passed and b failed, or the
    reverse) as a binomial with p = 1/2; the p-value is twice the smaller tail, at most 1, and 1.0
    when no pair disagrees.

    Exact at any size: the tail is the binomial density at the smaller count (an exact integer
    ratio up to 20,000 pairs, the saddle-point form of Loader (2000) above) times the sum of the
    ratios of successive terms, so nothing overflows and no normal approximation is used.
    """
    a_only, b_only = _count(a_only, "a_only"), _count(b_only, "b_only")
    total = a_only + b_only
    smaller = min(a_only, b_only)
    if total == 0 or 2 * smaller == total:
        return 1.0
    tail = _binomial_half_density(smaller, total) * _tail_factor(smaller, total)
    return min(1.0, 2.0 * tail)


def sign_flip_p(differences: Sequence[float] | np.ndarray, *, resamples: int = RESAMPLES, seed: int = SEED) -> float:
    """Two-sided p-value of the paired sign-flip (permutation) test that the mean difference is 0.

    Zero differences carry no sign and drop out. With m nonzero ones: every one of the 2**m sign
    patterns when m <= 16 (exact); else `resamples` random patterns, seeded, counted as
    (1 + as extreme) / (1 + resamples) so the p-value is never 0; past 5,000 the normal limit of the
    signed sum. On 0/1 differences (pass/fail) the exact form is McNemar's exact test. The signs are
    drawn over the differences sorted ascending, so the p-value depends on the differences, never on
    their order (a run whose cases finish in any order, and a report of its results, agree).
    """
    values = np.asarray(differences, dtype=np.float64).reshape(-1)
    if not np.isfinite(values).all():
        raise ValueError("differences must be finite numbers")
    values = np.sort(values[values != 0])  # drawn over in ascending order: the cases decide, not the order they finished in
    m = len(values)
    if m == 0:
        return 1.0
    observed = abs(math.fsum(values.tolist()))
    tolerance = 1e-9 * max(1.0, observed)  # sums of the same magnitudes, added in another order
    if m <= _FLIPS_EXACT_UP_TO:
        patterns = ((np.arange(1 << m)[:, None] >> np.arange(m)) & 1) * 2 - 1
        sums = np.abs(patterns @ values)
        return float(np.count_nonzero(sums >= observed - tolerance)) / (1 << m)
    if m > _FLIPS_SAMPLED_UP_TO:
        z = observed / math.sqrt(math.fsum((values * values).tolist()))
        return math.erfc(z / math.sqrt(2.0))
    rng = np.random.default_rng(seed)
    magnitudes, counts = np.unique(np.abs(values), return_counts=True)
    extreme = 0
    rows = max(1, _CHUNK_VALUES // m)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        if len(magnitudes) <= m // _VALUES_PER_CASE:  # how many of each magnitude turn positive: binomial
            positive = rng.binomial(counts, 0.5, size=(stop - start, len(magnitudes)))
            sums = np.abs((2 * positive - counts) @ magnitudes)
        else:
            signs = rng.integers(0, 2, size=(stop - start, m), dtype=np.int8) * 2 - 1
            sums = np.abs(signs @ values)
        extreme += int(np.count_nonzero(sums >= observed - tolerance))
    return (1 + extreme) / (1 + resamples)


def compare_cells(
    label_a: str,
    label_b: str,
    passed_a: Sequence[float] | np.ndarray,
    passed_b: Sequence[float] | np.ndarray,
    scores_a: Sequence[float] | np.ndarray,
    scores_b: Sequence[float] | np.ndarray,
    *,
    repeated: bool,
) -> dict[str, Any]:
    """One entry of the summary's `comparisons`: cell b against baseline a, over the cases both
    finished (the four sequences are aligned by index: one case per position).

    `passed_*` are per-case pass fractions (1 or 0 for one try; passes / tries under --repeat),
    `scores_*` per-case mean scores. Each difference has its bootstrap interval and a p-value:
    McNemar's exact test for one pass/fail per case, else (under --repeat, or for scores) the
    sign-flip test. `significant` is True when the pass-rate difference has p < 0.05, or, failing
    that, the mean-score difference has; the text says which. `mcnemar` is None under --repeat (or
    whenever a pass fraction is neither 0 nor 1).
    """
    pass_a, pass_b = _paired(passed_a, passed_b, "passed_a", "passed_b")
    score_a, score_b = _paired(scores_a, scores_b, "scores_a", "scores_b")
    if len(pass_a) != len(score_a):
        raise ValueError(f"pass fractions and scores must be aligned: {len(pass_a)} cases vs {len(score_a)}")
    n = len(pass_a)
    pass_rate = _interval(pass_b - pass_a, _mean_difference(pass_a, pass_b), RESAMPLES, CONFIDENCE, SEED)
    mean_score = _interval(score_b - score_a, _mean_difference(score_a, score_b), RESAMPLES, CONFIDENCE, SEED)
    mcnemar = None
    if not repeated and _binary(pass_a) and _binary(pass_b):
        a_only = int(np.count_nonzero((pass_a == 1) & (pass_b == 0)))
        b_only = int(np.count_nonzero((pass_a == 0) & (pass_b == 1)))
        mcnemar = {"a_only": a_only, "b_only": b_only, "p_value": mcnemar_exact(a_only, b_only)}
    pass_p = mcnemar["p_value"] if mcnemar is not None else sign_flip_p(pass_b - pass_a)
    score_p = sign_flip_p(score_b - score_a)
    heading = f"{label_b} vs {label_a}:"
    pass_test = "McNemar p" if mcnemar is not None else "sign-flip p"
    if pass_p < ALPHA and pass_rate.low is not None:
        text = f"{heading} {_said('pass rate', pass_rate, pass_test, pass_p)}"
    elif score_p < ALPHA and mean_score.low is not None:
        text = f"{heading} {_said('mean score', mean_score, 'sign-flip p', score_p)}"
    elif n == 0:
        text = f"{heading} no case finished in both"
    else:  # the figures all the same, so a table of 100% against 70% never reads as a contradiction
        shown = ("mean score", mean_score, "sign-flip p", score_p) if pass_rate.difference == 0 and mean_score.difference else (
            "pass rate", pass_rate, pass_test, pass_p)
        text = f"{heading} no detectable difference (n = {n}): {_said(*shown)}, not significant"
    return {
        "a": label_a,
        "b": label_b,
        "n": n,
        "pass_rate": {**_figures(pass_a, pass_b, pass_rate), "p_value": pass_p},
        "mean_score": {**_figures(score_a, score_b, mean_score), "p_value": score_p},
        "mcnemar": mcnemar,
        "significant": (pass_p < ALPHA or score_p < ALPHA) and n >= 2,
        "text": text,
    }


def compare_metric(name: str, a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """One metric (an evaluator's score, a criterion such as a retrieval metric) of cell b against
    baseline a, over the cases where both have it (aligned by index): the means, the difference
    with its bootstrap interval, and the sign-flip test's p-value, as `mean_score` in compare_cells."""
    left, right = _paired(a, b, "a", "b")
    n = len(left)
    interval = _interval(right - left, _mean_difference(left, right), RESAMPLES, CONFIDENCE, SEED)
    p = sign_flip_p(right - left)
    significant = p < ALPHA and n >= 2 and interval.low is not None
    said = _said("mean score", interval, "sign-flip p", p).removeprefix("mean score ")
    return {
        "name": name, "n": n, **_figures(left, right, interval), "p_value": p, "significant": significant,
        "text": f"{name} {said}" + ("" if significant else ", not significant"),
    }


def errored_comparison(label_a: str, label_b: str, n: int, errored: Sequence[str]) -> dict[str, Any]:
    """The `comparisons` entry of two cells when every case of one (or both) errored: no figures,
    since 0% against 70% would read as a difference of the models when one of them never answered."""
    which = " and ".join(errored)
    return {
        "a": label_a, "b": label_b, "n": n, "pass_rate": None, "mean_score": None, "mcnemar": None, "significant": False,
        "not_compared": f"every case of {which} errored",
        "text": f"{label_b} vs {label_a}: not compared, every case of {which} errored",
    }


def _interval(differences: np.ndarray, centre: float | None, resamples: int, confidence: float, seed: int) -> Interval:
    """The percentile bootstrap interval of the mean of `differences` (see paired_bootstrap)."""
    n = len(differences)
    if n < 2:
        return Interval(centre, None, None, n, confidence)
    rng = np.random.default_rng(seed)
    values, counts = np.unique(differences, return_counts=True)
    if len(values) <= n // _VALUES_PER_CASE:
        means = _multinomial_means(rng, values, counts, n, resamples)
    else:  # in ascending order: the interval depends on the cases, not on the order they finished in
        means = _resampled_means(rng, np.sort(differences), resamples)
    means.sort()
    lower, upper = (1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0
    return Interval(centre, _quantile(means, lower), _quantile(means, upper), n, confidence)


def _resampled_means(rng: np.random.Generator, differences: np.ndarray, resamples: int) -> np.ndarray:
    """Means of `resamples` draws of n cases with replacement, by index, a chunk of resamples at a time."""
    n = len(differences)
    means = np.empty(resamples)
    rows = max(1, _CHUNK_VALUES // n)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        # `picks` lives until the next chunk's is drawn: freeing both arrays of a chunk at once let
        # glibc's allocator hand their pages back and fault them in again, 2.4 times slower.
        picks = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = differences[picks].mean(axis=1)
    return means


def _multinomial_means(rng: np.random.Generator, values: np.ndarray, counts: np.ndarray, n: int, resamples: int) -> np.ndarray:
    """The same resampling told by counts: how many cases of each distinct value a resample holds
    is multinomial, and the mean is sum(count * value) / n."""
    means = np.empty(resamples)
    rows = max(1, _CHUNK_VALUES // len(values))
    frequencies = counts / n
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        means[start:stop] = rng.multinomial(n, frequencies, size=stop - start) @ values / n
    return means


def _quantile(ordered: np.ndarray, q: float) -> float:
    """The q-quantile of sorted values, linear between the two nearest (numpy's default method)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    low = float(ordered[below])
    if below + 1 >= len(ordered):
        return low
    return low + (position - below) * (float(ordered[below + 1]) - low)


def _mean_difference(a: np.ndarray, b: np.ndarray) -> float | None:
    """sum(b - a) / n, the sum exact and rounded once: on counts the nearest float to the decimal
    (70% - 100% is -0.3, never -0.30000000000000004)."""
    return math.fsum(b.tolist() + (-a).tolist()) / len(a) if len(a) else None


def _paired(a: Any, b: Any, name_a: str = "a", name_b: str = "b") -> tuple[np.ndarray, np.ndarray]:
    left = np.asarray(a, dtype=np.float64).reshape(-1)
    right = np.asarray(b, dtype=np.float64).reshape(-1)
    if len(left) != len(right):
        raise ValueError(f"paired values need the same number of cases: {name_a} has {len(left)}, {name_b} has {len(right)}")
    if not (np.isfinite(left).all() and np.isfinite(right).all()):
        raise ValueError(f"paired values must be finite numbers: {name_a} or {name_b} holds NaN or infinity")
    return left, right


def _check_options(resamples: int, confidence: float) -> None:
    if operator.index(resamples) < 1:
        raise ValueError(f"resamples must be at least 1, not {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), not {confidence}")


def _binary(values: np.ndarray) -> bool:
    return bool(((values == 0) | (values == 1)).all())


def _figures(a: np.ndarray, b: np.ndarray, interval: Interval) -> dict[str, float | None]:
    n = len(a)
    return {
        "a": math.fsum(a.tolist()) / n if n else None,
        "b": math.fsum(b.tolist()) / n if n else None,
        "difference": interval.difference,
        "low": interval.low,
        "high": interval.high,
    }


def _said(what: str, interval: Interval, test: str, p: float) -> str:
    """`pass rate -30.0 points (95% CI -60.0 to +0.0), McNemar p = 0.250`: a rate in points, a score as it is."""
    def figure(value: float | None) -> str:
        return _points(value) if what == "pass rate" else f"{value or 0.0:+.3f}"

    unit = " points" if what == "pass rate" else ""
    spread = f"95% CI {figure(interval.low)} to {figure(interval.high)}" if interval.low is not None else "one case: no interval"
    return f"{what} {figure(interval.difference)}{unit} ({spread}), {test} {_p_value(p)}"


def _points(rate: float | None) -> str:
    return f"{(rate or 0.0) * 100:+.1f}"


def _p_value(p: float) -> str:
    return f"= {p:.3f}" if p >= 0.001 else "< 0.001"


def _count(value: int, name: str) -> int:
    count = operator.index(value)
    if count < 0:
        raise ValueError(f"{name} counts pairs: it cannot be negative ({count})")
    return count


# --- the binomial tail with p = 1/2, exact at any size -------------------------------------------


def _binomial_half_density(k: int, n: int) -> float:
    """C(n, k) / 2**n for k <= n / 2, to a few units in the last place (0.0 once it underflows)."""
    if n <= _EXACT_UP_TO or k <= 30:
        return math.comb(n, k) / (1 << n)  # int / int is correctly rounded in Python, whatever the size
    # Loader's saddle-point form: exp(-stirlerr terms - deviances) * sqrt(n / (2 pi k (n - k)));
    # every term is O(1) or a deviance computed without cancellation (k > 30 here).
    half = n / 2.0
    exponent = _stirlerr(n) - _stirlerr(k) - _stirlerr(n - k) - _bd0(k, half) - _bd0(n - k, half)
    return math.exp(exponent) * math.sqrt(n / (2.0 * math.pi * k * (n - k)))


def _tail_factor(k: int, n: int) -> float:
    """sum_{j <= k} C(n, j) / C(n, k): successive terms shrink by j / (n - j + 1), so the sum
    stops once they no longer change it."""
    total = term = 1.0
    for j in range(k, 0, -1):
        term *= j / (n - j + 1)
        total += term
        if term < total * 1e-17:
            break
    return total


_STIRLERR_SERIES = (1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188)


def _stirlerr(n: int) -> float:
    """log(n!) - log(sqrt(2 pi n) (n / e)**n): Stirling's series, for n > 30 (where five terms are exact in double precision)."""
    s0, s1, s2, s3, s4 = _STIRLERR_SERIES
    square = float(n) * n
    return (s0 - (s1 - (s2 - (s3 - s4 / square) / square) / square) / square) / n


def _bd0(x: int, mean: float) -> float:
    """x log(x / mean) + mean - x (the binomial deviance term), without cancellation when x is near mean."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        total = (x - mean) * v
        power = 2.0 * x * v
        j = 1
        while True:
            power *= v * v
            updated = total + power / (2 * j + 1)
            if updated == total:
                return total
            total = updated
            j += 1
    return x * math.log(x / mean) + mean - x
