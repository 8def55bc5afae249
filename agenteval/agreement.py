"""How far can a judge be trusted? Agreement between automatic verdicts and people's reviews.

Pure functions of labels (numpy and the standard library only), beside `statistics`:

- `cohen_kappa`: two raters, chance-corrected; with `weights` ("linear", "quadratic") the
  weighted kappa of a graded scale. The same figures as scikit-learn's `cohen_kappa_score`.
- `fleiss_kappa`: any fixed number of raters per case (a judge's repetitions, for its
  self-consistency).
- `krippendorff_alpha`: any raters, some missing (the judge beside several reviewers), on a
  nominal, ordinal or interval scale. The same figures as the `krippendorff` package.
- `judge_agreement`: all of it for one evaluator or criterion: raw agreement, the humans' base
  rate and the agreement a constant answer would get, the confusion table, a 95% interval of
  kappa from resampling cases (seeded; it depends only on the counts, so never on case order),
  and for graded scales the weighted kappa and mean absolute difference. Fewer than
  `MIN_CASES` reviewed cases is called a small sample rather than given a precise-looking kappa.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

SEED = 20_240_901
RESAMPLES = 2_000
CONFIDENCE = 0.95
MIN_CASES = 20
"""Below this many reviewed cases a kappa's interval spans most of [-1, 1]: say so, not the number."""

Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval"]


def confusion(first: Sequence[Hashable], second: Sequence[Hashable], labels: Sequence[Hashable] | None = None) -> np.ndarray:
    """Counts of (first's label, second's label): rows are the first rater, columns the second."""
    if len(first) != len(second):
        raise ValueError(f"the raters rated {len(first)} and {len(second)} cases; give one label each per case")
    labels = _labels(first, second, labels)
    index = {label: position for position, label in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for a, b in zip(first, second):
        if a in index and b in index:
            table[index[a], index[b]] += 1
    return table


def kappa_from_table(table: np.ndarray, weights: Weights = None) -> float | None:
    """Cohen's kappa of a confusion table; None when chance agreement is already complete (both
    raters gave one and the same label to every case: kappa is undefined)."""
    table = np.asarray(table, dtype=float)
    total = table.sum()
    if total == 0:
        return None
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / total
    distance = _distance(len(table), weights)
    disagreement_expected = float((distance * expected).sum())
    if disagreement_expected == 0:
        return None
    return 1.0 - float((distance * table).sum()) / disagreement_expected


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable], labels: Sequence[Hashable] | None = None,
                weights: Weights = None) -> float | None:
    """Cohen's kappa of two raters over the same cases (weighted by label distance for graded scales)."""
    return kappa_from_table(confusion(first, second, labels), weights)


