"""Read the tool calls (and their results) out of an agent's trajectory, whatever shape it was recorded in.

One reader per shape, chosen per item by `shape_of`, freely mixed in one list:
- `openai_chat`: chat messages, assistant `tool_calls` with `function.name`/`function.arguments`
  (a JSON string or an object; also the older `function_call`), `tool` messages with the results;
  a whole chat completion (`choices[].message`) too;
- `anthropic`: `tool_use` content blocks (in a message or alone), `tool_result` blocks;
- `vercel_ai`: Vercel AI SDK `tool-call` / `tool-result` parts (`toolName`, `args` or `input`,
  `result` or `output`), UI message parts `tool-<name>`, and a step's `toolCalls`/`toolResults`;
- `gemini`: `functionCall` / `functionResponse` parts (camelCase or snake_case), in a content
  (`role`, `parts`), a response's `candidates`, or alone;
- `openai_responses`: Responses API `function_call` / `function_call_output` items, or a whole
  response (`output`);
- `langchain`: LangChain / LangGraph messages (`type: ai` with `tool_calls[].args`, `type: tool`),
  also as `messages_to_dict` (`{type, data}`) or `dumpd` (`{lc, kwargs}`) gives them;
- `otel`: OpenTelemetry GenAI spans (`gen_ai.tool.name`, arguments and result in
  `gen_ai.tool.call.arguments` / `gen_ai.tool.call.result`, on the span or its events), as the
  SDK's `span.to_json()` or OTLP JSON (`resourceSpans`) writes them;
- `plain`: `{name, arguments, result?}`.
Items without calls (user text, system prompts) are passed over. Nothing here raises: a call that
cannot be read (no name, arguments that are not a JSON object) is kept with its problem, and an
item that looks like a call in none of these shapes is a problem that says so.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agenteval.paths import MISSING
from agenteval.process import decode_json

TOOL_NAME, TOOL_ARGUMENTS, TOOL_RESULT, TOOL_CALL_ID = (
    "gen_ai.tool.name", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.tool.call.id",
)
_CALL_HINTS = frozenset({
    "tool", "tool_name", "toolname", "tool_call", "toolcall", "function_name", "functionname", "fn",
    "action", "action_input", "tool_input", "params", "parameters", "args", "input", "call",
})


@dataclass(slots=True)
class ToolCall:
    index: int  # position among the calls of the trajectory
    name: str | None  # None: the call has no usable name
    arguments: dict[str, Any] | None  # None: the arguments could not be read
    problem: str | None = None  # why the call is malformed
    call_id: str | None = None
    result: Any = MISSING  # what the tool returned, when the trajectory records it

    @property
    def label(self) -> str:
        return f"call {self.index} ({self.name})" if self.name else f"call {self.index}"


@dataclass(slots=True)
class Trajectory:
    calls: list[ToolCall] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # items that should hold calls but cannot be read
    results: list[tuple[Any, Any, Any]] = field(default_factory=list)  # (call id, tool name, value), linked at the end


def read_trajectory(items: list[Any], results: bool = True) -> Trajectory:
    """Every tool call in `items`, in order, with what is wrong with any of them, and (with
    `results`) what each tool returned."""
    found = Trajectory()
    for position, item in enumerate(items):
        if type(item) is not dict:
            if not isinstance(item, dict):
                found.problems.append(f"item {position} is not an object")
                continue
        if "role" in item and "attributes" not in item:  # the common case: a chat message
            _read_message(item, position, found)
            continue
        shape = shape_of(item)
        if shape is None:
            if _looks_like_a_call(item):
                keys = ", ".join(sorted(str(key) for key in item)[:6])
                found.problems.append(f"item {position} looks like a tool call in a shape that is not read (keys: {keys})")
            continue
        READERS[shape](item, position, found)
    if results:
        _link_results(found)
    return found


def shape_of(item: dict[str, Any]) -> str | None:
    """Which reader an item is for; None for an item that holds no call in any known shape."""
    if "role" in item and "attributes" not in item:  # the common case first: a chat message
        return "message"
    kind = item.get("type")
    if kind in _BY_TYPE:
        return _BY_TYPE[kind]
    if type(kind) is str and kind.startswith("tool-"):
        return "vercel_ai"  # a UI message part: `tool-<name>`
    if item.get("lc") == 1 and isinstance(item.get("kwargs"), dict):
        return "langchain"
    if item.get("object") == "response" and isinstance(item.get("output"), list):
        return "openai_responses"
    if "resourceSpans" in item or _attributes(item) is not None:
        return "otel"
    if "role" in item or "parts" in item:
        return "message"
    for key, shape in _BY_KEY:
        if key in item:
            return shape
    if "name" in item or "arguments" in item:
        return "plain"
    return None


def _looks_like_a_call(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    if type(kind) is str and any(word in kind.lower() for word in ("tool", "function", "call")):
        return True
    return any(str(key).lower() in _CALL_HINTS for key in item)


# --- readers ------------------------------------------------------------------------------------


def _read_message(message: dict[str, Any], position: int, found: Trajectory) -> None:
    """A chat message of any vendor: OpenAI, Anthropic, Vercel AI SDK or Gemini content."""
    calls = message.get("tool_calls")
    if calls is not None:
        if type(calls) is not list:
            found.problems.append(f"item {position}: tool_calls is not a list")
        else:
            for call in calls:
                _add_chat_call(call, position, found)
    role = message.get("role")
    content = message.get("content")
    if role == "tool" and "tool_call_id" in message:
        found.results.append((message["tool_call_id"], message.get("name"), _text_or_value(content)))
    elif role == "function" and "name" in message:
        found.results.append((None, message["name"], content))
    elif type(content) is list:
        _read_parts(content, position, found)
    if "function_call" in message:
        legacy = message["function_call"]
        if isinstance(legacy, dict):
            _add_call(legacy.get("name"), legacy.get("arguments"), found)
    if "parts" in message:
        parts = message["parts"]
        if isinstance(parts, list):
            _read_parts(parts, position, found)


def _read_parts(parts: list[Any], position: int, found: Trajectory) -> None:
    for part in parts:
        if isinstance(part, dict):
            shape = shape_of(part)
            if shape is not None and shape not in ("message", "plain", "otel"):
                READERS[shape](part, position, found)


def _read_anthropic(block: dict[str, Any], position: int, found: Trajectory) -> None:
    if block.get("type") == "tool_use":
        _add_call(block.get("name"), block.get("input"), found, call_id=block.get("id"))
    else:  # tool_result
        found.results.append((block.get("tool_use_id"), None, _text_or_value(block.get("content"))))


def _read_vercel(part: dict[str, Any], position: int, found: Trajectory) -> None:
    kind = part.get("type")
    if kind == "tool-call":
        _add_call(part.get("toolName"), part.get("input", part.get("args")), found, call_id=part.get("toolCallId"))
    elif kind == "tool-result":
        found.results.append((part.get("toolCallId"), part.get("toolName"), _vercel_output(part)))
    elif "toolCalls" in part or "toolResults" in part:  # a step, or generateText's result
        for call in part.get("toolCalls") or ():
            if isinstance(call, dict):
                _add_call(call.get("toolName"), call.get("input", call.get("args")), found, call_id=call.get("toolCallId"))
        for result in part.get("toolResults") or ():
            if isinstance(result, dict):
                found.results.append((result.get("toolCallId"), result.get("toolName"), _vercel_output(result)))
    else:  # a UI message part: `tool-<name>` (or `dynamic-tool` with `toolName`)
        name = part.get("toolName") if kind == "dynamic-tool" else str(kind)[len("tool-"):]
        _add_call(name, part.get("input", part.get("args")), found, call_id=part.get("toolCallId"))
        if "output" in part:
            found.results.append((part.get("toolCallId"), name, _vercel_output(part)))


def _vercel_output(part: dict[str, Any]) -> Any:
    output = part.get("output", part.get("result", MISSING))
    if isinstance(output, dict) and output.get("type") in ("json", "text", "error-text", "error-json") and "value" in output:
        return output["value"]  # AI SDK 5: {type: json, value}
    return output


def _read_gemini(part: dict[str, Any], position: int, found: Trajectory) -> None:
    if "candidates" in part:  # a whole GenerateContentResponse
        for candidate in part.get("candidates") or ():
            content = candidate.get("content") if isinstance(candidate, dict) else None
            if isinstance(content, dict):
                _read_message(content, position, found)
        return
    call = part.get("functionCall", part.get("function_call"))
    if isinstance(call, dict):
        _add_call(call.get("name"), call.get("args"), found, call_id=call.get("id"))
        return
    response = part.get("functionResponse", part.get("function_response"))
    if isinstance(response, dict):
        found.results.append((response.get("id"), response.get("name"), response.get("response")))


def _read_responses(item: dict[str, Any], position: int, found: Trajectory) -> None:
    kind = item.get("type")
    if kind == "function_call":
        _add_call(item.get("name"), item.get("arguments"), found, call_id=item.get("call_id"))
    elif kind == "function_call_output":
        found.results.append((item.get("call_id"), None, item.get("output")))
    else:  # a whole response
        for output in item.get("output") or ():
            if isinstance(output, dict) and output.get("type") in ("function_call", "function_call_output"):
                _read_responses(output, position, found)


def _read_langchain(message: dict[str, Any], position: int, found: Trajectory) -> None:
    if message.get("lc") == 1:  # dumpd: {lc, type: constructor, id: [..., "AIMessage"], kwargs}
        kind = str((message.get("id") or ["?"])[-1])
        message = {**message["kwargs"], "type": "ai" if kind.startswith("AIMessage") else "tool" if kind.startswith("ToolMessage") else kind}
    elif isinstance(message.get("data"), dict):  # messages_to_dict: {type, data}
        message = {**message["data"], "type": message["type"]}
    kind = message.get("type")
    if kind in ("ai", "AIMessage", "AIMessageChunk"):
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            found.problems.append(f"item {position}: tool_calls is not a list")
        for call in calls or ():
            _add_chat_call(call, position, found)
        for invalid in message.get("invalid_tool_calls") or ():
            if isinstance(invalid, dict):
                error = invalid.get("error") or "its arguments could not be parsed"
                _add_call(invalid.get("name"), None, found, f"invalid tool call: {error}", invalid.get("id"), keep_arguments=False)
    elif kind in ("tool", "ToolMessage"):
        found.results.append((message.get("tool_call_id"), message.get("name"), _text_or_value(message.get("content"))))


def _read_otel(item: dict[str, Any], position: int, found: Trajectory) -> None:
    if "resourceSpans" in item:  # OTLP JSON
        for resource in item.get("resourceSpans") or ():
            for scope in (resource or {}).get("scopeSpans") or ():
                for span in (scope or {}).get("spans") or ():
                    if isinstance(span, dict):
                        _read_otel(span, position, found)
        return
    attributes = _attributes(item) or {}
    name = attributes.get(TOOL_NAME)
    if name is None and attributes.get("gen_ai.operation.name") != "execute_tool":
        return  # a span that is not a tool execution (a model call, an agent step)
    arguments, result = attributes.get(TOOL_ARGUMENTS, MISSING), attributes.get(TOOL_RESULT, MISSING)
    for event in item.get("events") or ():
        event_attributes = _attributes(event) if isinstance(event, dict) else None
        if event_attributes:
            arguments = event_attributes.get(TOOL_ARGUMENTS, arguments)
            result = event_attributes.get(TOOL_RESULT, result)
    call_id = attributes.get(TOOL_CALL_ID)
    _add_call(name, None if arguments is MISSING else arguments, found, call_id=call_id)
    if result is not MISSING:
        found.results.append((call_id, name, result))


def _attributes(item: dict[str, Any]) -> dict[str, Any] | None:
    """A span's (or event's) attributes as a dict: as written, or from OTLP's [{key, value: {stringValue}}]."""
    attributes = item.get("attributes")
    if isinstance(attributes, dict):
        return attributes if any(str(key).startswith("gen_ai.") for key in attributes) or "context" in item else None
    if isinstance(attributes, list) and attributes and all(isinstance(entry, dict) and "key" in entry for entry in attributes):
        return {entry["key"]: _otlp_value(entry.get("value")) for entry in attributes}
    return None


