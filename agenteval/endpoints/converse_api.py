"""Amazon Bedrock's Converse API (`POST /model/{modelId}/converse`) and InvokeModel embeddings,
over `Endpoints.send`.

Like agenteval.endpoints.messages_api, this is the only place that knows the API's own shapes and
converts both ways on every request: system messages become `system` blocks, assistant tool calls
`toolUse` blocks, tool messages `toolResult` blocks in a user turn, and a reply's content comes back
as one canonical (OpenAI chat) assistant message. Requests are signed with AWS SigV4 by botocore
(credentials from its standard chain: environment, profile, role), afresh for each attempt; which
errors are retried is botocore's standard rule over the service's own model (throttling, 5xx,
ModelNotReadyException; never ValidationException or AccessDeniedException). botocore is imported
only when a request is sent or an error is judged (the `bedrock` extra).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import orjson

from agenteval.endpoints.chat import ChatReply
from agenteval.endpoints.client import EndpointError, Endpoints, Reply, excerpt
from agenteval.endpoints.spans import ModelCall
from agenteval.endpoints.messages_api import ConversionError, call_arguments
from agenteval.endpoints.settings import ModelEndpoint
from agenteval.process import decode_json
from agenteval.usage import price_of, usage_record

PROVIDER = "aws.bedrock"  # gen_ai.provider.name of this API's requests (agenteval.endpoints.spans)
SERVICE = "bedrock"  # the SigV4 signing name of bedrock-runtime
# Geography prefixes of cross-region inference profiles (`us.anthropic.claude-...`): a price may be
# given for the model without one.
PROFILE_PREFIXES = ("us.", "eu.", "apac.", "us-gov.", "global.", "jp.", "au.", "ca.")
MISSING_CREDENTIALS = (
    "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), "
    "or AWS_PROFILE, or run where a role provides them"
)
_SYSTEM_ROLES = ("system", "developer")
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_NATIVE_BLOCKS = ("text", "image", "document", "video", "toolUse", "toolResult", "guardContent", "cachePoint", "reasoningContent")


# --- where requests go -------------------------------------------------------------------------

def region_of(model_id: str, region: str | None, environ: Mapping[str, str]) -> str:
    """`region:`, else the region of an ARN model id, else AWS_REGION / AWS_DEFAULT_REGION. Raises EndpointError."""
    if region:
        return region
    if model_id.startswith("arn:"):
        parts = model_id.split(":")
        if len(parts) > 3 and parts[3]:
            return parts[3]
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if environ.get(name):
            return environ[name]
    raise EndpointError("no AWS region: set `region:` on the target, or AWS_REGION")


def runtime_url(region: str) -> str:
    return f"https://bedrock-runtime.{region}.amazonaws.com"


def endpoint_override(environ: Mapping[str, str]) -> str | None:
    """The endpoint AWS's own tools would use instead of the regional one: AWS_ENDPOINT_URL_BEDROCK_RUNTIME, else AWS_ENDPOINT_URL."""
    for name in ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"):
        if (environ.get(name) or "").strip():
            return environ[name].strip()
    return None


def model_url(base: str, model_id: str, action: str) -> str:
    """`{base}/model/{modelId}/{action}`, the id percent-encoded whole (an ARN holds `:` and `/`)."""
    return f"{base.rstrip('/')}/model/{quote(model_id, safe='')}/{action}"


def price_names(model_id: str) -> list[str]:
    """The names a price may be given under: the id (or ARN), its last ARN segment, and that without
    a cross-region inference profile's geography prefix."""
    names = [model_id]
    tail = model_id.rsplit("/", 1)[-1] if model_id.startswith("arn:") else model_id
    names.append(tail)
    for prefix in PROFILE_PREFIXES:
        if tail.startswith(prefix):
            names.append(tail[len(prefix):])
            break
    return list(dict.fromkeys(names))


# --- credentials and signing -------------------------------------------------------------------

