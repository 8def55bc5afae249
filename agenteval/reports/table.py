"""The run at a glance in the terminal: counts, per-evaluator and per-field tables, dataset metrics.

Every name and id from the data is shown through `visible` (control characters as escapes), and
tables keep identifiers whole on narrow terminals (`terminal.fitted_table`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from agenteval.reports.cell_table import cell_table, comparison_lines, gate_lines
from agenteval.reports.numbers import counted, num, pct
from agenteval.reports.terminal import Column, column, fitted_table, fitted_tables, joined, visible
from agenteval.reports.usage import render_usage

_VERDICT_STYLE = {"pass": "green", "partial": "yellow", "fail": "red", "error": "magenta"}
FIELD_ROWS_SHOWN = 30
_ID, _NUM, _TEXT = "id", "num", "text"


def criterion_rows(summary: dict[str, Any]) -> list[list[str]]:
    """Per evaluator with `criteria` in the summary (an llm_judge's criteria, a composite's
    children): criterion, mean score and verdict counts, as every single-run report shows them."""
    rows = []
    for name, stats in summary.get("evaluators", {}).items():
        for criterion, figures in (stats.get("criteria") or {}).items():
            verdicts = figures.get("verdicts") or {}
            rows.append([name, str(criterion), num(figures.get("mean_score")), *(str(verdicts.get(v, 0)) for v in ("pass", "partial", "fail"))])
    return rows


def _columns(*specs: tuple[str, str]) -> list[Column]:
    return [column(header, kind) for header, kind in specs]


def render_summary(summary: dict[str, Any], console: Console) -> None:
    """The run at a glance: counts, per-evaluator and per-field tables, dataset metrics, slowest cases."""
    counts = summary["counts"]
    title = Text(visible(str(summary.get("suite", ""))), style="bold")
    if summary.get("run_id"):
        title.append(f"  run {visible(str(summary['run_id']))}")
    if summary.get("interrupted"):
        title.append("  (interrupted)", style="magenta")
    console.print(title)
    counted_line = Text(f"{counted(counts['total'])}: ")
    counted_line.append(f"{counts['passed']} passed", style="green").append(", ")
    counted_line.append(f"{counts['failed']} failed", style="red").append(", ")
    counted_line.append(f"{counts['errored']} errored", style="magenta")
    parts = [counted_line, Text("pass rate ").append(pct(summary["pass_rate"]), style="bold"), Text(f"mean score {num(summary['mean_score'])}")]
    if "duration_s" in summary:
        parts.append(Text(f"in {summary['duration_s']:.2f}s"))
    console.print(joined(console.width, parts))

    console.print(fitted_table(
        console, "Evaluators",
        _columns(("evaluator", _ID), ("type", _ID), ("mean score", _NUM), ("pass", _NUM), ("partial", _NUM),
                 ("fail", _NUM), ("error", _NUM), ("mean ms", _NUM)),
        [
            [name, stats["type"], num(stats["mean_score"]),
             *(Text(str(stats["verdicts"].get(v, 0)), style=_VERDICT_STYLE[v]) for v in ("pass", "partial", "fail", "error")),
             num(stats["mean_duration_ms"], 2)]
            for name, stats in summary["evaluators"].items()
        ],
    ))

    scored = criterion_rows(summary)
    if scored:
        console.print(fitted_table(
            console, "Scores per criterion",
            _columns(("evaluator", _ID), ("criterion", _ID), ("mean score", _NUM), ("pass", _NUM), ("partial", _NUM), ("fail", _NUM)),
            scored,
        ))

    criteria = [(name, stats["criterion"]) for name, stats in summary["evaluators"].items() if stats.get("criterion")]
    if criteria:
        console.print(fitted_table(
            console, "Criteria", _columns(("evaluator", _ID), ("criterion", _ID), ("description", _TEXT)),
            [[name, criterion["name"], criterion.get("description") or ""] for name, criterion in criteria],
        ))

    rows = [(name, path, stats) for name, paths in summary["fields"].items() for path, stats in paths.items()]
    if rows:
        rows.sort(key=lambda row: (row[2]["accuracy"] is None, row[2]["accuracy"] or 0.0))
        console.print(fitted_table(
            console, "Fields across the dataset",
            _columns(("evaluator", _ID), ("field", _ID), ("accuracy", _NUM), ("hits/scored", _NUM), ("mean score", _NUM), ("skipped", _NUM)),
            [
                [name, path, pct(stats["accuracy"]), f"{stats['hits']}/{stats['scored']}", num(stats["mean_score"]), str(stats["skipped"])]
                for name, path, stats in rows[:FIELD_ROWS_SHOWN]
            ],
            caption=f"worst {FIELD_ROWS_SHOWN} of {len(rows)} fields; all are in the summary JSON" if len(rows) > FIELD_ROWS_SHOWN else None,
        ))

    tags = summary.get("tags") or {}
    if tags:
        console.print(fitted_table(
            console, "By tag",
            _columns(("tag", _ID), ("cases", _NUM), ("passed", _NUM), ("failed", _NUM), ("errored", _NUM), ("pass rate", _NUM)),
            [[tag, str(row["total"]), str(row["passed"]), str(row["failed"]), str(row["errored"]), pct(row["pass_rate"])] for tag, row in tags.items()],
        ))

    for name, metrics in summary["dataset_metrics"].items():
        undefined = any(row[k] is None for row in metrics["attributes"].values() for k in ("precision", "recall", "f1"))
        console.print(fitted_table(
            console, f"Dataset metrics: {name}",
            _columns(("attribute", _ID), ("TP", _NUM), ("FP", _NUM), ("FN", _NUM), ("TN", _NUM), ("precision", _NUM), ("recall", _NUM), ("F1", _NUM)),
            [
                [attribute, *(str(row[k]) for k in ("tp", "fp", "fn", "tn")), num(row["precision"]), num(row["recall"]), num(row["f1"])]
                for attribute, row in metrics["attributes"].items()
            ],
            caption=f"macro-F1 {num(metrics['macro_f1'])}" + ("  (n/a: undefined, its denominator is 0)" if undefined else ""),
        ))

    render_usage(summary, console)  # latency/tokens/cost, suite limits, --repeat spread (reports/usage.py)
    slowest = summary.get("slowest_cases") or []
    if slowest:
        console.print(
            Text("slowest: " + ", ".join(f"{visible(str(row['case_id']))} ({row['duration_ms']:.1f} ms)" for row in slowest)),
            soft_wrap=True,  # one line, however long the ids: a log reader greps for it
        )
    render_cells(summary, console)


def _by_evaluator(console: Console, columns: list[Column], rows: list[list[str]], cells: list[str]) -> Any:
    """Each evaluator's (and criterion's) mean score per cell: one row per evaluator and a column per
    cell when the cells fit side by side (any number of evaluators reads down the page), else a row
    per cell, its evaluators split over as many tables as the width needs."""
    by_row = fitted_tables(
        console, "Cells by evaluator", [Column("evaluator"), *(Column(cell, "num") for cell in cells)],
        [[column.header, *(row[index] for row in rows)] for index, column in enumerate(columns)],
    )
    if len(by_row) == 1:
        return by_row[0]
    return fitted_table(console, "Cells by evaluator", [Column("cell"), *columns], [[cell, *row] for cell, row in zip(cells, rows)], keep=1)


def render_cells(summary: dict[str, Any], console: Console) -> None:
    """A matrix run, cell by cell: the cells table, the comparisons in words (significant ones
    first) and the cells that failed the gate. Prints nothing for a run of one cell."""
    table = cell_table(summary)
    if table is None:
        return
    columns = [Column(visible(header), kind) for header, kind in table.columns]
    if len(fitted_tables(console, "Cells", columns, table.rows, keep=1)) == 1:
        console.print(fitted_table(console, "Cells", columns, table.rows, keep=1))
    else:  # too wide: the cells' figures, then the evaluators' and criteria's means in a table of their own
        start, stop = table.per_evaluator
        chosen = [0, *range(1, start), *range(stop, len(columns))]
        console.print(fitted_table(console, "Cells", [columns[i] for i in chosen], [[row[i] for i in chosen] for row in table.rows], keep=1))
        if stop > start:
            console.print(_by_evaluator(console, columns[start:stop], [row[start:stop] for row in table.rows], [row[0] for row in table.rows]))
    comparisons = comparison_lines(summary)
    if comparisons:
        console.print(Text("Comparisons", style="bold"))
        for text, significant in comparisons:
            console.print(Text(visible(text), style="bold" if significant else ""), soft_wrap=True)  # one line each: a log reader greps for it
    for line in gate_lines(summary):
        console.print(Text(visible(line), style="red"))
