"""conversation: figures of a whole conversation: turns taken, goal reached, knowledge retained.

It reads the answer of a played conversation (`turns`, `goal`, docs/live-agents.md) and, by
default, sees all of it (`scope: conversation`). Three checks, each a hit or a miss:

- turns taken: at most `max_turns` replies of the agent;
- goal reached: the simulated user's stop rule fired (a conversation with a simulated user);
- knowledge retention: a fact the user gave (listed in `facts`, else found in the user's
  messages) is not asked for again in a later reply; a miss names the turn and the fact.

The checks are pure functions over plain text (no patterns: nothing here can backtrack).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult

_PUNCTUATION = ",.;:!?()[]{}\"'`*"
_SEPARATORS = frozenset({"is", "was", "are", "be", ":", "=", "#", "-", "of"})
_STOP_WORDS = frozenset({
    "my", "the", "a", "an", "your", "our", "his", "her", "their", "and", "or", "for", "with", "to", "it", "i", "am",
    "i'm", "hi", "hello", "in", "on", "at", "me", "this", "that", "here", "s", "its", "it's", "from", "by", "under",
})
_SYNONYMS = {"id": ("id", "number", "no", "#", "code"), "number": ("number", "id", "no", "#"), "no": ("no", "number", "id", "#")}
_ASKING = ("please provide", "please share", "please send", "please give", "please tell", "please enter", "please confirm",
           "provide your", "share your", "tell me your", "send me your", "give me your")


class Conversation(EvaluatorConfig):
    """Score = the share of checks passed (turns taken, goal reached, facts retained); pass iff all pass."""

    type: Literal["conversation"]
    max_turns: int | None = Field(None, ge=1, description="The agent passes if the conversation took at most this many turns.")
    goal: bool = Field(True, description="Check that a simulated user's goal was reached (its stop rule fired).")
    facts: dict[str, str | int | float] | None = Field(
        None,
        description="Facts the user gives, by name (`{order_id: A-1}`): once given, a later reply must not ask for one "
        "again. Default: values found in the user's messages (an id, a number, an email) named by the words before them.",
    )
    retention: bool = Field(True, description="Check knowledge retention (turn it off to check only turns and goal).")

    type_name = "conversation"

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        answer = ctx.output
        turns = answer.get("turns") if isinstance(answer, dict) else None
        if turns is None and isinstance(answer, dict) and isinstance(answer.get("messages"), list):
            turns = turns_of(answer["messages"])  # a trace's (or a loop's) answer: its turns are in its messages
        if not isinstance(turns, list) or not turns:
            why = "its `messages` hold no reply of the assistant" if isinstance(answer, dict) and "messages" in answer and "turns" not in answer else "it has no `turns`"
            return self.result(0.0, "fail", misses=[f"the answer is not a conversation ({why})"])
        hits: list[str] = []
        misses: list[str] = []
        taken = len(turns)
        details: dict[str, Any] = {"turns": taken, "stopped": answer.get("stopped")}
        if self.max_turns is not None:
            (hits if taken <= self.max_turns else misses).append(f"turns taken: {taken} (at most {self.max_turns})")
            details["max_turns"] = self.max_turns
        reached = goal_reached(answer)
        if self.goal and reached is not None:
            details["goal_reached"] = reached
            goal = answer.get("goal") or {}
            if reached:
                hits.append(f"goal reached in turn {goal.get('turn')} ({goal.get('rule')})")
            else:
                misses.append(f"goal not reached (stopped: {answer.get('stopped')})")
        if self.retention:
            user_turns = [turn.get("user") if isinstance(turn, dict) else None for turn in turns]
            replies = [turn.get("reply") if isinstance(turn, dict) else None for turn in turns]
            facts = {name: str(value) for name, value in self.facts.items()} if self.facts is not None else detect_facts(user_turns)
            details["facts"] = facts
            if facts:
                asked = asked_again(user_turns, replies, facts)
                details["asked_again"] = asked
                if asked:
                    misses.extend(f"turn {turn}: asked again for {name} (given in turn {given})" for turn, name, given in asked)
                else:
                    hits.append(f"no fact asked for again ({', '.join(facts)})")
        checks = len(hits) + len(misses)
        if not checks:
            return self.result(1.0, "pass", reasoning="nothing to check", details=details)
        score = len(hits) / checks
        return self.result(score, "pass" if not misses else "fail", hits=hits, misses=misses, details=details)


def turns_of(messages: list[Any]) -> list[dict[str, Any]]:
    """The turns of a chat history (an answer read from a trace): each assistant reply with text,
    after the user message before it; the assistant's tool-call messages between them are its
    turn's `tool_calls`."""
    turns: list[dict[str, Any]] = []
    user: Any = None
    calls: list[Any] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "user":
            user = message.get("content")
        elif role == "assistant":
            calls.extend(message.get("tool_calls") or ())
            if isinstance(message.get("content"), str) and message["content"] and not message.get("tool_calls"):
                turns.append({"user": user, "reply": message["content"], "tool_calls": calls})
                calls = []
    return turns


