"""openai: ask any OpenAI-compatible chat-completions endpoint, messages templated from the case.

The answer is `{content, messages, tool_calls, usage, model, latency_ms}`, so text checks read
`content`, tool-call checks read `tool_calls`, and field checks read `content` parsed as JSON
(`parse_json: true`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from agenteval.endpoints.settings import EndpointRef, ModelEndpoint
from agenteval.endpoints.templates import check_strings
from agenteval.targets.base import Answer

if TYPE_CHECKING:
    from agenteval.targets.base import TargetRun

# The answer's keys; the last three describe the request, not what the model said.
ANSWER_KEYS = frozenset({"content", "messages", "tool_calls", "usage", "model", "latency_ms"})
REQUEST_METADATA = ("usage", "model", "latency_ms")

DEFAULT_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "{{ input if input is string else input | tojson }}"}
]


class OpenAITarget(ModelEndpoint, EndpointRef):
    """Chat completions per case. Keys not set here come from `endpoint: NAME` under `models:`."""

    type: Literal["openai"]
    messages: list[dict[str, Any]] = Field(
        default_factory=lambda: [dict(m) for m in DEFAULT_MESSAGES],
        description=(
            "Chat messages; every string is a jinja2 template over `input`, `case` (id, tags, metadata) "
            "and `metadata`, e.g. `{{ input.question }}`. Default: one user message with the input."
        ),
    )
    tools: list[dict[str, Any]] | None = Field(None, description="Tool definitions, passed through as is.")
    tool_choice: str | dict[str, Any] | None = Field(None, description="Passed through as is.")
    response_format: dict[str, Any] | None = Field(None, description="Passed through as is (e.g. a json_schema).")
    parse_json: bool = Field(False, description="Parse `content` as JSON (a reply that is not JSON is a case error).")

    @field_validator("messages")
    @classmethod
    def _templates_compile(cls, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, message in enumerate(messages):
            if not isinstance(message.get("role"), str):
                raise ValueError(f"messages[{index}] needs a `role` (system, user, assistant or tool)")  # noqa: TRY004 - pydantic reports ValueError
        return check_strings(messages)

    def answer(self, case: Any, run: TargetRun) -> Answer:
        from agenteval.endpoints.chat import chat_body, complete
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.settings import merged_settings
        from agenteval.endpoints.templates import TemplateError, render_strings

        if run.endpoints is None:
            return Answer(error="the openai target needs the run's endpoints")
        try:
            settings = merged_settings(self, run.endpoints.models)
            messages = render_strings(self.messages, template_variables(case), "messages")
        except (ValueError, TemplateError) as exc:
            return Answer(error=str(exc))
        body = chat_body(
            settings, messages, tools=self.tools, tool_choice=self.tool_choice, response_format=self.response_format
        )
        cache = settings.cache if settings.cache is not None else settings.temperature == 0
        try:
            reply = complete(run.endpoints, settings, body, cache=cache, variant=run.repetition)
        except EndpointError as exc:
            return Answer(error=f"openai target: {exc}")
        content: Any = reply.content
        if self.parse_json:
            content, problem = _parse_json_content(reply.content)
            if problem:
                return Answer(error=f"openai target: parse_json: {problem}", duration_ms=reply.latency_ms, usage=reply.usage)
        output = {
            "content": content,
            "messages": [*messages, reply.message],
            "tool_calls": reply.tool_calls,
            "usage": reply.usage,
            "model": reply.model,
            "latency_ms": reply.latency_ms,
        }
        return Answer(output, duration_ms=reply.latency_ms, usage=reply.usage)


def what_was_said(output: Any) -> Any:
    """An openai answer without its request metadata (`usage`, `model`, `latency_ms`): what a model
    judge grades when given the whole answer. Usage differs between a fetched and a replayed answer
    (`cached: true`), so a judge shown it would send a new request on every re-run. Anything that
    is not an openai answer is returned as is."""
    if isinstance(output, dict) and output.keys() == ANSWER_KEYS:
        return {key: value for key, value in output.items() if key not in REQUEST_METADATA}
    return output


def template_variables(case: Any) -> dict[str, Any]:
    """What a template sees of a case (never `expected`: the target must not see the answer)."""
    return {
        "input": case.input,
        "metadata": case.metadata,
        "case": {"id": case.id, "tags": case.tags, "metadata": case.metadata},
    }


def _parse_json_content(content: str | None) -> tuple[Any, str | None]:
    from agenteval.process import decode_json

    if content is None:
        return None, "the reply has no text content"
    text = content.strip()
    if text.startswith("```"):  # a fenced block: ```json ... ```
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    try:
        return decode_json(text.encode()), None
    except (ValueError, RecursionError):
        return None, f"content is not JSON: {content[:200]!r}"
