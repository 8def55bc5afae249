"""The Gemini API (`models/{model}:generateContent`, `:batchEmbedContents`), over `Endpoints.send`.

Spoken two ways: the Gemini Developer API with an API key (the `x-goog-api-key` header, read from
an environment variable when sending), or Vertex AI (`projects/P/locations/L/publishers/google/
models/M:...`) with an OAuth token from Google's default credentials (agenteval.endpoints.google_auth).
This module is the only place that knows the API's shapes and converts the canonical conversation
(OpenAI chat messages) both ways on every request: system messages become `systemInstruction`,
assistant turns become `model` turns with `functionCall` parts, tool messages become
`functionResponse` parts in a user turn, and a reply's parts come back as one canonical assistant
message. A function call's thought signature (which Gemini needs sent back with the call) is kept
where Google's OpenAI-compatible API keeps it: `extra_content.google.thought_signature` on the call.
Retries follow Google's codes through the shared client: 429 RESOURCE_EXHAUSTED, 500 INTERNAL,
503 UNAVAILABLE and 504 DEADLINE_EXCEEDED are retried; 400, 403 and 404 are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson

from agenteval.endpoints.chat import ChatReply
from agenteval.endpoints.client import EndpointError, Endpoints, Reply, excerpt, redact, redact_reply
from agenteval.endpoints.settings import ModelEndpoint
from agenteval.endpoints.messages_api import ConversionError, call_arguments
from agenteval.endpoints.spans import ModelCall, model_span
from agenteval.process import decode_json
from agenteval.usage import price_of, usage_record

PROVIDER = "gcp.gemini"  # gen_ai.provider.name of the Gemini Developer API's requests (agenteval.endpoints.spans)
VERTEX_PROVIDER = "gcp.vertex_ai"  # ... and of Vertex AI
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_KEY_ENV = "GEMINI_API_KEY"
API_VERSION = "v1beta"  # the Developer API's version this module speaks (function calls with ids, JSON schemas)
VERTEX_VERSION = "v1"
_SYSTEM_ROLES = ("system", "developer")
_BLOCKED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"}
_BROKEN_CALL = {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"}


@dataclass(frozen=True, slots=True)
class Vertex:
    """Where a Vertex AI request goes: the Google Cloud project and location (`global` or a region)."""

    project: str
    location: str


# --- request -----------------------------------------------------------------------------------

def generate_body(
    settings: ModelEndpoint, messages: list[Any], *, tools: list[Any] | None = None, tool_choice: Any = None,
    response_format: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The generateContent body for canonical `messages`: systemInstruction, contents, tools and
    toolConfig, generationConfig from the sampling options that are set (and `response_format`:
    JSON mode or a JSON schema), extra_body last (its `generationConfig` merged into ours).
    Raises ConversionError (a ValueError) naming what cannot be sent."""
    system, contents = to_contents(messages)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if tools:
        body["tools"] = [{"functionDeclarations": to_declarations(tools)}]
        if tool_choice is not None:
            body["toolConfig"] = {"functionCallingConfig": to_calling_config(tool_choice)}
    config: dict[str, Any] = {}
    for key, value in (
        ("temperature", settings.temperature), ("topP", settings.top_p), ("maxOutputTokens", settings.max_tokens),
        ("stopSequences", settings.stop), ("seed", settings.seed),
    ):
        if value is not None:
            config[key] = value
    config.update(structured_output(response_format))
    extra = dict(settings.extra_body)
    given = extra.pop("generationConfig", None)
    if isinstance(given, dict):
        config.update(given)
    if config:
        body["generationConfig"] = config
    body.update(extra)
    return body