def _otlp_value(value: Any) -> Any:
    if not isinstance(value, dict) or len(value) != 1:
        return value
    kind, inner = next(iter(value.items()))
    if kind == "intValue":
        return int(inner)
    if kind == "arrayValue":
        return [_otlp_value(entry) for entry in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return {entry["key"]: _otlp_value(entry.get("value")) for entry in (inner or {}).get("values", [])}
    return inner


def _read_openai_call(call: dict[str, Any], position: int, found: Trajectory) -> None:
    _add_chat_call(call, position, found)


def _read_chat_completion(item: dict[str, Any], position: int, found: Trajectory) -> None:
    for choice in item.get("choices") or ():
        message = choice.get("message") if isinstance(choice, dict) else None
        if isinstance(message, dict):
            _read_message(message, position, found)


def _read_plain(item: dict[str, Any], position: int, found: Trajectory) -> None:
    _add_call(item.get("name"), item.get("arguments"), found, call_id=item.get("id"))
    if "result" in item:
        found.calls[-1].result = item["result"]


# --- shared -------------------------------------------------------------------------------------


def _add_chat_call(call: Any, position: int, found: Trajectory) -> None:
    """An entry of `tool_calls`: OpenAI's {id, function: {name, arguments}} or LangChain's {id, name, args}."""
    if not isinstance(call, dict):
        found.problems.append(f"item {position}: a tool call is not an object")
        return
    if "function" not in call and "args" in call:
        _add_call(call.get("name"), call.get("args"), found, call_id=call.get("id"))
        return
    function = call.get("function", call)
    if not isinstance(function, dict):
        _add_call(None, None, found, "function is not an object", call.get("id"))
        return
    _add_call(function.get("name"), function.get("arguments"), found, call_id=call.get("id"))


def _add_call(
    name: Any, raw_arguments: Any, found: Trajectory, problem: str | None = None, call_id: Any = None, keep_arguments: bool = True,
) -> None:
    arguments, argument_problem = parse_arguments(raw_arguments) if keep_arguments else (None, None)
    if type(name) is not str or not name:
        name = None
        problem = problem or "no name"
    found.calls.append(ToolCall(
        len(found.calls), name, arguments, problem or argument_problem, call_id if type(call_id) is str and call_id else None,
    ))


def _text_or_value(content: Any) -> Any:
    """A result's content: text blocks joined into one text, anything else as it is."""
    if type(content) is list and content and all(isinstance(block, dict) and block.get("type") == "text" for block in content):
        return "".join(str(block.get("text", "")) for block in content)
    return content


def _link_results(found: Trajectory) -> None:
    """Each result to its call: by call id, else by tool name, else to the earliest call without
    one (a result whose id names no call goes only to a call without an id). Linear: each queue
    is walked once."""
    if not found.results:
        return
    by_id = {call.call_id: call for call in found.calls if call.call_id is not None}
    queues: dict[tuple[str | None, bool], deque[ToolCall]] = {}
    for call_id, name, value in found.results:
        call = by_id.get(call_id) if type(call_id) is str else None
        if call is None or call.result is not MISSING:
            key = (name if type(name) is str else None, type(call_id) is str)
            queue = queues.get(key)
            if queue is None:
                queue = queues[key] = deque(
                    c for c in found.calls if (key[0] is None or c.name == key[0]) and not (key[1] and c.call_id is not None)
                )
            while queue and queue[0].result is not MISSING:
                queue.popleft()
            call = queue.popleft() if queue else None
        if call is not None:
            call.result = value
    found.results.clear()


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) or (None, why they cannot be read). A JSON string is decoded; absent,
    null or blank arguments are an empty object."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            decoded = decode_json(raw)
        except (ValueError, RecursionError):
            return None, "arguments are not valid JSON"
        if isinstance(decoded, dict):
            return decoded, None
        return None, "arguments are not a JSON object"
    return None, "arguments are not an object"


