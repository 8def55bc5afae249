"""What a model target offers the tool loop and the conversation driver: one model step over a
conversation in the canonical shape (OpenAI chat messages), whatever API the model speaks.

A target that can take part (`openai`, `anthropic`, `bedrock`, `azure_openai`, `gemini`) has
`step(messages, tools, run) -> StepReply`; the tool loop (agenteval.agents.loop) and the
conversation driver (agenteval.conversations) call only that, so a new kind of model target joins
by offering it. (`run` is the target's agenteval.targets.base.TargetRun: this floor is below the
targets, so it is not named here.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(slots=True)
class ToolCall:
    """One call a model asked for: its id (as the API gave it), the tool's name and its arguments
    (parsed; `arguments_error` says why they could not be, and the loop sends that back as the result)."""

    id: str
    name: str
    arguments: Any = field(default_factory=dict)
    arguments_error: str | None = None


@dataclass(slots=True)
class StepReply:
    """One model reply. `message` is the canonical assistant message to append to the conversation
    (`{"role": "assistant", "content": ..., "tool_calls": [...]}`); `error` is set (and the rest
    empty) when no usable reply came back after the endpoint's retries."""

    message: dict[str, Any] = field(default_factory=dict)
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)  # agenteval.usage record: latency, tokens, cost, cached
    model: str | None = None
    error: str | None = None

    @property
    def latency_ms(self) -> float:
        return float(self.usage.get("latency_ms") or 0.0)


@runtime_checkable
class ModelStep(Protocol):
    """A target that can take one step of a conversation (see the module docstring)."""

    def step(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, run: Any) -> StepReply: ...


@dataclass(slots=True)
class EmbedReply:
    """Embeddings of several texts, in their order; `error` is set (and `vectors` empty) when no
    usable reply came back after the endpoint's retries."""

    vectors: list[list[float]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)  # agenteval.usage record, as StepReply's
    model: str | None = None
    error: str | None = None


@runtime_checkable
class ModelEmbed(Protocol):
    """A model target whose vendor offers embeddings (`semantic_similarity` uses it by name)."""

    def embed(self, texts: list[str], run: Any) -> EmbedReply: ...
