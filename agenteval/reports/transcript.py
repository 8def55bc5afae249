"""An agent's trajectory as a chat transcript for the HTML report: who said what, which tools it
called with which arguments, and what they returned.

The tool calls are read by the same readers the `tool_calls` evaluators use
(agenteval.evaluators.tools.trajectory), one message at a time, so the page shows every shape they
accept (OpenAI chat, Anthropic content blocks, Gemini, Vercel AI, LangChain, a plain list of
`{name, arguments}` calls...). Every value is cut to a bounded size: a transcript is a view, the
result line keeps the whole answer.

A played tool loop or conversation (docs/live-agents.md) is shown as a chat instead (`chat`): each
message with the step that made it (latency, tokens, cost), tool results inline with failures
marked, the simulated user's messages marked, why it stopped, and where each evaluator's verdict
belongs (`verdict_marks`).
"""

from __future__ import annotations

import re
from typing import Any, Callable

import orjson

from agenteval.conversations.scoping import WHOLE_CONVERSATION_TYPES
from agenteval.conversations.transcript import is_conversation
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


# --- a played tool loop or conversation, as a chat -------------------------------------------

ENTRIES_KEPT = 2 * TURNS_KEPT  # messages and steps of one chat; the rest is one note
_KINDS = ("model", "tool", "user")
_TURN_NAME = re.compile(r"turn (\d+): ")
_STOPPED = {
    "answered": "answered: the last reply called no tool",
    "goal": "the simulated user's goal was reached",
    "max_turns": "max_turns: the simulated user's turns ran out",
    "max_steps": "a limit ended it: max_steps (the model was still calling tools)",
    "budget": "a limit ended it: the token or cost budget",
    "timeout": "a limit ended it: the loop's timeout",
    "stop_rule": "a stop rule ended it",
}

Entry = list[Any]  # [kind, turn, text, calls, result, figures, flag]; see `chat`
Call = list[Any]  # [name, arguments, problem, state (0 not run, 1 its result follows, 2 result inline), result]


def is_live(output: Any) -> bool:
    """Whether an answer is a played tool loop or conversation (or one recorded in that shape):
    an object with `turns`, or with `messages` and `steps` of a `kind`."""
    if type(output) is not dict:
        return False
    if is_conversation(output):
        return True
    steps, messages = output.get("steps"), output.get("messages")
    return (type(steps) is list and type(messages) is list
            and any(type(step) is dict and step.get("kind") in _KINDS for step in steps))


def chat(output: Any, clip: Callable[[Any, int], Any]) -> list[Any] | None:
    """[entries, end] of a loop's or a conversation's answer (docs/live-agents.md), None for any
    other answer. An entry is [kind, turn, text, calls, result, figures, flag]:

    - `system`, `user`, `assistant`: a message and its text; an assistant's `calls` are
      [name, arguments, problem, state, result]; a user's `flag` is 1 when a simulated user wrote it;
    - `tool`: a tool's result (`text` the tool's name, `result` its value), `flag` 1 when it failed;
    - `judge`: the simulated user's goal judge after a reply (`flag` 1: it said the goal was reached);
    - `note`: entries left out.

    `turn` counts from 1 (0: the system prompt); `figures` are a step's latency, tokens and cost in
    words. `end` is [why it stopped in words, the goal in words or None, the whole answer's figures].
    Steps pair with the messages they made: the model steps with the last assistant messages, in
    order (a template's own example replies come first), a tool step with each tool message."""
    if not is_live(output):
        return None
    try:
        entries = _entries(output, clip)
    except Exception:  # noqa: BLE001 - a view of an answer of any shape: the plain transcript rather than no report
        return None
    if len(entries) > ENTRIES_KEPT:
        entries = [*entries[:ENTRIES_KEPT], ["note", 0, f"… and {len(entries) - ENTRIES_KEPT} more", None, None, None, 0]]
    stopped = output.get("stopped")
    usage = output.get("usage")
    if stopped == "answered" and is_conversation(output):
        stopped_words: str | None = "answered: every scripted turn was answered"
    else:
        stopped_words = _STOPPED.get(stopped, str(stopped)) if type(stopped) is str else None
    return [entries, [
        stopped_words,
        _goal(output.get("goal")),
        figures(usage.get("latency_ms"), usage) if type(usage) is dict else None,
    ]]


