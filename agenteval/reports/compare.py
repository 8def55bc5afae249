"""`agenteval compare BASE NEW`: what changed between two runs of one suite, and whether it may merge.

The gate looks at every case, never at the mean: one case going from pass to fail is a
regression even when ten others improve.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agenteval.paths import MISSING
from agenteval.reports.failures import field_rows, miss_path, show_value
from agenteval.reports.inputs import ResultInputs
from agenteval.reports.numbers import num, pct, points, signed
from agenteval.reports.outputs import ReportError, stdout_reader_may_leave
from agenteval.metrics import ratio
from agenteval.results import CaseResult, Summary

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

    @property
    def delta(self) -> float | None:
        if self.base_score is None or self.new_score is None:
            return None
        return self.new_score - self.base_score

    def to_dict(self) -> dict[str, Any]:
        row = {
            "case_id": self.case_id, "base_verdict": self.base_verdict, "new_verdict": self.new_verdict,
            "base_score": self.base_score, "new_score": self.new_score, "delta": self.delta,
        }
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


def compare_files(base_path: Path, new_path: Path) -> Comparison:
    """Per-case (verdict, score) of BASE are kept; NEW streams past them. Summaries give the aggregate deltas."""
    base_inputs, new_inputs = ResultInputs([base_path]), ResultInputs([new_path])
    base_summary, new_summary = Summary(), Summary()
    before: dict[str, tuple[str, float]] = {}
    for result in base_inputs:
        base_summary.add(result)
        before[result.case_id] = (result.verdict, result.score)
    base_suite = _one_suite(base_inputs, "BASE", base_path)
    outcome = Comparison(base_suite, {}, {})
    misses: dict[str, FirstMiss] = {}  # regressed cases only: memory grows with regressions, not cases
    for result in new_inputs:
        new_summary.add(result)
        if result.suite != base_suite:
            raise ReportError(
                f"BASE {base_path} holds suite {base_suite!r} but NEW {new_path} holds suite {result.suite!r}; "
                "compare runs of the same suite"
            )
        old = before.pop(result.case_id, None)
        if old is None:
            outcome.only_new.append(CaseChange(result.case_id, None, result.verdict, None, result.score))
            continue
        change = CaseChange(result.case_id, old[0], result.verdict, old[1], result.score)
        if old[0] == "pass" and result.verdict != "pass":
            misses[result.case_id] = first_miss(result)
        if change.base_verdict != change.new_verdict or abs(change.delta or 0.0) > SCORE_EPSILON:
            outcome.changed.append(change)
        else:
            outcome.unchanged += 1
    if not new_summary.total:
        raise ReportError(f"no result lines in {new_path}")
    outcome.only_base = [
        CaseChange(case_id, verdict, None, score, None, "missing from NEW" if verdict == "pass" else None)
        for case_id, (verdict, score) in before.items()
    ]
    if misses:
        reasons = _regression_reasons(base_path, misses)
        outcome.changed = [replace(c, reason=reasons[c.case_id]) if c.case_id in reasons else c for c in outcome.changed]
    outcome.base = _side(base_path, base_inputs, base_summary)
    outcome.new = _side(new_path, new_inputs, new_summary)
    outcome.warnings = [f"{label}: {w}" for label, w in (("BASE", base_inputs.warning()), ("NEW", new_inputs.warning())) if w]
    return outcome


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


def first_miss(result: CaseResult) -> FirstMiss:
    """The case's error, else the first miss (or error, or reasoning) of the first evaluator that did not pass."""
    if result.error:
        return FirstMiss(None, f"error: {result.error}")
    for evaluator in result.evaluator_results:
        if evaluator.verdict == "pass":
            continue
        if evaluator.error:
            return FirstMiss(evaluator.name, f"error: {evaluator.error}")
        if evaluator.misses:
            miss = evaluator.misses[0]
            path = miss_path(miss)
            row = next((row for row in field_rows(evaluator) if row.path == path), None)
            if row is not None and row.actual is not MISSING:
                return FirstMiss(evaluator.name, miss, path, miss, row.expected, row.actual)
            return FirstMiss(evaluator.name, miss)
        return FirstMiss(evaluator.name, evaluator.reasoning or f"{evaluator.verdict} (score {evaluator.score:.3f})")
    return FirstMiss(None, f"{result.verdict} (score {result.score:.3f})")


