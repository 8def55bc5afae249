"""An agent's trajectory as a chat transcript for the HTML report: who said what, which tools it
called with which arguments, and what they returned.

The tool calls are read by the same readers the `tool_calls` evaluators use
(agenteval.evaluators.tools.trajectory), one message at a time, so the page shows every shape they
accept (OpenAI chat, Anthropic content blocks, Gemini, Vercel AI, LangChain, a plain list of
`{name, arguments}` calls...). Every value is cut to a bounded size: a transcript is a view, the
result line keeps the whole answer.
"""

from __future__ import annotations

from typing import Any, Callable

from agenteval.evaluators.tools.trajectory import read_trajectory, shape_of
from agenteval.paths import MISSING

TURNS_KEPT = 100
TEXT_CHARS = 1000  # of one message's text
VALUE_CHARS = 600  # of one call's arguments or one tool result
_LIST_KEYS = ("messages", "trajectory", "steps", "tool_calls", "calls", "conversation")

Turn = list[Any]  # [role, text or None, calls or None, results or None]; call: [name, arguments, problem]; result: [name, value]


def transcript(output: Any, clip: Callable[[Any, int], Any]) -> list[Turn] | None:
    """The turns of the trajectory in `output` (the answer itself when it is a list of messages or
    calls, else its `messages`, `trajectory`, `steps`, `tool_calls`, `calls` or `conversation`), or
    None when there is none. A transcript longer than TURNS_KEPT ends with a note turn."""
    items = _items(output)
    if items is None:
        return None
    try:
        if any("role" in item for item in items):
            turns = _chat(items, clip)
        else:
            turns = _calls(items, clip)
    except Exception:  # noqa: BLE001 - a view of an answer of any shape: no transcript rather than no report
        return None
    if not turns:
        return None
    if len(turns) > TURNS_KEPT:
        turns = [*turns[:TURNS_KEPT], ["note", f"… and {len(turns) - TURNS_KEPT} more turns", None, None]]
    return turns


def _items(output: Any) -> list[dict[str, Any]] | None:
    candidates = [output] if type(output) is list else [output.get(key) for key in _LIST_KEYS] if type(output) is dict else []
    for value in candidates:
        if type(value) is list and value and all(type(item) is dict for item in value):
            return value
    return None


def _chat(messages: list[dict[str, Any]], clip: Callable[[Any, int], Any]) -> list[Turn]:
    """One turn per message: its text, the calls it makes and the tool results it carries (a result
    named by its call's id shows the tool's name)."""
    names: dict[str, str] = {}
    turns: list[Turn] = []
    for message in messages:
        found = read_trajectory([message], results=False)
        calls = []
        for call in found.calls:
            if call.call_id is not None and call.name:
                names[call.call_id] = call.name
            calls.append([call.name, clip(call.arguments, VALUE_CHARS), call.problem])
        results = [
            [name if type(name) is str else names.get(call_id) if type(call_id) is str else None, clip(value, VALUE_CHARS)]
            for call_id, name, value in found.results
        ]
        role = message.get("role")
        text = _text(message.get("content"))
        if text is None and "parts" in message:
            text = _text(message.get("parts"))
        if results and role in ("tool", "function"):
            text = None  # the content is the result, shown as one
        if text is None and not calls and not results:
            continue
        turns.append([
            role if type(role) is str else "message", _clipped(text), calls or None, results or None,
        ])
    return turns


def _calls(items: list[dict[str, Any]], clip: Callable[[Any, int], Any]) -> list[Turn]:
    """A trajectory of calls (no messages): one turn per call, with the result it got. A list of
    records that merely have a `name` (line items, people) is not a trajectory: a plain call
    needs its `arguments`."""
    if any(shape_of(item) in (None, "plain") and "arguments" not in item for item in items):
        return []
    found = read_trajectory(items)
    return [
        ["call", None, [[call.name, clip(call.arguments, VALUE_CHARS), call.problem]],
         None if call.result is MISSING else [[call.name, clip(call.result, VALUE_CHARS)]]]
        for call in found.calls
    ]


def _text(content: Any) -> str | None:
    """A message's text: the content itself, or its text blocks (Anthropic, OpenAI parts, Gemini) joined."""
    if type(content) is str:
        return content or None
    if type(content) is not list:
        return None
    texts = [
        part["text"] for part in content
        if type(part) is dict and type(part.get("text")) is str and part.get("type", "text") in ("text", "input_text", "output_text")
    ]
    return "\n".join(texts) or None


def _clipped(text: str | None) -> str | None:
    return text if text is None or len(text) <= TEXT_CHARS else text[: TEXT_CHARS - 1] + "…"
