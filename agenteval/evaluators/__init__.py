"""The evaluator registry: a new evaluator type is one module plus one line here.

Each type is named by where its config class lives ("module:Class") and imported when first
asked for: a run imports, and builds the pydantic models of, only the types its suite uses.
Entry points (agenteval.evaluators.plugin_registry) are read only for a type that is not built
in, and for the full registry that `agenteval evaluators` and `agenteval schema suite` list.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult, EvaluatorSpec

BUILT_IN: dict[str, str] = {
    "field_accuracy": "agenteval.evaluators.fields:FieldAccuracy",
    "field_confusion": "agenteval.evaluators.confusion:FieldConfusion",
    "line_items": "agenteval.evaluators.line_items:LineItems",
    "iou_score": "agenteval.evaluators.geometry:IoUScore",
    "distance": "agenteval.evaluators.geometry:Distance",
    "code_judge": "agenteval.evaluators.code_judge:CodeJudge",
    "python": "agenteval.evaluators.python_function:PythonFunction",
    "javascript": "agenteval.evaluators.javascript:JavaScript",
    "tool_calls": "agenteval.evaluators.tools.evaluator:ToolCalls",
    "composite": "agenteval.evaluators.composite:Composite",
    "conversation": "agenteval.evaluators.conversation:Conversation",
    "equals": "agenteval.evaluators.text.rules:Equals",
    "contains": "agenteval.evaluators.text.rules:Contains",
    "not_contains": "agenteval.evaluators.text.rules:NotContains",
    "starts_with": "agenteval.evaluators.text.rules:StartsWith",
    "ends_with": "agenteval.evaluators.text.rules:EndsWith",
    "regex": "agenteval.evaluators.text.regex:Regex",
    "length": "agenteval.evaluators.text.length:Length",
    "json_valid": "agenteval.evaluators.text.json_checks:JsonValid",
    "json_schema": "agenteval.evaluators.text.json_checks:JsonSchema",
    "text_similarity": "agenteval.evaluators.text.similarity:TextSimilarity",
    "keyword_coverage": "agenteval.evaluators.text.keywords:KeywordCoverage",
    "sentiment": "agenteval.evaluators.text.sentiment:Sentiment",
    "toxicity": "agenteval.evaluators.text.toxicity:Toxicity",
    "llm_judge": "agenteval.evaluators.model.llm_judge:LLMJudge",
    "semantic_similarity": "agenteval.evaluators.model.semantic_similarity:SemanticSimilarity",
    "faithfulness": "agenteval.evaluators.model.grounded:Faithfulness",
    "answer_relevance": "agenteval.evaluators.model.grounded:AnswerRelevance",
    "context_precision": "agenteval.evaluators.model.grounded:ContextPrecision",
    "context_recall": "agenteval.evaluators.model.grounded:ContextRecall",
    "context_relevance": "agenteval.evaluators.model.grounded:ContextRelevance",
    "retrieval": "agenteval.evaluators.retrieval:Retrieval",
    "spans": "agenteval.evaluators.spans:Spans",
    "latency": "agenteval.evaluators.budgets:Latency",
    "token_usage": "agenteval.evaluators.budgets:TokenUsage",
    "cost": "agenteval.evaluators.budgets:Cost",
}
"""Built-in type name -> "module:Class" of its config, in the order listings show them."""


@functools.cache
def _built_in(type_name: str) -> type[EvaluatorConfig]:
    module, _, name = BUILT_IN[type_name].partition(":")
    cls: type[EvaluatorConfig] = getattr(importlib.import_module(module), name)
    return cls


@functools.cache
def plugins() -> dict[str, type[EvaluatorConfig]]:
    """Type name -> config class of every installed plugin: entry points are read here, once."""
    from agenteval.evaluators.plugin_registry import plugin_types

    return plugin_types(BUILT_IN)


def evaluator_type(type_name: str) -> type[EvaluatorConfig] | None:
    """The config class of one type, importing only its module; None for a type nobody declares.
    A name that is not built in reads the plugins (and raises PluginError for a broken one)."""
    if type_name in BUILT_IN:
        return _built_in(type_name)
    return plugins().get(type_name)


def type_names() -> list[str]:
    """Every type name, built-in then plugins, without importing the built-in types."""
    return [*BUILT_IN, *plugins()]


@functools.cache
def registry() -> dict[str, type[EvaluatorConfig]]:
    """Every type, built-in and plugin, imported: for listings and the suite schema."""
    return {**built_in_types(), **plugins()}


@functools.cache
def built_in_types() -> dict[str, type[EvaluatorConfig]]:
    return {name: _built_in(name) for name in BUILT_IN}


def __getattr__(name: str) -> Any:
    """`BUILT_IN_TYPES` and `REGISTRY` import every type when first asked for."""
    if name == "BUILT_IN_TYPES":
        return built_in_types()
    if name == "REGISTRY":
        return registry()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BUILT_IN", "BUILT_IN_TYPES", "REGISTRY", "EvalContext", "EvaluatorConfig", "EvaluatorResult", "EvaluatorSpec",
    "evaluator_type", "plugins", "registry", "type_names",
]
