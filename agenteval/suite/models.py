"""The suite file and its cases, as typed models. `agenteval schema suite` is generated from these."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from agenteval.config import StrictModel
from agenteval.evaluators import EvaluatorSpec
from agenteval.targets import RecordedTarget, TargetSpec


def _int_id_as_text(value: Any) -> Any:
    return str(value) if type(value) is int else value


class Case(BaseModel):
    """One test case. `output` is a recorded candidate answer; case `evaluators` add to (or, same name, replace) the suite's."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, BeforeValidator(_int_id_as_text)] = Field(min_length=1)
    input: Any = None
    expected: Any = Field(description="The reference answer (any JSON).")
    output: Any = Field(None, description="A recorded candidate answer.")
    evaluators: list[EvaluatorSpec] | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def has_output(self) -> bool:
        return "output" in self.model_fields_set


class Suite(StrictModel):
    """An eval suite: where answers come from, how they are scored, and the cases."""

    model_config = ConfigDict(title="agenteval suite")

    name: str = Field(min_length=1)
    description: str | None = None
    target: TargetSpec = Field(default_factory=RecordedTarget)
    evaluators: list[EvaluatorSpec] = Field(default_factory=list, description="Run on every case, in order.")
    cases: str | list[Case] = Field(
        description="A .jsonl, .json or .yaml file relative to this file, or an inline list."
    )
