"""What the case page shows of one result, built from the HTML report's own models: values cut by
`clip`, trajectories as `transcript` turns or a played loop as `chat`, field rows as the report
lists them. The page template only lays these out (every value escaped)."""

from __future__ import annotations

import re
from typing import Any

import orjson

from agenteval.reports.cell_table import result_cell
from agenteval.reports.failures import field_rows
from agenteval.reports.html import OUTPUT_CHARS, VALUE_CHARS, claim_rows, clip, clip_text
from agenteval.reports.spans import span_tree
from agenteval.reports.transcript import chat, transcript
from agenteval.paths import MISSING
from agenteval.results import CaseResult

CLAIM_CLASS = {"supported": "pass", "relevant": "pass", "contradicted": "fail", "irrelevant": "fail"}
"""How a claim's (or chunk's) verdict is coloured; `not_found` and `unclear` are neither."""
_SCALE = re.compile(r"^(\w+) \((-?[\d.e+]+) to (-?[\d.e+]+)\)$")


TEXT_SHOWN = 100_000
"""Characters of a text answer the case page shows (the results file has the whole of it)."""


def shown(value: Any) -> str:
    """A value as indented JSON text (a string as itself, its first TEXT_SHOWN characters); a value
    cut for size ends with `… (cut)`."""
    if isinstance(value, str):
        if len(value) <= TEXT_SHOWN:
            return value
        return value[:TEXT_SHOWN] + f"… (cut: {len(value):,} characters in all; the results file has the whole text)"
    value = clip(value, OUTPUT_CHARS)
    if isinstance(value, dict) and set(value) == {"$clip"}:
        return value["$clip"] + "… (cut)"
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        return repr(value)


def scale_input(scale: str | None) -> dict[str, Any]:
    """How a criterion's score is entered: pass/fail, or a number in its range."""
    if scale is None:
        return {"kind": "number", "min": 0, "max": 1, "step": "any", "text": "0 to 1"}
    if scale.startswith(("binary", "pass_fail")):
        return {"kind": "passfail", "text": "pass or fail"}
    found = _SCALE.match(scale)
    if not found:
        return {"kind": "number", "min": None, "max": None, "step": "any", "text": scale}
    low, high = float(found.group(2)), float(found.group(3))
    step = 1 if found.group(1) in ("likert5", "percent") or (high - low >= 4 and low.is_integer() and high.is_integer()) else "any"
    return {"kind": "number", "min": f"{low:g}", "max": f"{high:g}", "step": step, "text": f"{low:g} to {high:g}"}


def scales_of(summary: dict[str, Any] | None) -> dict[str, str]:
    """Each evaluator's `scale:` as the run's resolved suite gives it, in words (`likert5 (1 to 5)`):
    a code judge's result keeps its raw score but not the scale it was read on."""
    from agenteval.evaluators.scales import RangeScale, describe

    resolved = (summary or {}).get("resolved_suite")
    evaluators = resolved.get("evaluators") if isinstance(resolved, dict) else None
    found: dict[str, str] = {}
    for config in evaluators if isinstance(evaluators, list) else ():
        if not isinstance(config, dict) or not isinstance(config.get("name"), str):
            continue
        scale = config.get("scale")
        try:
            if scale in ("binary", "pass_fail", "likert5", "percent"):
                found[config["name"]] = describe(scale)
            elif isinstance(scale, dict):
                found[config["name"]] = describe(RangeScale(**scale))
        except ValueError:
            continue
    return found


def criteria_of(result: CaseResult, scales: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Every criterion an automatic evaluator scored on this case: its judge's raw score, reasoning and
    scale (a code judge's from `scales`, as `scales_of` reads them from the run's summary)."""
    found: dict[str, dict[str, Any]] = {}
    for evaluator in result.evaluator_results:
        if evaluator.type == "human":
            continue
        criteria = (evaluator.details or {}).get("criteria")
        if evaluator.type == "llm_judge" and isinstance(criteria, dict):
            for name, entry in criteria.items():
                if isinstance(entry, dict):
                    found.setdefault(str(name), {"evaluator": evaluator.name, "raw": entry.get("raw_score"), "reasoning": entry.get("reasoning"),
                                                 "scale": entry.get("scale"), "input": scale_input(entry.get("scale"))})
        elif evaluator.criterion and evaluator.criterion.get("name"):
            details = evaluator.details if isinstance(evaluator.details, dict) else {}
            scale = (scales or {}).get(evaluator.name) if "raw_score" in details else None
            found.setdefault(evaluator.criterion["name"], {"evaluator": evaluator.name, "raw": details.get("raw_score", evaluator.score),
                                                           "reasoning": evaluator.reasoning, "scale": scale, "input": scale_input(scale)})
    return found


def cell_view(result: CaseResult) -> dict[str, Any]:
    """One cell's answer to the case, with every evaluator's verdict, hits, misses and reasoning."""
    evaluators = []
    for evaluator in result.evaluator_results:
        criteria = (evaluator.details or {}).get("criteria") if isinstance(evaluator.details, dict) else None
        evaluators.append({
            "name": evaluator.name, "type": evaluator.type, "verdict": evaluator.verdict, "score": evaluator.score,
            "hits": [clip_text(hit) for hit in evaluator.hits[:50]], "misses": [clip_text(miss) for miss in evaluator.misses[:50]],
            "more_misses": max(0, len(evaluator.misses) - 50), "reasoning": clip_text(evaluator.reasoning, 4000),
            "error": clip_text(evaluator.error, 2000),
            "criteria": [(str(name), entry.get("raw_score"), clip_text(entry.get("reasoning"), 2000)) for name, entry in criteria.items()
                         if isinstance(entry, dict)] if isinstance(criteria, dict) else [],
            "claims": [(claim, verdict, CLAIM_CLASS.get(verdict, "partial"), evidence) for claim, verdict, evidence in claim_rows(evaluator.details) or []],
            "fields": [(row.path, row.status, None if row.expected is MISSING else shown(clip(row.expected, VALUE_CHARS)),
                        None if row.actual is MISSING else shown(clip(row.actual, VALUE_CHARS))) for row in field_rows(evaluator)[:200]],
        })
    played = chat(result.output, clip)
    return {
        "cell": result_cell(result), "repetition": result.repetition, "verdict": result.verdict, "score": result.score,
        "error": clip_text(result.error, 2000), "answer": shown(result.output), "usage": result.usage or {},
        "evaluators": evaluators, "chat": played, "transcript": None if played else transcript(result.output, clip),
        "spans": span_tree(result.output),
    }
