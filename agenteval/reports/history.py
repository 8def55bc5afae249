"""`agenteval history`, shown: the tables and Markdown of runs over time (the trends themselves
are computed from stored runs by agenteval.stores.history)."""

from __future__ import annotations

from typing import Any

from agenteval.reports.markdown import md, table
from agenteval.reports.numbers import num, pct, points, signed
from agenteval.stores.history import distinct, series, trends

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float | None]) -> str:
    """Scores in [0, 1] as bars on a fixed scale (so two lines compare); a dot where undefined."""
    return "".join("·" if value is None else BARS[round(min(max(value, 0.0), 1.0) * (len(BARS) - 1))] for value in values)


def sections(runs: list[dict[str, Any]]) -> list[tuple[str, list[str], list[list[str]], int]]:
    """(title, header, rows, first numeric column) of every table, for the terminal and for Markdown:
    per suite its runs (each run id once; a shard marked, and compared only with the same shard of
    earlier runs), then the trends of its whole runs and of each of its shards (`series`)."""
    runs = distinct(runs)
    figures_of = trends(runs)
    out = []
    for suite in dict.fromkeys(run["suite"] for run in runs):
        own = [run for run in runs if run["suite"] == suite]
        reviewed = any(run.get("reviews") for run in own)  # people's reviews (agenteval view): a column when there are any
        rows, previous = [], {}
        for run in own:
            before = previous.get(series(run))
            change = None if before is None or run["pass_rate"] is None else run["pass_rate"] - before
            if run["pass_rate"] is not None:
                previous[series(run)] = run["pass_rate"]
            started = (run["started_at"] or "")[:19].replace("T", " ")
            label = run["run_id"] + (f" (shard {run['shard']})" if run.get("shard") else "") + (" (interrupted)" if run["interrupted"] else "")
            rows.append([
                label, started, str(run["total"]),
                pct(run["pass_rate"]), points(change), num(run["mean_score"]), *([str(run.get("reviews", 0))] if reviewed else []),
            ])
        out.append((f"{suite}: {len(own)} run{'s' if len(own) != 1 else ''}",
                    ["run", "started (UTC)", "cases", "pass rate", "vs previous", "mean score", *(["reviews"] if reviewed else [])], rows, 2))
        for name in sorted(dict.fromkeys(map(series, own)), key=lambda name: name != suite):  # whole runs first, then each shard
            out += _trend_sections(name, figures_of[name])
    return out


def _trend_sections(name: str, figures: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]], int]]:
    evaluator_rows = []
    for evaluator, line in figures["evaluators"].items():
        evaluator_rows.append(_trend_row(evaluator, str(line["type"]), line))
        # an llm_judge's criteria and a composite's children, each under its evaluator
        evaluator_rows += [_trend_row(f"{evaluator}: {criterion}", "criterion", part) for criterion, part in (line.get("criteria") or {}).items()]
    out = [(f"{name}: mean score by evaluator, oldest to newest", ["evaluator", "type", "trend", "first", "last", "change"], evaluator_rows, 3)]
    field_rows = [
        [f"{evaluator}: {path}", sparkline(line["values"]), pct(line["first"]), pct(line["last"]), points(line["change"])]
        for evaluator, paths in figures["fields"].items() for path, line in paths.items()
    ]
    if field_rows:
        out.append((f"{name}: field accuracy, oldest to newest", ["field", "trend", "first", "last", "change"], field_rows, 2))
    return out


def _trend_row(name: str, kind: str, series: dict[str, Any]) -> list[str]:
    return [name, kind, sparkline(series["values"]), num(series["first"]), num(series["last"]), signed(series["change"])]


def history_markdown(runs: list[dict[str, Any]]) -> str:
    lines = ["## agenteval history", ""]
    if not runs:
        return "\n".join(lines + ["No runs.", ""])
    for title, header, rows, right_from in sections(runs):
        lines += [f"### {md(title)}", "", *table(header, [[md(cell) for cell in row] for row in rows], right_from), ""]
    return "\n".join(lines)


def render_history(runs: list[dict[str, Any]], console: Any) -> None:
    from agenteval.reports.terminal import column, fitted_table

    if not runs:
        console.print("no runs")
        return
    for title, header, rows, right_from in sections(runs):
        # run ids, evaluator names and field paths stay whole (`compare RUN_ID` needs them), and so do
        # numbers, the start time and the sparkline (a bar on a line of its own reads as another
        # row): the least useful columns are left out first (the start time: the run id holds it too)
        columns = [column(name, "num" if index >= right_from and name != "trend" else "id") for index, name in enumerate(header)]
        console.print(fitted_table(console, title, columns, rows))
