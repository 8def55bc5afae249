"""A conversation's answer (the shape docs/live-agents.md documents) and what evaluators see of it.

Pure functions over plain data: building the answer from the turns the driver played, the view
of one turn's reply (`scope: turn` and `last`), and the text a model judge reads (`scope: conversation`).
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from agenteval.usage import combine_usage

TOOL_RESULT_CHARS = 2000  # a tool result longer than this is cut in the judge's transcript (the answer keeps it whole)


def is_conversation(output: Any) -> bool:
    """Whether an answer is a played conversation (it has its `turns`), whoever recorded it."""
    return isinstance(output, dict) and isinstance(output.get("turns"), list) and bool(output["turns"])


def summed_usage(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The case's usage: every step's latency, tokens and cost added up (the agent's and the
    simulated user's), with the simulated user's share also on its own under `simulated_user`."""
    total: dict[str, Any] | None = None
    user: dict[str, Any] | None = None
    for step in steps:
        usage = _figures(step.get("usage"))
        if usage is None:
            continue
        total = combine_usage(total, usage)
        if step.get("kind") == "user":
            user = combine_usage(user, usage)
    timed = [step["latency_ms"] for step in steps if type(step.get("latency_ms")) in (int, float)]
    if timed:  # every step's time, a tool's too (it has no usage of its own), as a single answer's tool loop counts it
        total = {**(total or {}), "latency_ms": round(math.fsum(timed), 3)}
    if total is not None and user is not None:
        total["simulated_user"] = user
    return total


def _figures(usage: Any) -> dict[str, Any] | None:
    """A step's usage as figures to add up: its finite, non-negative numbers (an answer's own
    `steps` may hold anything), or None when it is no object."""
    if not isinstance(usage, dict):
        return None
    figures: dict[str, Any] = {
        key: value for key, value in usage.items()
        if key in _FIGURES and (value is None or type(value) in (int, float) and 0 <= value < math.inf)
    }
    if usage.get("cached") is True:
        figures["cached"] = True
    return figures


_FIGURES = frozenset({"latency_ms", "input_tokens", "output_tokens", "total_tokens", "cost_usd"})


def conversation_answer(
    messages: list[dict[str, Any]], turns: list[dict[str, Any]], tool_calls: list[dict[str, Any]],
    steps: list[dict[str, Any]], stopped: str, goal: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The answer of a conversation: the last reply as `content`, then the whole record."""
    answer: dict[str, Any] = {
        "content": turns[-1]["reply"] if turns else None,
        "messages": messages,
        "tool_calls": tool_calls,
        "steps": steps,
        "turns": turns,
        "stopped": stopped,
        "usage": summed_usage(steps),
    }
    if goal is not None:
        answer["goal"] = goal
    return answer


def turn_view(answer: dict[str, Any], index: int) -> dict[str, Any]:
    """What an evaluator of one turn's reply sees: `{turn, user, content, tool_calls}` (and the
    target's own `output` when it answered with an object), so `path: content` reads the reply."""
    turn = answer["turns"][index]
    view: dict[str, Any] = {
        "turn": index + 1,
        "user": turn.get("user"),
        "content": turn.get("reply"),
        "tool_calls": turn.get("tool_calls") or [],
    }
    if "output" in turn:
        view["output"] = turn["output"]
    return view


def turn_usage(answer: dict[str, Any], index: int) -> dict[str, Any] | None:
    """The latency, tokens and cost of the agent's steps in one turn (not the simulated user's)."""
    steps = answer.get("steps")
    steps = [step for step in steps if isinstance(step, dict) and step.get("turn") == index + 1 and step.get("kind") != "user"] if isinstance(steps, list) else []
    return summed_usage(steps)


def transcript_text(answer: dict[str, Any]) -> str:
    """The conversation as a model judge reads it: each message on its own lines, tool calls and
    their results inline, no timings (a replayed conversation reads the same, so the judge's
    request comes from the cache)."""
    lines: list[str] = []
    turn = 0
    messages = answer.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            continue
        if role == "user":
            turn += 1
            lines.append(f"## Turn {turn}\nUser: {_text(content)}")
        elif role == "assistant":
            if content:
                lines.append(f"Agent: {_text(content)}")
            calls = message.get("tool_calls")
            for call in calls if isinstance(calls, list) else ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict):
                    lines.append(f"Agent calls tool `{function.get('name')}` with {_text(function.get('arguments'))}")
        elif role == "tool":
            text = _text(content)
            if len(text) > TOOL_RESULT_CHARS:
                text = text[:TOOL_RESULT_CHARS] + f"… ({len(text)} characters)"
            lines.append(f"Tool result: {text}")
    return "\n".join(lines)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "(nothing)"
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS).decode()