def _entries(output: dict[str, Any], clip: Callable[[Any, int], Any]) -> list[Entry]:
    conversation = is_conversation(output)
    turns = output["turns"] if conversation else []
    messages = output.get("messages")
    if type(messages) is not list:
        messages = [message for turn in turns if type(turn) is dict
                    for message in ({"role": "user", "content": turn.get("user")}, {"role": "assistant", "content": turn.get("reply")})]
    messages = [message for message in messages if type(message) is dict]
    steps = [step for step in output.get("steps") or () if type(step) is dict]
    by_kind: dict[str, list[dict[str, Any]]] = {kind: [step for step in steps if step.get("kind") == kind] for kind in _KINDS}
    said_steps = {step.get("turn"): step for step in by_kind["user"] if step.get("purpose", "message") == "message"}
    simulated = conversation and "goal" in output
    replies = [index for index, message in enumerate(messages) if message.get("role") == "assistant"]
    results = [index for index, message in enumerate(messages) if message.get("role") in ("tool", "function")]
    step_of = _paired(replies, by_kind["model"]) | _paired(results, by_kind["tool"])
    records: dict[Any, list[dict[str, Any]]] = {}
    for record in output.get("tool_calls") or ():
        if type(record) is dict:
            records.setdefault(record.get("id"), []).append(record)
    entries: list[Entry] = []
    turn = 0 if conversation else 1
    called_in: dict[int, int] = {}  # turn -> calls shown on its assistant messages
    for index, message in enumerate(messages):
        role = message.get("role")
        step = step_of.get(index)
        shown = figures(step.get("latency_ms"), step.get("usage")) if step else None
        if role == "system":
            entries.append(["system", 0, _clipped(_text(message.get("content"))), None, None, None, 0])
        elif role == "user" and conversation:
            turn += 1
            step = said_steps.get(turn)
            shown = figures(step.get("latency_ms"), step.get("usage")) if step else None
            entries.append(["user", turn, _clipped(_text(message.get("content"))), None, None, shown, 1 if simulated else 0])
        elif role in ("tool", "function"):
            call_id = message.get("tool_call_id")
            queue = records.get(call_id) if type(call_id) is str else None
            record = queue.pop(0) if queue else None
            name = record.get("name") if record else message.get("name")
            value = record["result"] if record and "result" in record else message.get("content")
            failed = bool(step.get("error")) if step else _is_error(value)
            if step and name is None:
                name = step.get("name")
            entries.append(["tool", turn, name if type(name) is str else None, None, clip(value, VALUE_CHARS), shown, 1 if failed else 0])
        else:
            calls = _message_calls(message, messages[index + 1:], clip)
            if calls:
                called_in[turn] = called_in.get(turn, 0) + len(calls)
            text = _text(message.get("content"))
            if text is None and "parts" in message:
                text = _text(message.get("parts"))
            kind = "user" if role == "user" else "system" if role == "developer" else "assistant"
            entries.append([kind, turn, _clipped(text), calls or None, None, shown, 0])
    _recorded_calls(entries, turns, called_in, clip)
    for step in by_kind["user"]:
        if step.get("purpose") == "judge" and type(step.get("turn")) is int:
            _after_turn(entries, step["turn"], ["judge", step["turn"], "the goal is reached" if step.get("reached") else "the goal is not reached yet",
                                                None, None, figures(step.get("latency_ms"), step.get("usage")), 1 if step.get("reached") else 0])
    return entries


