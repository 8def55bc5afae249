"""The tool loop: ask the model, run the tools it calls, give it their results, until it answers
without a call or a limit ends the loop (`max_steps` model calls, a token or cost `budget`, a
`timeout` for the whole loop).

The loop knows a model only as a `ModelStep` (agenteval.agents.protocol), so every model target
that offers `step` gets it: `tool_loop(target, case, run, messages)` is the whole of what a target
adds to its `answer` (it returns None when no tool has an implementation, and the target answers
as it always did). Each model step is one request through the run's endpoints, so retries,
secrets, usage, prices and the response cache apply per step; tools answer the same calls the
same way, so a re-run of the same conversation sends the same requests and replays from the cache.

A loop ended by a limit is not an error: its trajectory is the answer, `stopped` names the limit,
and `limit` says which limit and its value (the target puts it in `Answer.limit_reached`, and the
case fails). A model step that fails after its retries is the case's error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from agenteval.agents.protocol import ModelStep, StepReply, ToolCall
from agenteval.agents.tools import BoundTool, CaseTool, McpTools, Tool, ToolResult, ToolSpec, failure, mcp_tools
from agenteval.config import StrictModel
from agenteval.endpoints.spans import tool_span

Stopped = Literal["answered", "max_steps", "budget", "timeout"]
DEFAULT_MAX_STEPS = 10


class Budget(StrictModel):
    """What one case's loop may spend; going over ends the loop (its answer fails)."""

    tokens: int | None = Field(None, ge=1, description="Total tokens (input + output) over every model call of the case.")
    cost_usd: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="Cost in USD over every model call of the case (needs the model's price under `prices:`).",
    )


class LoopLimits(StrictModel):
    """When a tool loop gives up (each ends it with `stopped` set, and the case fails naming the limit)."""

    max_steps: int = Field(DEFAULT_MAX_STEPS, ge=1, le=1000, description="Model calls per case at most.")
    budget: Budget | None = Field(None, description="Tokens or cost per case at most.")
    timeout: float | None = Field(
        None, gt=0, le=86400, allow_inf_nan=False,
        description="Seconds for the whole loop of a case, checked before each model call and each tool call (tools get at most the time left).",
    )


class ToolLoopFields(StrictModel):
    """The keys a model target needs to run tool loops: its tools and the loop's limits."""

    tools: list[ToolSpec] | None = Field(
        None,
        description="Tools for the model: `{name, description, parameters}` or `{type: function, function: {...}}`, each with at most "
        "one implementation (`mock`, `command`, `python`, `http`, `mcp`), or `{mcp: SERVER}` for an MCP server's tools. "
        "When any has one, the target runs the tool loop; "
        "without, the tools are only passed to the model.",
    )
    loop: LoopLimits = Field(default_factory=LoopLimits, description="Limits of the tool loop (max_steps, budget, timeout).")


@dataclass(slots=True)
class LoopResult:
    """A finished loop: the whole conversation and what happened in it."""

    messages: list[dict[str, Any]]
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    stopped: Stopped = "answered"
    usage: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    limit: str | None = None  # which limit ended the loop, and its value
    error: str | None = None  # a model step that failed: no answer

    def answer(self) -> dict[str, Any]:
        """The documented answer of a loop (docs/live-agents.md)."""
        return {
            "content": self.content,
            "messages": self.messages,
            "tool_calls": self.tool_calls,
            "steps": self.steps,
            "stopped": self.stopped,
            "usage": self.usage,
            "model": self.model,
        }

    @property
    def latency_ms(self) -> float:
        return round(sum(step.get("latency_ms") or 0.0 for step in self.steps), 3)


