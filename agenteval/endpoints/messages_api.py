"""The Messages API (Anthropic's `POST /v1/messages`), over `Endpoints.send`.

The rest of agenteval speaks one conversation format, OpenAI chat messages (the canonical shape:
`system`/`user`/`assistant`/`tool` messages, assistant `tool_calls` with JSON-text arguments).
This module is the only place that knows the Messages API's own shapes, and converts both ways on
every request: system messages become the top-level `system` string, assistant tool calls become
`tool_use` blocks, tool messages become `tool_result` blocks in a user turn, and a reply's blocks
come back as one canonical assistant message. Retries (429 and 529 "overloaded" included), the
rate limit, the response cache and the redaction of secrets are `Endpoints.send`'s, as for every
endpoint. Another API joins the same way: a wire module beside this one and a target on it.
"""

from __future__ import annotations

from typing import Any

import orjson

from agenteval.endpoints.chat import ChatReply
from agenteval.endpoints.client import EndpointError, Endpoints, Reply, excerpt
from agenteval.endpoints.settings import ModelEndpoint
from agenteval.endpoints.spans import ModelCall
from agenteval.process import decode_json
from agenteval.usage import price_of, usage_record

API_VERSION = "2023-06-01"  # the `anthropic-version` header: the version of the wire format this module speaks
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 1024  # the API requires `max_tokens`; OpenAI-compatible servers do not
PATH = "/v1/messages"
PROVIDER = "anthropic"  # gen_ai.provider.name of these requests (agenteval.endpoints.spans)
_SYSTEM_ROLES = ("system", "developer")  # `developer` is OpenAI's newer name for a system message


class ConversionError(ValueError):
    """A canonical message the Messages API cannot express; the message names where it is."""


# --- request -----------------------------------------------------------------------------------

