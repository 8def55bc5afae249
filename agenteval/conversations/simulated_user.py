"""A model plays the user: it writes the user's messages from a persona, a goal and the case's
input, and (with `stop: {judge: ...}`) a model says whether the goal is reached.

Every request goes through the run's Endpoints, so retries, rate limits, usage and the response
cache apply: the user's requests are cached by default (whatever the temperature), so a re-run
whose agent is cached too replays the whole conversation without a request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from agenteval.suite.conversation import GOAL_REACHED, SimulatedUser, StopRule

if TYPE_CHECKING:
    from agenteval.endpoints import Endpoints, ModelEndpoint
    from agenteval.limits import Limits

START = "(The conversation starts now: write your first message to the assistant.)"
NO_TEXT = "(the assistant replied without text)"
JUDGE_SYSTEM = "You decide whether a user's goal has been reached in a conversation. Answer only `yes` or `no`."


class UserFailed(Exception):
    """The simulated user (or its judge) could not answer: the case's error, naming the turn."""


@dataclass(slots=True)
class UserTurn:
    """The user's next message (None when the user says its goal is reached) and the step record."""

    text: str | None
    step: dict[str, Any]


def system_prompt(user: SimulatedUser, case_input: Any) -> str:
    """What the user model is told: who it is, what it wants, what it knows, how to end."""
    scenario = case_input if isinstance(case_input, str) else orjson.dumps(case_input, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SORT_KEYS).decode()
    parts = [
        "You are playing the user in a conversation with an AI assistant, to test the assistant. Stay in character; "
        "write only the user's next message, briefly, in the first person. Never say that you are simulated.",
    ]
    if user.persona:
        parts.append(f"# Who you are\n{user.persona}")
    parts.append(f"# Your goal\n{user.goal}")
    if case_input is not None:
        parts.append(f"# What you know (the scenario)\n{scenario}")
    parts.append(f"When your goal has been met, reply with exactly {GOAL_REACHED} and nothing else.")
    return "\n\n".join(parts)