def fleiss_kappa(counts: np.ndarray | Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa from a cases x labels table of how many raters gave each label; every case
    must have the same number of ratings. None when every rating is the same label."""
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or len(table) == 0:
        raise ValueError("fleiss_kappa takes a cases x labels table of counts")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("every case needs the same number of ratings, at least 2")
    n = raters[0]
    shares = table.sum(axis=0) / table.sum()
    per_case = ((table * table).sum(axis=1) - n) / (n * (n - 1))
    chance = float((shares * shares).sum())
    if chance == 1.0:
        return None
    return (float(per_case.mean()) - chance) / (1.0 - chance)


def krippendorff_alpha(ratings: Sequence[Sequence[Any]] | np.ndarray, level: Level = "nominal") -> float | None:
    """Krippendorff's alpha of raters x cases ratings (None or NaN: not rated). Cases with fewer
    than two ratings carry nothing; None when there is no variation to agree on."""
    rows = [[_missing_to_nan(value) for value in row] for row in ratings]
    data = np.asarray(rows, dtype=float)
    if data.ndim != 2:
        raise ValueError("krippendorff_alpha takes raters x cases ratings")
    values = np.unique(data[~np.isnan(data)])
    if len(values) < 2:
        return None
    index = {value: position for position, value in enumerate(values)}
    per_case = np.zeros((data.shape[1], len(values)))
    for case in range(data.shape[1]):
        for value in data[:, case]:
            if not math.isnan(value):
                per_case[case, index[value]] += 1
    rated = per_case.sum(axis=1)
    per_case = per_case[rated >= 2]
    rated = rated[rated >= 2]
    if len(per_case) == 0:
        return None
    coincidence = np.einsum("uc,uk->ck", per_case / (rated - 1)[:, None], per_case)
    coincidence -= np.diag((per_case / (rated - 1)[:, None]).sum(axis=0))
    totals = coincidence.sum(axis=0)
    n = totals.sum()
    distance = _alpha_distance(values, totals, level)
    expected = float((np.outer(totals, totals) * distance).sum())
    if expected == 0:
        return None
    return float(1.0 - (n - 1) * float((coincidence * distance).sum()) / expected)


def kappa_interval(table: np.ndarray, weights: Weights = None, *, resamples: int = RESAMPLES,
                   confidence: float = CONFIDENCE, seed: int = SEED) -> tuple[float | None, float | None]:
    """The percentile interval of kappa from resampling the cases with replacement. Resampling n
    cases is drawing the table's counts from a multinomial over its cells, so the interval depends
    only on the counts (never on the order of the cases) and costs the same for any n."""
    table = np.asarray(table, dtype=np.int64)
    total = int(table.sum())
    if total < 2:
        return None, None
    rng = np.random.default_rng(seed)
    drawn = rng.multinomial(total, table.ravel() / total, size=resamples).reshape(resamples, *table.shape).astype(float)
    rows, columns = drawn.sum(axis=2), drawn.sum(axis=1)
    expected = np.einsum("ri,rj->rij", rows, columns) / total
    distance = _distance(len(table), weights)
    disagreement_expected = (expected * distance).sum(axis=(1, 2))
    observed = (drawn * distance).sum(axis=(1, 2))
    defined = disagreement_expected > 0
    if not defined.any():
        return None, None
    kappas = np.sort(1.0 - observed[defined] / disagreement_expected[defined])
    tail = (1.0 - confidence) / 2
    return float(np.quantile(kappas, tail)), float(np.quantile(kappas, 1.0 - tail))


@dataclass(frozen=True)
class Agreement:
    """One evaluator's (or criterion's) agreement with the people who reviewed its cases."""

    name: str
    cases: int  # cases with a judge label and a human consensus
    labels: list[Any]
    agreement: float | None  # raw: the share of cases where judge and humans gave the same label
    kappa: float | None
    low: float | None
    high: float | None
    base_rate: float | None  # the share of cases the humans passed (binary scales)
    constant_agreement: float | None  # what always giving the humans' commoner label would agree
    table: list[list[int]]  # judge label (rows) x human label (columns), in `labels` order
    graded: bool = False
    weighted_kappa: float | None = None
    mean_absolute_difference: float | None = None
    raters: int = 2  # the judge and the most reviewers any case had
    alpha: float | None = None  # Krippendorff's alpha over the judge and every reviewer (when raters > 2)
    split: int = 0  # cases whose reviewers were evenly split (left out of kappa)
    self_consistency: float | None = None  # Fleiss' kappa over the judge's repetitions (--repeat)
    notes: list[str] = field(default_factory=list)

    @property
    def small_sample(self) -> bool:
        return self.cases < MIN_CASES

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "cases": self.cases, "small_sample": self.small_sample, "labels": self.labels,
            "agreement": self.agreement, "kappa": self.kappa, "kappa_interval": [self.low, self.high],
            "base_rate": self.base_rate, "constant_agreement": self.constant_agreement, "confusion": self.table,
            "graded": self.graded, "weighted_kappa": self.weighted_kappa, "mean_absolute_difference": self.mean_absolute_difference,
            "raters": self.raters, "krippendorff_alpha": self.alpha, "split": self.split, "self_consistency": self.self_consistency,
        }

    def sentence(self) -> str:
        """The figure in words, with the caution a small sample needs."""
        if self.cases == 0:
            return f"{self.name}: no reviewed case has a verdict from it"
        agreed = f"agrees on {_percent(self.agreement)} of {self.cases} reviewed case{'s' if self.cases != 1 else ''}"
        constant = f" (a constant answer would agree on {_percent(self.constant_agreement)})" if self.constant_agreement is not None else ""
        if self.small_sample:
            return f"{self.name}: {agreed}{constant}; too few for a kappa (fewer than {MIN_CASES} reviewed cases)"
        if self.kappa is None:
            return f"{self.name}: {agreed}{constant}; kappa undefined (every case got one label)"
        interval = f" [{self.low:.2f}, {self.high:.2f}]" if self.low is not None and self.high is not None else ""
        return f"{self.name}: {agreed}{constant}; kappa {self.kappa:.2f}{interval} ({strength(self.kappa)})"


def strength(kappa: float) -> str:
    """Landis and Koch's words for a kappa, which people quote."""
    if kappa <= 0:
        return "no better than chance"
    for bound, word in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


