"""OTLP/JSON spans, flattened: what the collector's file exporter writes, read defensively.

A document is `{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`; ids are hex (base64 is
accepted too, as protobuf's JSON mapping writes it). Values past the limits below are cut, so one
hostile span cannot hold the memory of a run.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""Largest OTLP/JSON document (one line of a JSONL export) read; a longer one is skipped, named."""
MAX_SPANS_PER_TRACE = 10_000
"""Most spans one trace may have to be read into an answer; more is that case's error."""
MAX_ATTRIBUTES_PER_SPAN = 1_000
"""Attributes (and events) kept per span; the rest are dropped."""
MAX_VALUE_CHARS = 1_000_000
"""Longest attribute text kept (longer text is cut and ends with `...[cut]`)."""
MAX_VALUE_DEPTH = 20
"""Deepest array or key-value list read inside an attribute value."""

CUT_MARK = "...[cut]"


class TraceError(ValueError):
    """An export that cannot be read as OTLP/JSON: the message says where and why."""


@dataclass(slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int  # 0: unknown (OTLP's own meaning of 0; also a time that is missing or does not read)
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: bool = False
    status_message: str | None = None

    @property
    def duration_ms(self) -> float | None:
        """The span's duration; None when its start or end is unknown."""
        if not self.start_ns or not self.end_ns:
            return None
        return round(max(0, self.end_ns - self.start_ns) / 1e6, 3)


def raw_spans(document: Any) -> list[Any]:
    """Every raw span of one document; TraceError for a document that is not `{"resourceSpans": [...]}`."""
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans", []), list):
        raise TraceError('not an OTLP/JSON trace export (expected {"resourceSpans": [...]})')
    if "resourceSpans" not in document:
        raise TraceError('not an OTLP/JSON trace export (no "resourceSpans")')
    found = []
    for resource_spans in document["resourceSpans"]:
        if not isinstance(resource_spans, dict):
            raise TraceError("a `resourceSpans` item is not an object")
        scopes = resource_spans.get("scopeSpans", resource_spans.get("instrumentationLibrarySpans", []))
        if not isinstance(scopes, list):
            raise TraceError("`scopeSpans` is not a list")
        for scope in scopes:
            spans = scope.get("spans", []) if isinstance(scope, dict) else None
            if not isinstance(spans, list):
                raise TraceError("a `scopeSpans` item has no list of `spans`")
            found.extend(spans)
    return found


def trace_id_of(raw: Any) -> str:
    """The hex trace id of a raw span (TraceError when it has none that reads)."""
    if not isinstance(raw, dict):
        raise TraceError("a span is not an object")
    return hex_id(raw.get("traceId"), 16, "traceId")


def hex_id(value: Any, size: int, key: str) -> str:
    """An OTLP id as lowercase hex: given as hex (the OTLP/JSON rule) or base64 (protobuf's JSON)."""
    if isinstance(value, str):
        if len(value) == size * 2:
            try:
                bytes.fromhex(value)
                return value.lower()
            except ValueError:
                pass
        try:
            decoded = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            decoded = b""
        if len(decoded) == size:
            return decoded.hex()
    if value is None:
        raise TraceError(f"`{key}` is missing")
    shown = repr(value)[:60]
    raise TraceError(f"`{key}` {shown} is not a {size}-byte id in hex or base64")


def read_span(raw: dict[str, Any]) -> Span:
    """One raw span, flattened; TraceError naming what is wrong with it."""
    try:
        return _read_span(raw)
    except TraceError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:  # a shape no check here foresaw
        raise TraceError(f"the span cannot be read ({type(exc).__name__}: {str(exc)[:200]})") from None


def _read_span(raw: dict[str, Any]) -> Span:
    trace_id = trace_id_of(raw)
    span_id = hex_id(raw.get("spanId"), 8, "spanId")
    parent = raw.get("parentSpanId")
    parent_id = hex_id(parent, 8, "parentSpanId") if parent not in (None, "") else None
    name = raw.get("name")
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    code = status.get("code")
    attributes = attributes_of(raw.get("attributes"))
    events = []
    for event in (raw.get("events") or [])[:MAX_ATTRIBUTES_PER_SPAN] if isinstance(raw.get("events"), list) else ():
        if isinstance(event, dict):  # proto3 JSON leaves an empty name out: no name is an empty one
            event_name = event.get("name")
            events.append((_text(event_name) if isinstance(event_name, str) else "", attributes_of(event.get("attributes"))))
    message = status.get("message")
    return Span(
        trace_id=trace_id, span_id=span_id, parent_id=parent_id,
        name=_text(name) if isinstance(name, str) else "",
        start_ns=_nanos(raw.get("startTimeUnixNano")), end_ns=_nanos(raw.get("endTimeUnixNano")),
        attributes=attributes, events=events,
        error=code in (2, "2", "STATUS_CODE_ERROR"),
        status_message=_text(message) if isinstance(message, str) and message else None,
    )


def attributes_of(raw: Any, depth: int = 0) -> dict[str, Any]:
    """OTLP `[{key, value: {stringValue|intValue|...}}]` as a plain mapping (bounded); `depth` is how
    deep inside an attribute value the list is (a `kvlistValue`'s), so nesting is bounded as a whole."""
    found: dict[str, Any] = {}
    if not isinstance(raw, list):
        return found
    for item in raw[:MAX_ATTRIBUTES_PER_SPAN]:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            found[_text(item["key"])] = _value(item.get("value"), depth)
    return found


def _value(raw: Any, depth: int) -> Any:
    if not isinstance(raw, dict) or depth > MAX_VALUE_DEPTH:
        return None
    if "stringValue" in raw:
        return _text(raw["stringValue"]) if isinstance(raw["stringValue"], str) else None
    if "boolValue" in raw:
        return raw["boolValue"] if isinstance(raw["boolValue"], bool) else None
    if "intValue" in raw:
        value = raw["intValue"]  # int64, written as a string in OTLP/JSON
        if isinstance(value, str):
            if len(value) > 20 or not is_digits(value.removeprefix("-")):
                return None
            value = int(value)
        return value if type(value) is int and -(2**63) <= value < 2**63 else None
    if "doubleValue" in raw:
        value = raw["doubleValue"]
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value and abs(value) != float("inf") else None
    if "arrayValue" in raw:
        values = raw["arrayValue"].get("values") if isinstance(raw["arrayValue"], dict) else None
        return [_value(value, depth + 1) for value in values[:MAX_ATTRIBUTES_PER_SPAN]] if isinstance(values, list) else []
    if "kvlistValue" in raw:
        values = raw["kvlistValue"].get("values") if isinstance(raw["kvlistValue"], dict) else None
        return attributes_of(values, depth + 1)
    if "bytesValue" in raw:
        return _text(raw["bytesValue"]) if isinstance(raw["bytesValue"], str) else None
    return None


def _text(value: str) -> str:
    return value if len(value) <= MAX_VALUE_CHARS else value[:MAX_VALUE_CHARS] + CUT_MARK


def is_digits(text: str) -> bool:
    """Whether `text` is ASCII digits only (`str.isdigit` also takes `²` and `١`, which `int` may refuse)."""
    return text.isascii() and text.isdigit()


def _nanos(value: Any) -> int:
    """A `*TimeUnixNano` (a fixed64: a string or a number in OTLP/JSON); 0, which OTLP reads as
    unknown, when it is missing, does not read or is past 64 bits."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, str) and is_digits(value) and len(value) <= 20:
        value = int(value)
    if isinstance(value, float) and value == value and 0 <= value < 2.0**64:
        value = int(value)
    return value if type(value) is int and 0 <= value < 2**64 else 0
