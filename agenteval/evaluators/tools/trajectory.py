"""Read the tool calls out of an agent's trajectory, whatever shape it was recorded in.

Three shapes, freely mixed in one list: OpenAI-style chat messages (assistant `tool_calls` with
`function.name` and `function.arguments` as a JSON string or an object; `tool` messages carry
results), Anthropic-style `tool_use` content blocks, and plain `{name, arguments}` objects.
Messages without calls (user text, tool results) are passed over. Nothing here raises: a call
that cannot be read (no name, arguments that are not a JSON object) is kept with its problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agenteval.process import decode_json


@dataclass(slots=True)
class ToolCall:
    index: int  # position among the calls of the trajectory
    name: str | None  # None: the call has no usable name
    arguments: dict[str, Any] | None  # None: the arguments could not be read
    problem: str | None = None  # why the call is malformed

    @property
    def label(self) -> str:
        return f"call {self.index} ({self.name})" if self.name else f"call {self.index}"


@dataclass(slots=True)
class Trajectory:
    calls: list[ToolCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # items that should hold calls but cannot be read


def read_trajectory(items: list[Any]) -> Trajectory:
    """Every tool call in `items`, in order, with what is wrong with any of them."""
    found = Trajectory()
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            found.problems.append(f"item {position} is not an object")
        elif "role" in item:
            _read_message(item, position, found)
        elif "function" in item:
            _add_openai_call(item, position, found)
        elif item.get("type") == "tool_use":
            _add_call(item.get("name"), item.get("input"), found)
        elif "name" in item or "arguments" in item:
            _add_call(item.get("name"), item.get("arguments"), found)
    return found


def _read_message(message: dict[str, Any], position: int, found: Trajectory) -> None:
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            found.problems.append(f"item {position}: tool_calls is not a list")
        else:
            for call in calls:
                _add_openai_call(call, position, found)
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        _add_call(legacy.get("name"), legacy.get("arguments"), found)
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                _add_call(block.get("name"), block.get("input"), found)


def _add_openai_call(call: Any, position: int, found: Trajectory) -> None:
    if not isinstance(call, dict):
        found.problems.append(f"item {position}: a tool call is not an object")
        return
    function = call.get("function", call)
    if not isinstance(function, dict):
        _add_call(None, None, found, "function is not an object")
        return
    _add_call(function.get("name"), function.get("arguments"), found)


def _add_call(name: Any, raw_arguments: Any, found: Trajectory, problem: str | None = None) -> None:
    index = len(found.calls)
    arguments, argument_problem = parse_arguments(raw_arguments)
    if problem is None and not (type(name) is str and name):
        problem = "no name"
    problem = problem or argument_problem
    found.calls.append(ToolCall(index, name if type(name) is str and name else None, arguments, problem))


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) or (None, why they cannot be read). A JSON string is decoded; absent,
    null or blank arguments are an empty object."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            decoded = decode_json(raw)
        except (ValueError, RecursionError):
            return None, "arguments are not valid JSON"
        if isinstance(decoded, dict):
            return decoded, None
        return None, "arguments are not a JSON object"
    return None, "arguments are not an object"
