"""The evaluator registry: a new evaluator type is one module plus one line here."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Union

from pydantic import Field

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.budgets import Cost, Latency, TokenUsage
from agenteval.evaluators.code_judge import CodeJudge
from agenteval.evaluators.composite import Composite
from agenteval.evaluators.confusion import FieldConfusion
from agenteval.evaluators.fields import FieldAccuracy
from agenteval.evaluators.geometry import Distance, IoUScore
from agenteval.evaluators.line_items import LineItems
from agenteval.evaluators.python_function import PythonFunction
from agenteval.evaluators.model.llm_judge import LLMJudge
from agenteval.evaluators.model.semantic_similarity import SemanticSimilarity
from agenteval.evaluators.text import TEXT_EVALUATORS
from agenteval.evaluators.tools import ToolCalls

BUILT_IN_TYPES: dict[str, type[EvaluatorConfig]] = {
    cls.type_name: cls
    for cls in (
        FieldAccuracy,
        FieldConfusion,
        LineItems,
        IoUScore,
        Distance,
        CodeJudge,
        PythonFunction,
        ToolCalls,
        Composite,
        *TEXT_EVALUATORS,
        LLMJudge,
        SemanticSimilarity,
        Latency,
        TokenUsage,
        Cost,
    )
}



@functools.cache
def registry() -> dict[str, type[EvaluatorConfig]]:
    """Built-in types plus installed plugins (agenteval.plugins): entry points are read here, once."""
    from agenteval.plugins import plugin_types

    return {**BUILT_IN_TYPES, **plugin_types(BUILT_IN_TYPES)}


@functools.cache
def evaluator_spec() -> Any:
    """The discriminated union of every registered type, which the suite models validate against."""
    spec = Annotated[Union[tuple(registry().values())], Field(discriminator="type")]  # type: ignore[valid-type]
    Composite.model_rebuild(_types_namespace={"EvaluatorSpec": spec})  # its children are EvaluatorSpecs
    return spec


def __getattr__(name: str) -> Any:
    """`REGISTRY` and `EvaluatorSpec` are built when first asked for, so reading results or importing
    one evaluator module never reads entry points."""
    if name == "REGISTRY":
        return registry()
    if name == "EvaluatorSpec":
        return evaluator_spec()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["BUILT_IN_TYPES", "REGISTRY", "EvalContext", "EvaluatorConfig", "EvaluatorResult", "EvaluatorSpec", "registry"]
