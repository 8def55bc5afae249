"""Live OpenTelemetry spans in the GenAI semantic conventions, while `--otel` runs: a `gen_ai`
client span per model request, an `execute_tool` span per tool a loop runs, under the case's span.

Nothing here is imported from OpenTelemetry until a run turns tracing on (`enable`, from
agenteval.tracing): with tracing off every hook is one test of a module global and returns None,
so a run without `--otel` does no span work. The hooks:

- `model_span(call, url, body, secrets)` in `Endpoints.send` (the one place every model request passes),
  for requests that carry a `ModelCall`: operation, provider (`gen_ai.provider.name`, e.g.
  `openai`, `anthropic`, `aws.bedrock`, `gcp.gemini`, `azure.ai.openai`) and model. The reply is
  read for response id and model, finish reasons and token usage in the shapes of the OpenAI,
  Anthropic, Bedrock Converse and Gemini APIs; a module for another API passes `read=` when its
  replies differ (a function of the decoded reply to a `Response`).
- `tool_span(name, call_id)` around each tool call of a loop (agenteval.agents.loop).
- `case_span(...)` around a case in the runner, so the spans above are children of the case's span,
  which the run's tracer makes with those ids when the result arrives (`finish_case`).

Message content (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions`,
tool arguments and results) is recorded only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
is `true` (or `span_only` / `span_and_event`), as the conventions' instrumentations do; the
secrets `Endpoints.send` redacts are `***` there too. Attribute names come from the
`opentelemetry-semantic-conventions` package (the `otel` extra).
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CONTENT_ON = ("true", "1", "yes", "span_only", "span_and_event")
CACHE_HIT = "agenteval.cache_hit"  # a reply replayed from the response cache: no request was sent
MAX_CONTENT_CHARS = 100_000  # a captured message list longer than this is cut (a backend refuses huge attributes)

_state: _Tracing | None = None  # set while a run traces; None: every hook returns None at once


@dataclass(slots=True)
class Response:
    """What a reply says about itself, in the conventions' terms (None: the reply does not say)."""

    id: str | None = None
    model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A request that is a model call: what `Endpoints.send(..., model_call=...)` needs for its span.
    `provider` is the conventions' `gen_ai.provider.name`; `operation` their `gen_ai.operation.name`
    (`chat`, `embeddings`, `generate_content`, `text_completion`)."""

    provider: str
    model: str | None
    operation: str = "chat"
    read: Callable[[Any], Response] | None = None  # a reply shape `read_response` does not know


class _Tracing:
    def __init__(self, tracer: Any, content: bool) -> None:
        from opentelemetry import context, trace
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
        from opentelemetry.semconv.attributes import error_attributes, server_attributes
        from opentelemetry.trace import SpanKind, Status, StatusCode

        self.tracer, self.content = tracer, content
        self.context, self.trace, self.gen_ai = context, trace, gen_ai
        self.error_type, self.server_address, self.server_port = (
            error_attributes.ERROR_TYPE, server_attributes.SERVER_ADDRESS, server_attributes.SERVER_PORT,
        )
        self.client, self.internal = SpanKind.CLIENT, SpanKind.INTERNAL
        self.status, self.error = Status, StatusCode.ERROR
        self.cases: dict[tuple[Any, ...], Any] = {}  # open case spans, until the run's tracer ends them
        self.lock = threading.Lock()


def enable(tracer: Any, content: bool | None = None) -> None:
    """Trace model and tool calls with `tracer` (an OpenTelemetry Tracer) from now on."""
    global _state
    _state = _Tracing(tracer, capture_content() if content is None else content)


def disable() -> None:
    global _state
    _state = None


def enabled() -> bool:
    return _state is not None


def capture_content() -> bool:
    """The conventions' opt-in to message content: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT."""
    return os.environ.get(CONTENT_VARIABLE, "").strip().lower() in _CONTENT_ON


# --- cases ---------------------------------------------------------------------------------------

def tracing_cases() -> bool:
    """Whether cases are being traced (each one's span made by `case_span`)."""
    return _state is not None


