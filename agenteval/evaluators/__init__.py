"""The evaluator registry: a new evaluator type is one module plus one line here."""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.code_judge import CodeJudge
from agenteval.evaluators.confusion import FieldConfusion
from agenteval.evaluators.fields import FieldAccuracy
from agenteval.evaluators.geometry import Distance, IoUScore
from agenteval.evaluators.line_items import LineItems

REGISTRY: dict[str, type[EvaluatorConfig]] = {
    cls.type_name: cls
    for cls in (
        FieldAccuracy,
        FieldConfusion,
        LineItems,
        IoUScore,
        Distance,
        CodeJudge,
    )
}

EvaluatorSpec = Annotated[Union[tuple(REGISTRY.values())], Field(discriminator="type")]  # type: ignore[valid-type]

__all__ = ["REGISTRY", "EvalContext", "EvaluatorConfig", "EvaluatorResult", "EvaluatorSpec"]