def messages_body(
    settings: ModelEndpoint, messages: list[Any], *, tools: list[Any] | None = None, tool_choice: Any = None,
    response_format: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The request body for canonical `messages`: model, max_tokens (1024 unless set), system,
    messages, the sampling options that are set, tools and tool_choice, `output_config` for a
    `response_format`, extra_body last. Raises ConversionError (a ValueError) naming what cannot be sent."""
    if settings.seed is not None:
        raise ConversionError("`seed` is not part of the Messages API (remove it from this target or its endpoint)")
    system, converted = to_messages(messages)
    body: dict[str, Any] = {"model": settings.model, "max_tokens": settings.max_tokens or DEFAULT_MAX_TOKENS}
    if system:
        body["system"] = system
    body["messages"] = converted
    for key, value in (("temperature", settings.temperature), ("top_p", settings.top_p), ("stop_sequences", settings.stop)):
        if value is not None:
            body[key] = value
    if tools:
        body["tools"] = to_tools(tools)
        if tool_choice is not None:
            body["tool_choice"] = to_tool_choice(tool_choice)
    if response_format is not None:
        body["output_config"] = output_config(response_format)
    body.update(settings.extra_body)
    return body


# JSON-schema keywords the API's structured outputs refuse: their bounds move into the description, as Anthropic's SDK does.
_UNSUPPORTED_SCHEMA_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "maxItems")


def output_config(response_format: dict[str, Any]) -> dict[str, Any]:
    """`output_config` asking for a reply matching an OpenAI-shape `response_format`
    (`{"type": "json_schema", "json_schema": {"schema": ...}}`, what judges send). Raises ConversionError."""
    schema = response_format.get("json_schema", {}).get("schema") if isinstance(response_format.get("json_schema"), dict) else None
    if response_format.get("type") != "json_schema" or not isinstance(schema, dict):
        raise ConversionError("response_format: only a json_schema one can be sent as the Messages API's output_config")
    return {"format": {"type": "json_schema", "schema": _supported_schema(schema)}}


def _supported_schema(schema: Any) -> Any:
    """`schema` without the keywords structured outputs refuse (each told in its description instead)."""
    if isinstance(schema, list):
        return [_supported_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept = {key: _supported_schema(value) for key, value in schema.items() if key not in _UNSUPPORTED_SCHEMA_KEYS}
    if isinstance(schema.get("minItems"), int) and schema["minItems"] > 1:
        kept.pop("minItems")
    bounds = {key: schema[key] for key in (*_UNSUPPORTED_SCHEMA_KEYS, "minItems") if key in schema and key not in kept}
    if bounds:
        told = "{" + ", ".join(f"{key}: {value:g}" if isinstance(value, float) else f"{key}: {value}" for key, value in bounds.items()) + "}"
        kept["description"] = f"{schema['description']}\n\n{told}" if isinstance(schema.get("description"), str) else told
    if isinstance(schema.get("properties"), dict):
        kept["properties"] = {name: _supported_schema(value) for name, value in schema["properties"].items()}
    return kept


def to_messages(messages: list[Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system, messages) in the Messages API's shapes from canonical messages.

    Every system message (wherever it stands) joins the top-level `system` string; consecutive
    messages of one role merge into one turn (the API alternates user and assistant, and wants all
    the results of one assistant turn's tool calls in the next user turn); empty text is dropped (the
    API refuses empty text blocks). A lone text block is sent as a plain string."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise ConversionError(f"{where} is not a mapping with a `role`")
        role = message.get("role")
        if role in _SYSTEM_ROLES:
            text = "".join(block["text"] for block in _content_blocks(message.get("content"), where) if block.get("type") == "text")
            if text.strip():
                system.append(text)
            continue
        if role == "user":
            blocks = _content_blocks(message.get("content"), where)
        elif role == "assistant":
            blocks = _assistant_blocks(message, where)
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
    for turn in turns:
        only = turn["content"][0]
        if len(turn["content"]) == 1 and only.keys() == {"type", "text"} and only["type"] == "text":
            turn["content"] = only["text"]
    return ("\n\n".join(system) or None), turns


def _content_blocks(content: Any, where: str) -> list[dict[str, Any]]:
    """Blocks of a message's content: a string, or a list of OpenAI content parts (`text`,
    `image_url`) or Messages-API blocks (passed as they are: a suite may write them natively)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    if not isinstance(content, list):
        raise ConversionError(f"{where}.content is neither text nor a list of content parts")
    blocks = []
    for position, part in enumerate(content):
        if isinstance(part, str):
            part = {"type": "text", "text": part}
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise ConversionError(f"{where}.content[{position}] is not a content part with a `type`")
        if part["type"] == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise ConversionError(f"{where}.content[{position}] is a text part without `text`")
            if text.strip():
                blocks.append({**part, "text": text})
        elif part["type"] == "image_url":
            blocks.append(_image_block(part.get("image_url"), f"{where}.content[{position}]"))
        else:
            blocks.append(part)
    return blocks


def _image_block(image: Any, where: str) -> dict[str, Any]:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url:
        raise ConversionError(f"{where} is an image_url part without a `url`")
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _assistant_blocks(message: dict[str, Any], where: str) -> list[dict[str, Any]]:
    blocks = _content_blocks(message.get("content"), where)
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ConversionError(f"{where}.tool_calls is not a list")
    for position, call in enumerate(calls):
        here = f"{where}.tool_calls[{position}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ConversionError(f"{here} has no `function.name`")
        if not isinstance(call.get("id"), str) or not call["id"]:
            raise ConversionError(f"{here} has no `id` (a tool result names the call it answers by its id)")
        blocks.append({"type": "tool_use", "id": call["id"], "name": function["name"], "input": call_arguments(function.get("arguments"), here)})
    return blocks


def call_arguments(arguments: Any, where: str, api: str = "the Messages API") -> dict[str, Any]:
    """A call's arguments as the object the vendor's tool-use block must hold (`tool_use.input`,
    Converse's `toolUse.input`, Gemini's `functionCall.args`; canonical arguments are JSON text)."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = decode_json(arguments.encode())
        except (ValueError, RecursionError):
            raise ConversionError(f"{where}.function.arguments is not JSON: {excerpt(arguments, 120)!r}") from None
    if not isinstance(arguments, dict):
        raise ConversionError(f"{where}.function.arguments is not a JSON object ({api} takes an object)")
    return arguments


def _tool_result(message: dict[str, Any], where: str) -> dict[str, Any]:
    """A `tool` message as a `tool_result` block. `is_error: true` on the message (a tool that
    failed) is passed on, so the model is told the call failed, not only what it printed."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ConversionError(f"{where} is a tool message without `tool_call_id`")
    content = message.get("content")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    if isinstance(content, str):
        block["content"] = content
    elif isinstance(content, list):
        block["content"] = _content_blocks(content, where)
    elif content is not None:
        block["content"] = orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS).decode()
    if message.get("is_error") is True:
        block["is_error"] = True
    return block


