"""`agenteval compare BASE NEW`: what changed between two runs of one suite, and whether it may merge;
`agenteval compare RUN --cells A B`: the same between two cells (target, prompt) of one run.

The gate looks at every case, never at the mean: one case going from pass to fail is a
regression even when ten others improve. Cases are paired by case id and repetition (and, between
two matrix runs, by cell); the paired statistics (agenteval.statistics) say whether a difference is
more than noise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agenteval.paths import MISSING
from agenteval.reports.cell_table import comparison_group
from agenteval.reports.failures import answer_line, criteria_lines, field_rows, miss_path, show_value
from agenteval.reports.inputs import ResultInputs
from agenteval.reports.numbers import counted, num, pct, points, signed
from agenteval.reports.outputs import ReportError, stdout_reader_may_leave
from agenteval.reports.terminal import Column
from agenteval.cells import cell_label
from agenteval.metrics import ratio
from agenteval.results import MAX_PAIRED_METRICS, CaseResult, Summary, compared_metric_names, metric_values
from agenteval.stores import StoredRun

SCORE_EPSILON = 1e-9  # float noise, not a change
ROWS_SHOWN = 50
_RANK = {"error": 0, "fail": 1, "pass": 2}


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One case in both runs or in one; a side it is missing from is None."""

    case_id: str
    base_verdict: str | None
    new_verdict: str | None
    base_score: float | None
    new_score: float | None
    reason: str | None = None  # a regression's first miss, old against new
    repetition: int = 0  # which `--repeat` run of the case
    cell: tuple[str | None, str | None] | None = None  # (target, prompt), when two matrix runs are paired by cell

    @property
    def delta(self) -> float | None:
        if self.base_score is None or self.new_score is None:
            return None
        return self.new_score - self.base_score

    @property
    def shown(self) -> str:
        """The case as a table shows it: its id, then its cell and repetition when they matter."""
        more = ([cell_label(*self.cell)] if self.cell is not None else []) + ([f"repetition {self.repetition}"] if self.repetition else [])
        return f"{self.case_id} ({', '.join(more)})" if more else self.case_id

    def to_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"case_id": self.case_id}
        if self.cell is not None:
            row["target"], row["prompt"] = self.cell
        if self.repetition:
            row["repetition"] = self.repetition
        row.update({
            "base_verdict": self.base_verdict, "new_verdict": self.new_verdict,
            "base_score": self.base_score, "new_score": self.new_score, "delta": self.delta,
        })
        if self.reason is not None:
            row["reason"] = self.reason
        return row


@dataclass
class Comparison:
    suite: str
    base: dict[str, Any]
    new: dict[str, Any]
    changed: list[CaseChange] = field(default_factory=list)  # in both runs; verdict or score differs
    only_base: list[CaseChange] = field(default_factory=list)
    only_new: list[CaseChange] = field(default_factory=list)
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)
    new_suite: str | None = None  # when NEW is of another suite (the case ids overlap)
    cells: tuple[str, str] | None = None  # `--cells A B`: the cell of BASE and the cell of NEW compared
    by_cell: bool = False  # two matrix runs, paired by (case id, target, prompt)
    statistics: list[dict[str, Any]] = field(default_factory=list)  # agenteval.statistics.compare_cells, per cell pair

    @property
    def regressions(self) -> list[CaseChange]:
        """Passed in BASE, not in NEW: failed, errored, or missing from NEW."""
        worse = [c for c in self.changed if c.base_verdict == "pass" and c.new_verdict != "pass"]
        worse.sort(key=lambda c: (c.delta or 0.0, c.case_id))
        return worse + [c for c in self.only_base if c.base_verdict == "pass"]

    @property
    def improvements(self) -> list[CaseChange]:
        better = [c for c in self.changed if c.base_verdict != "pass" and c.new_verdict == "pass"]
        return sorted(better, key=lambda c: (-(c.delta or 0.0), c.case_id))

    @property
    def other_changes(self) -> list[CaseChange]:
        """Score changes that did not cross the pass line (e.g. 0.9 to 0.7, both failing)."""
        rest = [c for c in self.changed if (c.base_verdict == "pass") == (c.new_verdict == "pass")]
        return sorted(rest, key=lambda c: (c.delta or 0.0, c.case_id))


