"""One trace, read as the answer a live tool loop gives (docs/live-agents.md#the-answer-of-a-loop-or-a-conversation).

Spans in the OpenTelemetry GenAI conventions (`gen_ai.operation.name`: chat, execute_tool, ...)
and in OpenInference's (`openinference.span.kind`: LLM, TOOL, RETRIEVER, CHAIN, AGENT) are both
read; model spans become model steps, tool spans tool calls, and the last model call's messages
the conversation. A trace in neither convention is a TraceError naming what was looked for.
"""

from __future__ import annotations

from typing import Any

import orjson

from agenteval.traces.otlp import CUT_MARK, MAX_VALUE_CHARS, MAX_VALUE_DEPTH, Span, TraceError, is_digits

_OPENINFERENCE_KINDS = {
    "LLM": "model", "TOOL": "tool", "RETRIEVER": "retriever", "CHAIN": "chain", "AGENT": "agent",
    "EMBEDDING": "embedding", "RERANKER": "reranker", "GUARDRAIL": "guardrail", "EVALUATOR": "evaluator",
}
_GENAI_OPERATIONS = {
    "chat": "model", "text_completion": "model", "generate_content": "model", "execute_tool": "tool",
    "invoke_agent": "agent", "create_agent": "agent", "embeddings": "embedding", "retrieval": "retriever",
}
_CONTENT_KEYS = (
    "llm.input_messages.", "llm.output_messages.", "llm.prompts", "llm.tools.", "gen_ai.input.messages",
    "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions", "gen_ai.prompt", "gen_ai.completion",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value", "output.value", "retrieval.documents.", "gen_ai.retrieval.documents",
)
"""Attributes that carry content: in `messages`, `tool_calls` and `content`, not repeated in `spans`."""
SPAN_ATTRIBUTE_CHARS = 1_000
"""Longest attribute text a compact span keeps (its full text stays in the export)."""


def kind_of(span: Span) -> str | None:
    """model, tool, retriever, chain, agent, ... as either convention says; None for neither."""
    kind = span.attributes.get("openinference.span.kind")
    if isinstance(kind, str):
        return _OPENINFERENCE_KINDS.get(kind.upper(), "other")
    operation = span.attributes.get("gen_ai.operation.name")
    if isinstance(operation, str):
        return _GENAI_OPERATIONS.get(operation, "other")
    return None


def trace_answer(spans: list[Span], prices: dict[str, Any] | None = None) -> dict[str, Any]:
    """The answer of one trace: `content`, `messages`, `tool_calls`, `steps`, `usage`, `model`,
    `trace_id`, `spans`, and `contexts` when a retriever span returned documents (TraceError when
    no span follows either convention, or a part of a span that cannot be read)."""
    try:
        return _trace_answer(spans, prices)
    except TraceError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:  # a shape no check here foresaw
        raise TraceError(f"the trace cannot be read ({type(exc).__name__}: {str(exc)[:200]})") from None


