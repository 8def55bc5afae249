"""Where candidate answers come from: one module per kind of target, each with `answer(case, run)`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agenteval.targets.anthropic import AnthropicTarget
from agenteval.targets.azure_openai import AzureOpenAITarget
from agenteval.targets.base import Answer, TargetRun
from agenteval.targets.bedrock import BedrockTarget
from agenteval.targets.command import CommandTarget
from agenteval.targets.gemini import GeminiTarget
from agenteval.targets.http import HttpTarget
from agenteval.targets.mcp import McpTarget
from agenteval.targets.openai import OpenAITarget
from agenteval.targets.python import PythonTarget
from agenteval.targets.recorded import RecordedTarget
from agenteval.targets.traces import TracesTarget

TargetSpec = Annotated[
    RecordedTarget | CommandTarget | OpenAITarget | AnthropicTarget | BedrockTarget | AzureOpenAITarget | GeminiTarget | HttpTarget | PythonTarget
    | TracesTarget | McpTarget,
    Field(discriminator="type"),
]

__all__ = [
    "AnthropicTarget", "Answer", "AzureOpenAITarget", "BedrockTarget", "CommandTarget", "GeminiTarget", "HttpTarget", "McpTarget", "OpenAITarget", "PythonTarget", "RecordedTarget",
    "TargetRun", "TargetSpec", "TracesTarget",
]
