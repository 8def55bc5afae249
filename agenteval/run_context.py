"""The run's context as the code it runs sees it: which run, suite, cell and case this is.

Code judges and python evaluators get it in their payload (`run_id`, `suite`, `cell`,
`repetition` beside `case_id`), Python checks in `ctx.run`, command targets and code judges as
`AGENTEVAL_*` environment variables, and a python target's function (or anything it calls) from
`agenteval.current_run()`, which is set for the duration of each call. A live case's W3C
`traceparent` travels the same ways (TRACEPARENT for a command, `current_run().traceparent`).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from agenteval.cells import cell_label

__all__ = ["RunContext", "call_in", "current_run", "in_context"]


@dataclass(frozen=True, slots=True)
class RunContext:
    """Which run, suite, cell and case some code is working for."""

    run_id: str
    suite: str
    case_id: str | None = None
    target: str | None = None  # the cell: None for the suite's one `target:`
    prompt: str | None = None
    repetition: int = 0  # which of --repeat N
    traceparent: str | None = None  # W3C trace context of a live case (agenteval.traces.propagation)
    span_endpoint: str | None = None  # where the run receives spans (`traces: {receive: true}`), as OTLP/HTTP

    @property
    def cell(self) -> str | None:
        """`target/prompt` in a run of several cells, else None (as result lines name them)."""
        return None if self.target is None and self.prompt is None else cell_label(self.target, self.prompt)

    def for_case(self, case_id: str, repetition: int = 0) -> RunContext:
        return replace(self, case_id=case_id, repetition=repetition)

    def fields(self) -> dict[str, Any]:
        """What a judge's payload carries beside `case_id`."""
        return {"run_id": self.run_id, "suite": self.suite, "cell": self.cell, "repetition": self.repetition}

    def environment(self) -> dict[str, str]:
        """What a process started for this case finds in its environment (a value no environment
        can hold, such as a case id with a NUL, is left out rather than failing the case)."""
        env = {
            "AGENTEVAL_RUN_ID": self.run_id, "AGENTEVAL_SUITE": self.suite, "AGENTEVAL_CASE_ID": self.case_id,
            "AGENTEVAL_CELL": self.cell, "AGENTEVAL_REPETITION": str(self.repetition), "TRACEPARENT": self.traceparent,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": self.span_endpoint,
        }
        return {name: value for name, value in env.items() if value is not None and _settable(value)}


def _settable(value: str) -> bool:
    if "\0" in value:
        return False
    try:
        os.fsencode(value)
    except UnicodeError:
        return False
    return True


_CURRENT: ContextVar[RunContext | None] = ContextVar("agenteval_run_context", default=None)


def current_run() -> RunContext | None:
    """The context of the case the calling code works for (inside a python target's call), else None."""
    return _CURRENT.get()


def call_in(context: RunContext | None, function: Any, *args: Any, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)` with `current_run()` answering `context` (on the calling thread)."""
    token = _CURRENT.set(context)
    try:
        return function(*args, **kwargs)
    finally:
        _CURRENT.reset(token)


async def in_context(context: RunContext | None, awaitable: Awaitable[Any]) -> Any:
    """Await `awaitable` with `current_run()` answering `context` (the task's own context)."""
    token = _CURRENT.set(context)
    try:
        return await awaitable
    finally:
        _CURRENT.reset(token)
