"""The run at a glance in the terminal: counts, per-evaluator and per-field tables, dataset metrics."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agenteval.reports.numbers import num, pct
from agenteval.reports.usage import render_usage

_VERDICT_STYLE = {"pass": "green", "partial": "yellow", "fail": "red", "error": "magenta"}
FIELD_ROWS_SHOWN = 30


def render_summary(summary: dict[str, Any], console: Console) -> None:
    """The run at a glance: counts, per-evaluator and per-field tables, dataset metrics, slowest cases."""
    counts = summary["counts"]
    title = f"[bold]{escape(summary.get('suite', ''))}[/bold]"
    if summary.get("run_id"):
        title += f"  run {escape(summary['run_id'])}"
    if summary.get("interrupted"):
        title += "  [magenta](interrupted)[/magenta]"
    console.print(title)
    console.print(
        f"{counts['total']} cases: [green]{counts['passed']} passed[/green], "
        f"[red]{counts['failed']} failed[/red], [magenta]{counts['errored']} errored[/magenta]  "
        f"pass rate [bold]{pct(summary['pass_rate'])}[/bold]  mean score {num(summary['mean_score'])}"
        + (f"  in {summary['duration_s']:.2f}s" if "duration_s" in summary else "")
    )

    evaluators = Table(title="Evaluators", title_justify="left")
    for column in ("evaluator", "type", "mean score", "pass", "partial", "fail", "error", "mean ms"):
        evaluators.add_column(column, justify="left" if column in ("evaluator", "type") else "right")
    for name, stats in summary["evaluators"].items():
        verdicts = stats["verdicts"]
        evaluators.add_row(
            escape(name), escape(stats["type"]), num(stats["mean_score"]),
            *(f"[{_VERDICT_STYLE[v]}]{verdicts.get(v, 0)}[/]" for v in ("pass", "partial", "fail", "error")),
            num(stats["mean_duration_ms"], 2),
        )
    console.print(evaluators)

    criteria = [(name, stats["criterion"]) for name, stats in summary["evaluators"].items() if stats.get("criterion")]
    if criteria:
        rubric = Table(title="Criteria", title_justify="left")
        for column in ("evaluator", "criterion", "description"):
            rubric.add_column(column)
        for name, criterion in criteria:
            rubric.add_row(escape(name), escape(criterion["name"]), escape(criterion.get("description") or ""))
        console.print(rubric)

    rows = [(name, path, stats) for name, paths in summary["fields"].items() for path, stats in paths.items()]
    if rows:
        fields = Table(title="Fields across the dataset", title_justify="left")
        for column in ("evaluator", "field", "accuracy", "hits/scored", "mean score", "skipped"):
            fields.add_column(column, justify="left" if column in ("evaluator", "field") else "right")
        rows.sort(key=lambda row: (row[2]["accuracy"] is None, row[2]["accuracy"] or 0.0))
        for name, path, stats in rows[:FIELD_ROWS_SHOWN]:
            fields.add_row(
                escape(name), escape(path), pct(stats["accuracy"]), f"{stats['hits']}/{stats['scored']}",
                num(stats["mean_score"]), str(stats["skipped"]),
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
            by_tag.add_row(escape(tag), str(row["total"]), str(row["passed"]), str(row["failed"]), str(row["errored"]), pct(row["pass_rate"]))
        console.print(by_tag)

    for name, metrics in summary["dataset_metrics"].items():
        table = Table(title=f"Dataset metrics: {escape(name)}", title_justify="left")
        for column in ("attribute", "TP", "FP", "FN", "TN", "precision", "recall", "F1"):
            table.add_column(column, justify="left" if column == "attribute" else "right")
        for attribute, row in metrics["attributes"].items():
            table.add_row(
                escape(attribute), *(str(row[k]) for k in ("tp", "fp", "fn", "tn")),
                num(row["precision"]), num(row["recall"]), num(row["f1"]),
            )
        undefined = any(row[k] is None for row in metrics["attributes"].values() for k in ("precision", "recall", "f1"))
        table.caption = f"macro-F1 {num(metrics['macro_f1'])}" + ("  (n/a: undefined, its denominator is 0)" if undefined else "")
        console.print(table)

    render_usage(summary, console)  # latency/tokens/cost, suite limits, --repeat spread (reports/usage.py)
    slowest = summary.get("slowest_cases") or []
    if slowest:
        console.print(
            "slowest: " + ", ".join(f"{row['case_id']} ({row['duration_ms']:.1f} ms)" for row in slowest),
            markup=False,
        )