def user_messages(system: str, exchanges: list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    """The conversation as the user model sees it: its own messages are the `assistant`'s, the
    agent's replies the `user`'s. `exchanges` are (user message, agent reply) pairs so far."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": START}]
    for said, reply in exchanges:
        messages.append({"role": "assistant", "content": said})
        messages.append({"role": "user", "content": reply or NO_TEXT})
    return messages


def says_goal_reached(text: str | None) -> bool:
    return text is not None and GOAL_REACHED in text


def endpoint_settings(name: str, endpoints: Endpoints) -> ModelEndpoint:
    """The entry `models.NAME`: chat-completions settings (OpenAI's base_url and key variable where it
    says none, agenteval.endpoints.settings.openai_defaults), or a model target of another type (asked
    through its step(), agenteval.targets.model_entries); UserFailed when it is not there."""
    from agenteval.endpoints.settings import openai_defaults
    from agenteval.targets.model_entries import is_chat, judge_target

    settings = endpoints.models.get(name) if endpoints.models else None
    if settings is None:
        known = ", ".join(sorted(endpoints.models or {})) or "none defined"
        raise UserFailed(f"endpoint {name!r} is not defined under `models:` (known: {known})")
    if not is_chat(settings):
        return judge_target(settings, None)  # type: ignore[no-any-return]
    return openai_defaults(settings)


def _ask(endpoints: Endpoints, settings: Any, messages: list[dict[str, Any]], variant: int, usable: Any = None) -> Any:
    """The model's reply (content, usage, latency_ms): chat completions, or the step() of another
    type's target. Raises EndpointError."""
    from agenteval.endpoints.chat import chat_body, complete
    from agenteval.endpoints.client import EndpointError

    cache = True if settings.cache is None else settings.cache
    if callable(getattr(settings, "step", None)):
        from agenteval.targets.model_entries import ask_model

        reply = ask_model(settings, endpoints, messages, usable=usable, variant=variant)
        if reply.error is not None:
            raise EndpointError(reply.error)
        return reply
    chat_usable = (lambda chat: usable(chat.content)) if usable is not None else None
    return complete(endpoints, settings, chat_body(settings, messages), cache=cache, variant=variant, usable=chat_usable)


def next_message(user: SimulatedUser, case_input: Any, exchanges: list[tuple[str, str | None]], endpoints: Endpoints,
                 variant: int, turn: int) -> UserTurn:
    """The user's next message from the model. Raises UserFailed."""
    from agenteval.endpoints.client import EndpointError

    settings = endpoint_settings(user.endpoint, endpoints)
    try:
        reply = _ask(endpoints, settings, user_messages(system_prompt(user, case_input), exchanges), variant)
    except EndpointError as exc:
        raise UserFailed(f"simulated user: {exc}") from None
    text = (reply.content or "").strip()
    step = {"kind": "user", "purpose": "message", "turn": turn, "latency_ms": reply.latency_ms, "usage": reply.usage}
    if says_goal_reached(text):
        return UserTurn(None, step)
    if not text:
        raise UserFailed("simulated user: the model's reply has no text")
    from agenteval.usable import unsendable_text

    if (problem := unsendable_text(text, "the model's reply")) is not None:
        raise UserFailed(f"simulated user: {problem}")
    return UserTurn(text, step)


def judge_prompt(goal: str, transcript: str) -> str:
    return f"# The user's goal\n{goal}\n\n# The conversation\n{transcript}\n\nHas the user's goal been reached? Answer yes or no."


def goal_judged(user: SimulatedUser, transcript: str, endpoints: Endpoints, variant: int, turn: int) -> tuple[bool, dict[str, Any]]:
    """(whether a model says the goal is reached, the step record). Raises UserFailed."""
    from agenteval.endpoints.client import EndpointError

    settings = endpoint_settings(user.stop.judge_endpoint or user.endpoint, endpoints)
    if settings.temperature is None and not callable(getattr(settings, "step", None)):  # chat completions: 0 unless set
        settings = settings.model_copy(update={"temperature": 0.0})
    messages = [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": judge_prompt(user.goal, transcript)}]
    usable = lambda content: answer_of(content) is not None  # noqa: E731 - only a readable verdict is cached
    try:
        reply = _ask(endpoints, settings, messages, variant, usable)
    except EndpointError as exc:
        raise UserFailed(f"goal judge: {exc}") from None
    verdict = answer_of(reply.content)
    if verdict is None:
        raise UserFailed(f"goal judge: the reply is neither yes nor no: {(reply.content or '')[:200]!r}")
    step = {"kind": "user", "purpose": "judge", "turn": turn, "latency_ms": reply.latency_ms, "usage": reply.usage, "reached": verdict}
    return verdict, step


def answer_of(text: str | None) -> bool | None:
    """`yes` -> True, `no` -> False (the first word, any case and punctuation), else None."""
    words = (text or "").strip().lower().split()
    first = words[0].strip(".,!:;`*\"'") if words else ""
    return True if first == "yes" else False if first == "no" else None


def rule_fired(stop: StopRule, reply: str | None, tool_names: list[str], limits: Limits) -> dict[str, Any] | None:
    """The `regex` or `tool` stop rule the agent's reply meets (`{rule, ...}`), or None.
    A pattern past `limits.pattern_seconds` raises UserFailed naming the limit."""
    from agenteval import patterns

    if stop.tool is not None and stop.tool in tool_names:
        return {"rule": "tool", "tool": stop.tool}
    if stop.regex is not None and reply:
        try:
            found = patterns.search(patterns.compile(stop.regex), reply, limits.pattern_seconds)
        except patterns.PatternTimeout as exc:
            raise UserFailed(f"user.stop.regex: {exc}") from None
        if found is not None:
            return {"rule": "regex", "matched": found.group(0)[:200]}
    return None
