"""Playing a conversation: the target answers a case's `turns:` (or a simulated `user:`) turn by
turn, each time with the history so far.

- A model target (one with `step`, agenteval.agents.protocol) gets the system message(s) of its
  own `messages:` template, then the conversation; when its tools have implementations each turn
  is a tool loop (agenteval.agents.loop), else one model step.
- An `http` or `command` target gets, for each turn, the input
  `{"messages": [...the history, this turn's user message last...], "input": <the case's input>}`
  and answers with text, or an object whose `content` (or `reply`) is the text.

The answer is the documented conversation shape (agenteval.conversations.transcript). A turn that
fails makes the case an error naming the turn; a tool loop ended by a limit ends the conversation
there and the case fails naming the limit, as a single tool loop does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agenteval.conversations.simulated_user import UserFailed, goal_judged, next_message, rule_fired
from agenteval.conversations.transcript import conversation_answer, transcript_text
from agenteval.suite.conversation import GOAL_REACHED
from agenteval.targets.base import Answer, template_variables
from agenteval.usable import unsendable_text

if TYPE_CHECKING:
    from agenteval.limits import Limits
    from agenteval.targets.base import TargetRun

REPLY_KEYS = ("content", "reply")
SERVICES = ("http", "command")  # targets that take the history as their input


def drives(case: Any, target: Any) -> bool:
    """Whether the case is a conversation this target can hold: a recorded target (or
    --predictions) has its conversation already, scored as it was recorded."""
    return getattr(case, "is_conversation", False) and getattr(target, "type", None) != "recorded"


@dataclass
class _Conversation:
    """What has been said so far, and what it took."""

    messages: list[dict[str, Any]]
    turns: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 1  # the turn being played (counted from 1)

    def exchanges(self) -> list[tuple[str, str | None]]:
        return [(turn["user"], turn["reply"]) for turn in self.turns]

    def answer(self, stopped: str, goal: dict[str, Any] | None = None, limit: str | None = None) -> Answer:
        output = conversation_answer(self.messages, self.turns, self.tool_calls, self.steps, stopped, goal)
        return Answer(output, duration_ms=_latency(self.steps), usage=output["usage"], limit_reached=limit)

    def failed(self, message: str) -> Answer:
        usage = conversation_answer(self.messages, self.turns, self.tool_calls, self.steps, "error")["usage"]
        return Answer(error=message, duration_ms=_latency(self.steps), usage=usage)


@dataclass
class _Reply:
    """One turn's outcome: the reply text, what the agent did, or why there is none."""

    text: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)  # what the turn added after the user's message
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    output: Any = None  # an http/command target's answer, when it is an object
    stopped: str = "answered"
    limit: str | None = None
    error: str | None = None


def play(case: Any, target: Any, run: TargetRun, limits: Limits) -> Answer:
    """The conversation's answer (or its error) for a case with `turns:` or `user:`."""
    if not hasattr(target, "step") and target.type not in SERVICES:
        from agenteval.targets.model_entries import model_types

        return Answer(error=f"a conversation (`turns:` or `user:`) needs a model target ({', '.join(model_types())}) or an http or "
                            f"command target, which answer turn by turn; a {target.type} target cannot hold one")
    try:
        opening = _opening(target, case)
    except ValueError as exc:
        return Answer(error=str(exc))
    talk = _Conversation(opening)
    if case.user is None:
        for number, turn in enumerate(case.turns, 1):
            reply = _turn(target, case, run, talk, turn.user, number)
            if reply.error is not None:
                return talk.failed(f"turn {number}: {reply.error}")
            if reply.limit is not None:
                return talk.answer(reply.stopped, limit=reply.limit)
        return talk.answer("answered")
    try:
        return _simulated(case, target, run, limits, talk)
    except UserFailed as exc:
        return talk.failed(f"turn {talk.turn}: {exc}")


def _simulated(case: Any, target: Any, run: TargetRun, limits: Limits, talk: _Conversation) -> Answer:
    user = case.user
    endpoints = run.endpoints
    if endpoints is None:
        return talk.failed("a simulated user needs the run's endpoints")
    for number in range(1, user.max_turns + 1):
        talk.turn = number
        if number == 1 and user.first_message is not None:
            said: str | None = _first_message(user.first_message, case)
        else:
            asked = next_message(user, case.input, talk.exchanges(), endpoints, run.repetition, number)
            talk.steps.append(asked.step)
            said = asked.text
        if said is None:
            if number == 1:
                raise UserFailed(f"the simulated user said {GOAL_REACHED} before the conversation began")
            return talk.answer("goal", {"reached": True, "rule": "user", "turn": number - 1})
        reply = _turn(target, case, run, talk, said, number)
        if reply.error is not None:
            return talk.failed(f"turn {number}: {reply.error}")
        if reply.limit is not None:
            return talk.answer(reply.stopped, {"reached": False, "rule": None, "turn": None}, limit=reply.limit)
        fired = rule_fired(user.stop, reply.text, [str(call.get("name")) for call in reply.tool_calls], limits)
        if fired is None and user.stop.judge:
            reached, step = goal_judged(user, transcript_text({"messages": talk.messages}), endpoints, run.repetition, number)
            talk.steps.append(step)
            fired = {"rule": "judge"} if reached else None
        if fired is not None:
            return talk.answer("goal", {"reached": True, **fired, "turn": number})
    return talk.answer("max_turns", {"reached": False, "rule": None, "turn": None})