def case_span(key: tuple[Any, ...]) -> Any:
    """Make the case's span (ids chosen now, the span itself made by the run's tracer from the
    result, `finish_case`) the current parent in this thread: a token for `leave_case`, or None
    when not tracing."""
    state = _state
    if state is None:
        return None
    import random

    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    caller = state.trace.get_current_span().get_span_context()  # a span the caller is in (agenteval.monitor's call)
    parent = caller if caller.is_valid else None
    ids = SpanContext(parent.trace_id if parent else random.getrandbits(128) or 1, random.getrandbits(64) or 1, is_remote=False,
                      trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with state.lock:
        state.cases[key] = _Case(ids, parent)
    return state.context.attach(state.trace.set_span_in_context(NonRecordingSpan(ids)))


def leave_case(token: Any) -> None:
    state = _state
    if state is not None and token is not None:
        state.context.detach(token)


def finish_case(key: tuple[Any, ...]) -> _Case | None:
    """The ids and answer of the case `key` that ran here, or None (not traced, or run elsewhere)."""
    state = _state
    if state is None:
        return None
    with state.lock:
        return state.cases.pop(key, None)


class _Case:
    """A case's span ids, the span it runs in (None: it starts a trace), and the id of the last
    model reply its target got (what its verdicts evaluate)."""

    __slots__ = ("ids", "parent", "response_id")

    def __init__(self, ids: Any, parent: Any = None) -> None:
        self.ids, self.parent = ids, parent
        self.response_id: str | None = None


def _current_case(state: _Tracing) -> _Case | None:
    span_id = state.trace.get_current_span().get_span_context().span_id
    with state.lock:
        for case in state.cases.values():
            if case.ids.span_id == span_id:
                return case
    return None


# --- model calls ---------------------------------------------------------------------------------

Clean = Callable[[str], str]  # hides the request's secrets in a text (Endpoints.send's redaction)


def model_span(call: ModelCall | None, url: str, body: Any, secrets: Clean) -> _ModelSpan | None:
    """A started client span for the model request `call`, or None (not a model call, or not tracing).
    `secrets` hides the request's secrets in every text the span records."""
    state = _state
    if state is None or call is None:
        return None
    gen_ai = state.gen_ai
    model = _redact(call.model, secrets) if call.model else None
    attributes: dict[str, Any] = {gen_ai.GEN_AI_OPERATION_NAME: call.operation, gen_ai.GEN_AI_PROVIDER_NAME: call.provider}
    if model:
        attributes[gen_ai.GEN_AI_REQUEST_MODEL] = model
    host, port = _server(url)
    if host:
        attributes[state.server_address] = _redact(host, secrets)
    if port:
        attributes[state.server_port] = port
    if isinstance(body, dict):
        for key, name in (
            ("temperature", gen_ai.GEN_AI_REQUEST_TEMPERATURE), ("top_p", gen_ai.GEN_AI_REQUEST_TOP_P),
            ("max_tokens", gen_ai.GEN_AI_REQUEST_MAX_TOKENS), ("seed", gen_ai.GEN_AI_REQUEST_SEED),
        ):
            value = body.get(key)
            if type(value) in (int, float):
                attributes[name] = value
    if state.content and isinstance(body, dict):
        _request_content(state, attributes, body, secrets)
    name = f"{call.operation} {model}" if model else call.operation
    span = state.tracer.start_span(name, kind=state.client, attributes=attributes)
    return _ModelSpan(state, span, call, secrets)


class _ModelSpan:
    __slots__ = ("call", "secrets", "span", "state")

    def __init__(self, state: _Tracing, span: Any, call: ModelCall, secrets: Clean) -> None:
        self.state, self.span, self.call, self.secrets = state, span, call, secrets

    def reply(self, data: Any, cached: bool) -> None:
        """End the span with what the reply says (usage, finish reasons, response id and model)."""
        state, gen_ai = self.state, self.state.gen_ai
        try:
            found = (self.call.read or read_response)(data)
        except Exception:  # noqa: BLE001 - a reply the reader cannot follow still ends its span
            found = Response()
        attributes: dict[str, Any] = {CACHE_HIT: cached}
        for name, value in (
            (gen_ai.GEN_AI_RESPONSE_ID, found.id), (gen_ai.GEN_AI_RESPONSE_MODEL, found.model),
            (gen_ai.GEN_AI_USAGE_INPUT_TOKENS, found.input_tokens), (gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS, found.output_tokens),
            (gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, found.cache_read_tokens),
            (gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, found.cache_creation_tokens),
        ):
            if value is not None:
                attributes[name] = _redact(value, self.secrets) if isinstance(value, str) else value
        if found.finish_reasons:
            attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = found.finish_reasons
        if state.content:
            output = _output_messages(data)
            if output:
                attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES] = _content_text(output, self.secrets)
        self.span.set_attributes(attributes)
        if found.id and self.call.operation != "embeddings":
            case = _current_case(state)
            if case is not None:
                case.response_id = found.id
        self.span.end()

    def fail(self, message: str) -> None:
        """End the span as failed: `error.type` is the HTTP status, `timeout`, or `_OTHER`."""
        from opentelemetry.semconv.attributes.error_attributes import ErrorTypeValues

        status = re.search(r"\bHTTP (\d{3})\b", message)
        kind = status.group(1) if status else "timeout" if "timed out" in message else ErrorTypeValues.OTHER.value
        self.span.set_attribute(self.state.error_type, kind)
        self.span.set_status(self.state.status(self.state.error, _redact(message, self.secrets)))
        self.span.end()