@dataclass(frozen=True)
class Gate:
    """Exit 1 when more than `max_regressions` cases regressed, or a score dropped by more than `tolerance`.

    Without a tolerance, a lower score counts only when the verdict got worse: pass to not-pass is
    a regression (counted against `max_regressions`), fail to error with a lower score fails the gate.
    """

    max_regressions: int = 0
    tolerance: float | None = None

    def drops(self, comparison: Comparison) -> list[CaseChange]:
        found = []
        for change in comparison.changed:
            delta = change.delta or 0.0
            if self.tolerance is not None:
                if delta < -self.tolerance - SCORE_EPSILON:
                    found.append(change)
            elif delta < -SCORE_EPSILON and change.base_verdict != "pass" and _RANK[change.new_verdict or "error"] < _RANK[change.base_verdict or "error"]:
                found.append(change)
        return sorted(found, key=lambda c: (c.delta or 0.0, c.case_id))

    def reasons(self, comparison: Comparison) -> list[str]:
        """Why the gate fails; empty when it passes."""
        reasons = []
        regressions = len(comparison.regressions)
        if regressions > self.max_regressions:
            reasons.append(f"{regressions} case{'s' if regressions != 1 else ''} went from pass to not passing (at most {self.max_regressions} allowed)")
        drops = self.drops(comparison)
        if drops:
            limit = f"more than {self.tolerance}" if self.tolerance is not None else "with a worse verdict"
            reasons.append(f"{len(drops)} case score{'s' if len(drops) != 1 else ''} dropped {limit}")
        return reasons


Key = tuple[str, str | None, str | None, int]  # case id, target, prompt, repetition


@dataclass
class _Side:
    """One side of a comparison, read once: its summary and each result's (verdict, score, metric values) by key."""

    label: str  # BASE or NEW
    path: Path | StoredRun
    inputs: ResultInputs
    summary: Summary
    suite: str
    rows: dict[Key, tuple[str, float, tuple[tuple[str, float], ...]]]  # verdict, score, metric values (agenteval.results.metric_values)
    metrics: dict[str, bool]  # metric names first seen first (at most MAX_PAIRED_METRICS) -> is a criterion
    cells: dict[tuple[str | None, str | None], int]  # every cell of the file, chosen or not: results in it
    cell: str | None = None  # the `--cells` label chosen

    def results(self) -> Any:
        """The side's results again (to find why a case regressed), the chosen cell only."""
        for result in ResultInputs([self.path], repetitions=True):
            if self.cell is None or cell_label(result.target, result.prompt) == self.cell:
                yield result


def _read_side(path: Path | StoredRun, label: str, cell: str | None) -> _Side:
    inputs = ResultInputs([path], repetitions=True)
    summary = Summary(cells=inputs.cell_order() if cell is None else ())  # the suite's order, as the run printed it
    rows: dict[Key, tuple[str, float, tuple[tuple[str, float], ...]]] = {}
    metrics: dict[str, bool] = {}
    cells: dict[tuple[str | None, str | None], int] = {}
    for result in inputs:
        names = (result.target, result.prompt)
        cells[names] = cells.get(names, 0) + 1
        if cell is not None and cell_label(*names) != cell:
            continue
        summary.add(result)
        kept = []
        for name, value, criterion in metric_values(result):
            if name not in metrics and len(metrics) < MAX_PAIRED_METRICS:
                metrics[name] = criterion
            if name in metrics:
                kept.append((name, value))
        rows[(result.case_id, result.target, result.prompt, result.repetition)] = (result.verdict, result.score, tuple(kept))
    suite = _one_suite(inputs, label, path)
    if cell is not None and not summary.total:
        labels = [cell_label(*names) for names in cells]
        known = ", ".join(repr(name) for name in labels) if any(labels) else "none: its results name no target or prompt"
        raise ReportError(f"{label} {path} has no cell {cell!r} (its cells: {known})")
    return _Side(label, path, inputs, summary, suite, rows, metrics, cells, cell)


def _cells_text(side: _Side) -> str:
    labels = [cell_label(*names) for names in side.cells]
    return ", ".join(label or "(unnamed)" for label in labels)