def _first_message(template: str, case: Any) -> str:
    from agenteval.endpoints.templates import TemplateError, render_text

    try:
        return render_text(template, template_variables(case))
    except TemplateError as exc:
        raise UserFailed(f"user.first_message: {exc}") from None


def _opening(target: Any, case: Any) -> list[dict[str, Any]]:
    """The system message(s) of a model target's `messages:` template, rendered for the case (none
    for other targets). Raises ValueError naming a template problem."""
    from agenteval.endpoints.templates import TemplateError, render_strings

    template = getattr(target, "messages", None)
    if not hasattr(target, "step") or not isinstance(template, list):
        return []
    system = [message for message in template if isinstance(message, dict) and message.get("role") == "system"]
    try:
        return render_strings(system, template_variables(case), "messages")
    except TemplateError as exc:
        raise ValueError(f"{target.type} target: {exc}") from None


def _turn(target: Any, case: Any, run: TargetRun, talk: _Conversation, said: str, number: int) -> _Reply:
    """The target's reply to `said`, recorded in `talk` (messages, turn, tool calls, steps)."""
    talk.messages.append({"role": "user", "content": said})
    reply = _model_reply(target, case, run, talk.messages) if hasattr(target, "step") else _service_reply(target, case, run, talk.messages)
    if reply.error is None:
        reply.error = unsendable_text(reply.text, "the reply")
    for step in reply.steps:
        step["turn"] = number
    talk.steps.extend(reply.steps)
    if reply.error is not None:
        return reply
    for call in reply.tool_calls:
        call["turn"] = number
    talk.messages.extend(reply.messages)
    talk.tool_calls.extend(reply.tool_calls)
    record: dict[str, Any] = {"user": said, "reply": reply.text, "tool_calls": reply.tool_calls}
    if reply.output is not None:
        record["output"] = reply.output
    if reply.stopped != "answered":
        record["stopped"] = reply.stopped
    talk.turns.append(record)
    return reply


def _model_reply(target: Any, case: Any, run: TargetRun, history: list[dict[str, Any]]) -> _Reply:
    """A model target's turn: a tool loop when its tools have implementations, else one step."""
    from agenteval.agents.loop import LoopLimits, run_loop, runs_loop, toolbox

    bound = toolbox(getattr(target, "tools", None), getattr(case, "tools", None), run)
    if isinstance(bound, str):
        return _Reply(error=f"{target.type} target: {bound}")
    if runs_loop(bound):
        looped = run_loop(target, history, bound, run, getattr(target, "loop", None) or LoopLimits())
        if looped.error is not None:
            return _Reply(steps=looped.steps, error=looped.error)
        return _Reply(
            looped.content, looped.messages[len(history):], looped.tool_calls, looped.steps,
            stopped=looped.stopped, limit=looped.limit,
        )
    definitions = [tool.definition for tool in bound] or None
    step = target.step(history, definitions, run)
    record = {"kind": "model", "step": 1, "latency_ms": step.latency_ms, "usage": step.usage}
    if step.error is not None:
        return _Reply(steps=[record], error=step.error)
    calls = [{"name": call.name, "arguments": call.arguments, "id": call.id, "step": 1} for call in step.tool_calls]
    return _Reply(step.content, [step.message], calls, [record])


def _service_reply(target: Any, case: Any, run: TargetRun, history: list[dict[str, Any]]) -> _Reply:
    """An http/command target's turn: the history in, text (or `content`/`reply`) out."""
    payload = {"messages": [dict(message) for message in history], "input": case.input}
    answered = target.answer(case.model_copy(update={"input": payload}), run)
    record = {"kind": "model", "step": 1, "latency_ms": answered.duration_ms, "usage": answered.usage}
    if answered.error is not None:
        return _Reply(steps=[record], error=answered.error)
    text, problem = reply_text(answered.output)
    if problem is not None:
        return _Reply(steps=[record], error=f"{target.type} target: {problem}")
    output = answered.output if isinstance(answered.output, dict) else None
    raw_calls = output.get("tool_calls") if output is not None else None
    calls = [dict(call) for call in raw_calls if isinstance(call, dict)] if isinstance(raw_calls, list) else []
    return _Reply(text, [{"role": "assistant", "content": text}], calls, [record], output=output)


def reply_text(output: Any) -> tuple[str | None, str | None]:
    """(the reply's text, None) from a service's answer: text as is, or an object's `content` (or
    `reply`); else (None, why not)."""
    if isinstance(output, str):
        return output, None
    if isinstance(output, dict):
        for key in REPLY_KEYS:
            if isinstance(output.get(key), str):
                return output[key], None
        return None, f"the answer has no text `content` or `reply` (keys: {', '.join(map(str, list(output)[:10])) or 'none'})"
    return None, f"the answer is {type(output).__name__}, not text or an object with `content` or `reply`"


def _latency(steps: list[dict[str, Any]]) -> float:
    return round(sum(step.get("latency_ms") or 0.0 for step in steps), 3)
