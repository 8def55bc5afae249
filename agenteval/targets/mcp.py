"""mcp: test an MCP server's tools like any target: each case calls one tool with its arguments.

The case's `input` is the tool's arguments (with the target's `tool:`), or `{tool, arguments}`.
The arguments are checked against the tool's input schema as the server lists it, and a result
with structured content against its output schema; a mismatch, a tool that answers with an error
(`isError`) or a server that fails is the case's error. The answer is the tool's value as a tool
loop reads it: the structured content, else one text block (as JSON when it is JSON), else the blocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from agenteval.agents.tools import DEFAULT_TOOL_TIMEOUT, McpServer
from agenteval.json_schemas import schema_problem
from agenteval.targets.base import Answer

if TYPE_CHECKING:
    from agenteval.targets.base import TargetRun


class McpTarget(McpServer):
    """One tools/call per case to an MCP server (stdio `command` or streamable-HTTP `url`)."""

    type: Literal["mcp"]
    tool: str | None = Field(
        None, min_length=1, description="The tool each case calls, with the case's input as its arguments; without it a case's "
        "input is `{tool: NAME, arguments: {...}}`.",
    )
    timeout: float = Field(DEFAULT_TOOL_TIMEOUT, gt=0, le=3600, allow_inf_nan=False, description="Seconds one call may take.")

    def answer(self, case: Any, run: TargetRun) -> Answer:
        import time

        from agenteval.agents.mcp_sessions import McpError, sessions
        from agenteval.agents.tools import mcp_value

        called = self._call_of(case.input)
        if isinstance(called, str):
            return Answer(error=f"mcp target: {called}")
        name, arguments = called
        started = time.perf_counter()
        try:
            pool = sessions(run.processes)
            listed = {tool.name: tool for tool in pool.tools(self, run.base_dir, self.timeout)}
            tool = listed.get(name)
            if tool is None:
                known = ", ".join(sorted(listed)[:50]) or "none"
                return Answer(error=f"mcp target: the server has no tool named {name!r} (its tools: {known})")
            problem = schema_problem(arguments, tool.input_schema, run.limits.pattern_seconds)
            if problem:
                return Answer(error=f"mcp target: the arguments of {name!r} do not match its input schema: {problem}")
            result = pool.call(self, run.base_dir, name, arguments, self.timeout, run.limits.pattern_seconds)
        except (McpError, ImportError) as exc:
            return Answer(error=f"mcp target: tool {name!r}: {exc}")
        except InterruptedError:
            return Answer(error="mcp target: the run is stopping")
        elapsed = round((time.perf_counter() - started) * 1000, 3)
        value, is_error = mcp_value(result, run.answer_depth)
        if is_error:
            return Answer(error=f"mcp target: tool {name!r} answered with an error: {value}", duration_ms=elapsed)
        return Answer(value, duration_ms=elapsed, usage={"latency_ms": elapsed})

    def _call_of(self, given: Any) -> tuple[str, dict[str, Any]] | str:
        """(tool, arguments) of a case's input, or why it has none."""
        if self.tool is not None:
            arguments = {} if given is None else given
            if not isinstance(arguments, dict):
                return f"the case's input is the arguments of {self.tool!r}: an object, not {type(arguments).__name__}"
            return self.tool, arguments
        if not isinstance(given, dict) or not isinstance(given.get("tool"), str):
            return "the case's input is `{tool: NAME, arguments: {...}}` (or give the target a `tool:`)"
        arguments = given.get("arguments") or {}
        if not isinstance(arguments, dict):
            return f"the case's `arguments` must be an object, not {type(arguments).__name__}"
        return given["tool"], arguments