def _trace_answer(spans: list[Span], prices: dict[str, Any] | None) -> dict[str, Any]:
    if not spans:
        raise TraceError("the trace has no spans")
    ordered = start_order(spans)
    kinds = [kind_of(span) for span in ordered]
    if all(kind is None for kind in kinds):
        names = ", ".join(sorted({span.name for span in ordered})[:5]) or "(unnamed)"
        raise TraceError(
            f"no span follows the OpenTelemetry GenAI conventions (a `gen_ai.operation.name` attribute) or "
            f"OpenInference's (an `openinference.span.kind` attribute); the trace's {len(ordered)} span(s) are named {names}"
        )
    steps: list[dict[str, Any]] = []
    tool_calls: list[dict[str, Any]] = []
    model_spans: list[Span] = []
    total: dict[str, Any] = {}
    model = None
    contexts: list[dict[str, Any]] = []
    for span, kind in zip(ordered, kinds):
        if kind == "retriever":
            contexts += _documents(span)
        elif kind == "model":
            model_spans.append(span)
            usage = _usage(span, prices)
            model = _model_name(span) or model
            step = {"kind": "model", "step": len(model_spans), "latency_ms": span.duration_ms, "usage": usage}
            if span.error:
                step["error"] = True
            steps.append(step)
            for key in ("input_tokens", "output_tokens", "total_tokens", "cost_usd"):
                if usage.get(key) is not None:
                    total[key] = total.get(key, 0) + usage[key]
        elif kind == "tool":
            call = _tool_call(span, max(1, len(model_spans)))
            tool_calls.append(call)
            step = {"kind": "tool", "step": call["step"], "name": call["name"], "id": call["id"], "latency_ms": span.duration_ms}
            if span.error:
                step["error"] = True
            steps.append(step)
    if not tool_calls:
        tool_calls = _calls_from_messages([_messages(span) for span in model_spans])
    elif any(call["arguments"] is None or call["result"] is None for call in tool_calls):
        # a tool span without its (opt-in) arguments or result: the model's messages have them
        by_id = {call["id"]: call for call in _calls_from_messages([_messages(span) for span in model_spans]) if call["id"]}
        for call in tool_calls:
            known = by_id.get(call["id"])
            for key in ("arguments", "result"):
                if call[key] is None:
                    call[key] = known[key] if known else ({} if key == "arguments" else None)
    messages: list[dict[str, Any]] = []
    content = None
    if model_spans:
        inputs, outputs = _messages(model_spans[-1])
        messages = [*inputs, *outputs]
        content = next((message.get("content") for message in reversed(outputs) if message.get("role") == "assistant"), None)
    else:
        content = _root_output(ordered)
    starts = [span.start_ns for span in ordered if span.start_ns]  # 0: unknown, left out
    ends = [span.end_ns for span in ordered if span.end_ns]
    start = min(starts) if starts else None
    total["latency_ms"] = round(max(0, max(ends) - start) / 1e6, 3) if start is not None and ends else None
    answer = {
        "content": content,
        "messages": messages,
        "tool_calls": tool_calls,
        "steps": steps,
        "usage": total,
        "model": model,
        "trace_id": ordered[0].trace_id,
        "spans": [_compact(span, kind, start) for span, kind in zip(ordered, kinds)],
    }
    if contexts:
        answer["contexts"] = contexts
    return answer


def start_order(spans: list[Span]) -> list[Span]:
    """The spans in the order they started (not by parent ids: they may form cycles). A span whose
    start is unknown (0 in OTLP) takes its place by its end, else stays after the span before it in
    the file, so an unknown time never moves it to the front."""
    keys, previous = [], 0
    for span in spans:
        previous = span.start_ns or span.end_ns or previous
        keys.append((previous, span.end_ns or previous))
    return [span for _, span in sorted(zip(keys, spans), key=lambda pair: pair[0])]


def _documents(span: Span) -> list[dict[str, Any]]:
    """A retriever span's documents as context chunks `{text, id, score, retriever}`: OpenInference's
    `retrieval.documents.N.document.{content,id,score}`, or the GenAI conventions'
    `gen_ai.retrieval.documents` (a JSON list of `{id, score, content}`)."""
    attributes = span.attributes
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith("retrieval.documents."):
            index, _, field = key[len("retrieval.documents."):].partition(".")
            if is_digits(index) and len(index) < 7 and field.startswith("document."):
                found.setdefault(int(index), {})[field.removeprefix("document.")] = value
    documents = [found[index] for index in sorted(found)]
    if not documents:
        documents = [item for item in _json_list(attributes.get("gen_ai.retrieval.documents")) if isinstance(item, dict)]
    chunks = []
    for document in documents:
        text = document.get("content", document.get("text"))
        if not isinstance(text, str):
            continue
        chunk: dict[str, Any] = {"text": text, "retriever": span.name}
        for key in ("id", "score"):
            if isinstance(document.get(key), (str, int, float)) and not isinstance(document.get(key), bool):
                chunk[key] = document[key]
        chunks.append(chunk)
    return chunks


# -- model calls ------------------------------------------------------------------------------------


