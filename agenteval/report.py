"""Human-facing views of finished runs: the summary tables and the comparison of two runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

from agenteval.results import CaseResult

_VERDICT_STYLE = {"pass": "green", "partial": "yellow", "fail": "red", "error": "magenta"}
FIELD_ROWS_SHOWN = 30


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def render_summary(summary: dict[str, Any], console: Console) -> None:
    """The run at a glance: counts, per-evaluator and per-field tables, dataset metrics, slowest cases."""
    counts = summary["counts"]
    title = f"[bold]{summary.get('suite', '')}[/bold]"
    if summary.get("run_id"):
        title += f"  run {summary['run_id']}"
    if summary.get("interrupted"):
        title += "  [magenta](interrupted)[/magenta]"
    console.print(title)
    console.print(
        f"{counts['total']} cases: [green]{counts['passed']} passed[/green], "
        f"[red]{counts['failed']} failed[/red], [magenta]{counts['errored']} errored[/magenta]  "
        f"pass rate [bold]{_pct(summary['pass_rate'])}[/bold]  mean score {_num(summary['mean_score'])}"
        + (f"  in {summary['duration_s']:.2f}s" if "duration_s" in summary else "")
    )

    evaluators = Table(title="Evaluators", title_justify="left")
    for column in ("evaluator", "type", "mean score", "pass", "partial", "fail", "error", "mean ms"):
        evaluators.add_column(column, justify="left" if column in ("evaluator", "type") else "right")
    for name, stats in summary["evaluators"].items():
        verdicts = stats["verdicts"]
        evaluators.add_row(
            name, stats["type"], _num(stats["mean_score"]),
            *(f"[{_VERDICT_STYLE[v]}]{verdicts.get(v, 0)}[/]" for v in ("pass", "partial", "fail", "error")),
            _num(stats["mean_duration_ms"], 2),
        )
    console.print(evaluators)

    rows = [(name, path, stats) for name, paths in summary["fields"].items() for path, stats in paths.items()]
    if rows:
        fields = Table(title="Fields across the dataset", title_justify="left")
        for column in ("evaluator", "field", "accuracy", "hits/scored", "mean score", "skipped"):
            fields.add_column(column, justify="left" if column in ("evaluator", "field") else "right")
        rows.sort(key=lambda row: (row[2]["accuracy"] is None, row[2]["accuracy"] or 0.0))
        for name, path, stats in rows[:FIELD_ROWS_SHOWN]:
            fields.add_row(
                name, path, _pct(stats["accuracy"]), f"{stats['hits']}/{stats['scored']}",
                _num(stats["mean_score"]), str(stats["skipped"]),
            )
        if len(rows) > FIELD_ROWS_SHOWN:
            fields.caption = f"worst {FIELD_ROWS_SHOWN} of {len(rows)} fields; all are in the summary JSON"
        console.print(fields)

    tags = summary.get("tags") or {}
    if tags:
        by_tag = Table(title="By tag", title_justify="left")
        for column in ("tag", "cases", "passed", "failed", "errored", "pass rate"):
            by_tag.add_column(column, justify="left" if column == "tag" else "right")
        for tag, row in tags.items():
            by_tag.add_row(tag, str(row["total"]), str(row["passed"]), str(row["failed"]), str(row["errored"]), _pct(row["pass_rate"]))
        console.print(by_tag)

    for name, metrics in summary["dataset_metrics"].items():
        table = Table(title=f"Dataset metrics: {name}", title_justify="left")
        for column in ("attribute", "TP", "FP", "FN", "TN", "precision", "recall", "F1"):
            table.add_column(column, justify="left" if column == "attribute" else "right")
        for attribute, row in metrics["attributes"].items():
            table.add_row(
                attribute, *(str(row[k]) for k in ("tp", "fp", "fn", "tn")),
                _num(row["precision"]), _num(row["recall"]), _num(row["f1"]),
            )
        undefined = any(row[k] is None for row in metrics["attributes"].values() for k in ("precision", "recall", "f1"))
        table.caption = f"macro-F1 {_num(metrics['macro_f1'])}" + ("  (n/a: undefined, its denominator is 0)" if undefined else "")
        console.print(table)

    slowest = summary.get("slowest_cases") or []
    if slowest:
        console.print(
            "slowest: " + ", ".join(f"{row['case_id']} ({row['duration_ms']:.1f} ms)" for row in slowest)
        )


_RANK = {"error": 0, "fail": 1, "pass": 2}


@dataclass
class Comparison:
    regressions: list[tuple[str, CaseResult, CaseResult]] = field(default_factory=list)
    improvements: list[tuple[str, CaseResult, CaseResult]] = field(default_factory=list)
    unchanged: int = 0
    only_base: int = 0
    only_new: int = 0


def compare(base: Iterable[CaseResult], new: Iterable[CaseResult], min_delta: float = 1e-9) -> Comparison:
    """Per case: a worse verdict or a score lower by more than `min_delta` is a regression."""
    before = {result.case_id: result for result in _slim(base)}
    outcome = Comparison()
    for result in _slim(new):
        old = before.pop(result.case_id, None)
        if old is None:
            outcome.only_new += 1
            continue
        verdict_change = _RANK[result.verdict] - _RANK[old.verdict]
        delta = result.score - old.score
        if verdict_change < 0 or (verdict_change == 0 and delta < -min_delta):
            outcome.regressions.append((result.case_id, old, result))
        elif verdict_change > 0 or delta > min_delta:
            outcome.improvements.append((result.case_id, old, result))
        else:
            outcome.unchanged += 1
    outcome.only_base = len(before)
    return outcome


def _slim(results: Iterable[CaseResult]) -> Iterable[CaseResult]:
    """Keep only what the comparison reads, so a big base run costs little memory."""
    for result in results:
        yield CaseResult(result.run_id, result.suite, result.case_id, result.score, result.verdict)


def render_comparison(outcome: Comparison, console: Console, limit: int = 50) -> None:
    for title, rows, style in (
        ("Regressions", outcome.regressions, "red"),
        ("Improvements", outcome.improvements, "green"),
    ):
        if not rows:
            continue
        table = Table(title=f"{title} ({len(rows)})", title_justify="left", title_style=style)
        for column in ("case", "verdict", "score", "delta"):
            table.add_column(column, justify="left" if column in ("case", "verdict") else "right")
        ordered = sorted(rows, key=lambda row: row[2].score - row[1].score, reverse=title == "Improvements")
        for case_id, old, new in ordered[:limit]:
            table.add_row(
                case_id, f"{old.verdict} -> {new.verdict}", f"{old.score:.3f} -> {new.score:.3f}",
                f"{new.score - old.score:+.3f}",
            )
        if len(rows) > limit:
            table.caption = f"{len(rows) - limit} more not shown"
        console.print(table)
    console.print(
        f"{len(outcome.regressions)} regressed, {len(outcome.improvements)} improved, "
        f"{outcome.unchanged} unchanged, {outcome.only_base} only in base, {outcome.only_new} only in new"
    )
