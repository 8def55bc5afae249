"""openai: ask any OpenAI-compatible chat-completions endpoint, messages templated from the case.

The answer is `{content, messages, tool_calls, usage, model, latency_ms}`, so text checks read
`content`, tool-call checks read `tool_calls`, and field checks read `content` parsed as JSON
(`parse_json: true`). When a tool has an implementation (the target's or the case's), the target
runs the tool loop (agenteval.agents.loop) over `step`, and the answer is the loop's trajectory.
Without `base_url` (nor `endpoint:`) it asks OpenAI, with the key in OPENAI_API_KEY
(agenteval.endpoints.settings.openai_defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from agenteval.agents.loop import ToolLoopFields
from agenteval.endpoints.settings import OPENAI_HOST, EndpointRef, ModelEndpoint
from agenteval.endpoints.templates import TemplatedMessage
from agenteval.targets.base import Answer, loop_answer, reply_answer, template_variables, tool_definitions

if TYPE_CHECKING:
    from agenteval.agents.protocol import StepReply
    from agenteval.targets.base import TargetRun

# The answer's keys; the last three describe the request, not what the model said.
ANSWER_KEYS = frozenset({"content", "messages", "tool_calls", "usage", "model", "latency_ms"})
REQUEST_METADATA = ("usage", "model", "latency_ms")
LOOP_METADATA = ("usage", "model", "latency_ms", "steps")  # a tool loop's answer: `steps` holds latencies and usage
TRACE_METADATA = ("usage", "model", "latency_ms", "steps", "spans", "trace_id")  # a trace's answer: ids, timings, raw spans

DEFAULT_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "{{ input if input is string else input | tojson }}"}
]


class OpenAITarget(ModelEndpoint, EndpointRef, ToolLoopFields):
    """Chat completions per case. Keys not set here come from `endpoint: NAME` under `models:`."""

    type: Literal["openai"]
    messages: list[TemplatedMessage] = Field(
        default_factory=lambda: [dict(m) for m in DEFAULT_MESSAGES],  # type: ignore[misc]
        description=(
            "Chat messages; every string is a jinja2 template over `input`, `case` (id, tags, metadata) "
            "and `metadata`, e.g. `{{ input.question }}`. Default: one user message with the input."
        ),
    )
    tool_choice: str | dict[str, Any] | None = Field(None, description="Passed through as is.")
    response_format: dict[str, Any] | None = Field(None, description="Passed through as is (e.g. a json_schema).")
    parse_json: bool = Field(False, description="Parse `content` as JSON (a reply that is not JSON is a case error).")

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
        if self.tools is not None or getattr(case, "tools", None):
            from agenteval.agents.loop import tool_loop

            looped = tool_loop(self, case, run, messages)
            if looped is not None:
                return loop_answer("openai", Answer(**looped), self.parse_json)
        body = chat_body(
            settings, messages, tools=tool_definitions(self.tools), tool_choice=self.tool_choice, response_format=self.response_format
        )
        cache = settings.cache if settings.cache is not None else settings.temperature == 0
        try:
            reply = complete(run.endpoints, settings, body, cache=cache, variant=run.repetition)
        except EndpointError as exc:
            return Answer(error=f"openai target: {exc}")
        return reply_answer("openai", reply, messages, self.parse_json)

    def credential_problem(self, environ: Mapping[str, str], models: Mapping[str, Any]) -> str | None:
        """What to set when a key is needed and missing (agenteval.agents.protocol): the variable `api_key_env`
        names, or, for api.openai.com without one, OPENAI_API_KEY. Any other server may take no key (a local one)."""
        from agenteval.endpoints.settings import given_settings, openai_defaults

        try:
            given = given_settings(self, dict(models))
        except ValueError:
            return None  # each case says what is wrong
        if any(header.lower() == "authorization" for header in given.headers):
            return None
        name = openai_defaults(given).api_key_env
        if name is None or (environ.get(name) or "").strip():
            return None
        if given.api_key_env is None:  # read by default, for api.openai.com
            return f"environment variable {name} is not set: {OPENAI_HOST} needs an API key; set it, or name another variable with `api_key_env: NAME`"
        return f"environment variable {name} is not set: it holds the API key (`api_key_env`); set it, or name another variable"

    def step(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, run: TargetRun, response_format: dict[str, Any] | None = None,
    ) -> StepReply:
        """One model call over a conversation in the canonical shape (this API's own): the tool loop's
        step. `response_format` (a judge's schema) replaces the target's own for this call."""
        from agenteval.agents.loop import read_tool_calls
        from agenteval.agents.protocol import StepReply
        from agenteval.endpoints.chat import chat_body, complete
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.settings import merged_settings

        if run.endpoints is None:
            return StepReply(error="the openai target needs the run's endpoints")
        try:
            settings = merged_settings(self, run.endpoints.models)
        except ValueError as exc:
            return StepReply(error=str(exc))
        body = chat_body(
            settings, messages, tools=tools or None, tool_choice=self.tool_choice, response_format=response_format or self.response_format
        )
        cache = settings.cache if settings.cache is not None else settings.temperature == 0
        try:
            reply = complete(run.endpoints, settings, body, cache=cache, variant=run.repetition)
        except EndpointError as exc:
            return StepReply(error=f"openai target: {exc}")
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        raw_calls = reply.message.get("tool_calls")
        if isinstance(raw_calls, list) and raw_calls:
            message["tool_calls"] = [dict(call) if isinstance(call, dict) else call for call in raw_calls]
        return StepReply(message, reply.content, read_tool_calls(message.get("tool_calls")), reply.usage, reply.model)


def what_was_said(output: Any) -> Any:
    """An openai answer without its request metadata (`usage`, `model`, `latency_ms`): what a model
    judge grades when given the whole answer. Usage differs between a fetched and a replayed answer
    (`cached: true`), so a judge shown it would send a new request on every re-run. Anything that
    is not an openai answer is returned as is. A trace's answer (traces target, --traces, received
    spans) is seen without its spans, trace id and timings: a judge grades what the agent said and
    did, and a new trace of the same conversation asks the same question."""
    if isinstance(output, dict) and "trace_id" in output and "spans" in output and "tool_calls" in output:
        return {key: value for key, value in output.items() if key not in TRACE_METADATA}
    if isinstance(output, dict) and output.keys() == ANSWER_KEYS:
        return {key: value for key, value in output.items() if key not in REQUEST_METADATA}
    if isinstance(output, dict) and "stopped" in output and "steps" in output and "messages" in output:
        return {key: value for key, value in output.items() if key not in LOOP_METADATA}
    return output
