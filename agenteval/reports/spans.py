"""An answer read from a trace (agenteval.traces.answer: `trace_id`, `spans`) as the span tree the
HTML report and the viewer draw: each span under its parent, in start order, with its kind, start,
duration and whether it failed. Parent ids that loop or point outside the trace make a span a root."""

from __future__ import annotations

from typing import Any

SPANS_SHOWN = 500
DEPTH_SHOWN = 30


def span_tree(output: Any) -> list[Any] | None:
    """[trace id, rows] with a row [depth, name, kind, start ms, duration ms, error]; None when the
    answer holds no spans."""
    spans = output.get("spans") if isinstance(output, dict) else None
    if not isinstance(spans, list):
        return None
    spans = [span for span in spans if isinstance(span, dict)]
    if not spans:
        return None
    ids = {span.get("span_id") for span in spans if isinstance(span.get("span_id"), str)}
    children: dict[Any, list[int]] = {}
    roots: list[int] = []
    for number, span in enumerate(spans):
        parent = span.get("parent_id")
        if isinstance(parent, str) and parent in ids and parent != span.get("span_id"):
            children.setdefault(parent, []).append(number)
        else:
            roots.append(number)
    rows: list[list[Any]] = []
    placed: set[int] = set()

    def start(number: int) -> float:
        value = spans[number].get("start_ms")
        return float(value) if isinstance(value, (int, float)) and value == value else 0.0

    def walk(number: int, depth: int) -> None:
        if number in placed or len(rows) >= SPANS_SHOWN:
            return
        placed.add(number)
        span = spans[number]
        rows.append([min(depth, DEPTH_SHOWN), _text(span.get("name")), _text(span.get("kind")), _number(span.get("start_ms")),
                     _number(span.get("duration_ms")), bool(span.get("error"))])
        for child in sorted(children.get(span.get("span_id"), ()), key=start):
            walk(child, depth + 1)

    for number in sorted(roots, key=start):
        walk(number, 0)
    for number in sorted(range(len(spans)), key=start):  # spans only reachable through a loop of parents
        walk(number, 0)
    trace_id = output.get("trace_id")
    return [trace_id if isinstance(trace_id, str) else None, rows]


def _text(value: Any) -> str:
    return value[:200] if isinstance(value, str) else "" if value is None else str(value)[:200]


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and value == value and abs(value) < 1e15 else None
