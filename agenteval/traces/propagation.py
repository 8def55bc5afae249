"""W3C trace context for a live case: the `traceparent` an http, command or python target is given,
so the spans the system under test exports can be found (and received) by the case's trace id.

Inside an active OpenTelemetry span (`--otel`, or an application's own tracer around the run) the
case joins that trace; otherwise each case starts a trace of its own with a fresh random id. The
parent id is fresh for every case either way: it is what tells one case's received spans from
another's when cases share a trace. The
OpenTelemetry API is read only when something has already imported it: nothing loads for a run
without tracing.
"""

from __future__ import annotations

import os
import re
import sys

HEADER = "traceparent"
"""The header an http target sends, lower-case as the W3C spec writes it."""
ENVIRONMENT = "TRACEPARENT"
"""The variable a command target finds it in (the name OpenTelemetry's environment carrier reads)."""

_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def new_traceparent() -> str:
    """A `traceparent` for one case: the active OpenTelemetry span's trace, else a fresh one."""
    return f"00-{_active_trace_id() or _random_id(16)}-{_random_id(8)}-01"


def trace_id_of(traceparent: str) -> str | None:
    """The 32-hex trace id of a well-formed `traceparent` (None for one that is not)."""
    found = _TRACEPARENT.fullmatch(traceparent)
    return found.group(1) if found and found.group(1) != "0" * 32 and found.group(2) != "0" * 16 else None


def parent_id_of(traceparent: str) -> str | None:
    """The 16-hex parent span id: the span the system under test's first span names as its parent."""
    found = _TRACEPARENT.fullmatch(traceparent)
    return found.group(2) if found else None


def _random_id(size: int) -> str:
    while True:  # an all-zero id is invalid (W3C trace context, 3.2.2.3)
        value = os.urandom(size).hex()
        if value.strip("0"):
            return value


def _active_trace_id() -> str | None:
    """The trace id of the current OpenTelemetry span, when the API is loaded and a valid span is
    active on this thread; else None."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    try:
        context = trace.get_current_span().get_span_context()
    except Exception:  # noqa: BLE001 - a broken tracer must not stop the case: it gets a fresh trace
        return None
    if not getattr(context, "is_valid", False):
        return None
    return f"{context.trace_id:032x}"