class SigV4:
    """Signs each attempt with botocore's SigV4Auth. Credentials come from botocore's standard chain
    (the run's environment first), read on the first request sent: a replay from the cache needs none."""

    def __init__(self, region: str, environ: Mapping[str, str] | None) -> None:
        self.region = region
        self._environ = os.environ if environ is None else environ
        self._lock = threading.Lock()
        self._credentials: Any = None
        self._read: list[str] = []

    def headers(self, method: str, url: str, content: bytes) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        frozen = self._frozen()
        request = AWSRequest(method=method, url=url, data=content, headers={"Content-Type": "application/json"})
        SigV4Auth(frozen, SERVICE, self.region).add_auth(request)
        return {name: value for name, value in request.headers.items() if name.lower() != "content-type"}

    def secrets(self) -> list[str]:
        return list(self._read)

    def _frozen(self) -> Any:
        with self._lock:
            if self._credentials is None:
                self._credentials = credentials(self._environ)
            try:
                frozen = self._credentials.get_frozen_credentials()  # a role's credentials are refreshed here
            except Exception as exc:  # noqa: BLE001 - botocore raises many kinds while refreshing
                raise EndpointError(f"the AWS credentials could not be refreshed: {type(exc).__name__}") from None
            self._read = [value for value in (frozen.secret_key, frozen.token, frozen.access_key) if value]
            return frozen


def credentials(environ: Mapping[str, str]) -> Any:
    """botocore's credentials from its standard chain, the run's environment (with a suite's
    `env_file:`) read first. Raises EndpointError naming what to set when there are none."""
    import botocore.credentials
    import botocore.exceptions
    import botocore.session

    try:
        session = botocore.session.Session()
        if environ.get("AWS_PROFILE"):
            session.set_config_variable("profile", environ["AWS_PROFILE"])
        resolver = botocore.credentials.create_credential_resolver(session)
        resolver.providers.insert(0, botocore.credentials.EnvProvider(environ=dict(environ)))
        found = resolver.load_credentials()
    except botocore.exceptions.BotoCoreError as exc:
        raise EndpointError(f"the AWS credentials could not be read: {exc}") from None
    if found is None:
        raise EndpointError(MISSING_CREDENTIALS)
    return found


def retryable(status: int, content: bytes, headers: Mapping[str, str]) -> bool:
    """botocore's standard retry rule over bedrock-runtime's model: throttling (429, and
    ThrottlingException however sent), 500/502/503/504, and errors the model marks retryable
    (ModelNotReadyException); never ValidationException, AccessDeniedException and the like."""
    from botocore.awsrequest import AWSResponse
    from botocore.retries.standard import RetryContext

    code = error_code(content, headers)
    operation, conditions = _retry_rule()
    context = RetryContext(
        attempt_number=1, operation_model=operation, parsed_response={"Error": {"Code": code}} if code else {},
        http_response=AWSResponse("", status, {}, None),
    )
    return bool(conditions.is_retryable(context))


@functools.lru_cache(maxsize=1)
def _retry_rule() -> tuple[Any, Any]:
    """bedrock-runtime's Converse operation model (its errors and their traits) and botocore's standard conditions."""
    import botocore.session
    from botocore.retries.standard import StandardRetryConditions

    operation = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse")
    return operation, StandardRetryConditions(max_attempts=1 << 30)  # how many attempts is `retries:`'s to say


def error_code(content: bytes, headers: Mapping[str, str]) -> str | None:
    """The error's code as botocore's rest-json parser reads it: the `x-amzn-ErrorType` header, else the body's `__type` or `code`."""
    header = headers.get("x-amzn-errortype") or headers.get("x-amzn-ErrorType")
    if header:
        return header.split(":", 1)[0]
    try:
        data = decode_json(content)
    except (ValueError, RecursionError):
        return None
    code = data.get("__type") or data.get("code") if isinstance(data, dict) else None
    return code.rsplit("#", 1)[-1] if isinstance(code, str) else None


# --- request -----------------------------------------------------------------------------------