def run_loop(
    step: ModelStep, messages: list[dict[str, Any]], tools: list[BoundTool], run: Any, limits: LoopLimits,
) -> LoopResult:
    """Model steps and tool calls until an answer without calls or a limit (see the module docstring)."""
    started = time.monotonic()
    deadline = None if limits.timeout is None else started + limits.timeout
    by_name = {tool.name: tool for tool in tools}
    definitions = [tool.definition for tool in tools]
    result = LoopResult(messages=[dict(message) for message in messages])
    model_usages: list[dict[str, Any]] = []
    for number in range(1, limits.max_steps + 1):
        if _past(deadline):
            return _stop(result, model_usages, "timeout", _timeout_message(limits))
        reply = step.step(result.messages, definitions, run)
        result.steps.append({"kind": "model", "step": number, "latency_ms": reply.latency_ms, "usage": reply.usage})
        model_usages.append(reply.usage)
        if reply.error is not None:
            result.error = reply.error
            return _finish(result, model_usages)
        if (unusable := _unsendable(reply.message)) is not None:
            result.error = unusable
            return _finish(result, model_usages)
        calls = _named_calls(reply, number)
        result.messages.append(reply.message)
        result.content = reply.content
        result.model = reply.model or result.model
        over, unknowable = _over_budget(limits, model_usages)
        if unknowable is not None:
            result.error = unknowable
            return _finish(result, model_usages)
        if over is not None:
            return _stop(result, model_usages, "budget", over)
        if not calls:
            return _stop(result, model_usages, "answered", None)
        if number == limits.max_steps:
            break
        for call in calls:
            if _past(deadline):
                return _stop(result, model_usages, "timeout", _timeout_message(limits))
            span = tool_span(call.name, call.id, call.arguments)  # --otel: an execute_tool span (None when off)
            try:
                done = _call(call, by_name, run, None if deadline is None else deadline - time.monotonic())
            except BaseException:  # a case time limit stopping the call: its span still ends
                if span is not None:
                    span.done({"error": "the call was interrupted"}, True)
                raise
            if span is not None:
                span.done(done.value, done.failed)
            result.messages.append({"role": "tool", "tool_call_id": call.id, "content": done.text})
            result.tool_calls.append({"name": call.name, "arguments": call.arguments, "result": done.value, "id": call.id, "step": number})
            tool_step = {"kind": "tool", "step": number, "name": call.name, "id": call.id, "latency_ms": done.latency_ms}
            if done.failed:
                tool_step["error"] = True
            result.steps.append(tool_step)
    message = (f"the tool loop reached its max_steps of {limits.max_steps} model calls (loop.max_steps) "
               "and the model was still calling tools")
    return _stop(result, model_usages, "max_steps", message)


def _unsendable(message: dict[str, Any]) -> str | None:
    """Why the model's message cannot be sent back to it (a lone surrogate in its text or a call's
    arguments is not Unicode text), or None: the case's error, rather than a request that fails."""
    from agenteval.usable import problem

    found = problem(message)
    return None if found is None else f"the model's reply {found.removeprefix('answer ').replace('`answer', '`message')}"


def _named_calls(reply: StepReply, number: int) -> list[ToolCall]:
    """The reply's calls, each with an id (a model that gives none gets `call_<step>_<n>`, written
    into its message too, so each tool result names the call it answers)."""
    calls = reply.tool_calls
    missing = [index for index, call in enumerate(calls) if not call.id]
    if missing:
        raw = reply.message.get("tool_calls")
        for index in missing:
            calls[index].id = f"call_{number}_{index + 1}"
            if isinstance(raw, list) and index < len(raw) and isinstance(raw[index], dict):
                raw[index]["id"] = calls[index].id
    return calls


def _call(call: ToolCall, by_name: dict[str, BoundTool], run: Any, seconds_left: float | None) -> ToolResult:
    if call.arguments_error is not None:
        return failure(f"the arguments of {call.name!r} could not be read: {call.arguments_error}")
    tool = by_name.get(call.name)
    if tool is None:
        known = ", ".join(sorted(by_name)) or "none"
        return failure(f"there is no tool named {call.name!r} (tools: {known})")
    return tool.call(call.arguments, run, seconds_left)


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _timeout_message(limits: LoopLimits) -> str:
    return f"the tool loop ran past its timeout of {limits.timeout:g} s (loop.timeout)"