def judge_agreement(name: str, ratings: Sequence[tuple[Any, Sequence[Any]]], *, graded: bool = False,
                    labels: Sequence[Any] | None = None, repetitions: Sequence[Sequence[Any]] | None = None) -> Agreement:
    """Agreement of one evaluator with people: `ratings` has per case the judge's label and every
    reviewer's label (a pass/fail verdict, or a score level on a graded scale). A case's humans
    count as their majority (on a graded scale, their mean level); an even split of labels leaves
    the case out of kappa (and is counted). With
    `repetitions` (the judge's labels per case over --repeat), its self-consistency beside."""
    judged, consensus, split, most = [], [], 0, 1
    for judge, humans in ratings:
        humans = [label for label in humans if label is not None]
        if judge is None or not humans:
            continue
        most = max(most, len(humans))
        majority = _middle(humans) if graded else _majority(humans)
        if majority is None:
            split += 1
            continue
        judged.append(judge)
        consensus.append(majority)
    ordered = _labels(judged, consensus, labels)
    table = confusion(judged, consensus, ordered)
    cases = int(table.sum())
    agreement = float(np.trace(table)) / cases if cases else None
    kappa = kappa_from_table(table) if cases else None
    low, high = kappa_interval(table) if cases >= 2 and kappa is not None else (None, None)
    human_counts = table.sum(axis=0)
    base_rate = constant = None
    if cases:
        constant = float(human_counts.max()) / cases
        if set(ordered) <= {"pass", "fail"} and "pass" in ordered:
            base_rate = float(human_counts[ordered.index("pass")]) / cases
    weighted = mad = None
    if graded and cases:
        weighted = kappa_from_table(table, "linear")
        numeric = [float(label) for label in ordered]
        mad = float(sum(table[i, j] * abs(numeric[i] - numeric[j]) for i in range(len(ordered)) for j in range(len(ordered)))) / cases
    alpha = None
    if most > 1:
        rows = [[judge for judge, _ in ratings]] + [[_nth(humans, k) for _, humans in ratings] for k in range(most)]
        codes = {label: position for position, label in enumerate(ordered)}
        numeric_rows = [[None if value is None or value not in codes else (float(value) if graded else codes[value]) for value in row] for row in rows]
        alpha = krippendorff_alpha(numeric_rows, "interval" if graded else "nominal")
    consistency = None
    if repetitions:
        consistency = self_consistency(repetitions, ordered)
    return Agreement(
        name, cases, list(ordered), agreement, kappa, low, high, base_rate, constant, table.tolist(), graded, weighted, mad,
        most + 1, alpha, split, consistency,
    )


def self_consistency(repetitions: Sequence[Sequence[Any]], labels: Sequence[Any] | None = None) -> float | None:
    """Fleiss' kappa of a judge with itself over repeated runs of the same cases (cases with the
    usual number of repetitions; None with fewer than two repetitions)."""
    usual = Counter(len(labels_of_case) for labels_of_case in repetitions if len(labels_of_case) >= 2).most_common(1)
    if not usual:
        return None
    n = usual[0][0]
    kept = [row for row in repetitions if len(row) == n]
    ordered = list(labels) if labels else sorted({label for row in kept for label in row}, key=_order)
    for row in kept:
        for label in row:
            if label not in ordered:
                ordered.append(label)
    index = {label: position for position, label in enumerate(ordered)}
    table = np.zeros((len(kept), len(ordered)))
    for case, row in enumerate(kept):
        for label in row:
            table[case, index[label]] += 1
    return fleiss_kappa(table)


def _middle(scores: Sequence[Any]) -> Any:
    """Several reviewers' scores on a graded scale: their mean, rounded to a whole level when every score is whole."""
    mean = sum(float(score) for score in scores) / len(scores)
    whole = all(float(score).is_integer() for score in scores)
    return float(math.floor(mean + 0.5)) if whole else mean


def _majority(labels: Sequence[Any]) -> Any:
    counts = Counter(labels).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return counts[0][0]


def _nth(items: Sequence[Any], k: int) -> Any:
    kept = [item for item in items if item is not None]
    return kept[k] if k < len(kept) else None


def _labels(first: Sequence[Any], second: Sequence[Any], labels: Sequence[Any] | None) -> list[Any]:
    if labels is not None:
        return list(labels)
    return sorted(set(first) | set(second), key=_order)


def _order(label: Any) -> tuple[int, Any]:
    if label == "fail":
        return (0, 0)
    if label == "pass":
        return (0, 1)
    if isinstance(label, (int, float)):
        return (1, float(label))
    return (2, str(label))


def _distance(size: int, weights: Weights) -> np.ndarray:
    positions = np.arange(size)
    gap = np.abs(positions[:, None] - positions[None, :]).astype(float)
    if weights is None:
        return (gap > 0).astype(float)
    if weights == "linear":
        return gap
    if weights == "quadratic":
        return gap * gap
    raise ValueError(f"weights are linear, quadratic or None, got {weights!r}")


def _alpha_distance(values: np.ndarray, totals: np.ndarray, level: Level) -> np.ndarray:
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if level == "ordinal":
        cumulative = np.cumsum(totals)
        between = cumulative[None, :] - cumulative[:, None] + totals[:, None]  # sum of totals from c to k
        between = np.where(np.arange(len(values))[None, :] >= np.arange(len(values))[:, None], between, between.T)
        return (between - (totals[:, None] + totals[None, :]) / 2) ** 2
    raise ValueError(f"level is nominal, ordinal or interval, got {level!r}")


def _missing_to_nan(value: Any) -> float:
    if value is None:
        return math.nan
    return float(value)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
