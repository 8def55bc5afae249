"""A case's conversation, as configured: scripted `turns:` or a simulated `user:`.

The models live with the suite (a case holds them); playing them out is agenteval.conversations'
work, one floor up. `conversation_problems` is the load-time check of what a conversation names
outside itself (the endpoint under `models:`, per-turn evaluators held to the cases-file trust rule).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator

from agenteval.config import StrictModel
from agenteval.evaluators.base import EvaluatorSpec
from agenteval.suite.yaml_nodes import KeyPath

GOAL_REACHED = "GOAL_REACHED"
"""What the simulated user says, alone, when its goal is met: the conversation ends there."""


def _text_as_turn(value: Any) -> Any:
    return {"user": value} if isinstance(value, str) else value


class Turn(StrictModel):
    """One scripted user message, and the evaluators that judge the reply to it."""

    user: str = Field(min_length=1, description="What the user says in this turn.")
    evaluators: list[EvaluatorSpec] | None = Field(
        None, description="Evaluators of this turn's reply only (their results are named `turn N: NAME`)."
    )


ScriptedTurn = Annotated[Turn, BeforeValidator(_text_as_turn, json_schema_input_type=str | Turn)]


class StopRule(StrictModel):
    """When the simulated user's goal counts as reached (any rule given ends the conversation)."""

    judge: bool | str | None = Field(
        None,
        description="After each reply, ask a model whether the goal is reached (yes/no): `true` asks the user's "
        "endpoint, a NAME asks that endpoint under `models:`.",
    )
    regex: str | None = Field(None, min_length=1, description="A pattern that, found in the agent's reply, ends the conversation.")
    tool: str | None = Field(None, min_length=1, description="A tool that, once the agent calls it, ends the conversation.")

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        from agenteval import patterns

        if value is not None:
            try:
                patterns.compile(value)
            except (patterns.PatternError, RecursionError, OverflowError) as exc:
                raise ValueError(f"invalid regular expression {value!r}: {exc}") from None
        return value

    @property
    def judge_endpoint(self) -> str | None:
        return self.judge if isinstance(self.judge, str) else None


class SimulatedUser(StrictModel):
    """A model plays the user from a persona, a goal and the case's input until a stop rule or `max_turns`."""

    endpoint: str = Field(min_length=1, description="The model playing the user: a NAME under the suite's `models:`.")
    persona: str = Field("", description="Who the user is and how they speak.")
    goal: str = Field(min_length=1, description="What the user wants from the agent.")
    max_turns: int = Field(10, ge=1, le=100, description="Replies of the agent at most; the conversation stops there.")
    stop: StopRule = Field(default_factory=StopRule, description="When the goal counts as reached (`judge`, `regex`, `tool`).")
    first_message: str | None = Field(
        None, min_length=1,
        description="The user's opening message (a jinja2 template over `input` and `metadata`); default: the model writes it.",
    )

    @field_validator("first_message")
    @classmethod
    def _template_compiles(cls, value: str | None) -> str | None:
        from agenteval.endpoints.templates import check_template

        return check_template(value) if value is not None else value


def one_kind(turns: list[Turn] | None, user: SimulatedUser | None) -> None:
    """ValueError when a case gives both (a conversation is scripted or simulated, not both)."""
    if turns is not None and user is not None:
        raise ValueError("give `turns` (scripted user messages) or `user` (a simulated user), not both")


def turn_label(number: int, label: str) -> str:
    """The name of a per-turn evaluator's result: `turn 2: contains`."""
    return f"turn {number}: {label}"


def conversation_problems(
    case_id: str, record: dict[str, Any], turns: list[Turn] | None, models: dict[str, Any] | None, trusted: bool, base_dir: Path,
) -> Iterator[tuple[KeyPath, str]]:
    """(key path in the case, message) of what a conversation names that it may not: an endpoint
    missing from `models:`; per-turn evaluators doing what a cases file needs trust for, or naming
    an unknown endpoint or a file outside the suite. With `turns` None (before validation) only the
    raw `*_file` keys are checked: validating may already read them."""
    from agenteval.suite.references import unknown_endpoint
    from agenteval.suite.trust import outside_files, unknown_endpoints, untrusted_files, untrusted_uses

    raw_turns = record.get("turns")
    if turns is None:
        for index, raw in enumerate(raw_turns if isinstance(raw_turns, list) else ()):
            if isinstance(raw, dict) and raw.get("evaluators"):
                for key, message in untrusted_files(case_id, raw["evaluators"], base_dir):
                    yield ("turns", index, *key), message
        return
    user = record.get("user")
    if isinstance(user, dict) and models is not None:
        if message := unknown_endpoint(user.get("endpoint"), models):
            yield ("user", "endpoint"), f"case {case_id!r}: user.endpoint {message}"
        judge = user.get("stop", {}).get("judge") if isinstance(user.get("stop"), dict) else None
        if isinstance(judge, str) and (message := unknown_endpoint(judge, models)):
            yield ("user", "stop", "judge"), f"case {case_id!r}: user.stop.judge {message}"
    for index, turn in enumerate(turns):
        evaluators = turn.evaluators or []
        where: KeyPath = ("turns", index, "evaluators")
        seen: set[str] = set()
        for position, evaluator in enumerate(evaluators):
            if evaluator.label in seen:
                yield where + (position, "name"), f"two evaluators of turn {index + 1} are named {evaluator.label!r}; give each a unique `name`"
            seen.add(evaluator.label)
        checks = [untrusted_uses(case_id, evaluators, models)] if not trusted else []
        if models is not None:
            checks.append(unknown_endpoints(case_id, evaluators, models))
        checks.append(outside_files(evaluators, base_dir, f"case {case_id!r}: "))
        for found in checks:
            for key, message in found:
                yield where + key, message
