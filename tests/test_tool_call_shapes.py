"""tool_calls reads every trajectory shape agents write, built with each vendor's own SDK types
(serialized real SDK objects, not hand-written dicts) where a Python package provides them:
OpenAI chat and Responses, Anthropic, Google Gen AI, LangChain, OpenTelemetry. The Vercel AI SDK
is JavaScript only, so its shapes are written as its documentation gives them."""

import json
from pathlib import Path

import pytest

from agenteval.evaluators import EvalContext
from agenteval.evaluators.tools import ToolCalls
from agenteval.evaluators.tools.trajectory import read_trajectory

CALLS = [
    {"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"match": "object", "properties": {"temp": 21}}},
    {"name": "book_table", "arguments": {"people": 2, "time": "19:30"}},
]


def as_json(value):
    """What a trajectory file holds: the SDK object serialized as JSON, read back."""
    return json.loads(json.dumps(value))


def score(answer, calls=CALLS, **config):
    evaluator = ToolCalls.model_validate({"type": "tool_calls", "calls": calls, **config})
    return evaluator.evaluate(EvalContext("case", None, None, as_json(answer), {}, Path(".")))


def assert_read(answer, **config):
    result = score(answer, **config)
    assert (result.score, result.verdict, result.misses) == (1.0, "pass", []), result.misses
    assert result.details["called"] == ["get_weather", "book_table"]


def test_openai_chat_completion_messages():
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice
    from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function

    def call(call_id, name, arguments):
        return ChatCompletionMessageToolCall(id=call_id, type="function", function=Function(name=name, arguments=json.dumps(arguments)))

    first = ChatCompletionMessage(role="assistant", content=None, tool_calls=[call("c1", "get_weather", {"city": "Paris"})])
    tool = {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"temp": 21})}  # a ChatCompletionToolMessageParam (a TypedDict)
    second = ChatCompletion(
        id="chatcmpl-1", object="chat.completion", created=0, model="gpt",
        choices=[Choice(index=0, finish_reason="tool_calls", message=ChatCompletionMessage(
            role="assistant", content=None, tool_calls=[call("c2", "book_table", {"people": 2, "time": "19:30"})]))],
    )
    assert_read([first.model_dump(mode="json"), tool, second.model_dump(mode="json")])


def test_openai_responses_api_items_and_a_whole_response():
    from openai.types.responses import Response, ResponseFunctionToolCall
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    weather = ResponseFunctionToolCall(type="function_call", call_id="call_1", name="get_weather", arguments='{"city": "Paris"}', id="fc_1", status="completed")
    output: FunctionCallOutput = {"type": "function_call_output", "call_id": "call_1", "output": '{"temp": 21}'}
    booking = ResponseFunctionToolCall(type="function_call", call_id="call_2", name="book_table", arguments='{"people": 2, "time": "19:30"}')
    response = Response(
        id="resp_1", created_at=0, model="gpt", object="response", output=[booking],
        parallel_tool_calls=True, tool_choice="auto", tools=[],
    )
    assert_read([weather.model_dump(mode="json"), output, response.model_dump(mode="json")])


def test_anthropic_messages_with_tool_use_and_tool_result_blocks():
    from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

    def assistant(*blocks):
        return Message(id="msg", type="message", role="assistant", model="claude", content=list(blocks),
                       stop_reason="tool_use", stop_sequence=None, usage=Usage(input_tokens=1, output_tokens=1)).model_dump(mode="json")

    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": [{"type": "text", "text": '{"temp": 21}'}]}]}
    assert_read([
        {"role": "user", "content": "Weather in Paris, then a table for two?"},
        assistant(TextBlock(type="text", text="Checking."), ToolUseBlock(type="tool_use", id="tu1", name="get_weather", input={"city": "Paris"})),
        result,
        assistant(ToolUseBlock(type="tool_use", id="tu2", name="book_table", input={"people": 2, "time": "19:30"})),
    ])


@pytest.mark.parametrize("by_alias", [False, True], ids=["snake_case", "camelCase"])
def test_gemini_function_call_and_response_parts(by_alias):
    from google.genai import types

    call = types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Paris"}))])
    response = types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(name="get_weather", response={"temp": 21}))])
    generated = types.GenerateContentResponse(candidates=[types.Candidate(content=types.Content(role="model", parts=[
        types.Part(text="Booking."), types.Part(function_call=types.FunctionCall(name="book_table", args={"people": 2, "time": "19:30"})),
    ]))])
    dump = {"mode": "json", "by_alias": by_alias, "exclude_none": True}
    assert_read([call.model_dump(**dump), response.model_dump(**dump), generated.model_dump(**dump)])
    assert_read([call.model_dump(mode="json"), response.model_dump(mode="json"), generated.model_dump(mode="json")])  # nulls kept


