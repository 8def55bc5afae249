"""anthropic: ask a model over Anthropic's Messages API, messages templated from the case.

The answer has the openai target's shape, `{content, messages, tool_calls, usage, model,
latency_ms}`, with `messages` in the canonical (OpenAI chat) form, so one suite's evaluators
score either target, and a comparison of the two (`targets:`) compares like with like. The wire
format lives in agenteval.endpoints.messages_api; this module is the suite's view of it. When a
tool has an implementation (the target's or the case's), the target runs the tool loop
(agenteval.agents.loop) over `step`, as the openai target does, and the answer is the loop's trajectory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from agenteval.agents.loop import ToolLoopFields
from agenteval.endpoints.messages_api import DEFAULT_BASE_URL, DEFAULT_KEY_ENV, DEFAULT_MAX_TOKENS
from agenteval.endpoints.settings import EndpointRef, ModelEndpoint
from agenteval.endpoints.templates import TemplatedMessage
from agenteval.targets.base import Answer, loop_answer, reply_answer, template_variables, tool_definitions

if TYPE_CHECKING:
    from agenteval.agents.protocol import StepReply
    from agenteval.endpoints.chat import ChatReply
    from agenteval.targets.base import TargetRun

# What the target sets when neither it nor its `endpoint:` does (a named endpoint's own keys win).
_DEFAULTS = {"base_url": DEFAULT_BASE_URL, "api_key_env": DEFAULT_KEY_ENV}

DEFAULT_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "{{ input if input is string else input | tojson }}"}
]


class AnthropicTarget(ModelEndpoint, EndpointRef, ToolLoopFields):
    """Messages API per case. Keys not set here come from `endpoint: NAME` under `models:`."""

    type: Literal["anthropic"]
    base_url: str | None = Field(
        DEFAULT_BASE_URL,
        description="The API root; requests go to {base_url}/v1/messages (`${NAME}` / `${NAME:-default}` are read from the environment).",
    )
    api_key_env: str | None = Field(
        DEFAULT_KEY_ENV,
        description="The NAME of the environment variable holding the API key (sent as `x-api-key`); null sends none.",
    )
    max_tokens: int | None = Field(
        None, ge=1, description=f"Upper bound on tokens in the reply (the Messages API requires one: {DEFAULT_MAX_TOKENS} when unset)."
    )
    messages: list[TemplatedMessage] = Field(
        default_factory=lambda: [dict(m) for m in DEFAULT_MESSAGES],  # type: ignore[misc]
        description=(
            "Chat messages in the OpenAI shape (system messages become the top-level `system`); every string is a "
            "jinja2 template over `input`, `case` (id, tags, metadata) and `metadata`. Default: one user message with the input."
        ),
    )
    tool_choice: str | dict[str, Any] | None = Field(
        None, description="auto, required (any), none, `{type: tool, name: NAME}` or the OpenAI function shape (converted)."
    )
    parse_json: bool = Field(False, description="Parse `content` as JSON (a reply that is not JSON is a case error).")

    @field_validator("tools", mode="before")
    @classmethod
    def _native_tool_shape(cls, tools: Any) -> Any:
        """A tool in the Messages API's own shape, `{name, description, input_schema}`, is the flat
        shape with its schema under another name: read as such, it may have an implementation too."""
        if not isinstance(tools, list):
            return tools
        return [
            {**{key: value for key, value in tool.items() if key != "input_schema"}, "parameters": tool["input_schema"]}
            if isinstance(tool, dict) and "input_schema" in tool and "parameters" not in tool and "type" not in tool else tool
            for tool in tools
        ]

    @field_validator("seed")
    @classmethod
    def _no_seed(cls, seed: int | None) -> int | None:
        if seed is not None:
            raise ValueError("the Messages API has no `seed`")
        return seed

    def answer(self, case: Any, run: TargetRun) -> Answer:
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.messages_api import messages_body
        from agenteval.endpoints.templates import TemplateError, render_strings

        if run.endpoints is None:
            return Answer(error="the anthropic target needs the run's endpoints")
        try:
            settings = self.request_settings(run.endpoints.models)
            messages = render_strings(self.messages, template_variables(case), "messages")
            body = messages_body(settings, messages, tools=tool_definitions(self.tools), tool_choice=self.tool_choice)
        except (ValueError, TemplateError) as exc:
            return Answer(error=str(exc))
        if self.tools is not None or getattr(case, "tools", None):
            from agenteval.agents.loop import tool_loop

            looped = tool_loop(self, case, run, messages)
            if looped is not None:
                return loop_answer("anthropic", Answer(**looped), self.parse_json)
        try:
            reply = self._send(run, settings, body)
        except EndpointError as exc:
            return Answer(error=f"anthropic target: {exc}")
        return reply_answer("anthropic", reply, messages, self.parse_json)

    def step(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, run: TargetRun, response_format: dict[str, Any] | None = None,
    ) -> StepReply:
        """One model step of a tool loop or conversation (agenteval.agents.protocol): canonical
        messages in, the canonical assistant message out. `tools` are the definitions the caller
        offers the model (OpenAI function shape or bare `{name, description, parameters}`);
        `response_format` (a judge's json_schema) is sent as the structured-outputs `output_config`."""
        from agenteval.agents.protocol import StepReply, ToolCall
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.messages_api import messages_body

        if run.endpoints is None:
            return StepReply(error="the anthropic target needs the run's endpoints")
        try:
            settings = self.request_settings(run.endpoints.models)
            body = messages_body(settings, messages, tools=tools or None, tool_choice=self.tool_choice, response_format=response_format)
        except ValueError as exc:
            return StepReply(error=str(exc))
        try:
            reply = self._send(run, settings, body)
        except EndpointError as exc:
            return StepReply(error=f"anthropic target: {exc}")
        calls = [ToolCall(id=call["id"], name=call["name"], arguments=call["arguments"]) for call in reply.tool_calls]
        return StepReply(message=reply.message, content=reply.content, tool_calls=calls, usage=reply.usage, model=reply.model)

    def credential_problem(self, environ: Mapping[str, str], models: Mapping[str, Any]) -> str | None:
        """What to set before a request can be sent (the API key's variable), or None (agenteval.agents.protocol)."""
        try:
            settings = self.request_settings(dict(models))
        except ValueError:
            return None  # each case says what is wrong
        name = settings.api_key_env
        if not name or any(header.lower() == "x-api-key" for header in settings.headers) or (environ.get(name) or "").strip():
            return None
        return f"environment variable {name} is not set: it holds the Anthropic API key (`api_key_env`); set it, or name another variable"

    def request_settings(self, models: dict[str, ModelEndpoint]) -> ModelEndpoint:
        """The endpoint settings of a request: `endpoint: NAME`'s with this target's keys over them,
        and the Messages API's base_url and key variable under both. Raises ValueError."""
        from agenteval.endpoints.settings import endpoint_keys, merged_settings

        if self.endpoint is None:
            return ModelEndpoint.model_validate({key: getattr(self, key) for key in ModelEndpoint.model_fields})
        named = models.get(self.endpoint)
        if named is not None:
            models = {**models, self.endpoint: ModelEndpoint.model_validate({**_DEFAULTS, **endpoint_keys(named)})}
        return merged_settings(self, models)  # an unknown name is its error

    @staticmethod
    def _send(run: TargetRun, settings: ModelEndpoint, body: dict[str, Any]) -> ChatReply:
        from agenteval.endpoints.messages_api import create

        assert run.endpoints is not None
        cache = settings.cache if settings.cache is not None else settings.temperature == 0
        return create(run.endpoints, settings, body, cache=cache, variant=run.repetition)