def compare_files(base_path: Path | StoredRun, new_path: Path | StoredRun | None = None, cells: tuple[str, str] | None = None) -> Comparison:
    """BASE against NEW, or (`cells`, NEW None) two cells of one run, or (`cells` and NEW) a cell of
    BASE against a cell of NEW. Each side keeps (verdict, score, metric values) per case and its summary; results
    are read again only for the cases that regressed."""
    if new_path is None and cells is None:
        raise ReportError("give NEW, or --cells A B to compare two cells of one run")
    base = _read_side(base_path, "BASE" if new_path is not None else "RUN", cells[0] if cells else None)
    new = _read_side(new_path if new_path is not None else base_path, "NEW" if new_path is not None else "RUN", cells[1] if cells else None)
    if not new.summary.total:
        raise ReportError(f"no result lines in {new.path}")
    by_cell = cells is None and (len(base.cells) > 1 or len(new.cells) > 1)
    if not by_cell:  # one cell a side: paired by case id (and repetition), whatever the cells are named
        base.rows = {(key[0], None, None, key[3]): value for key, value in base.rows.items()}
        new.rows = {(key[0], None, None, key[3]): value for key, value in new.rows.items()}
    warnings = list(dict.fromkeys(f"{side.label}: {w}" for side in (base, new) if (w := side.inputs.warning())))  # RUN read twice: once
    if base.suite != new.suite:
        shared = len({key[0] for key in base.rows} & {key[0] for key in new.rows})
        if not shared:
            raise ReportError(
                f"BASE {base.path} holds suite {base.suite!r} and NEW {new.path} holds suite {new.suite!r}, "
                "and no case id is in both; compare runs of the same cases"
            )
        warnings.insert(0, (
            f"BASE holds suite {base.suite!r} and NEW holds suite {new.suite!r}; {shared} case id{'s' if shared != 1 else ''} "
            "in both are compared, the others are listed as only in base or only in new"
        ))
    if by_cell and base.rows.keys().isdisjoint(new.rows.keys()):
        raise ReportError(
            f"BASE {base.path} (cells: {_cells_text(base)}) and NEW {new.path} (cells: {_cells_text(new)}) "
            "have no case in the same cell; compare runs of the same cells, or two cells with --cells A B"
        )
    outcome = Comparison(base.suite, {}, {}, new_suite=new.suite if new.suite != base.suite else None, cells=cells, by_cell=by_cell)
    before = dict(base.rows)
    regressed: set[Key] = set()
    for key, (verdict, score, _metrics) in new.rows.items():
        old = before.pop(key, None)
        where = {"repetition": key[3], "cell": key[1:3] if by_cell else None}
        if old is None:
            outcome.only_new.append(CaseChange(key[0], None, verdict, None, score, **where))
            continue
        change = CaseChange(key[0], old[0], verdict, old[1], score, **where)
        if old[0] == "pass" and verdict != "pass":
            regressed.add(key)
        if change.base_verdict != change.new_verdict or abs(change.delta or 0.0) > SCORE_EPSILON:
            outcome.changed.append(change)
        else:
            outcome.unchanged += 1
    outcome.only_base = [
        CaseChange(key[0], verdict, None, score, None, "missing from NEW" if verdict == "pass" else None,
                   repetition=key[3], cell=key[1:3] if by_cell else None)
        for key, (verdict, score, _metrics) in before.items()
    ]
    if regressed:
        key_of = _key_function(by_cell)
        misses = {key_of(result): first_miss(result) for result in new.results() if key_of(result) in regressed}
        reasons = _regression_reasons(base.results(), key_of, misses)
        outcome.changed = [replace(c, reason=reasons[_change_key(c)]) if _change_key(c) in reasons else c for c in outcome.changed]
    outcome.base = _side(base_path, base.inputs, base.summary)
    outcome.new = _side(new.path, new.inputs, new.summary)
    outcome.warnings = warnings
    outcome.statistics = paired_statistics(base, new, cells, by_cell)
    return outcome


def _key_function(by_cell: bool) -> Any:
    if by_cell:
        return lambda result: (result.case_id, result.target, result.prompt, result.repetition)
    return lambda result: (result.case_id, None, None, result.repetition)


def _change_key(change: CaseChange) -> Key:
    target, prompt = change.cell if change.cell is not None else (None, None)
    return (change.case_id, target, prompt, change.repetition)


def paired_statistics(base: _Side, new: _Side, cells: tuple[str, str] | None, by_cell: bool) -> list[dict[str, Any]]:
    """agenteval.statistics.compare_cells over the cases both sides finished: for `--cells` the two
    cells, between two matrix runs each cell against itself (in the run's cell order), else BASE
    against NEW; and each metric both sides measured (`metrics`, compare_metric). Under `--repeat` a
    case's pass rate, mean score and mean of each metric over its repetitions are what is paired.
    Cases are taken in case id order, so the figures never depend on the order they finished in."""
    from agenteval.statistics import compare_cells, compare_metric, errored_comparison

    def per_case(rows: dict[Key, tuple[str, float, tuple[tuple[str, float], ...]]]) -> dict[tuple[str, str | None, str | None], _CaseFigures]:
        out: dict[tuple[str, str | None, str | None], _CaseFigures] = {}
        for key in sorted(rows, key=_sort_key):
            (case_id, target, prompt, _), (verdict, score, metrics) = key, rows[key]
            entry = out.get((case_id, target, prompt))
            if entry is None:
                entry = out[(case_id, target, prompt)] = _CaseFigures()
            entry.runs += 1
            entry.passes += verdict == "pass"
            entry.score += score
            entry.errors += verdict == "error"
            for name, value in metrics:
                total = entry.metrics.setdefault(name, [0.0, 0])
                total[0] += value
                total[1] += 1
        return out

    a, b = per_case(base.rows), per_case(new.rows)
    repeated = any(key[3] for key in base.rows) or any(key[3] for key in new.rows)
    groups: dict[tuple[str | None, str | None], list[tuple[_CaseFigures, _CaseFigures]]] = {
        names: [] for names in (*base.summary.ordered_cells(), *new.summary.ordered_cells())
    }
    for key, first in a.items():
        second = b.get(key)
        if second is not None:
            groups.setdefault(key[1:], []).append((first, second))
    if cells is not None:
        labels = {(None, None): cells}
    elif by_cell:
        labels = {names: (f"base {cell_label(*names)}", f"new {cell_label(*names)}") for names in groups}
    else:
        labels = {(None, None): ("base", "new")}
    names_compared = [name for name in compared_metric_names(base.metrics) if name in new.metrics]
    found = []
    for names, (label_a, label_b) in labels.items():
        pairs = groups.get(names, [])
        if not pairs:
            continue
        errored = [label for label, side in ((label_a, 0), (label_b, 1)) if all(pair[side].errors == pair[side].runs for pair in pairs)]
        if errored:
            found.append(errored_comparison(label_a, label_b, len(pairs), errored))
            continue
        compared = compare_cells(
            label_a, label_b,
            [x.passes / x.runs for x, _ in pairs], [y.passes / y.runs for _, y in pairs],
            [x.score / x.runs for x, _ in pairs], [y.score / y.runs for _, y in pairs],
            repeated=repeated,
        )
        metrics = []
        for name in names_compared:
            both = [(x.metrics[name], y.metrics[name]) for x, y in pairs if name in x.metrics and name in y.metrics]
            if both:
                metrics.append(compare_metric(name, [x[0] / x[1] for x, _ in both], [y[0] / y[1] for _, y in both]))
        if metrics:
            compared["metrics"] = metrics
        found.append(compared)
    return found