def _model_name(span: Span) -> str | None:
    for key in ("gen_ai.response.model", "llm.model_name", "gen_ai.request.model"):
        value = span.attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _usage(span: Span, prices: dict[str, Any] | None) -> dict[str, Any]:
    from agenteval.usage import price_of

    attributes = span.attributes
    given = _count(attributes.get("gen_ai.usage.input_tokens", attributes.get("llm.token_count.prompt")))
    made = _count(attributes.get("gen_ai.usage.output_tokens", attributes.get("llm.token_count.completion")))
    total = _count(attributes.get("llm.token_count.total"))
    if total is None and given is not None and made is not None:
        total = given + made
    usage: dict[str, Any] = {"latency_ms": span.duration_ms}
    if given is not None or made is not None or total is not None:  # (a total alone is still a count)
        usage.update(input_tokens=given, output_tokens=made, total_tokens=total)
    requested = attributes.get("gen_ai.request.model")
    models = [requested if isinstance(requested, str) else None, _model_name(span)]
    cost = price_of(usage, models, prices) if prices else None
    recorded = attributes.get("llm.cost.total")
    if cost is None and type(recorded) in (int, float) and 0 <= recorded <= 1e12:  # (not true, nor a negative or NaN cost)
        cost = float(recorded)
    if cost is not None:
        usage["cost_usd"] = cost
    return usage


def _count(value: Any) -> int | None:
    return value if type(value) is int and 0 <= value < 2**53 else None  # a count a JSON reader keeps exactly


def _messages(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(messages sent, messages received) of a model span, in the OpenAI chat shape."""
    attributes = span.attributes
    if any(key.startswith("llm.input_messages.") or key.startswith("llm.output_messages.") for key in attributes):
        for key, value in attributes.items():  # a message cut short would be scored as if it were whole
            if key.startswith(("llm.input_messages.", "llm.output_messages.")) and isinstance(value, str) and value.endswith(CUT_MARK):
                raise TraceError(f"span {span.name!r}: `{key}` is longer than {MAX_VALUE_CHARS:,} characters, the most an attribute is read to")
        return _flattened(attributes, "llm.input_messages."), _flattened(attributes, "llm.output_messages.")
    if "gen_ai.input.messages" in attributes or "gen_ai.output.messages" in attributes:
        for key in ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.output.messages"):
            if isinstance(attributes.get(key), str) and attributes[key].endswith(CUT_MARK):  # cut JSON: the messages are lost
                raise TraceError(f"span {span.name!r}: `{key}` is longer than {MAX_VALUE_CHARS:,} characters, the most an attribute is read to")
        inputs = [message for item in _json_list(attributes.get("gen_ai.system_instructions")) for message in _system(item)]
        inputs += [message for item in _json_list(attributes.get("gen_ai.input.messages")) for message in _from_parts(item)]
        outputs = [message for item in _json_list(attributes.get("gen_ai.output.messages")) for message in _from_parts(item)]
        return inputs, outputs
    return _from_events(span)


def _flattened(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenInference's `llm.input_messages.N.message.role/content/tool_calls.M.tool_call...` as messages."""
    grouped: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix):].partition(".")
        if is_digits(index) and len(index) < 7:
            grouped.setdefault(int(index), {})[rest.removeprefix("message.")] = value
    messages = []
    for index in sorted(grouped):
        fields = grouped[index]
        message: dict[str, Any] = {"role": fields.get("role") or "user", "content": fields.get("content")}
        if message["content"] is None:
            texts = [fields[key] for key in sorted(fields) if key.startswith("contents.") and key.endswith(".message_content.text")]
            message["content"] = "".join(text for text in texts if isinstance(text, str)) if texts else None
        calls: dict[int, dict[str, Any]] = {}
        for key, value in fields.items():
            if key.startswith("tool_calls."):
                number, _, field = key[len("tool_calls."):].partition(".")
                if is_digits(number) and len(number) < 7:
                    calls.setdefault(int(number), {})[field.removeprefix("tool_call.")] = value
        if calls:
            message["tool_calls"] = [
                {"id": call.get("id") or "", "type": "function",
                 "function": {"name": call.get("function.name") or "", "arguments": _as_text(call.get("function.arguments"))}}
                for _, call in sorted(calls.items())
            ]
        if fields.get("tool_call_id") is not None:
            message["tool_call_id"] = fields["tool_call_id"]
        if fields.get("name") is not None:
            message["name"] = fields["name"]
        messages.append(message)
    return messages