def _paired(positions: list[int], steps: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """The last len(steps) of the positions, each with its step in order."""
    offset = len(positions) - len(steps)
    return {positions[offset + number]: step for number, step in enumerate(steps) if offset + number >= 0}


def _message_calls(message: dict[str, Any], after: list[dict[str, Any]], clip: Callable[[Any, int], Any]) -> list[Call]:
    """The calls an assistant message makes, each marked by whether a tool result answers it
    before the next assistant message (a call a limit stopped never ran)."""
    found = read_trajectory([message], results=False).calls
    if not found:
        return []
    answered: set[Any] = set()
    for later in after:
        if later.get("role") == "assistant":
            break
        if later.get("role") in ("tool", "function"):
            answered.add(later.get("tool_call_id"))
    anything = bool(answered)
    return [[call.name, clip(call.arguments, VALUE_CHARS), call.problem,
             1 if call.call_id in answered or (call.call_id is None and anything) else 0, None] for call in found]


def _recorded_calls(entries: list[Entry], turns: list[Any], called_in: dict[int, int], clip: Callable[[Any, int], Any]) -> None:
    """A turn whose messages hold no calls but whose record does (an http or command target's own
    `tool_calls`): its calls, with their results inline, on that turn's last reply."""
    for number, turn in enumerate(turns, 1):
        recorded = turn.get("tool_calls") if type(turn) is dict else None
        if called_in.get(number) or type(recorded) is not list or not recorded:
            continue
        last = next((entry for entry in reversed(entries) if entry[0] == "assistant" and entry[1] == number), None)
        if last is None:
            continue
        last[3] = [[call.get("name") if type(call.get("name")) is str else None, clip(call.get("arguments"), VALUE_CHARS), None,
                    2 if "result" in call else 1, clip(call.get("result"), VALUE_CHARS)] for call in recorded if type(call) is dict] or None


def _after_turn(entries: list[Entry], turn: int, entry: Entry) -> None:
    at = next((index for index in range(len(entries) - 1, -1, -1) if entries[index][1] == turn), None)
    entries.insert(len(entries) if at is None else at + 1, entry)


def _is_error(value: Any) -> bool:
    if type(value) is str and value.startswith('{"error"'):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return False
    return type(value) is dict and list(value) == ["error"]


def _goal(goal: Any) -> str | None:
    if type(goal) is not dict:
        return None
    if not goal.get("reached"):
        return "goal not reached"
    rule = goal.get("rule")
    how = {"regex": f"regex, matched {goal.get('matched')!r}", "tool": f"tool {goal.get('tool')!r} called",
           "judge": "the goal judge said yes", "user": "the simulated user said so"}.get(rule, str(rule))
    return f"goal reached in turn {goal.get('turn')} ({how})"


def _number(value: Any) -> bool:
    return type(value) in (int, float) and value == value


def figures(latency_ms: Any, usage: Any) -> str | None:
    """A step's latency, tokens and cost in words: `812 ms · 228 tokens (210 in, 18 out) · $0.00034 · cached`."""
    parts = []
    if _number(latency_ms):
        parts.append(f"{latency_ms:.0f} ms" if latency_ms >= 100 else f"{latency_ms:.1f} ms")
    if type(usage) is dict:
        total, given, made = (usage.get(key) for key in ("total_tokens", "input_tokens", "output_tokens"))
        if not _number(total) and _number(given) and _number(made):
            total = given + made
        if _number(total):
            parts.append(f"{total:g} tokens" + (f" ({given:g} in, {made:g} out)" if _number(given) and _number(made) else ""))
        cost = usage.get("cost_usd")
        if _number(cost):
            parts.append(f"${cost:.4f}" if cost >= 0.01 or cost == 0 else f"${cost:.6f}")
        if usage.get("cached") is True:
            parts.append("cached")
    return " · ".join(parts) or None


def verdict_marks(results: list[Any], output: Any, codes: dict[str, int]) -> list[list[Any]]:
    """Where each evaluator's verdict shows in the chat: [[position in the results, turn, verdict
    code, score, per turn]], turn 0 being the end of the conversation. A `scope: turn` result (its
    `details.turns`) marks every turn with that turn's figures (per turn 1: its misses are those
    prefixed `turn N: `); `turn N: NAME` marks turn N; the
    whole-conversation types (conversation, latency, token_usage, cost) and `agent_limits` mark
    the end; any other marks the last reply. A turn that never came (a limit ended the
    conversation first) is the end."""
    count = len(output["turns"]) if is_conversation(output) else 1
    found: list[list[Any]] = []
    for position, result in enumerate(results):
        details = result.details
        per_turn = details.get("turns") if type(details) is dict else None
        if type(per_turn) is list and per_turn and all(type(entry) is dict for entry in per_turn):
            for entry in per_turn:
                turn, verdict, score = entry.get("turn"), entry.get("verdict"), entry.get("score")
                if type(turn) is int and verdict in codes and _number(score):
                    found.append([position, turn if 1 <= turn <= count else 0, codes[verdict], round(score, 3), 1])
            continue
        named = _TURN_NAME.match(result.name)
        if named:
            turn = int(named.group(1))
            place = turn if 1 <= turn <= count else 0
        elif result.type in WHOLE_CONVERSATION_TYPES or result.name == "agent_limits" or (
            type(details) is dict and details.get("scope") == "conversation"
        ):
            place = 0
        else:
            place = count
        found.append([position, place, codes[result.verdict], round(result.score, 3), 0])
    return found
