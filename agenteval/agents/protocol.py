"""What a model target offers the tool loop and the conversation driver: one model step over a
conversation in the canonical shape (OpenAI chat messages), whatever API the model speaks.

A target that can take part (`openai`, `anthropic`, `bedrock`, `azure_openai`, `gemini`) has
`step(messages, tools, run) -> StepReply`; the tool loop (agenteval.agents.loop) and the
conversation driver (agenteval.conversations) call only that, so a new kind of model target joins
by offering it. (`run` is the target's agenteval.targets.base.TargetRun: this floor is below the
targets, so it is not named here.)

Model judges, the claim-level judges and simulated users ask a `models:` entry of any model type
through the same step(), with no tools (agenteval.targets.model_entries). A step() may also take
`response_format=` (OpenAI's `{"type": "json_schema", "json_schema": {"name", "strict", "schema"}}`):
a judge passes its reply schema there when the signature has it, and the target asks its API for
output matching it as that API can (the openai and azure_openai targets send it as is, the
anthropic target as `output_config`, the gemini target as generationConfig's responseJsonSchema);
a step() without it (bedrock: the Converse API has no structured output) is asked without, and the judge's prompt, which always
states the reply format, is what holds the model to it. (`structured_output: false` on a judge
sends no schema, for models that cannot take one.) Judges cache only a reply they can read: the run's endpoints
that step() gets hold fresh replies back until the judge has read them, so a target sends every
request through `run.endpoints.send` and needs nothing more for it.

A model target that needs a credential says what to set with `credential_problem(environ, models)
-> str | None` (`models`: the suite's `models:`, for the keys `endpoint: NAME` lends it): one
line, asked at load of a `models:` entry and before the run of a chosen target unless the cache
may replay it (agenteval.targets.model_entries.credential_problem).
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
    # optionally also `response_format: dict[str, Any] | None = None` (see the module docstring)


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
