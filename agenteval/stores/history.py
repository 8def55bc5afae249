"""`agenteval history`: runs over time, with pass rate, mean score, per-evaluator and per-field trends.

Runs come from a SQL store (aggregates computed by the database) or from a folder of JSONL runs
(their `.summary.json` files); either way each run is one small record, never its results.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from agenteval.reports.markdown import md, table
from agenteval.reports.numbers import num, pct, points, signed

BARS = "▁▂▃▄▅▆▇█"


def folder_runs(folder: Path, suite: str | None, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` finished runs in a results folder (of `suite`), oldest first.
    A run killed before its summary was written has none, and is not listed until resumed."""
    found = [(run, written) for run, written in _summaries(folder) if suite is None or run["suite"] == suite]
    found.sort(key=lambda item: (item[0]["started_at"] or "", item[1]))  # two runs started in one second: by end
    runs = [run for run, _ in found]
    return runs[-limit:] if limit else runs


def _summaries(folder: Path) -> Iterator[tuple[dict[str, Any], float]]:
    """(history record, when its summary was written) of every run summary in the folder."""
    for path in sorted(folder.glob("*.summary.json")):
        try:
            data = orjson.loads(path.read_bytes())
            written = path.stat().st_mtime
        except (OSError, orjson.JSONDecodeError):
            continue  # a summary being written, or not one of ours
        if isinstance(data, dict) and isinstance(data.get("counts"), dict) and "run_id" in data:
            yield run_from_summary(data), written


def run_from_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary (`.summary.json`) as one history record, shaped like a SQL store's."""
    counts = summary["counts"]
    return {
        "run_id": summary["run_id"], "suite": summary.get("suite"), "started_at": summary.get("started_at"),
        "finished_at": summary.get("finished_at"), "interrupted": summary.get("interrupted"),
        "total": counts.get("total", 0), "passed": counts.get("passed", 0), "errored": counts.get("errored", 0),
        "pass_rate": summary.get("pass_rate"), "mean_score": summary.get("mean_score"),
        "evaluators": {
            name: {
                "type": stats.get("type"), "count": stats.get("count", 0), "mean_score": stats.get("mean_score"),
                "pass_rate": (stats.get("verdicts") or {}).get("pass", 0) / stats["count"] if stats.get("count") else None,
            }
            for name, stats in (summary.get("evaluators") or {}).items()
        },
        "fields": {
            evaluator: {path: figures.get("accuracy") for path, figures in paths.items()}
            for evaluator, paths in (summary.get("fields") or {}).items()
        },
    }


def trend(values: list[float | None]) -> dict[str, Any]:
    """First and last defined values of a series and the change between them (None: undefined)."""
    defined = [value for value in values if value is not None]
    first, last = (defined[0], defined[-1]) if defined else (None, None)
    return {"values": values, "first": first, "last": last, "change": None if first is None else last - first}


def trends(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per suite: pass rate, mean score, each evaluator's mean score and each field's accuracy, run by run."""
    out: dict[str, dict[str, Any]] = {}
    for suite in dict.fromkeys(run["suite"] for run in runs):
        own = [run for run in runs if run["suite"] == suite]
        evaluators = dict.fromkeys(name for run in own for name in run["evaluators"])
        fields = dict.fromkeys((name, path) for run in own for name, paths in run["fields"].items() for path in paths)
        out[suite] = {
            "runs": [run["run_id"] for run in own],
            "pass_rate": trend([run["pass_rate"] for run in own]),
            "mean_score": trend([run["mean_score"] for run in own]),
            "evaluators": {
                name: {
                    "type": next(run["evaluators"][name]["type"] for run in own if name in run["evaluators"]),
                    **trend([(run["evaluators"].get(name) or {}).get("mean_score") for run in own]),
                }
                for name in evaluators
            },
            "fields": {
                name: {path: trend([run["fields"].get(name, {}).get(path) for run in own]) for (owner, path) in fields if owner == name}
                for name in dict.fromkeys(name for name, _ in fields)
            },
        }
    return out


def history_json(runs: list[dict[str, Any]]) -> str:
    return orjson.dumps({"runs": runs, "trends": trends(runs)}, option=orjson.OPT_INDENT_2).decode()


def sparkline(values: list[float | None]) -> str:
    """Scores in [0, 1] as bars on a fixed scale (so two lines compare); a dot where undefined."""
    return "".join("·" if value is None else BARS[round(min(max(value, 0.0), 1.0) * (len(BARS) - 1))] for value in values)


def sections(runs: list[dict[str, Any]]) -> list[tuple[str, list[str], list[list[str]], int]]:
    """(title, header, rows, first numeric column) of every table, for the terminal and for Markdown."""
    out = []
    for suite, figures in trends(runs).items():
        own = [run for run in runs if run["suite"] == suite]
        rows, previous = [], None
        for run in own:
            change = None if previous is None or run["pass_rate"] is None else run["pass_rate"] - previous
            previous = run["pass_rate"] if run["pass_rate"] is not None else previous
            started = (run["started_at"] or "")[:19].replace("T", " ")
            rows.append([
                run["run_id"] + (" (interrupted)" if run["interrupted"] else ""), started, str(run["total"]),
                pct(run["pass_rate"]), points(change), num(run["mean_score"]),
            ])
        out.append((f"{suite}: {len(own)} run{'s' if len(own) != 1 else ''}",
                    ["run", "started (UTC)", "cases", "pass rate", "vs previous", "mean score"], rows, 2))
        out.append((f"{suite}: mean score by evaluator, oldest to newest", ["evaluator", "type", "trend", "first", "last", "change"], [
            [name, str(series["type"]), sparkline(series["values"]), num(series["first"]), num(series["last"]), signed(series["change"])]
            for name, series in figures["evaluators"].items()
        ], 3))
        field_rows = [
            [f"{name}: {path}", sparkline(series["values"]), pct(series["first"]), pct(series["last"]), points(series["change"])]
            for name, paths in figures["fields"].items() for path, series in paths.items()
        ]
        if field_rows:
            out.append((f"{suite}: field accuracy, oldest to newest", ["field", "trend", "first", "last", "change"], field_rows, 2))
    return out


def history_markdown(runs: list[dict[str, Any]]) -> str:
    lines = ["## agenteval history", ""]
    if not runs:
        return "\n".join(lines + ["No runs.", ""])
    for title, header, rows, right_from in sections(runs):
        lines += [f"### {md(title)}", "", *table(header, [[md(cell) for cell in row] for row in rows], right_from), ""]
    return "\n".join(lines)


def render_history(runs: list[dict[str, Any]], console: Any) -> None:
    from rich.table import Table

    if not runs:
        console.print("no runs")
        return
    for title, header, rows, right_from in sections(runs):
        grid = Table(title=title, title_justify="left")
        for index, column in enumerate(header):
            grid.add_column(column, justify="right" if index >= right_from and column != "trend" else "left")
        for row in rows:
            grid.add_row(*row)
        console.print(grid)