def _server(url: str) -> tuple[str | None, int | None]:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80 if parts.scheme == "http" else None)
    except ValueError:
        return None, None
    return parts.hostname, port


def read_response(data: Any) -> Response:
    """Response id, model, finish reasons and tokens from a reply of the OpenAI (chat, embeddings),
    Anthropic Messages, Bedrock Converse or Gemini API: each key is read where one of them puts it."""
    found = Response()
    if not isinstance(data, dict):
        return found
    found.id = _text(data.get("id")) or _text(data.get("responseId"))
    found.model = _text(data.get("model")) or _text(data.get("modelVersion"))
    reasons = [choice.get("finish_reason") for choice in _dicts(data.get("choices"))]  # OpenAI
    reasons += [candidate.get("finishReason") for candidate in _dicts(data.get("candidates"))]  # Gemini
    reasons += [data.get("stop_reason"), data.get("stopReason")]  # Anthropic, Bedrock Converse
    found.finish_reasons = [reason for reason in reasons if isinstance(reason, str)]
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    gemini = data.get("usageMetadata") if isinstance(data.get("usageMetadata"), dict) else {}
    found.cache_read_tokens = _count(usage.get("cache_read_input_tokens"), usage.get("cacheReadInputTokens"),
                                     gemini.get("cachedContentTokenCount"))
    found.cache_creation_tokens = _count(usage.get("cache_creation_input_tokens"), usage.get("cacheWriteInputTokens"))
    anthropic = _count(usage.get("input_tokens"))
    if anthropic is not None:  # the Messages API counts cached prompt tokens apart; the conventions' input includes them
        anthropic += (found.cache_read_tokens or 0) + (found.cache_creation_tokens or 0)
    found.input_tokens = _count(usage.get("prompt_tokens"), anthropic, usage.get("inputTokens"), gemini.get("promptTokenCount"),
                                data.get("inputTextTokenCount"))  # the last: Bedrock's Titan embeddings
    found.output_tokens = _count(usage.get("completion_tokens"), usage.get("output_tokens"), usage.get("outputTokens"),
                                 gemini.get("candidatesTokenCount"))
    return found


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _count(*values: Any) -> int | None:
    """The first whole number >= 0 that an OTLP integer holds (a reply may say anything)."""
    for value in values:
        if type(value) is int and 0 <= value < 1 << 63:
            return value
    return None


# --- tools ---------------------------------------------------------------------------------------

def tool_span(name: str, call_id: str | None, arguments: Any = None) -> _ToolSpan | None:
    """A started `execute_tool` span for one tool call of a loop, or None when not tracing."""
    state = _state
    if state is None:
        return None
    gen_ai = state.gen_ai
    attributes: dict[str, Any] = {
        gen_ai.GEN_AI_OPERATION_NAME: gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value, gen_ai.GEN_AI_TOOL_NAME: name,
        gen_ai.GEN_AI_TOOL_TYPE: "function",
    }
    if call_id:
        attributes[gen_ai.GEN_AI_TOOL_CALL_ID] = call_id
    if state.content and arguments is not None:
        attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = _content_text(arguments, None)
    span = state.tracer.start_span(f"execute_tool {name}", kind=state.internal, attributes=attributes)
    return _ToolSpan(state, span)


