"""Where candidate answers come from: one module per kind of target, each with `answer(case, run)`.

A new target type is one module plus one line in TYPES. Each type is named by where its config
class lives ("module:Class") and imported when first asked for: a run imports, and builds the
pydantic models of, only the target types its suite uses (a suite of recorded answers imports no
HTTP client, tool loop or vendor API).
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel
from pydantic_core import core_schema

from agenteval.config import ByType
from agenteval.targets.base import Answer, TargetRun

if TYPE_CHECKING:
    from agenteval.targets.anthropic import AnthropicTarget
    from agenteval.targets.azure_openai import AzureOpenAITarget
    from agenteval.targets.bedrock import BedrockTarget
    from agenteval.targets.command import CommandTarget
    from agenteval.targets.gemini import GeminiTarget
    from agenteval.targets.http import HttpTarget
    from agenteval.targets.mcp import McpTarget
    from agenteval.targets.openai import OpenAITarget
    from agenteval.targets.python import PythonTarget
    from agenteval.targets.recorded import RecordedTarget
    from agenteval.targets.traces import TracesTarget

TYPES: dict[str, str] = {
    "recorded": "agenteval.targets.recorded:RecordedTarget",
    "command": "agenteval.targets.command:CommandTarget",
    "openai": "agenteval.targets.openai:OpenAITarget",
    "anthropic": "agenteval.targets.anthropic:AnthropicTarget",
    "bedrock": "agenteval.targets.bedrock:BedrockTarget",
    "azure_openai": "agenteval.targets.azure_openai:AzureOpenAITarget",
    "gemini": "agenteval.targets.gemini:GeminiTarget",
    "http": "agenteval.targets.http:HttpTarget",
    "python": "agenteval.targets.python:PythonTarget",
    "traces": "agenteval.targets.traces:TracesTarget",
    "mcp": "agenteval.targets.mcp:McpTarget",
}
"""Target type name -> "module:Class" of its config, in the order listings and the suite schema show them."""

_CLASSES = {reference.partition(":")[2]: name for name, reference in TYPES.items()}  # class name -> type name


@functools.cache
def target_type(type_name: str) -> type[BaseModel]:
    """The config class of one target type (a name in TYPES), importing only its module."""
    module, _, name = TYPES[type_name].partition(":")
    cls: type[BaseModel] = getattr(importlib.import_module(module), name)
    return cls


def target_types() -> dict[str, type[BaseModel]]:
    """Every target type, imported: for the suite schema and the model types (agenteval.targets.model_entries)."""
    return {name: target_type(name) for name in TYPES}


class _ByType(ByType):
    """A target, by the config class its `type` names (TYPES)."""

    def member(self, data: Any) -> type[BaseModel] | None:
        kind = data.get("type") if isinstance(data, dict) else None
        return target_type(kind) if isinstance(kind, str) and kind in TYPES else None

    def kept(self, value: Any) -> bool:
        kind = getattr(value, "type", None) if isinstance(value, BaseModel) else None
        return isinstance(kind, str) and kind in TYPES and isinstance(value, target_type(kind))

    def names(self) -> list[str]:
        return list(TYPES)

    def choices(self) -> dict[str, core_schema.CoreSchema]:
        return {name: cls.__pydantic_core_schema__ for name, cls in target_types().items()}


TargetSpec = Annotated[Any, _ByType()]
"""Any target, by its `type`: what `target:` and `targets:` hold."""


def __getattr__(name: str) -> Any:
    """A target's config class by its name (`from agenteval.targets import OpenAITarget`), imported when asked for."""
    if name in _CLASSES:
        return target_type(_CLASSES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AnthropicTarget", "Answer", "AzureOpenAITarget", "BedrockTarget", "CommandTarget", "GeminiTarget", "HttpTarget", "McpTarget",
    "OpenAITarget", "PythonTarget", "RecordedTarget", "TYPES", "TargetRun", "TargetSpec", "TracesTarget", "target_type",
    "target_types",
]