def to_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """`{name, description, input_schema}` from OpenAI's `{type: function, function: {name,
    description, parameters}}` or a bare `{name, description, parameters}`; a tool already in the
    Messages API's shape (`input_schema`, or a `type` of the API's own, such as a server tool) is
    passed as it is."""
    converted = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise ConversionError(f"tools[{index}] is not a mapping")
        if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
            tool = tool["function"]
        elif "input_schema" in tool or ("type" in tool and tool.get("type") != "function"):
            converted.append(tool)
            continue
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise ConversionError(f"tools[{index}] has no `name`")
        entry: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description") is not None:
            entry["description"] = tool["description"]
        entry["input_schema"] = tool.get("parameters") or {"type": "object", "properties": {}}
        converted.append(entry)
    return converted


def to_tool_choice(choice: Any) -> dict[str, Any]:
    """OpenAI's `auto`/`required`/`none`/`{type: function, function: {name}}` as the Messages API's
    `{type: auto|any|none}`/`{type: tool, name}`; a choice already in that shape is passed as it is."""
    if isinstance(choice, str):
        kinds = {"auto": "auto", "required": "any", "any": "any", "none": "none"}
        if choice not in kinds:
            raise ConversionError(f"tool_choice: {choice!r} is not auto, required (any), none or a tool")
        return {"type": kinds[choice]}
    if isinstance(choice, dict):
        function = choice.get("function")
        if choice.get("type") == "function" and isinstance(function, dict) and isinstance(function.get("name"), str):
            return {"type": "tool", "name": function["name"]}
        if choice.get("type") in ("auto", "any", "tool", "none"):
            return choice
    raise ConversionError(f"tool_choice: {excerpt(str(choice), 120)!r} is not auto, required (any), none or a tool")


# --- transport ---------------------------------------------------------------------------------

def url(endpoints: Endpoints, settings: ModelEndpoint) -> str:
    """`{base_url}/v1/messages`; a base_url that already ends in `/v1` gets `/messages` only."""
    base = endpoints.url(settings).rstrip("/")
    return base + ("/messages" if base.endswith("/v1") else PATH)


def transport(endpoints: Endpoints, settings: ModelEndpoint) -> ModelEndpoint:
    """The settings as this API is sent: the key in `x-api-key` (not a Bearer token) and the
    `anthropic-version` header, unless `headers:` give their own. The key goes in as `${NAME}`, so
    the client reads it when sending and counts it among the secrets it redacts. Raises
    EndpointError when the key's variable is unset or empty."""
    given = {name.lower() for name in settings.headers}
    headers: dict[str, str] = {}
    if "anthropic-version" not in given:
        headers["anthropic-version"] = API_VERSION
    name = settings.api_key_env
    if name and "x-api-key" not in given:
        try:
            key = endpoints.resolve("${" + name + "}")
        except EndpointError:
            key = ""
        if not key.strip():
            raise EndpointError(f"environment variable {name} is not set (api_key_env)")
        headers["x-api-key"] = "${" + name + "}"
    return settings.model_copy(update={"api_key_env": None, "headers": {**headers, **settings.headers}})


def create(endpoints: Endpoints, settings: ModelEndpoint, body: dict[str, Any], *, cache: bool, variant: int = 0) -> ChatReply:
    """POST the body; the reply as one canonical assistant message. Raises EndpointError."""
    reply = endpoints.send(
        transport(endpoints, settings), "POST", url(endpoints, settings), body, cache=cache, variant=variant, check=check_message,
        model_call=ModelCall(PROVIDER, body.get("model") if isinstance(body.get("model"), str) else settings.model),
    )
    return parse_message(endpoints, settings, reply)