class _ToolSpan:
    __slots__ = ("span", "state")

    def __init__(self, state: _Tracing, span: Any) -> None:
        self.state, self.span = state, span

    def done(self, value: Any, failed: bool) -> None:
        """End the span; a failed call gets `error.type` and an error status."""
        state = self.state
        if state.content:
            self.span.set_attribute(state.gen_ai.GEN_AI_TOOL_CALL_RESULT, _content_text(value, None))
        if failed:
            self.span.set_attribute(state.error_type, "tool_error")
            reason = value.get("error") if isinstance(value, dict) else None
            self.span.set_status(state.status(state.error, str(reason or "the tool failed")[:500]))
        self.span.end()


# --- content (opt-in) ----------------------------------------------------------------------------

def _request_content(state: _Tracing, attributes: dict[str, Any], body: dict[str, Any], secrets: Clean) -> None:
    gen_ai = state.gen_ai
    messages = body.get("messages")
    if isinstance(messages, list):
        system = [part for message in messages if isinstance(message, dict) and message.get("role") in ("system", "developer")
                  for part in _parts(message)]
        others = [message for message in messages if not (isinstance(message, dict) and message.get("role") in ("system", "developer"))]
        attributes[gen_ai.GEN_AI_INPUT_MESSAGES] = _content_text([_message(message) for message in others], secrets)
        if isinstance(body.get("system"), str):
            system.append({"type": "text", "content": body["system"]})
        if system:
            attributes[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS] = _content_text(system, secrets)
    elif "input" in body:  # embeddings
        attributes[gen_ai.GEN_AI_INPUT_MESSAGES] = _content_text(
            [{"role": "user", "parts": [{"type": "text", "content": text}]} for text in body["input"] if isinstance(text, str)]
            if isinstance(body["input"], list) else body["input"], secrets,
        )


def _message(message: Any) -> dict[str, Any]:
    """A chat message (OpenAI or Messages API shape) as the conventions' `{role, parts}`."""
    if not isinstance(message, dict):
        return {"role": "user", "parts": [{"type": "text", "content": str(message)}]}
    role = message.get("role") if isinstance(message.get("role"), str) else "user"
    parts = _parts(message)
    if role == "tool":
        parts = [{"type": "tool_call_response", "id": message.get("tool_call_id"), "response": message.get("content")}]
    return {"role": role, "parts": parts}


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text":
                parts.append({"type": "text", "content": block.get("text")})
            elif kind == "tool_use":
                parts.append({"type": "tool_call", "id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")})
            elif kind == "tool_result":
                parts.append({"type": "tool_call_response", "id": block.get("tool_use_id"), "response": block.get("content")})
            elif isinstance(block, str):
                parts.append({"type": "text", "content": block})
    for call in message.get("tool_calls") or [] if isinstance(message.get("tool_calls"), list) else []:
        function = call.get("function") if isinstance(call, dict) and isinstance(call.get("function"), dict) else {}
        parts.append({"type": "tool_call", "id": call.get("id") if isinstance(call, dict) else None,
                      "name": function.get("name"), "arguments": function.get("arguments")})
    return parts


def _output_messages(data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        return []
    choices = _dicts(data.get("choices"))
    if choices:
        return [{**_message(choice.get("message")), "finish_reason": choice.get("finish_reason")} for choice in choices]
    if isinstance(data.get("content"), list):  # the Messages API
        return [{"role": "assistant", "parts": _parts(data), "finish_reason": data.get("stop_reason")}]
    return []


def _content_text(value: Any, secrets: Clean | None) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = str(value)
    if len(text) > MAX_CONTENT_CHARS:
        text = text[:MAX_CONTENT_CHARS] + "..."
    return _redact(text, secrets)


def _redact(text: str, secrets: Clean | None) -> str:
    return secrets(text) if secrets is not None else text