def _regression_reasons(base_path: Path, misses: dict[str, FirstMiss]) -> dict[str, str]:
    """Each regressed case's first miss in NEW against what BASE had there (BASE is read again,
    keeping only those cases)."""
    found: dict[str, str] = {}
    for result in ResultInputs([base_path]):
        miss = misses.get(result.case_id)
        if miss is None or result.case_id in found:
            continue
        found[result.case_id] = _reason(miss, result)
    for case_id, miss in misses.items():
        found.setdefault(case_id, _reason(miss, None))
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
    return _clip(text)


def _clip(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def _one_suite(inputs: ResultInputs, label: str, path: Path) -> str:
    if not inputs.suites:
        raise ReportError(f"no result lines in {path}")
    if len(inputs.suites) > 1:
        raise ReportError(f"{label} {path} holds results of several suites ({', '.join(inputs.suites)}); compare takes runs of one suite")
    return inputs.suites[0]


def _side(path: Path, inputs: ResultInputs, summary: Summary) -> dict[str, Any]:
    return {"file": str(path), "run_id": inputs.describe_runs(), **summary.to_dict()}


def _delta(base: float | None, new: float | None) -> float | None:
    return None if base is None or new is None else new - base


def _pair(base: float | None, new: float | None) -> dict[str, float | None]:
    return {"base": base, "new": new, "delta": _delta(base, new)}


def evaluator_deltas(comparison: Comparison) -> dict[str, Any]:
    """Per evaluator: pass rate and mean score in each run."""
    out = {}
    base, new = comparison.base["evaluators"], comparison.new["evaluators"]
    for name in {**base, **new}:
        rates = [ratio(side[name]["verdicts"].get("pass", 0), side[name]["count"]) if name in side else None for side in (base, new)]
        scores = [side[name]["mean_score"] if name in side else None for side in (base, new)]
        out[name] = {"pass_rate": _pair(*rates), "mean_score": _pair(*scores)}
    return out


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
    return {
        "suite": comparison.suite,
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
            c.case_id, f"{c.base_verdict or 'missing'} → {c.new_verdict or 'missing'}",
            f"{num(c.base_score)} → {num(c.new_score)}", signed(c.delta),
        ] + ([c.reason or ""] if reasons else [])
        for c in changes[:limit]
    ]


def aggregate_rows(comparison: Comparison) -> dict[str, list[list[str]]]:
    """The evaluator, field and dataset-metric tables (changed rows only for fields and metrics)."""
    evaluators = [
        [name, pct(row["pass_rate"]["base"]), pct(row["pass_rate"]["new"]), points(row["pass_rate"]["delta"]),
         num(row["mean_score"]["base"]), num(row["mean_score"]["new"]), signed(row["mean_score"]["delta"])]
        for name, row in evaluator_deltas(comparison).items()
    ]
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
    return {"evaluators": evaluators, "fields": fields, "metrics": metrics}