READERS: dict[str, Callable[[dict[str, Any], int, Trajectory], None]] = {
    "message": _read_message,
    "openai_chat": _read_chat_completion,
    "openai_call": _read_openai_call,
    "anthropic": _read_anthropic,
    "vercel_ai": _read_vercel,
    "gemini": _read_gemini,
    "openai_responses": _read_responses,
    "langchain": _read_langchain,
    "otel": _read_otel,
    "plain": _read_plain,
}
_BY_TYPE = {
    "tool_use": "anthropic", "tool_result": "anthropic",
    "tool-call": "vercel_ai", "tool-result": "vercel_ai", "dynamic-tool": "vercel_ai",
    "function_call": "openai_responses", "function_call_output": "openai_responses",
    "ai": "langchain", "AIMessage": "langchain", "AIMessageChunk": "langchain", "tool": "langchain", "ToolMessage": "langchain",
    "human": "langchain", "system": "langchain", "HumanMessage": "langchain", "SystemMessage": "langchain",
    "tool_call": "openai_call",  # LangChain's {name, args, id, type: tool_call}, alone
}
_BY_KEY = (
    ("choices", "openai_chat"), ("candidates", "gemini"), ("functionCall", "gemini"), ("function_call", "gemini"),
    ("functionResponse", "gemini"), ("function_response", "gemini"), ("toolCalls", "vercel_ai"), ("toolResults", "vercel_ai"),
    ("function", "openai_call"),
)