@dataclass(slots=True)
class _CaseFigures:
    """One case's figures on one side, summed over its repetitions: what the paired statistics pair."""

    runs: int = 0
    passes: int = 0
    score: float = 0.0
    errors: int = 0
    metrics: dict[str, list[float]] = field(default_factory=dict)  # name -> [sum, count]


def _sort_key(key: Key) -> tuple[str, str, str, int]:
    return (key[0], key[1] or "", key[2] or "", key[3])


REASON_CHARS = 300  # of one regression's reason


@dataclass(frozen=True, slots=True)
class FirstMiss:
    """Why a case did not pass in NEW: the first evaluator that did not pass, and what it said."""

    evaluator: str | None
    text: str
    path: str | None = None  # the field of a field miss
    miss: str | None = None  # that miss as the evaluator worded it
    expected: Any = MISSING
    actual: Any = MISSING
    answer: str | None = None  # NEW's answer on one line, for a miss that shows no value of its own


def first_miss(result: CaseResult) -> FirstMiss:
    """The case's error, else the first miss (or error, or the judge's words per criterion, or its
    reasoning) of the first evaluator that did not pass; with the answer on one line, as the HTML shows it."""
    if result.error:
        return FirstMiss(None, f"error: {result.error}")
    answer = answer_line(result.output, ANSWER_IN_REASON)
    for evaluator in result.evaluator_results:
        if evaluator.verdict == "pass":
            continue
        if evaluator.error:
            return FirstMiss(evaluator.name, f"error: {evaluator.error}", answer=answer)
        if evaluator.misses:
            miss = evaluator.misses[0]
            path = miss_path(miss)
            row = next((row for row in field_rows(evaluator) if row.path == path), None)
            if row is not None and row.actual is not MISSING:
                return FirstMiss(evaluator.name, miss, path, miss, row.expected, row.actual)
            return FirstMiss(evaluator.name, miss, answer=answer)
        said = "; ".join(criteria_lines(evaluator)) or evaluator.reasoning
        return FirstMiss(evaluator.name, " ".join(said.split()) if said else f"{evaluator.verdict} (score {evaluator.score:.3f})", answer=answer)
    return FirstMiss(None, f"{result.verdict} (score {result.score:.3f})", answer=answer)


ANSWER_IN_REASON = 80  # characters of NEW's answer in a regression's reason


def _regression_reasons(base_results: Any, key_of: Any, misses: dict[Key, FirstMiss]) -> dict[Key, str]:
    """Each regressed case's first miss in NEW against what BASE had there (BASE is read again,
    keeping only those cases)."""
    found: dict[Key, str] = {}
    for result in base_results:
        key = key_of(result)
        miss = misses.get(key)
        if miss is None or key in found:
            continue
        found[key] = _reason(miss, result)
    for key, miss in misses.items():
        found.setdefault(key, _reason(miss, None))
    return found


def _reason(miss: FirstMiss, base: CaseResult | None) -> str:
    prefix = f"{miss.evaluator}: " if miss.evaluator else ""
    evaluator = None if base is None or miss.evaluator is None else next(
        (e for e in base.evaluator_results if e.name == miss.evaluator), None
    )
    if miss.path is not None and evaluator is not None:
        row = next((row for row in field_rows(evaluator) if row.path == miss.path), None)
        if row is not None and row.actual is not MISSING:
            expected = "" if miss.expected is MISSING else f"expected {show_value(miss.expected)}; "
            text = f"{prefix}{miss.miss}: {expected}base got {show_value(row.actual)}, new got {show_value(miss.actual)}"
            return _clip(text)
    if miss.path is not None:
        expected = "" if miss.expected is MISSING else f": expected {show_value(miss.expected)}, got {show_value(miss.actual)}"
        text = f"{prefix}{miss.miss}{expected}"
    else:
        text = prefix + miss.text
    if evaluator is not None:
        text += f"; base: {evaluator.verdict} ({evaluator.score:.3f})"
    elif base is not None and miss.evaluator is not None:
        text += "; base: not run"
    if miss.answer is not None:
        text += f"; new answer: {miss.answer}"
    return _clip(text)


