"""`agenteval history`, the data: runs over time, with pass rate, mean score, per-evaluator, per-criterion
and per-field trends.

Runs come from a SQL store (aggregates computed by the database) or from a folder of JSONL runs
(their `.summary.json` files); either way each run is one small record, never its results.
The tables and Markdown that show them are agenteval.reports.history (reports read stores, not
the other way round).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


def folder_runs(folder: Path, suite: str | None, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` finished runs in a results folder (of `suite`), oldest first.
    A run killed before its summary was written has none, and is not listed until resumed."""
    found = [(run, written) for run, written in _summaries(folder) if suite is None or run["suite"] == suite]
    found.sort(key=lambda item: (item[0]["started_at"] or "", item[1]))  # two runs started in one second: by end
    runs = distinct([run for run, _ in found])
    return runs[-limit:] if limit else runs


def distinct(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each run once, where it first appears: a results file copied whole (`compare
    --update-baseline` copies NEW over BASE) holds the same run under another name."""
    return list({run["run_id"]: run for run in reversed(runs)}.values())[::-1]


def series(run: dict[str, Any]) -> str:
    """The trend a run belongs to: its suite, or for a shard (`--shard 1/2`) the suite and that
    shard, compared only with the same shard of other runs, never with whole runs."""
    return f"{run['suite']} (shard {run['shard']})" if run.get("shard") else run["suite"]


def _summaries(folder: Path) -> Iterator[tuple[dict[str, Any], float]]:
    """(history record, when its summary was written) of every run summary in the folder."""
    for path in sorted(folder.glob("*.summary.json")):
        try:
            data = orjson.loads(path.read_bytes())
            written = path.stat().st_mtime
        except (OSError, orjson.JSONDecodeError):
            continue  # a summary being written, or not one of ours
        if isinstance(data, dict) and isinstance(data.get("counts"), dict) and "run_id" in data:
            run = run_from_summary(data)
            reviews = _reviews(path)
            if reviews:
                run["reviews"] = reviews
            yield run, written


def _reviews(summary: Path) -> int:
    """How many reviews people made of a run (its `.reviews.jsonl` beside the summary); 0 when none or unreadable."""
    from agenteval.stores.reviews import ReviewError, read_reviews

    try:
        return len(read_reviews(summary.with_name(summary.name[: -len(".summary.json")] + ".reviews.jsonl")))
    except ReviewError:
        return 0


def run_from_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary (`.summary.json`) as one history record, shaped like a SQL store's."""
    counts = summary["counts"]
    return {
        **shard_of(summary.get("fingerprint")),
        "run_id": summary["run_id"], "suite": summary.get("suite"), "started_at": summary.get("started_at"),
        "finished_at": summary.get("finished_at"), "interrupted": summary.get("interrupted"),
        "total": counts.get("total", 0), "passed": counts.get("passed", 0), "errored": counts.get("errored", 0),
        "pass_rate": summary.get("pass_rate"), "mean_score": summary.get("mean_score"),
        "evaluators": {
            name: {"type": stats.get("type"), **_figures(stats), **criteria_figures(stats)}
            for name, stats in (summary.get("evaluators") or {}).items()
        },
        "fields": {
            evaluator: {path: figures.get("accuracy") for path, figures in paths.items()}
            for evaluator, paths in (summary.get("fields") or {}).items()
        },
    }


def shard_of(fingerprint: Any) -> dict[str, str]:
    """{"shard": "1/2"} for a run of one shard (its fingerprint's selection, agenteval.resume); {} for a whole run."""
    selection = fingerprint.get("selection") if isinstance(fingerprint, dict) else None
    shard = selection.get("--shard") if isinstance(selection, dict) else None
    return {"shard": shard} if isinstance(shard, str) else {}


def _figures(stats: dict[str, Any]) -> dict[str, Any]:
    """count, mean score and pass rate of an evaluator's (or a criterion's) summary entry."""
    count = stats.get("count") or 0
    return {
        "count": count, "mean_score": stats.get("mean_score"),
        "pass_rate": (stats.get("verdicts") or {}).get("pass", 0) / count if count else None,
    }


def criteria_figures(stats: dict[str, Any]) -> dict[str, Any]:
    """{"criteria": {name: figures}} of an llm_judge's criteria or a composite's children; {} when none."""
    criteria = stats.get("criteria")
    if not isinstance(criteria, dict) or not criteria:
        return {}
    return {"criteria": {name: _figures(figures) for name, figures in criteria.items() if isinstance(figures, dict)}}


def trend(values: list[float | None]) -> dict[str, Any]:
    """First and last defined values of a series and the change between them (None: undefined)."""
    defined = [value for value in values if value is not None]
    first, last = (defined[0], defined[-1]) if defined else (None, None)
    return {"values": values, "first": first, "last": last, "change": None if first is None else last - first}


def trends(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per suite (per suite and shard for shards, `series`): pass rate, mean score, each
    evaluator's mean score and each field's accuracy, run by run."""
    out: dict[str, dict[str, Any]] = {}
    for suite in dict.fromkeys(map(series, runs)):
        own = [run for run in runs if series(run) == suite]
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
                    **_criteria_trends(own, name),
                }
                for name in evaluators
            },
            "fields": {
                name: {path: trend([run["fields"].get(name, {}).get(path) for run in own]) for (owner, path) in fields if owner == name}
                for name in dict.fromkeys(name for name, _ in fields)
            },
        }
    return out


def _criteria_trends(runs: list[dict[str, Any]], evaluator: str) -> dict[str, Any]:
    """{"criteria": {name: trend of its mean score}} of one evaluator across runs; {} when it has none."""
    entries = [(run["evaluators"].get(evaluator) or {}).get("criteria") or {} for run in runs]
    names = dict.fromkeys(name for criteria in entries for name in criteria)
    if not names:
        return {}
    return {"criteria": {name: trend([(criteria.get(name) or {}).get("mean_score") for criteria in entries]) for name in names}}


def history_json(runs: list[dict[str, Any]]) -> str:
    runs = distinct(runs)
    return orjson.dumps({"runs": runs, "trends": trends(runs)}, option=orjson.OPT_INDENT_2).decode()