def header_lines(comparison: Comparison) -> list[str]:
    base, new = comparison.base, comparison.new
    return [
        f"{comparison.suite}: base {base['run_id']} ({base['counts']['total']} cases) → new {new['run_id']} ({new['counts']['total']} cases)",
        f"pass rate {pct(base['pass_rate'])} → {pct(new['pass_rate'])} ({points(_delta(base['pass_rate'], new['pass_rate']))}), "
        f"mean score {num(base['mean_score'])} → {num(new['mean_score'])} ({signed(_delta(base['mean_score'], new['mean_score']))})",
    ]


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
    Ids, names and reasons come from the data: shown via `visible`, identifiers never cut."""
    from rich.text import Text

    from agenteval.reports.terminal import Column, fitted_table, visible

    for line in header_lines(comparison):
        console.print(Text(visible(line)), soft_wrap=True)
    for title, attribute, style in CASE_SECTIONS:
        changes = getattr(comparison, attribute)
        if not changes:
            continue
        why = attribute == "regressions"
        columns = [Column("case"), Column("verdict"), Column("score", "num"), Column("delta", "num")]
        if why:
            columns.append(Column(REASON_HEADER, "text"))
        console.print(fitted_table(
            console, f"{title} ({len(changes)})", columns, case_rows(changes, reasons=why), title_style=style,
            caption=f"{len(changes) - ROWS_SHOWN} more not shown (--format json lists all)" if len(changes) > ROWS_SHOWN else None,
        ))
    rows = aggregate_rows(comparison)
    for title, key, headers in (
        ("Evaluators", "evaluators", ("evaluator", "pass rate base", "new", "delta", "mean score base", "new", "delta")),
        ("Fields whose accuracy changed", "fields", ("evaluator", "field", "accuracy base", "new", "delta")),
        ("Dataset metrics that changed", "metrics", ("evaluator", "metric", "base", "new", "delta")),
    ):
        if not rows[key]:
            continue
        names = 1 if key == "evaluators" else 2
        columns = [Column(header, "id" if index < names else "num") for index, header in enumerate(headers)]
        console.print(fitted_table(console, title, columns, rows[key][:ROWS_SHOWN]))
    console.print(Text(counts_line(comparison)), soft_wrap=True)
    reasons = gate.reasons(comparison)
    console.print(Text(gate_line(comparison, gate), style="bold red" if reasons else "bold green"), soft_wrap=True)


REASON_HEADER = "why: first miss, base against new"


def comparison_markdown(comparison: Comparison, gate: Gate) -> str:
    from agenteval.reports.markdown import md, table

    reasons = gate.reasons(comparison)
    lines = [f"## agenteval compare: {md(comparison.suite)}", ""]
    lines += [md(line) for line in header_lines(comparison)[1:]]
    lines += ["", f"**{md(gate_line(comparison, gate))}** · {md(counts_line(comparison))}", ""]
    for title, attribute, _ in CASE_SECTIONS:
        changes = getattr(comparison, attribute)
        if not changes:
            continue
        lines += [f"### {title} ({len(changes)})", ""]
        why = attribute == "regressions"
        lines += table(
            ["case", "verdict", "score", "delta"] + ([REASON_HEADER] if why else []),
            [[md(cell) for cell in row] for row in case_rows(changes, reasons=why)], right_from=2, right_to=4,
        )
        if len(changes) > ROWS_SHOWN:
            lines += ["", f"{len(changes) - ROWS_SHOWN} more not shown."]
        lines.append("")
    rows = aggregate_rows(comparison)
    for title, key, header, first_number in (
        ("Evaluators", "evaluators", ["evaluator", "pass rate base", "new", "delta", "mean score base", "new", "delta"], 1),
        ("Fields whose accuracy changed", "fields", ["evaluator", "field", "accuracy base", "new", "delta"], 2),
        ("Dataset metrics that changed", "metrics", ["evaluator", "metric", "base", "new", "delta"], 2),
    ):
        if rows[key]:
            lines += [f"### {title}", ""]
            lines += table(header, [[md(cell) for cell in row] for row in rows[key][:ROWS_SHOWN]], right_from=first_number)
            lines.append("")
    if reasons:
        lines += ["Gate failed: " + md("; ".join(reasons)) + "."]
    return "\n".join(lines).rstrip() + "\n"


COMPARE_FORMATS = ("table", "json", "markdown")


def compare_command(base: Path, new: Path, fmt: str, gate: Gate, update_baseline: bool) -> int:
    """Print the comparison in `fmt`; 0 when the gate passes (and NEW replaced BASE if asked), else 1."""
    import sys

    import orjson

    if fmt not in COMPARE_FORMATS:
        raise ReportError(f"unknown --format {fmt!r} (known: {', '.join(COMPARE_FORMATS)})")
    comparison = compare_files(base, new)
    from agenteval.reports.terminal import visible

    for warning in comparison.warnings:
        print(f"warning: {visible(warning)}", file=sys.stderr)
    with stdout_reader_may_leave():
        if fmt == "json":
            sys.stdout.buffer.write(orjson.dumps(comparison_dict(comparison, gate), option=orjson.OPT_INDENT_2) + b"\n")
        elif fmt == "markdown":
            sys.stdout.write(comparison_markdown(comparison, gate))
        else:
            from rich.console import Console

            render_comparison(comparison, gate, Console(highlight=False, width=None if sys.stdout.isatty() else 120))
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