def test_langchain_and_langgraph_messages_in_every_serialization():
    from langchain_core.load import dumpd
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict

    messages = [
        HumanMessage("Weather in Paris, then a table for two?"),
        AIMessage(content="", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]),
        ToolMessage(content=json.dumps({"temp": 21}), tool_call_id="c1"),
        AIMessage(content="", tool_calls=[{"name": "book_table", "args": {"people": 2, "time": "19:30"}, "id": "c2"}]),
    ]
    assert_read({"messages": [message.model_dump(mode="json") for message in messages]})  # a LangGraph state
    assert_read(messages_to_dict(messages))
    assert_read([dumpd(message) for message in messages])


def test_langchain_invalid_tool_calls_are_misses_that_say_so():
    from langchain_core.messages import AIMessage

    broken = AIMessage(content="", invalid_tool_calls=[{"name": "get_weather", "args": "{city: Paris", "id": "c1", "error": "bad JSON", "type": "invalid_tool_call"}])
    result = score([broken.model_dump(mode="json")])
    assert result.misses[0] == "get_weather (call 0 (get_weather): invalid tool call: bad JSON)"


def otel_spans():
    """A run traced with the OpenTelemetry SDK: an agent span, a model span, two tool executions
    (arguments as a span attribute or on an event, the result on an event)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}):
        with tracer.start_as_current_span("chat gpt", attributes={"gen_ai.operation.name": "chat"}):
            pass
        with tracer.start_as_current_span("execute_tool get_weather", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
        }) as span:
            span.add_event("gen_ai.tool.result", {"gen_ai.tool.call.result": json.dumps({"temp": 21})})
        with tracer.start_as_current_span("execute_tool book_table", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_table",
        }) as span:
            span.add_event("gen_ai.tool.arguments", {"gen_ai.tool.call.arguments": json.dumps({"people": 2, "time": "19:30"})})
    spans = exporter.get_finished_spans()
    provider.shutdown()
    return sorted(spans, key=lambda span: span.start_time)


def test_opentelemetry_genai_spans_as_the_sdk_writes_them():
    assert_read([json.loads(span.to_json()) for span in otel_spans()])


def test_opentelemetry_genai_spans_as_otlp_json():
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    assert_read([MessageToDict(encode_spans(otel_spans()))])


def test_vercel_ai_sdk_model_messages_steps_and_ui_parts():
    v4 = [  # CoreMessage: tool-call parts with `args`, tool-result parts with `result`
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t1", "toolName": "get_weather", "args": {"city": "Paris"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1", "toolName": "get_weather", "result": {"temp": 21}}]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t2", "toolName": "book_table", "args": {"people": 2, "time": "19:30"}}]},
    ]
    assert_read(v4)
    v5 = [  # ModelMessage: `input`, and `output` as {type: json, value}
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "t1", "toolName": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "t1", "toolName": "get_weather", "output": {"type": "json", "value": {"temp": 21}}}]},
        {"toolCalls": [{"toolCallId": "t2", "toolName": "book_table", "input": {"people": 2, "time": "19:30"}}], "toolResults": []},
    ]
    assert_read(v5)
    ui = [{"role": "assistant", "parts": [
        {"type": "tool-get_weather", "toolCallId": "t1", "state": "output-available", "input": {"city": "Paris"}, "output": {"temp": 21}},
        {"type": "dynamic-tool", "toolName": "book_table", "toolCallId": "t2", "state": "input-available", "input": {"people": 2, "time": "19:30"}},
    ]}]
    assert_read(ui)


def test_plain_calls_carry_their_result():
    assert_read([
        {"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp": 21}},
        {"name": "book_table", "arguments": {"people": 2, "time": "19:30"}},
    ])


def test_items_that_look_like_calls_in_no_known_shape_are_named_in_the_misses():
    answer = [
        {"tool": "get_weather", "params": {"city": "Paris"}},
        {"type": "function_invocation", "fn": "book_table"},
        {"role": "user", "content": "hi"},
        {"note": "not a call"},
    ]
    result = score(answer)
    assert result.misses[-2:] == [
        "item 0 looks like a tool call in a shape that is not read (keys: params, tool)",
        "item 1 looks like a tool call in a shape that is not read (keys: fn, type)",
    ]
    assert read_trajectory(answer).calls == []


def test_a_recorded_reference_trajectory_in_any_shape_is_read_as_the_expected_calls():
    from langchain_core.messages import AIMessage

    reference = [AIMessage(content="", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]).model_dump(mode="json")]
    evaluator = ToolCalls.model_validate({"type": "tool_calls"})
    ok = evaluator.evaluate(EvalContext("c", None, {"tool_calls": reference}, [{"name": "get_weather", "arguments": {"city": "Paris"}}], {}, Path(".")))
    assert (ok.score, ok.verdict) == (1.0, "pass")