def goal_reached(answer: dict[str, Any]) -> bool | None:
    """Whether a simulated user's goal was reached; None for a conversation without one."""
    goal = answer.get("goal")
    if not isinstance(goal, dict):
        return None
    return goal.get("reached") is True


def _word(token: str) -> str:
    return token.strip(_PUNCTUATION).casefold()


def _is_value(token: str) -> bool:
    """An identifier, a number of three characters or more, or an email: what a user gives as a fact."""
    if len(token) < 3:
        return False
    if "@" in token:
        return "." in token.partition("@")[2]
    return any(char.isdigit() for char in token)


def detect_facts(user_turns: list[Any]) -> dict[str, str]:
    """Values the user gave, named by the (at most two) words before them: `my order id is A-123`
    gives `{"order id": "A-123"}`. A value with no name before it is not a fact one can ask for."""
    facts: dict[str, str] = {}
    for text in user_turns:
        if not isinstance(text, str):
            continue
        tokens = text.split()
        for index, token in enumerate(tokens):
            value = token.strip(_PUNCTUATION)
            if not _is_value(value):
                continue
            words: list[str] = []
            for before in reversed(tokens[max(0, index - 5):index]):
                word = _word(before)
                if before[-1] in ",.;!?":  # the end of an earlier clause
                    break
                if not words and word in _SEPARATORS:
                    continue
                if not word or word in _STOP_WORDS or word in _SEPARATORS or any(char.isdigit() for char in word):
                    break
                words.insert(0, word)
                if len(words) == 2:
                    break
            if words:
                facts.setdefault(" ".join(words), value)
    return facts


def fact_words(name: str) -> list[str]:
    """`order_id` -> [order, id]: the words a reply asking for the fact would use."""
    spaced = "".join(char if char.isalnum() or char == "#" else " " for char in name)
    return [word.casefold() for word in spaced.split()]


def sentences(text: str) -> list[str]:
    """The text cut after each `.`, `!`, `?` and line break (the mark kept)."""
    found, start = [], 0
    for index, char in enumerate(text):
        if char in ".!?\n":
            found.append(text[start:index + 1].strip())
            start = index + 1
    found.append(text[start:].strip())
    return [sentence for sentence in found if sentence]


def asks_for(reply: str, words: list[str], value: str) -> bool:
    """Whether a reply asks for the fact: a question (or a `please provide ...`) that names it (all
    its words, `id` and `number` alike) without saying its value."""
    wanted = value.casefold()
    for sentence in sentences(reply):
        lowered = sentence.casefold()
        if not (sentence.endswith("?") or any(phrase in lowered for phrase in _ASKING)) or wanted in lowered:
            continue
        said = {_word(token) for token in sentence.split()}
        if all(any(choice in said for choice in _SYNONYMS.get(word, (word,))) for word in words):
            return True
    return False


def asked_again(user_turns: list[Any], replies: list[Any], facts: dict[str, str]) -> list[tuple[int, str, int]]:
    """(turn, fact, turn it was given in) for each reply, from the turn a fact was given on, that
    asks for it again (turns count from 1)."""
    found: list[tuple[int, str, int]] = []
    for name, value in facts.items():
        wanted = value.casefold()
        given = next((index for index, text in enumerate(user_turns) if isinstance(text, str) and wanted in text.casefold()), None)
        if given is None:
            continue
        words = fact_words(name)
        for index in range(given, len(replies)):
            reply = replies[index]
            if isinstance(reply, str) and words and asks_for(reply, words, value):
                found.append((index + 1, name, given + 1))
    found.sort()
    return found