def _system(item: Any) -> list[dict[str, Any]]:
    if isinstance(item, dict) and isinstance(item.get("content"), str):
        return [{"role": "system", "content": item["content"]}]
    return []


def _from_parts(item: Any) -> list[dict[str, Any]]:
    """A GenAI message (`{role, parts: [text | tool_call | tool_call_response ...]}`) as chat message(s)."""
    if not isinstance(item, dict):
        return []
    role = item.get("role") if isinstance(item.get("role"), str) else "user"
    parts = item.get("parts") if isinstance(item.get("parts"), list) else []
    if not parts and "content" in item:  # an older shape: {role, content}
        return [{"role": role, "content": item.get("content")}]
    texts, calls, replies = [], [], []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call":
            calls.append({"id": part.get("id") or "", "type": "function",
                          "function": {"name": part.get("name") or "", "arguments": _as_text(part.get("arguments"))}})
        elif kind == "tool_call_response":
            replies.append({"role": "tool", "tool_call_id": part.get("id") or "", "content": _as_text(part.get("response"))})
    if replies:
        return replies
    message: dict[str, Any] = {"role": role, "content": "".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return [message]


def _from_events(span: Span) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The older GenAI span events: `gen_ai.{system,user,assistant,tool}.message`, `gen_ai.choice`,
    and `gen_ai.content.prompt` / `gen_ai.content.completion` holding JSON lists."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for name, attributes in span.events:
        if name == "gen_ai.content.prompt":
            inputs += [item for item in _json_list(attributes.get("gen_ai.prompt")) if isinstance(item, dict)]
        elif name == "gen_ai.content.completion":
            outputs += [item for item in _json_list(attributes.get("gen_ai.completion")) if isinstance(item, dict)]
        elif name.startswith("gen_ai.") and name.endswith(".message"):
            role = name.removeprefix("gen_ai.").removesuffix(".message")
            message: dict[str, Any] = {"role": attributes.get("role") or role, "content": attributes.get("content")}
            if attributes.get("id") is not None and role == "tool":
                message["tool_call_id"] = attributes["id"]
            calls = _json_list(attributes.get("tool_calls"))
            if calls:
                message["tool_calls"] = calls
            inputs.append(message)
        elif name == "gen_ai.choice":
            given = attributes.get("message")
            message = _json(given) if isinstance(given, str) else given
            if isinstance(message, dict):
                outputs.append({"role": message.get("role") or "assistant", **{k: v for k, v in message.items() if k != "role"}})
                if "tool_calls" in message and not isinstance(message["tool_calls"], list):
                    del outputs[-1]["tool_calls"]  # not a list of calls: none that can be read
    return inputs, outputs


# -- tool calls -------------------------------------------------------------------------------------


def _tool_call(span: Span, step: int) -> dict[str, Any]:
    attributes = span.attributes
    name = attributes.get("gen_ai.tool.name", attributes.get("tool.name")) or span.name
    arguments = attributes.get("gen_ai.tool.call.arguments", attributes.get("tool_call.function.arguments", attributes.get("input.value")))
    result = attributes.get("gen_ai.tool.call.result", attributes.get("output.value"))
    call_id = attributes.get("gen_ai.tool.call.id", attributes.get("tool_call.id"))
    parsed = _json(arguments) if isinstance(arguments, str) else arguments
    call = {
        "name": str(name),
        "arguments": parsed if parsed is not None else arguments,
        "result": json_or_text(result),
        "id": str(call_id) if call_id is not None else span.span_id,
        "step": step,
    }
    if span.error and call["result"] is None:
        call["result"] = {"error": span.status_message or "the tool span ended in an error"}
    return call


def _calls_from_messages(model_calls: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Without tool spans (an instrumented client sees only the model calls): each call the model
    made, its result from the tool message that answered it in a later model call."""
    results: dict[str, Any] = {}
    for inputs, _ in model_calls:
        for message in inputs:
            if message.get("role") == "tool" and message.get("tool_call_id"):
                results[str(message["tool_call_id"])] = json_or_text(message.get("content"))
    calls = []
    for number, (_, outputs) in enumerate(model_calls, 1):
        for message in outputs:
            given = message.get("tool_calls")
            for raw in given if isinstance(given, list) else ():  # a recorded message's calls may be of any type
                function = raw.get("function") if isinstance(raw, dict) and isinstance(raw.get("function"), dict) else {}
                arguments = function.get("arguments")
                parsed = _json(arguments) if isinstance(arguments, str) else arguments
                call_id = str(raw.get("id") or "") if isinstance(raw, dict) else ""
                calls.append({
                    "name": str(function.get("name") or ""),
                    "arguments": parsed if parsed is not None else (arguments or {}),
                    "result": results.get(call_id),
                    "id": call_id,
                    "step": number,
                })
    return calls


# -- the rest ---------------------------------------------------------------------------------------


def _root_output(ordered: list[Span]) -> Any:
    """Without a model span: the output of the outermost span that has one (an agent or chain)."""
    ids = {span.span_id for span in ordered}
    for span in ordered:
        if (span.parent_id is None or span.parent_id not in ids) and "output.value" in span.attributes:
            return json_or_text(span.attributes["output.value"])
    return None


def _compact(span: Span, kind: str | None, start: int | None) -> dict[str, Any]:
    """What the `spans` evaluator reads of a span: no message or document content."""
    attributes: dict[str, Any] = {}
    documents = 0
    for key, value in span.attributes.items():
        if key.startswith("retrieval.documents."):
            index = key[len("retrieval.documents."):].partition(".")[0]
            if is_digits(index) and len(index) < 7:
                documents = max(documents, int(index) + 1)
        if key.startswith(_CONTENT_KEYS):
            continue
        attributes[key] = value[:SPAN_ATTRIBUTE_CHARS] if isinstance(value, str) else value
    compact: dict[str, Any] = {
        "name": span.name, "kind": kind or "other", "span_id": span.span_id, "parent_id": span.parent_id,
        "start_ms": round(max(0, span.start_ns - start) / 1e6, 3) if span.start_ns and start is not None else None,
        "duration_ms": span.duration_ms,
        "error": span.error, "attributes": attributes,
    }
    if kind == "retriever" or documents:
        compact["documents"] = documents
    return compact


def _json(text: str) -> Any:
    try:
        return _bounded(orjson.loads(text), 0)
    except (orjson.JSONDecodeError, RecursionError):
        return None


def _bounded(value: Any, depth: int) -> Any:
    """JSON text from an attribute, no deeper than attributes are read."""
    if depth > MAX_VALUE_DEPTH:
        return None
    if isinstance(value, dict):
        return {key: _bounded(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_bounded(item, depth + 1) for item in value]
    return value


def _json_list(value: Any) -> list[Any]:
    parsed = _json(value) if isinstance(value, str) else value
    return parsed if isinstance(parsed, list) else []


def json_or_text(value: Any) -> Any:
    """An attribute's text read as JSON when it is JSON (bounded in depth), else the text."""
    if isinstance(value, str):
        parsed = _json(value)
        return value if parsed is None and value.strip() != "null" else parsed
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return orjson.dumps(value, default=str).decode()


def joined(reply: Any, traced: dict[str, Any]) -> dict[str, Any]:
    """A live reply with the trace its system exported (`traces: {receive: true}`): the trace's
    `messages`, `tool_calls`, `steps`, `usage`, `model`, `trace_id`, `spans` (and `contexts`) over
    the reply's keys of those names, its `content` the reply's own (a reply that is not an object is
    the content), the trace's when the reply has none."""
    answer = dict(reply) if isinstance(reply, dict) else {"content": reply}
    content = answer.get("content")
    answer.update({key: value for key, value in traced.items() if key != "content"})
    answer["content"] = traced.get("content") if content is None else content
    return answer