def converse_body(settings: ModelEndpoint, messages: list[Any], *, tools: list[Any] | None = None, tool_choice: Any = None) -> dict[str, Any]:
    """The Converse request body (the model id goes in the path): system, messages, inferenceConfig,
    toolConfig, extra_body last (e.g. `additionalModelRequestFields`). Raises ConversionError."""
    if settings.seed is not None:
        raise ConversionError("`seed` is not part of the Converse API (remove it from this target)")
    system, converted = to_converse(messages)
    body: dict[str, Any] = {"messages": converted}
    if system:
        body["system"] = system
    config = {
        key: value for key, value in (
            ("maxTokens", settings.max_tokens), ("temperature", settings.temperature), ("topP", settings.top_p),
            ("stopSequences", settings.stop),
        ) if value is not None
    }
    if config:
        body["inferenceConfig"] = config
    if tools:
        body["toolConfig"] = {"tools": to_tools(tools)}
        if tool_choice is not None:
            choice = to_tool_choice(tool_choice)
            if choice is None:
                del body["toolConfig"]  # `none`: the Converse API has no such choice; the model is offered no tools
            else:
                body["toolConfig"]["toolChoice"] = choice
    body.update(settings.extra_body)
    return body


def to_converse(messages: list[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) in the Converse shapes from canonical messages: consecutive turns of
    one role merge (the API alternates user and assistant), blank text is dropped (the API refuses it)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise ConversionError(f"{where} is not a mapping with a `role`")
        role = message.get("role")
        if role in _SYSTEM_ROLES:
            system.extend(block for block in _blocks(message.get("content"), where) if "text" in block)
            continue
        if role == "user":
            blocks = _blocks(message.get("content"), where)
        elif role == "assistant":
            blocks = _blocks(message.get("content"), where) + _tool_uses(message, where)
        elif role == "tool":
            role, blocks = "user", [_tool_result(message, where)]
        else:
            raise ConversionError(f"{where}.role: {role!r} is not system, user, assistant or tool")
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return system, turns


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    """Converse content blocks of a message's content: text, OpenAI content parts, or Converse blocks as written."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    if not isinstance(content, list):
        raise ConversionError(f"{where}.content is neither text nor a list of content parts")
    blocks = []
    for position, part in enumerate(content):
        here = f"{where}.content[{position}]"
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        if not isinstance(part, dict):
            raise ConversionError(f"{here} is not a content part")
        kind = part.get("type")
        if kind == "text":
            if not isinstance(part.get("text"), str):
                raise ConversionError(f"{here} is a text part without `text`")
            if part["text"].strip():
                blocks.append({"text": part["text"]})
        elif kind == "image_url":
            blocks.append(_image(part.get("image_url"), here))
        elif kind is None and len(part) == 1 and next(iter(part)) in _NATIVE_BLOCKS:
            blocks.append(part)  # a Converse block written natively
        else:
            raise ConversionError(f"{here} is a {kind!r} part, which the Converse API cannot take")
    return blocks


def _image(image: Any, where: str) -> dict[str, Any]:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        raise ConversionError(f"{where}: the Converse API takes images as data: URLs (base64), not links")
    media_type, data = url[5:].split(";base64,", 1)
    if media_type not in _IMAGE_FORMATS:
        raise ConversionError(f"{where}: an image of type {media_type!r} (the Converse API takes png, jpeg, gif and webp)")
    return {"image": {"format": _IMAGE_FORMATS[media_type], "source": {"bytes": data}}}


def _tool_uses(message: dict[str, Any], where: str) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ConversionError(f"{where}.tool_calls is not a list")
    uses = []
    for position, call in enumerate(calls):
        here = f"{where}.tool_calls[{position}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ConversionError(f"{here} has no `function.name`")
        if not isinstance(call.get("id"), str) or not call["id"]:
            raise ConversionError(f"{here} has no `id` (a tool result names the call it answers by its id)")
        uses.append({"toolUse": {"toolUseId": call["id"], "name": function["name"], "input": call_arguments(function.get("arguments"), here, "the Converse API")}})
    return uses


def _tool_result(message: dict[str, Any], where: str) -> dict[str, Any]:
    """A `tool` message as a `toolResult` block; `is_error: true` is sent as `status: error`."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ConversionError(f"{where} is a tool message without `tool_call_id`")
    content = message.get("content")
    if isinstance(content, str):
        parts = [{"text": content}]
    elif isinstance(content, list):
        parts = _blocks(content, where) or [{"text": ""}]
    elif content is None:
        parts = [{"text": ""}]
    else:
        parts = [{"text": orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS).decode()}]
    result: dict[str, Any] = {"toolUseId": call_id, "content": parts}
    if message.get("is_error") is True:
        result["status"] = "error"
    return {"toolResult": result}