def structured_output(response_format: dict[str, Any] | None) -> dict[str, Any]:
    """generationConfig keys for OpenAI's `response_format`: `json_object` -> responseMimeType
    application/json; `json_schema` -> that and `responseJsonSchema`; a mapping already in Gemini's
    shape (`responseMimeType`, `responseSchema`, `responseJsonSchema`) as it is."""
    if not response_format:
        return {}
    kind = response_format.get("type")
    if kind == "json_object":
        return {"responseMimeType": "application/json"}
    if kind == "json_schema":
        schema = response_format.get("json_schema")
        schema = schema.get("schema") if isinstance(schema, dict) and "schema" in schema else schema
        if not isinstance(schema, dict):
            raise ConversionError("response_format: json_schema needs `json_schema: {schema: {...}}`")
        return {"responseMimeType": "application/json", "responseJsonSchema": schema}
    if kind == "text":
        return {}
    native = {"responseMimeType", "responseSchema", "responseJsonSchema"}
    if kind is None and response_format.keys() <= native:
        return dict(response_format)
    raise ConversionError(
        f"response_format: {excerpt(str(response_format), 120)!r} is not text, json_object, json_schema "
        "or Gemini's responseMimeType/responseSchema/responseJsonSchema"
    )


def to_contents(messages: list[Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system instruction, contents) from canonical messages. System messages join the system
    instruction wherever they stand; consecutive turns of one role merge (the results of one turn's
    calls go back together); a tool message's function name comes from the call it answers."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool_call_id -> function name, from the assistant turns so far
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise ConversionError(f"{where} is not a mapping with a `role`")
        role = message.get("role")
        if role in _SYSTEM_ROLES:
            text = "".join(part["text"] for part in _parts(message.get("content"), where) if "text" in part)
            if text.strip():
                system.append(text)
            continue
        if role == "user":
            role, parts = "user", _parts(message.get("content"), where)
        elif role == "assistant":
            role, parts = "model", _model_parts(message, where, names)
        elif role == "tool":
            role, parts = "user", [_function_response(message, where, names)]
        else:
            raise ConversionError(f"{where}.role: {role!r} is not system, user, assistant or tool")
        if not parts:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["parts"].extend(parts)
        else:
            turns.append({"role": role, "parts": parts})
    return ("\n\n".join(system) or None), turns


def _parts(content: Any, where: str) -> list[dict[str, Any]]:
    """Parts of a message's content: a string, or OpenAI content parts (`text`, `image_url`)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    if not isinstance(content, list):
        raise ConversionError(f"{where}.content is neither text nor a list of content parts")
    parts = []
    for position, part in enumerate(content):
        here = f"{where}.content[{position}]"
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise ConversionError(f"{here} is not a content part with a `type`")
        if part["type"] == "text":
            if not isinstance(part.get("text"), str):
                raise ConversionError(f"{here} is a text part without `text`")
            if part["text"].strip():
                parts.append({"text": part["text"]})
        elif part["type"] == "image_url":
            parts.append(_image_part(part.get("image_url"), here))
        else:
            raise ConversionError(f"{here}: a {part['type']!r} part is not text or image_url")
    return parts


def _image_part(image: Any, where: str) -> dict[str, Any]:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url:
        raise ConversionError(f"{where} is an image_url part without a `url`")
    if url.startswith("data:") and ";base64," in url:
        mime_type, data = url[5:].split(";base64,", 1)
        return {"inlineData": {"mimeType": mime_type, "data": data}}
    return {"fileData": {"fileUri": url}}


def _model_parts(message: dict[str, Any], where: str, names: dict[str, str]) -> list[dict[str, Any]]:
    parts = _parts(message.get("content"), where)
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ConversionError(f"{where}.tool_calls is not a list")
    for position, call in enumerate(calls):
        here = f"{where}.tool_calls[{position}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
            raise ConversionError(f"{here} has no `function.name`")
        part: dict[str, Any] = {"functionCall": {"name": function["name"], "args": call_arguments(function.get("arguments"), here, "the Gemini API")}}
        call_id = call.get("id")
        if isinstance(call_id, str) and call_id:
            names[call_id] = function["name"]
            if not call_id.startswith("call_"):  # an id the API gave (ours are made up, and not sent)
                part["functionCall"]["id"] = call_id
        signature = ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")
        if isinstance(signature, str) and signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _function_response(message: dict[str, Any], where: str, names: dict[str, str]) -> dict[str, Any]:
    """A `tool` message as a `functionResponse` part: `{output: ...}` (the result, parsed when it is
    JSON), or `{error: ...}` for a call that failed (`is_error: true`), as Google's docs ask."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ConversionError(f"{where} is a tool message without `tool_call_id`")
    name = names.get(call_id) or message.get("name")
    if not isinstance(name, str) or not name:
        raise ConversionError(f"{where} answers call {call_id!r}, which no earlier assistant message made")
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if isinstance(content, str):
        try:
            content = decode_json(content.encode())
        except (ValueError, RecursionError):
            pass
    response: dict[str, Any] = {"name": name, "response": {"error" if message.get("is_error") is True else "output": content}}
    if not call_id.startswith("call_"):
        response["id"] = call_id
    return {"functionResponse": response}


def to_declarations(tools: list[Any]) -> list[dict[str, Any]]:
    """`functionDeclarations` from OpenAI's `{type: function, function: {...}}` or a bare `{name,
    description, parameters}`; parameters go as `parametersJsonSchema` (any JSON schema, not only
    the OpenAPI subset `parameters` takes). A declaration already in Gemini's shape passes as it is."""
    declarations = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise ConversionError(f"tools[{index}] is not a mapping")
        if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            tool = tool["function"]
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise ConversionError(f"tools[{index}] has no `name`")
        if "parametersJsonSchema" in tool or _openapi_schema(tool.get("parameters")):
            declarations.append(tool)  # Gemini's own shape (an OpenAPI `parameters` says `type: OBJECT`)
            continue
        entry: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description") is not None:
            entry["description"] = tool["description"]
        if tool.get("parameters"):
            entry["parametersJsonSchema"] = tool["parameters"]
        declarations.append(entry)
    return declarations


def _openapi_schema(parameters: Any) -> bool:
    return isinstance(parameters, dict) and isinstance(parameters.get("type"), str) and parameters["type"].isupper()


def to_calling_config(choice: Any) -> dict[str, Any]:
    """OpenAI's `auto`/`required`/`none`/`{type: function, function: {name}}` as Gemini's
    `functionCallingConfig` (`AUTO`, `ANY`, `NONE`, `ANY` with `allowedFunctionNames`)."""
    if isinstance(choice, str):
        modes = {"auto": "AUTO", "required": "ANY", "any": "ANY", "none": "NONE"}
        if choice.lower() in modes:
            return {"mode": modes[choice.lower()]}
    elif isinstance(choice, dict):
        function = choice.get("function")
        if choice.get("type") == "function" and isinstance(function, dict) and isinstance(function.get("name"), str):
            return {"mode": "ANY", "allowedFunctionNames": [function["name"]]}
        if isinstance(choice.get("mode"), str):
            return choice
    raise ConversionError(f"tool_choice: {excerpt(str(choice), 120)!r} is not auto, required (any), none or a function")


def embed_body(model: str, texts: list[str], extra: dict[str, Any]) -> dict[str, Any]:
    """The batchEmbedContents body: one request per text (extra_body's keys, e.g. taskType or
    outputDimensionality, go into each)."""
    name = "models/" + _model_id(model)
    return {"requests": [{"model": name, "content": {"parts": [{"text": text}]}, **extra} for text in texts]}


# --- transport ---------------------------------------------------------------------------------

def _model_id(model: str | None) -> str:
    model = (model or "").strip()
    return model.removeprefix("models/").removeprefix("publishers/google/models/")


def url(endpoints: Endpoints, settings: ModelEndpoint, method: str, vertex: Vertex | None = None) -> str:
    """The URL of `models/{model}:{method}`: `{base_url}/v1beta/models/...` with an API key (a
    base_url ending in a version is kept as it is), `{base_url}/v1/projects/P/locations/L/publishers/
    google/models/...` on Vertex AI."""
    base = endpoints.url(settings).rstrip("/")
    model = quote(_model_id(settings.model), safe="-._~@")
    if vertex is not None:
        if not base.endswith(("/v1", "/v1beta1")):
            base += "/" + VERTEX_VERSION
        project, location = quote(vertex.project, safe=""), quote(vertex.location, safe="")
        return f"{base}/projects/{project}/locations/{location}/publishers/google/models/{model}:{method}"
    if not base.endswith(("/v1", "/v1beta", "/v1alpha")):
        base += "/" + API_VERSION
    return f"{base}/models/{model}:{method}"


def vertex_base_url(location: str) -> str:
    """Vertex AI's host for a location: the global endpoint, or the region's own."""
    return "https://aiplatform.googleapis.com" if location == "global" else f"https://{location}-aiplatform.googleapis.com"


def transport(endpoints: Endpoints, settings: ModelEndpoint, vertex: Vertex | None = None) -> ModelEndpoint:
    """The settings as this API is sent. With a key: `x-goog-api-key: ${NAME}`, which the client
    reads when it sends (a reply the cache holds needs no key) and redacts as a secret. On Vertex
    AI: a Bearer token from Google's default credentials, made known to the client as a secret.
    Raises EndpointError for a key variable set but empty, or when no credentials are found."""
    given = {name.lower() for name in settings.headers}
    headers: dict[str, str] = {}
    if vertex is not None:
        if "authorization" not in given:
            from agenteval.endpoints.google_auth import access_token

            token = access_token(endpoints, settings.timeout)
            endpoints.hide(token)
            headers["Authorization"] = f"Bearer {token}"
    elif settings.api_key_env and "x-goog-api-key" not in given:
        name = settings.api_key_env
        try:
            key = endpoints.resolve("${" + name + "}")
        except EndpointError:
            key = None  # unset: a cached reply needs none; a request names the variable
        if key is not None and not key.strip():
            raise EndpointError(f"environment variable {name} is empty (api_key_env): set it to a Gemini API key")
        headers["x-goog-api-key"] = "${" + name + "}"
    return settings.model_copy(update={"api_key_env": None, "headers": {**headers, **settings.headers}})


def generate(
    endpoints: Endpoints, settings: ModelEndpoint, body: dict[str, Any], *, cache: bool, variant: int = 0,
    vertex: Vertex | None = None,
) -> ChatReply:
    """POST generateContent; the reply as one canonical assistant message. Raises EndpointError."""
    where = url(endpoints, settings, "generateContent", vertex)
    reply = _send(endpoints, settings, where, body, cache, variant, vertex, check_response, "generate_content")
    return parse_response(endpoints, settings, reply)


def embed(
    endpoints: Endpoints, settings: ModelEndpoint, texts: list[str], *, cache: bool, vertex: Vertex | None = None,
) -> tuple[list[list[float]], Reply]:
    """POST batchEmbedContents for `texts`; (their vectors in order, the reply). Raises EndpointError."""
    where = url(endpoints, settings, "batchEmbedContents", vertex)
    body = embed_body(settings.model or "", texts, dict(settings.extra_body))
    reply = _send(endpoints, settings, where, body, cache, 0, vertex, _embeddings_check(len(texts)), "embeddings")
    return [item["values"] for item in reply.data["embeddings"]], reply


def _send(
    endpoints: Endpoints, settings: ModelEndpoint, where: str, body: dict[str, Any], cache: bool, variant: int,
    vertex: Vertex | None, check: Any, operation: str,
) -> Reply:
    """One request through the run's client, a model call for tracing (`gcp.gemini`, or
    `gcp.vertex_ai`). On Vertex AI a reply the cache holds is taken before any token is asked for,
    so a re-run replays offline without credentials."""
    call = ModelCall(VERTEX_PROVIDER if vertex is not None else PROVIDER, settings.model, operation)
    if vertex is not None and cache and not endpoints.refresh:
        hit = endpoints.cached(where, {"method": "POST", "json": body, "params": None}, variant)
        if hit is not None and _usable(hit["data"], check):
            secrets = endpoints.secrets(settings)
            data = redact_reply(hit["data"], secrets)
            replayed = model_span(call, where, body, lambda text: redact(text, secrets))  # None unless --otel
            if replayed is not None:
                replayed.reply(data, cached=True)
            return Reply(hit["status"], data, hit["latency_ms"], cached=True)
    sending = transport(endpoints, settings, vertex)
    try:
        return endpoints.send(sending, "POST", where, body, cache=cache, variant=variant, check=check, model_call=call)
    except EndpointError as exc:
        if vertex is None and settings.api_key_env and f"variable {settings.api_key_env} is not set" in str(exc):
            raise EndpointError(f"environment variable {settings.api_key_env} is not set (api_key_env): set it to a Gemini API key, "
                                "or give `vertex: {project, location}` to use Google Cloud credentials") from None
        raise


def _usable(data: Any, check: Any) -> bool:
    try:
        check(data)
    except EndpointError:
        return False
    return True


# --- reply -------------------------------------------------------------------------------------

def check_response(data: Any) -> None:
    """EndpointError unless `data` is a generateContent response with a usable candidate: an error
    object sent with a 200, a prompt or reply blocked by a safety filter, a malformed function
    call, or a reply without usage counts is not an answer, and is never cached."""
    if not isinstance(data, dict):
        raise EndpointError(f"the reply is not a JSON object: {excerpt(str(data))!r}")
    if data.get("error") and not data.get("candidates"):
        raise EndpointError(f"the server answered with an error: {error_text(data['error'])!r}")
    candidates = data.get("candidates")
    if not candidates:
        blocked = (data.get("promptFeedback") or {}).get("blockReason") if isinstance(data.get("promptFeedback"), dict) else None
        if blocked:
            raise EndpointError(f"the prompt was blocked (promptFeedback.blockReason {blocked})")
        raise EndpointError(f"the reply has no candidates: {excerpt(str(data))!r}")
    if not isinstance(candidates, list):
        raise EndpointError(f"the reply's candidates are not a list: {excerpt(str(candidates))!r}")
    candidate = candidates[0]
    if not isinstance(candidate, dict):
        raise EndpointError(f"the reply's candidates[0] is not a candidate: {excerpt(str(candidate))!r}")
    reason = candidate.get("finishReason")
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if parts is not None and not isinstance(parts, list):
        raise EndpointError(f"the reply's content.parts is not a list: {excerpt(str(parts))!r}")
    if reason in _BROKEN_CALL:
        message = candidate.get("finishMessage")
        raise EndpointError(f"the model's function call could not be used (finishReason {reason})"
                            + (f": {excerpt(message, 200)!r}" if isinstance(message, str) else ""))
    if not parts and reason in _BLOCKED:
        raise EndpointError(f"the reply was blocked (finishReason {reason})")
    if reason == "MAX_TOKENS" and not any(isinstance(part, dict) and (part.get("text") and not part.get("thought") or "functionCall" in part)
                                          for part in parts or []):
        raise EndpointError("the reply was cut at max_tokens before it said anything (a thinking model's thoughts count "
                            "against it: raise `max_tokens`)")
    if parts is None and reason != "STOP" and reason != "MAX_TOKENS":
        raise EndpointError(f"the reply's candidates[0] has no content parts: {excerpt(str(candidate))!r}")
    for index, part in enumerate(parts or []):
        if not isinstance(part, dict):
            raise EndpointError(f"the reply's parts[{index}] is not a part: {excerpt(str(part))!r}")
        if "text" in part and not isinstance(part["text"], str):
            raise EndpointError(f"the reply's parts[{index}] has a text that is not a string")
        call = part.get("functionCall")
        if call is not None and not (isinstance(call, dict) and isinstance(call.get("name"), str) and call["name"]
                                     and isinstance(call.get("args", {}), dict)):
            raise EndpointError(f"the reply's parts[{index}] is a functionCall without a name and object args: {excerpt(str(call))!r}")
    usage = data.get("usageMetadata")  # a loop's budget counts on it: a reply without counts is not taken as free
    prompt = usage.get("promptTokenCount") if isinstance(usage, dict) else None
    others = [usage.get(key, 0) for key in ("candidatesTokenCount", "thoughtsTokenCount", "toolUsePromptTokenCount")] if isinstance(usage, dict) else []
    if not (type(prompt) is int and prompt >= 0 and all(type(count) is int and count >= 0 for count in others)):
        raise EndpointError("the reply's usageMetadata lacks promptTokenCount (and candidatesTokenCount) as whole numbers >= 0 "
                            f"(the Gemini API always sends them): {excerpt(str(usage))!r}")


def _embeddings_check(count: int) -> Any:
    def check(data: Any) -> None:
        items = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(items, list) or len(items) != count:
            found = len(items) if isinstance(items, list) else "no"
            raise EndpointError(f"the reply has {found} embeddings for {count} texts: {excerpt(str(data))!r}")
        for index, item in enumerate(items):
            values = item.get("values") if isinstance(item, dict) else None
            if not isinstance(values, list) or not values or not all(
                    type(value) in (int, float) and value == value and abs(value) != float("inf") for value in values):
                raise EndpointError(f"the reply's embeddings[{index}] has no list of finite numbers in `values`")
    return check


def error_text(error: Any) -> str:
    """`STATUS: message` of a Google error object (`{code, message, status}`)."""
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        status = error.get("status")
        return excerpt(f"{status}: {error['message']}" if isinstance(status, str) else error["message"])
    return excerpt(str(error))


def parse_response(endpoints: Endpoints, settings: ModelEndpoint, reply: Reply) -> ChatReply:
    """The canonical reply: the first candidate's text parts joined as `content` (thoughts left out;
    None when there is none), its `functionCall` parts as `tool_calls` (`[{id, name, arguments}]`,
    and in the message as OpenAI-shape calls with JSON-text arguments; `id` is the API's, or empty
    for the caller to name), usage with the cost from the suite's prices."""
    data = reply.data  # check_response made sure of its shape
    candidate = data["candidates"][0]
    parts = (candidate.get("content") or {}).get("parts") or []
    texts = [part["text"] for part in parts if isinstance(part.get("text"), str) and not part.get("thought")]
    content = "".join(texts) if texts else None
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls: list[dict[str, Any]] = []
    shaped: list[dict[str, Any]] = []
    for part in parts:
        call = part.get("functionCall")
        if not isinstance(call, dict):
            continue
        call_id = call.get("id") if isinstance(call.get("id"), str) else ""
        arguments = call.get("args") or {}
        calls.append({"id": call_id, "name": call["name"], "arguments": arguments})
        entry: dict[str, Any] = {"id": call_id, "type": "function", "function": {"name": call["name"], "arguments": orjson.dumps(arguments).decode()}}
        if isinstance(part.get("thoughtSignature"), str):
            entry["extra_content"] = {"google": {"thought_signature": part["thoughtSignature"]}}
        shaped.append(entry)
    if shaped:
        message["tool_calls"] = shaped
    model = data.get("modelVersion") if isinstance(data.get("modelVersion"), str) else settings.model
    record = usage_record(reply.latency_ms, _tokens(data.get("usageMetadata")), cached=reply.cached)
    cost = price_of(record, [settings.model, model], endpoints.prices)
    if cost is not None:
        record["cost_usd"] = cost
    return ChatReply(content, message, calls, model, record, reply)


def _tokens(usage: Any) -> dict[str, Any] | None:
    """usageMetadata as the OpenAI-style counts `usage_record` reads: input is the prompt (cached
    content included) and tool-use prompt tokens, output the candidates' and the thoughts' (both
    billed as output)."""
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("promptTokenCount", 0) + usage.get("toolUsePromptTokenCount", 0)
    completion = usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)
    total = usage.get("totalTokenCount")
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total if type(total) is int else None}