# --- reply -------------------------------------------------------------------------------------

def check_message(data: Any) -> None:
    """EndpointError unless `data` is a message with content blocks: an error object sent with a
    200 (`{"type": "error", "error": {...}}`), a malformed block, a `tool_use` cut at max_tokens, or a
    reply without usage counts is not an answer, and is never cached."""
    if isinstance(data, dict) and (data.get("type") == "error" or data.get("error")) and not isinstance(data.get("content"), list):
        raise EndpointError(f"the server answered with an error: {_error_text(data.get('error'))!r}")
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, list):
        raise EndpointError(f"the reply has no content blocks: {excerpt(str(data))!r}")
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and not isinstance(block.get("text"), str):
            raise EndpointError(f"the reply's content[{index}] is a text block without text")
        if kind == "tool_use" and not (
            isinstance(block.get("id"), str) and isinstance(block.get("name"), str) and isinstance(block.get("input"), dict)
        ):
            raise EndpointError(f"the reply's content[{index}] is a tool_use block without id, name and input: {excerpt(str(block))!r}")
        if not isinstance(kind, str):
            raise EndpointError(f"the reply's content[{index}] is not a content block: {excerpt(str(block))!r}")
    if data.get("stop_reason") == "max_tokens" and content and isinstance(content[-1], dict) and content[-1].get("type") == "tool_use":
        raise EndpointError("the reply was cut at max_tokens in the middle of a tool_use block, so its input is incomplete "
                            "(raise `max_tokens`)")
    usage = data.get("usage")  # a loop's budget counts on it: a reply without counts is not taken as free
    counts = [usage.get(key) for key in ("input_tokens", "output_tokens")] if isinstance(usage, dict) else []
    if not counts or not all(type(count) is int and count >= 0 for count in counts):
        raise EndpointError("the reply's usage lacks input_tokens and output_tokens as whole numbers >= 0 "
                            f"(the Messages API always sends them): {excerpt(str(usage))!r}")


def _error_text(error: Any) -> str:
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        kind = error.get("type")
        return excerpt(f"{kind}: {error['message']}" if isinstance(kind, str) else error["message"])
    return excerpt(str(error))


def parse_message(endpoints: Endpoints, settings: ModelEndpoint, reply: Reply) -> ChatReply:
    """The canonical reply: text blocks joined as `content` (None when there is none), `tool_use`
    blocks as `tool_calls` (`[{id, name, arguments}]`, and in the message as OpenAI-shape calls with
    JSON-text arguments), usage with the cost from the suite's prices. Other blocks (thinking,
    server tools) are not part of the canonical conversation."""
    data = reply.data  # check_message made sure of its shape
    texts = [block["text"] for block in data["content"] if block.get("type") == "text"]
    uses = [block for block in data["content"] if block.get("type") == "tool_use"]
    content = "".join(texts) if texts else None
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if uses:
        message["tool_calls"] = [
            {"id": use["id"], "type": "function", "function": {"name": use["name"], "arguments": orjson.dumps(use["input"]).decode()}}
            for use in uses
        ]
    calls = [{"id": use["id"], "name": use["name"], "arguments": use["input"]} for use in uses]
    model = data.get("model") if isinstance(data.get("model"), str) else settings.model
    record = usage_record(reply.latency_ms, _tokens(data.get("usage")), cached=reply.cached)
    cost = price_of(record, [settings.model, model], endpoints.prices)
    if cost is not None:
        record["cost_usd"] = cost
    return ChatReply(content, message, calls, model, record, reply)


def _tokens(usage: Any) -> dict[str, Any] | None:
    """The API's usage as the OpenAI-style counts `usage_record` reads. Input tokens include those
    written to and read from the prompt cache (the API counts them apart from `input_tokens`)."""
    if not isinstance(usage, dict):
        return None
    parts = [usage.get(key) for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    counted = [part for part in parts if type(part) is int and part >= 0]
    return {"prompt_tokens": sum(counted) if type(parts[0]) is int else None, "completion_tokens": usage.get("output_tokens")}
