"""`--repeat N`: how much a nondeterministic target's results move between runs of the same cases.

Each repetition is one sample of the pass rate and the mean score; the summary gives their mean,
standard deviation and a 95% confidence interval (Student's t), and lists the cases whose verdict
changed between repetitions (flaky). A case's counters are dropped once its N runs are in, so
memory follows the cases in flight and the flaky ones, not the dataset.

pass@k and pass^k (k = 1..N) say what the spread does not: how likely a user who tries k times
gets at least one pass, or a pass every time. Each is the mean over cases of the unbiased
per-case estimator (agenteval.tries) from the case's runs and passes; a closed case adds one
count to a table keyed by (runs, passes): a counter per outcome seen, never one per case.

`agenteval report` does not know N before the end of its input: with `repeat=INFERRED` N is one
more than the highest `repetition` seen, and each case keeps one packed int of counts until then
(O(cases), never the results). The flaky cases listed are the FLAKY_SHOWN lowest by (pass rate,
case id), whatever order the cases finish in, so a run and a report of its results list the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agenteval.tries import pass_at_k, pass_hat_k

if TYPE_CHECKING:
    from typing import Protocol

    class CaseResult(Protocol):
        """What the repeat statistics read of a case's result (agenteval.results.CaseResult, which
        sits above this module and keeps a RepeatStats)."""

        case_id: str
        repetition: int
        verdict: str
        score: float

# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom; 1.96 beyond
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)
FLAKY_SHOWN = 100
INFERRED = 0
"""`repeat` for results read back: N is whatever the `repetition` numbers show."""
_PACK = 1 << 32  # a case's counts in one int: runs * _PACK + passes


def t95(degrees_of_freedom: int) -> float:
    return _T95[degrees_of_freedom - 1] if degrees_of_freedom <= len(_T95) else 1.96


def spread(samples: list[float]) -> dict[str, Any]:
    """Mean, sample standard deviation and the 95% confidence interval of the mean."""
    n = len(samples)
    mean = math.fsum(samples) / n
    if n < 2:
        return {"mean": mean, "std": None, "ci95": None}
    std = math.sqrt(math.fsum((x - mean) ** 2 for x in samples) / (n - 1))
    half = t95(n - 1) * std / math.sqrt(n)
    return {"mean": mean, "std": std, "ci95": [mean - half, mean + half]}


class RepeatStats:
    def __init__(self, repeat: int = 1) -> None:
        self.repeat = repeat
        self._inferred = repeat == INFERRED
        self._runs: dict[int, list[float]] = {}  # repetition -> [cases, passed, score sum]
        self._open: dict[str, int] = {}  # case id -> runs seen * _PACK + passes
        self.flaky: list[dict[str, Any]] = []
        self.flaky_count = 0
        self._outcomes: dict[int, int] = {}  # runs * _PACK + passes -> cases closed with them

    def add(self, result: CaseResult) -> None:
        if not self._inferred and self.repeat < 2:
            return
        if self._inferred and result.repetition >= self.repeat:
            self.repeat = result.repetition + 1
        counters = self._runs.setdefault(result.repetition, [0, 0, 0.0])
        passed = result.verdict == "pass"
        counters[0] += 1
        counters[1] += passed
        counters[2] += result.score
        seen = self._open.get(result.case_id, 0) + _PACK + passed
        if not self._inferred and seen // _PACK >= self.repeat:
            self._open.pop(result.case_id, None)
            self._close(result.case_id, seen)
        else:
            self._open[result.case_id] = seen

    def _close(self, case_id: str, seen: int) -> None:
        runs, passes = divmod(seen, _PACK)
        self._outcomes[seen] = self._outcomes.get(seen, 0) + 1
        if 0 < passes < runs:
            self.flaky_count += 1
            self.flaky.append({"case_id": case_id, "runs": runs, "passed": passes, "pass_rate": passes / runs})
            if len(self.flaky) >= 2 * FLAKY_SHOWN:  # keep the lowest: the same ones in any order of arrival
                self.flaky = _lowest(self.flaky)

    def to_dict(self) -> dict[str, Any] | None:
        if self.repeat < 2 or not self._runs:
            return None
        for case_id, seen in self._open.items():  # an interrupted run, or results read back: judge what is in
            self._close(case_id, seen)
        self._open.clear()
        runs = [self._runs[r] for r in sorted(self._runs)]
        return {
            "repeat": self.repeat,
            "pass_rate": spread([passed / cases for cases, passed, _ in runs]),
            "mean_score": spread([score / cases for cases, _, score in runs]),
            "flaky_cases": self.flaky_count,
            "flaky": _lowest(self.flaky),
            "pass_at_k": self._per_k(pass_at_k),
            "pass_hat_k": self._per_k(pass_hat_k),
        }

    def _per_k(self, estimator: Callable[[int, int, int], float]) -> dict[str, float | None]:
        """{"1": ..., "N": ...}: the mean over cases of estimator(runs, passes, k). A case with
        fewer than k runs (an interrupted run) has no estimate for k; None when no case has k runs."""
        outcomes = sorted(self._outcomes.items())  # one order of summation, whatever the order of arrival
        means: dict[str, float | None] = {}
        for k in range(1, self.repeat + 1):
            counted = [(divmod(seen, _PACK), cases) for seen, cases in outcomes if seen // _PACK >= k]
            total = sum(cases for _, cases in counted)
            means[str(k)] = math.fsum(cases * estimator(runs, passes, k) for (runs, passes), cases in counted) / total if total else None
        return means


def _lowest(flaky: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(flaky, key=lambda row: (row["pass_rate"], row["case_id"]))[:FLAKY_SHOWN]