def to_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """`{toolSpec: {name, description, inputSchema: {json}}}` from the OpenAI or bare shape; a tool
    already in the Converse shape (`toolSpec`) is passed as it is."""
    converted = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise ConversionError(f"tools[{index}] is not a mapping")
        if "toolSpec" in tool or "cachePoint" in tool:
            converted.append(tool)
            continue
        if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            tool = tool["function"]
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise ConversionError(f"tools[{index}] has no `name`")
        spec: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            spec["description"] = tool["description"]
        spec["inputSchema"] = {"json": tool.get("parameters") or tool.get("input_schema") or {"type": "object", "properties": {}}}
        converted.append({"toolSpec": spec})
    return converted


def to_tool_choice(choice: Any) -> dict[str, Any] | None:
    """auto / required (any) / `{type: function, function: {name}}` as `{auto: {}}` / `{any: {}}` /
    `{tool: {name}}`; `none` is None (offer no tools). A choice in the Converse shape is passed as is."""
    if isinstance(choice, str):
        kinds: dict[str, dict[str, Any] | None] = {"auto": {"auto": {}}, "required": {"any": {}}, "any": {"any": {}}, "none": None}
        if choice not in kinds:
            raise ConversionError(f"tool_choice: {choice!r} is not auto, required (any), none or a tool")
        return kinds[choice]
    if isinstance(choice, dict):
        function = choice.get("function")
        if choice.get("type") == "function" and isinstance(function, dict) and isinstance(function.get("name"), str):
            return {"tool": {"name": function["name"]}}
        if len(choice) == 1 and next(iter(choice)) in ("auto", "any", "tool"):
            return choice
    raise ConversionError(f"tool_choice: {excerpt(str(choice), 120)!r} is not auto, required (any), none or a tool")


# --- transport ---------------------------------------------------------------------------------

def converse(
    endpoints: Endpoints, settings: ModelEndpoint, url: str, auth: Any, body: dict[str, Any], *, cache: bool, variant: int = 0,
    cache_as: str | None = None,
) -> ChatReply:
    """POST the body to `url` (model_url(..., "converse")), signed by `auth` (None: `api_key_env`'s
    Bearer key); the reply as one canonical assistant message. `cache_as`: the regional URL the cache
    knows the request by, whichever endpoint (a VPC one, AWS_ENDPOINT_URL_BEDROCK_RUNTIME) it went
    to. Raises EndpointError."""
    reply = endpoints.send(
        settings, "POST", url, body, cache=cache, variant=variant, check=check_converse, auth=auth, retryable=retryable,
        cache_as=cache_as, model_call=ModelCall(PROVIDER, settings.model),
    )
    return parse_converse(endpoints, settings, reply)


