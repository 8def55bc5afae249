"""`agenteval import traces`: recorded traces (an OTLP/JSON export) as a suite of cases to fill in.

Each trace becomes a case: its input (the root span's `input.value`, else the user's messages),
the answer it observed as the case's recorded `output` (the answer a traces target reads, so the
suite runs as written), and an empty `expected` to fill in. A trace that cannot be read, or one
past the suite's bounds, is listed as not carried over, never the end of the import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.importers import ImportFailed, Imported, Skipped
from agenteval.limits import DEFAULT_LIMITS

SUITE_FILE = "suite.yaml"


def import_traces(path: Path, match: str = "trace_id", max_cases: int | None = None) -> Imported:
    """The traces of the export at `path`, one case per trace (or per `match` key: a session's traces
    make one case), in file order, at most `max_cases`. ImportFailed when the file cannot be read."""
    from agenteval.traces.answer import trace_answer
    from agenteval.traces.index import index_file
    from agenteval.traces.otlp import TraceError

    limits = DEFAULT_LIMITS
    try:
        index = index_file(path, match, int(limits.trace_document_mb * (1 << 20)))
    except OSError as exc:
        raise ImportFailed(f"{path}: cannot read: {exc.strerror or exc}") from None
    imported = Imported(config_name=path.name)
    for problem in index.problems:
        where, _, why = problem.partition(": ")
        line = where.removeprefix("line ").split(",")[0]
        imported.skipped.append(Skipped(path.name, int(line) if line.isdigit() else None, "document", why or problem))
    if index.skipped > len(index.problems):
        imported.skipped.append(Skipped(path.name, None, "document", f"{index.skipped - len(index.problems)} more part(s) could not be read"))
    keys = list(index.ranges) if match == "trace_id" else list(index.keys)
    if match != "trace_id":
        named = {trace_id for trace_ids in index.keys.values() for trace_id in trace_ids}
        unnamed = [trace_id for trace_id in index.ranges if trace_id not in named]
        if unnamed:
            shown = ", ".join(unnamed[:3]) + (f" and {len(unnamed) - 3} more" if len(unnamed) > 3 else "")
            imported.skipped.append(Skipped(path.name, None, "traces", f"{len(unnamed)} trace(s) have no {_metadata_name(match)}: {shown}"))
    if not keys:
        raise ImportFailed(f"{path}: no trace found{_why(index)}; nothing was written")
    for position, key in enumerate(keys):
        if max_cases is not None and len(imported.cases) >= max_cases:
            imported.skipped.append(Skipped(path.name, None, "traces", f"{len(keys) - position} trace(s) past --max-cases {max_cases}", note=True))
            break
        if not key:  # (an empty `session.id`: no case can have an empty id)
            imported.skipped.append(Skipped(path.name, None, "traces", f"trace(s) {', '.join(index.keys[key][:3])} have an empty {_metadata_name(match)}"))
            continue
        try:
            spans = index.spans(key, limits.trace_spans)
            answer = trace_answer(spans)
        except TraceError as exc:
            imported.skipped.append(Skipped(path.name, None, f"trace {key}", str(exc)))
            continue
        metadata = {"trace_id": answer["trace_id"]} if match == "trace_id" else {_metadata_name(match): key}
        imported.cases.append({"id": key, "input": _input(spans, answer), "expected": None, "output": answer, "metadata": metadata})
    if not imported.cases:
        raise ImportFailed(f"{path}: none of its {len(keys)} trace(s) could be read ({imported.skipped[-1].render()}); nothing was written")
    imported.suites[SUITE_FILE] = {
        "name": path.stem or "traces",
        "description": (
            f"Recorded traces from {path.name}: each case's `output` is the answer its trace observed. Fill in each case's "
            "`expected` in cases.jsonl and add evaluators that compare with it (tool_calls, llm_judge, ...)."
        ),
        "evaluators": [{"type": "spans", "name": "no_error_span", "checks": [{"error": False}]}],
        "cases": "cases.jsonl",
    }
    return imported


def _why(index: Any) -> str:
    return f" ({'; '.join(index.problems)})" if index.problems else ""


def _metadata_name(match: str) -> str:
    return match.split(None, 1)[1] if match.startswith("attribute ") else match


def _input(spans: list[Any], answer: dict[str, Any]) -> Any:
    """What the trace was asked: the outermost span's `input.value` (OpenInference), else the
    user's messages in the conversation (one: its text)."""
    from agenteval.traces.answer import json_or_text

    ids = {span.span_id for span in spans}
    for span in sorted(spans, key=lambda span: (span.start_ns, span.end_ns)):
        if (span.parent_id is None or span.parent_id not in ids) and "input.value" in span.attributes:
            return json_or_text(span.attributes["input.value"])
    asked = [message.get("content") for message in answer["messages"] if message.get("role") == "user"]
    return asked[0] if len(asked) == 1 else asked or None