def _clip(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def _one_suite(inputs: ResultInputs, label: str, path: Path) -> str:
    if not inputs.suites:
        raise ReportError(f"no result lines in {path}")
    if len(inputs.suites) > 1:
        raise ReportError(f"{label} {path} holds results of several suites ({', '.join(inputs.suites)}); compare takes runs of one suite")
    return inputs.suites[0]


def _side(path: Path | StoredRun, inputs: ResultInputs, summary: Summary) -> dict[str, Any]:
    return {"file": str(path), "run_id": inputs.describe_runs(), **summary.to_dict()}


def _delta(base: float | None, new: float | None) -> float | None:
    return None if base is None or new is None else new - base


def _pair(base: float | None, new: float | None) -> dict[str, float | None]:
    return {"base": base, "new": new, "delta": _delta(base, new)}


def _rate_and_score(figures: dict[str, Any] | None) -> tuple[float | None, float | None]:
    if not figures:
        return None, None
    return ratio((figures.get("verdicts") or {}).get("pass", 0), figures.get("count") or 0), figures.get("mean_score")


def _deltas(base: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    (rate_a, score_a), (rate_b, score_b) = _rate_and_score(base), _rate_and_score(new)
    return {"pass_rate": _pair(rate_a, rate_b), "mean_score": _pair(score_a, score_b)}


def evaluator_deltas(comparison: Comparison) -> dict[str, Any]:
    """Per evaluator: pass rate and mean score in each run; and per criterion (an llm_judge's
    criteria, a composite's children) under it, when either run has them."""
    out = {}
    base, new = comparison.base["evaluators"], comparison.new["evaluators"]
    for name in {**base, **new}:
        out[name] = _deltas(base.get(name), new.get(name))
        criteria = [(base.get(name) or {}).get("criteria") or {}, (new.get(name) or {}).get("criteria") or {}]
        if criteria[0] or criteria[1]:
            out[name]["criteria"] = {
                criterion: _deltas(criteria[0].get(criterion), criteria[1].get(criterion))
                for criterion in {**criteria[0], **criteria[1]}
            }
    return out


def cell_deltas(comparison: Comparison) -> dict[str, Any]:
    """Between two matrix runs: per cell, pass rate and mean score in each run (empty otherwise)."""
    if not comparison.by_cell:
        return {}
    sides = [{cell["label"]: cell for cell in side.get("cells") or []} for side in (comparison.base, comparison.new)]
    return {
        label: {
            "pass_rate": _pair(*((side.get(label) or {}).get("pass_rate") for side in sides)),
            "mean_score": _pair(*((side.get(label) or {}).get("mean_score") for side in sides)),
        }
        for label in {**sides[0], **sides[1]}
    }


def field_deltas(comparison: Comparison) -> dict[str, dict[str, Any]]:
    """Per evaluator and field: accuracy in each run."""
    out: dict[str, dict[str, Any]] = {}
    base, new = comparison.base["fields"], comparison.new["fields"]
    for name in {**base, **new}:
        paths = {**base.get(name, {}), **new.get(name, {})}
        out[name] = {
            path: _pair(*((side.get(name, {}).get(path) or {}).get("accuracy") for side in (base, new)))
            for path in paths
        }
    return out


def metric_deltas(comparison: Comparison) -> dict[str, Any]:
    """Per evaluator: macro-F1 and each attribute's precision, recall and F1 in each run."""
    out: dict[str, Any] = {}
    base, new = comparison.base["dataset_metrics"], comparison.new["dataset_metrics"]
    for name in {**base, **new}:
        sides = [side.get(name) or {"attributes": {}, "macro_f1": None} for side in (base, new)]
        attributes = {**sides[0]["attributes"], **sides[1]["attributes"]}
        out[name] = {
            "macro_f1": _pair(sides[0]["macro_f1"], sides[1]["macro_f1"]),
            "attributes": {
                attribute: {
                    key: _pair(*((side["attributes"].get(attribute) or {}).get(key) for side in sides))
                    for key in ("precision", "recall", "f1")
                }
                for attribute in attributes
            },
        }
    return out


def comparison_dict(comparison: Comparison, gate: Gate) -> dict[str, Any]:
    """Everything `--format json` prints."""
    reasons = gate.reasons(comparison)
    headline = ("counts", "pass_rate", "mean_score")
    extra: dict[str, Any] = {}
    if comparison.new_suite is not None:
        extra["new_suite"] = comparison.new_suite
    if comparison.cells is not None:
        extra["cells"] = {"base": comparison.cells[0], "new": comparison.cells[1]}
    if comparison.by_cell:
        extra["cell_deltas"] = cell_deltas(comparison)
    return {
        "suite": comparison.suite,
        **extra,
        "base": {key: comparison.base[key] for key in ("file", "run_id", *headline)},
        "new": {key: comparison.new[key] for key in ("file", "run_id", *headline)},
        "gate": {
            "passed": not reasons, "reasons": reasons, "max_regressions": gate.max_regressions, "tolerance": gate.tolerance,
            "regressions": len(comparison.regressions), "score_drops": len(gate.drops(comparison)),
        },
        "regressions": [c.to_dict() for c in comparison.regressions],
        "improvements": [c.to_dict() for c in comparison.improvements],
        "score_changes": [c.to_dict() for c in comparison.other_changes],
        "score_drops": [c.to_dict() for c in gate.drops(comparison)],
        "only_base": [c.to_dict() for c in comparison.only_base],
        "only_new": [c.to_dict() for c in comparison.only_new],
        "unchanged": comparison.unchanged,
        "evaluators": evaluator_deltas(comparison),
        "fields": field_deltas(comparison),
        "dataset_metrics": metric_deltas(comparison),
        "statistics": comparison.statistics,
    }


def counts_line(comparison: Comparison) -> str:
    line = (
        f"{len(comparison.regressions)} regressed, {len(comparison.improvements)} improved, {comparison.unchanged} unchanged, "
        f"{len(comparison.only_base)} only in base, {len(comparison.only_new)} only in new"
    )
    others = len(comparison.other_changes)
    return line + (f"; {others} other score change{'s' if others != 1 else ''}" if others else "")


def case_rows(changes: list[CaseChange], limit: int = ROWS_SHOWN, reasons: bool = False) -> list[list[str]]:
    """case, verdicts, scores, delta (and, with `reasons`, why it regressed): one row per change, at most `limit`."""
    return [
        [
            c.shown, f"{c.base_verdict or 'missing'} → {c.new_verdict or 'missing'}",
            f"{num(c.base_score)} → {num(c.new_score)}", signed(c.delta),
        ] + ([c.reason or ""] if reasons else [])
        for c in changes[:limit]
    ]


def aggregate_rows(comparison: Comparison) -> dict[str, list[list[str]]]:
    """The evaluator, field and dataset-metric tables (changed rows only for fields and metrics)."""
    evaluators = []
    for name, row in evaluator_deltas(comparison).items():
        evaluators.append(_delta_row(name, row))
        evaluators += [_delta_row(f"{name}: {criterion}", figures) for criterion, figures in (row.get("criteria") or {}).items()]
    cells = [_delta_row(label or "(unnamed)", row) for label, row in cell_deltas(comparison).items()]
    changed_fields = sorted(
        (
            (row["delta"] if row["delta"] is not None else 0.0, name, path, row)
            for name, paths in field_deltas(comparison).items()
            for path, row in paths.items()
            if row["base"] != row["new"]
        ),
        key=lambda item: item[:3],
    )
    fields = [[name, path, pct(row["base"]), pct(row["new"]), points(row["delta"])] for _, name, path, row in changed_fields]
    metrics = []
    for name, row in metric_deltas(comparison).items():
        if row["macro_f1"]["base"] != row["macro_f1"]["new"]:
            metrics.append([name, "macro-F1", num(row["macro_f1"]["base"]), num(row["macro_f1"]["new"]), signed(row["macro_f1"]["delta"])])
        for attribute, values in row["attributes"].items():
            for key in ("precision", "recall", "f1"):
                if values[key]["base"] != values[key]["new"]:
                    metrics.append([name, f"{attribute} {key}", num(values[key]["base"]), num(values[key]["new"]), signed(values[key]["delta"])])
    return {"cells": cells, "evaluators": evaluators, "fields": fields, "metrics": metrics}


def _delta_row(name: str, row: dict[str, Any]) -> list[str]:
    """name, pass rate base, new, delta, mean score base, new, delta."""
    return [name, pct(row["pass_rate"]["base"]), pct(row["pass_rate"]["new"]), points(row["pass_rate"]["delta"]),
            num(row["mean_score"]["base"]), num(row["mean_score"]["new"]), signed(row["mean_score"]["delta"])]


def title(comparison: Comparison) -> str:
    """The suite compared (`a → b` when NEW is of another suite)."""
    return comparison.suite if comparison.new_suite is None else f"{comparison.suite} → {comparison.new_suite}"


def header_lines(comparison: Comparison) -> list[str]:
    """What is compared, the headline figures, and the paired statistics in words."""
    base, new = comparison.base, comparison.new
    return [
        f"{title(comparison)}: {_sides_text(comparison)}",
        f"pass rate {pct(base['pass_rate'])} → {pct(new['pass_rate'])} ({points(_delta(base['pass_rate'], new['pass_rate']))}), "
        f"mean score {num(base['mean_score'])} → {num(new['mean_score'])} ({signed(_delta(base['mean_score'], new['mean_score']))})",
        *(f"paired: {text}" if not text.startswith("  ") else text
          for row in comparison.statistics for text, _ in comparison_group(row)),
    ]


def _sides_text(comparison: Comparison) -> str:
    base, new = comparison.base, comparison.new
    cases = [f"({counted(side['counts']['total'])})" for side in (base, new)]
    if comparison.cells is None:
        return f"base {base['run_id']} {cases[0]} → new {new['run_id']} {cases[1]}"
    cells = [f"cell {label or '(unnamed)'}" for label in comparison.cells]
    if base["file"] == new["file"]:
        return f"run {base['run_id']}, {cells[0]} {cases[0]} → {cells[1]} {cases[1]}"
    return f"base {base['run_id']} {cells[0]} {cases[0]} → new {new['run_id']} {cells[1]} {cases[1]}"


def gate_line(comparison: Comparison, gate: Gate) -> str:
    reasons = gate.reasons(comparison)
    return "gate: FAILED: " + "; ".join(reasons) if reasons else "gate: passed"


CASE_SECTIONS = (
    ("Regressions", "regressions", "red"),
    ("Improvements", "improvements", "green"),
    ("Other score changes", "other_changes", "yellow"),
    ("Only in base", "only_base", "magenta"),
    ("Only in new", "only_new", "cyan"),
)


def render_comparison(comparison: Comparison, gate: Gate, console: Any) -> None:
    """The terminal view: case tables, aggregate deltas, then the counts and the gate's decision.
    Ids, names and reasons come from the data: shown via `visible`, identifiers never cut. Tables
    fit the console as `report`'s do (`terminal.fitted_table`: short headers, then the least useful
    columns left out and named under the table); the lines around them break between their parts."""
    from rich.text import Text

    from agenteval.reports.terminal import fitted_table, joined, visible

    def broken(line: str, breaks: re.Pattern[str] = _AFTER_COMMA) -> Text:
        return joined(console.width, [Text(part) for part in breaks.split(visible(line))], gap=" ")

    what, headline, *paired = header_lines(comparison)
    console.print(broken(what, _AFTER_COMMA_OR_BEFORE_ARROW))  # base … → new …
    console.print(broken(headline))
    for line in paired:  # one line each, as `report` prints its comparisons: a log reader greps for them
        console.print(Text(visible(line)), soft_wrap=True)
    for heading, attribute, style in CASE_SECTIONS:
        changes = getattr(comparison, attribute)
        if not changes:
            continue
        why = attribute == "regressions"
        console.print(fitted_table(
            console, f"{heading} ({len(changes)})", case_columns(why, one_side=attribute in ("only_base", "only_new")),
            case_rows(changes, reasons=why), title_style=style, keep=1,
            caption=f"{len(changes) - ROWS_SHOWN} more not shown (--format json lists all)" if len(changes) > ROWS_SHOWN else None,
        ))
    rows = aggregate_rows(comparison)
    for heading, key in (("Cells", "cells"), ("Evaluators", "evaluators"), ("Fields whose accuracy changed", "fields"),
                         ("Dataset metrics that changed", "metrics")):
        if rows[key]:
            console.print(fitted_table(console, heading, AGGREGATE_COLUMNS[key], rows[key][:ROWS_SHOWN]))
    console.print(broken(counts_line(comparison)))
    reasons = gate.reasons(comparison)
    console.print(Text(gate_line(comparison, gate), style="bold red" if reasons else "bold green"))


# where a line around the tables may break when the terminal is too narrow for it
_AFTER_COMMA = re.compile(r"(?<=[,;]) ")
_AFTER_COMMA_OR_BEFORE_ARROW = re.compile(r"(?<=[,;]) | (?=→ )")


def case_columns(why: bool = False, one_side: bool = False) -> list[Column]:
    """The columns of a table of cases. On a narrow terminal the case, its scores (base → new) and
    the change stay; left out first is a delta that is n/a in every row (a case in one run only),
    then the verdicts (the scores and the table's title say most of it). A regression's reason is
    free text: it wraps between words, and is never left out."""
    columns = [Column("case"), Column("verdict", optional=2), Column("score", "num"), Column("delta", "num", optional=3 if one_side else 0)]
    return columns + ([Column(REASON_HEADER, "text", short="why")] if why else [])


def _rate_and_score_columns(name: str) -> list[Column]:
    """A name, then pass rate and mean score, each base, new and delta. Short headers say which
    figure each column holds, so that the table still reads when a base column is left out: the
    mean score's first, then the pass rate's (each is its new value less its delta)."""
    return [
        Column(name),
        Column("pass rate base", "num", "rate base", 1), Column("new", "num", "rate new"), Column("delta", "num", "rate Δ"),
        Column("mean score base", "num", "score base", 2), Column("new", "num", "score new"), Column("delta", "num", "score Δ"),
    ]


AGGREGATE_COLUMNS = {
    "cells": _rate_and_score_columns("cell"),
    "evaluators": _rate_and_score_columns("evaluator"),
    "fields": [Column("evaluator"), Column("field"), Column("accuracy base", "num", "base", 1), Column("new", "num"), Column("delta", "num")],
    "metrics": [Column("evaluator"), Column("metric"), Column("base", "num", optional=1), Column("new", "num"), Column("delta", "num")],
}


REASON_HEADER = "why: first miss, base against new"


def comparison_markdown(comparison: Comparison, gate: Gate) -> str:
    from agenteval.reports.markdown import md, table

    reasons = gate.reasons(comparison)
    lines = [f"## agenteval compare: {md(title(comparison))}", ""]
    header = header_lines(comparison)
    if comparison.cells is not None:
        lines += [md(_sides_text(comparison)), ""]
    for line in header[1:]:
        lines += [md(line), ""]
    lines += [f"**{md(gate_line(comparison, gate))}** · {md(counts_line(comparison))}", ""]
    for heading, attribute, _ in CASE_SECTIONS:
        changes = getattr(comparison, attribute)
        if not changes:
            continue
        lines += [f"### {heading} ({len(changes)})", ""]
        why = attribute == "regressions"
        lines += table(
            ["case", "verdict", "score", "delta"] + ([REASON_HEADER] if why else []),
            [[md(cell) for cell in row] for row in case_rows(changes, reasons=why)], right_from=2, right_to=4,
        )
        if len(changes) > ROWS_SHOWN:
            lines += ["", f"{len(changes) - ROWS_SHOWN} more not shown."]
        lines.append("")
    rows = aggregate_rows(comparison)
    for heading, key, header, first_number in (
        ("Cells", "cells", ["cell", "pass rate base", "new", "delta", "mean score base", "new", "delta"], 1),
        ("Evaluators", "evaluators", ["evaluator", "pass rate base", "new", "delta", "mean score base", "new", "delta"], 1),
        ("Fields whose accuracy changed", "fields", ["evaluator", "field", "accuracy base", "new", "delta"], 2),
        ("Dataset metrics that changed", "metrics", ["evaluator", "metric", "base", "new", "delta"], 2),
    ):
        if rows[key]:
            lines += [f"### {heading}", ""]
            lines += table(header, [[md(cell) for cell in row] for row in rows[key][:ROWS_SHOWN]], right_from=first_number)
            lines.append("")
    if reasons:
        lines += ["Gate failed: " + md("; ".join(reasons)) + "."]
    return "\n".join(lines).rstrip() + "\n"


COMPARE_FORMATS = ("table", "json", "markdown")


def compare_command(
    base: Path | StoredRun, new: Path | StoredRun | None, fmt: str, gate: Gate, update_baseline: bool,
    cells: tuple[str, str] | None = None,
) -> int:
    """Print the comparison in `fmt`; 0 when the gate passes (and NEW replaced BASE if asked), else 1."""
    import sys

    import orjson

    if fmt not in COMPARE_FORMATS:
        raise ReportError(f"unknown --format {fmt!r} (known: {', '.join(COMPARE_FORMATS)})")
    if update_baseline and (new is None or cells is not None):
        raise ReportError("--update-baseline copies NEW's results over BASE's; it does not apply to --cells")
    comparison = compare_files(base, new, cells)
    from agenteval.reports.terminal import visible

    for warning in comparison.warnings:
        print(f"warning: {visible(warning)}", file=sys.stderr)
    with stdout_reader_may_leave():
        if fmt == "json":
            sys.stdout.buffer.write(orjson.dumps(comparison_dict(comparison, gate), option=orjson.OPT_INDENT_2) + b"\n")
        elif fmt == "markdown":
            sys.stdout.write(comparison_markdown(comparison, gate))
        else:
            from agenteval.reports.console import console

            render_comparison(comparison, gate, console())
        sys.stdout.flush()
    passed = not gate.reasons(comparison)
    if update_baseline:
        if passed:
            replace_baseline(base, new)
            print(f"baseline updated: {new} copied over {base}", file=sys.stderr)
        else:
            print(f"baseline kept: the gate failed, {base} is unchanged", file=sys.stderr)
    return 0 if passed else 1


def replace_baseline(base: Path, new: Path) -> None:
    """NEW's results (and its summary, when there is one) replace BASE's, each in one rename."""
    import shutil

    from agenteval.reports.outputs import replacing
    from agenteval.stores.jsonl import summary_path

    pairs = [(new, base)]
    if summary_path(new).exists() and summary_path(new) != summary_path(base):
        pairs.append((summary_path(new), summary_path(base)))
    for source, target in pairs:
        if source.resolve() == target.resolve():
            continue
        with source.open("rb") as reader, replacing(target) as writer:
            shutil.copyfileobj(reader, writer)