def check_converse(data: Any) -> None:
    """EndpointError unless `data` is a Converse reply with a message and token counts; such a reply is never cached."""
    message = data.get("output", {}).get("message") if isinstance(data, dict) and isinstance(data.get("output"), dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        if isinstance(data, dict) and isinstance(data.get("message"), str):
            raise EndpointError(f"the server answered with an error: {excerpt(data['message'])!r}")
        raise EndpointError(f"the reply has no output.message.content: {excerpt(str(data))!r}")
    for index, block in enumerate(message["content"]):
        if not isinstance(block, dict):
            raise EndpointError(f"the reply's content[{index}] is not a content block: {excerpt(str(block))!r}")
        if "text" in block and not isinstance(block["text"], str):
            raise EndpointError(f"the reply's content[{index}] is a text block without text")
        use = block.get("toolUse")
        if use is not None and not (
            isinstance(use, dict) and isinstance(use.get("toolUseId"), str) and isinstance(use.get("name"), str) and isinstance(use.get("input"), dict)
        ):
            raise EndpointError(f"the reply's content[{index}] is a toolUse block without toolUseId, name and input: {excerpt(str(block))!r}")
    if data.get("stopReason") == "max_tokens" and message["content"] and "toolUse" in message["content"][-1]:
        raise EndpointError("the reply was cut at maxTokens in the middle of a toolUse block, so its input is incomplete (raise `max_tokens`)")
    usage = data.get("usage")
    counts = [usage.get(key) for key in ("inputTokens", "outputTokens")] if isinstance(usage, dict) else []
    if not counts or not all(type(count) is int and count >= 0 for count in counts):
        raise EndpointError(f"the reply's usage lacks inputTokens and outputTokens as whole numbers >= 0: {excerpt(str(usage))!r}")


def parse_converse(endpoints: Endpoints, settings: ModelEndpoint, reply: Reply) -> ChatReply:
    """The canonical reply: text blocks joined as `content`, `toolUse` blocks as `tool_calls`, usage
    with the cost from the suite's prices (by model id, or without its inference profile's prefix)."""
    data = reply.data
    blocks = data["output"]["message"]["content"]
    texts = [block["text"] for block in blocks if isinstance(block.get("text"), str)]
    uses = [block["toolUse"] for block in blocks if isinstance(block.get("toolUse"), dict)]
    content = "".join(texts) if texts else None
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if uses:
        message["tool_calls"] = [
            {"id": use["toolUseId"], "type": "function", "function": {"name": use["name"], "arguments": orjson.dumps(use["input"]).decode()}}
            for use in uses
        ]
    calls = [{"id": use["toolUseId"], "name": use["name"], "arguments": use["input"]} for use in uses]
    usage = data["usage"]
    record = usage_record(reply.latency_ms, {"prompt_tokens": usage["inputTokens"], "completion_tokens": usage["outputTokens"]}, cached=reply.cached)
    model = settings.model or ""
    cost = price_of(record, price_names(model), endpoints.prices)
    if cost is not None:
        record["cost_usd"] = cost
    return ChatReply(content, message, calls, model, record, reply)


# --- embeddings (InvokeModel) ------------------------------------------------------------------

def embedding_body(model_id: str, texts: list[str]) -> dict[str, Any]:
    """InvokeModel's body for an embedding model: Cohere's takes every text at once, Titan's one."""
    if "cohere.embed" in model_id:
        return {"texts": texts, "input_type": "search_document"}
    if "titan-embed" in model_id:
        if len(texts) != 1:
            raise EndpointError("a Titan embeddings request takes one text")
        return {"inputText": texts[0]}
    raise EndpointError(f"embeddings: {model_id!r} is neither an Amazon Titan nor a Cohere embedding model on Bedrock")


def embed(
    endpoints: Endpoints, settings: ModelEndpoint, base: str, auth: Any, texts: list[str], region: str,
) -> tuple[list[list[float]], dict[str, Any]]:
    """One vector per text from InvokeModel (each Titan text its own request; Cohere all at once), and
    the usage record. Cached by request, so a re-run sends nothing. Raises EndpointError."""
    from agenteval.endpoints.chat import _embedding_list

    model_id = settings.model or ""
    url = model_url(base, model_id, "invoke")
    batches = [texts] if "cohere.embed" in model_id else [[text] for text in texts]
    vectors: list[list[float]] = []
    latency, tokens, cached = 0.0, 0, True
    for batch in batches:
        reply = endpoints.send(
            settings, "POST", url, embedding_body(model_id, batch), cache=True, auth=auth, retryable=retryable,
            cache_as=model_url(runtime_url(region), model_id, "invoke"), model_call=ModelCall(PROVIDER, model_id, "embeddings"),
        )
        data = reply.data
        found = data.get("embeddings") if isinstance(data, dict) and "embeddings" in data else [data.get("embedding") if isinstance(data, dict) else None]
        if isinstance(found, dict):  # Cohere's embedding_types form: {"float": [...]}
            found = found.get("float")
        if not isinstance(found, list):
            raise EndpointError(f"the embeddings reply has no embedding: {excerpt(str(data))!r}")
        vectors.extend(_embedding_list({"data": [{"embedding": vector, "index": i} for i, vector in enumerate(found)]}, len(batch)))
        latency += reply.latency_ms
        cached = cached and reply.cached
        count = data.get("inputTextTokenCount") if isinstance(data, dict) else None
        tokens += count if type(count) is int and count >= 0 else 0
    return vectors, usage_record(latency, {"prompt_tokens": tokens or None, "completion_tokens": 0}, cached=cached)