def _over_budget(limits: LoopLimits, usages: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """(the budget the model calls so far went over, why the budget cannot be kept), each a
    message or None. A budget that cannot be measured is the case's error, never silently unkept:
    a cost budget for a model without a price, a token budget for a server that sends no counts."""
    budget = limits.budget
    if budget is None:
        return None, None
    if budget.tokens is not None:
        counted = [_tokens(usage) for usage in usages]
        if None in counted:
            return None, ("loop.budget.tokens is set but a model call's tokens are unknown "
                          "(the server's reply has no `usage` with token counts)")
        tokens = sum(counted)  # type: ignore[arg-type]
        if tokens > budget.tokens:
            return f"the tool loop used {tokens} tokens, over its budget of {budget.tokens} (loop.budget.tokens)", None
    if budget.cost_usd is not None:
        if any(usage.get("cost_usd") is None for usage in usages):
            return None, ("loop.budget.cost_usd is set but the cost of a model call is unknown "
                          "(give the model's price under the suite's `prices:`)")
        cost = sum(usage["cost_usd"] for usage in usages)
        if cost > budget.cost_usd:
            return f"the tool loop cost ${cost:.6g}, over its budget of ${budget.cost_usd:g} (loop.budget.cost_usd)", None
    return None, None


def _tokens(usage: dict[str, Any]) -> int | None:
    """A model call's tokens: its total, else input + output; None when the server did not say."""
    total = usage.get("total_tokens")
    if total is not None:
        return total
    given, made = usage.get("input_tokens"), usage.get("output_tokens")
    return None if given is None or made is None else given + made


def _stop(result: LoopResult, usages: list[dict[str, Any]], stopped: Stopped, limit: str | None) -> LoopResult:
    result.stopped, result.limit = stopped, limit
    return _finish(result, usages)


def _finish(result: LoopResult, usages: list[dict[str, Any]]) -> LoopResult:
    """The summed usage: tokens and cost of the model calls, latency of every step (tools too)."""
    from agenteval.usage import combine_usage

    total: dict[str, Any] | None = None
    for usage in usages:
        total = combine_usage(total, usage)
    total = dict(total or {})
    total["latency_ms"] = result.latency_ms
    result.usage = total
    return result


# -- what a model target calls ----------------------------------------------------------------------


def toolbox(tools: list[Any] | None, case_tools: dict[str, Any] | None, run: Any = None) -> list[BoundTool] | str:
    """The target's tools (an MCP server's as it lists them) with the case's own implementations
    laid over them (by name); a message when the case names a tool the target does not have."""
    bound: list[BoundTool] = []
    for tool in tools or ():
        if isinstance(tool, McpTools):
            served = mcp_tools(tool, run)
            if isinstance(served, str):
                return served
            bound.extend(served)
        elif isinstance(tool, Tool):
            bound.append(BoundTool(tool.tool_name, tool.definition(), tool))
        else:  # another kind of tool an API offers, passed as is: nothing here can answer it
            name = str(tool.get("name") or tool.get("type"))
            bound.append(BoundTool(name, tool, None))
    seen: set[str] = set()
    for tool in bound:  # (two of one name: the model cannot tell them apart, and the last would answer for both)
        if tool.name in seen:
            return f"two of the target's tools are named {tool.name!r} (an MCP server's among them, as it lists them): give each its own name"
        seen.add(tool.name)
    if case_tools:
        names = {tool.name: index for index, tool in enumerate(bound)}
        for name, given in case_tools.items():
            if name not in names:
                known = ", ".join(sorted(names)) or "none"
                return f"the case gives `tools.{name}`, but the target has no tool named {name!r} (tools: {known})"
            try:
                implementation = given if isinstance(given, CaseTool) else CaseTool.model_validate(given)
            except ValueError as exc:  # a case built without validation (it passed at load, so rarely)
                return f"the case's `tools.{name}` is not valid: {exc}"
            tool = bound[names[name]]
            bound[names[name]] = BoundTool(tool.name, tool.definition, implementation)
    return bound


def runs_loop(tools: list[BoundTool]) -> bool:
    return any(tool.implementation is not None and tool.implementation.kind is not None for tool in tools)


def tool_loop(target: Any, case: Any, run: Any, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """For a model target's `answer`: None when none of its tools (with the case's) has an
    implementation; else the loop's outcome as `Answer` keywords (output, error, duration_ms, usage,
    limit_reached). `target` offers `step` and has `tools` and `loop` (ToolLoopFields)."""
    bound = toolbox(getattr(target, "tools", None), getattr(case, "tools", None), run)
    if isinstance(bound, str):
        return {"error": f"{target.type} target: {bound}"}
    if not runs_loop(bound):
        return None
    result = run_loop(target, messages, bound, run, target.loop)
    usage = result.usage or None
    if result.error is not None:
        return {"error": f"{result.error} (at model call {len(model_steps(result))} of the tool loop)", "duration_ms": result.latency_ms, "usage": usage}
    return {"output": result.answer(), "duration_ms": result.latency_ms, "usage": usage, "limit_reached": result.limit}


def model_steps(result: LoopResult) -> list[dict[str, Any]]:
    return [step for step in result.steps if step["kind"] == "model"]


def read_tool_calls(raw: Any) -> list[ToolCall]:
    """An OpenAI-shape message's `tool_calls` as ToolCalls, arguments parsed from their JSON text
    (empty text is no arguments; text that is not a JSON object is the call's `arguments_error`)."""
    from agenteval.process import decode_json

    calls = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        function = item.get("function") if isinstance(item.get("function"), dict) else {}
        name = function.get("name")
        call = ToolCall(item.get("id") if isinstance(item.get("id"), str) else "", name if isinstance(name, str) else "")
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            if not arguments.strip():
                arguments = {}
            else:
                try:
                    arguments = decode_json(arguments.encode())
                except (ValueError, RecursionError):
                    call.arguments, call.arguments_error = arguments, f"not JSON: {arguments[:200]!r}"
                    calls.append(call)
                    continue
        if arguments is None:
            arguments = {}
        if isinstance(arguments, dict):
            call.arguments = arguments
        else:
            call.arguments, call.arguments_error = arguments, f"not a JSON object: {str(arguments)[:200]!r}"
        calls.append(call)
    return calls
