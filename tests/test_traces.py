"""Traces that already happened, read into the tool loop's answer and scored: the `traces` target
and the `spans` evaluator, on exports made by real instrumentation libraries (tests/fixtures/traces)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.evaluators.base import EvalContext
from agenteval.evaluators.spans import Spans
from agenteval.traces.answer import trace_answer
from agenteval.traces.index import index_file
from agenteval.traces.otlp import TraceError
from conftest import read_jsonl, run_cli, write

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
GENAI_AGENT = "5250dc14c7363298eca7d21c8ca4ce6e"  # invoke_agent > chat, execute_tool get_order, chat
GENAI_HELLO = "9f34127367a143ec89db667fb0c39753"
OI_AGENT = "c4fc954438a364ef5f26e52cc1138065"  # support-agent > ChatCompletion, get_order, ChatCompletion
OI_RAG = "016a8c53538855b165984f58c59163e5"  # rag > retrieve (3 documents), ChatCompletion

CONVERSATION = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Where is order 7?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1_get_order", "type": "function", "function": {"name": "get_order", "arguments": '{"id":7}'}}]},
    {"role": "tool", "tool_call_id": "call_1_get_order", "content": '{"status": "delivered", "total": 42.5}'},
    {"role": "assistant", "content": "Order 7 is delivered."},
]


def answer_of(path: Path, key: str, match: str = "trace_id") -> dict:
    return trace_answer(index_file(path, match).spans(key))


@pytest.mark.parametrize("fixture,trace_id", [("genai.jsonl", GENAI_AGENT), ("openinference.jsonl", OI_AGENT)])
def test_an_agent_trace_in_either_convention_becomes_the_loop_answer(fixture, trace_id):
    got = answer_of(FIXTURES / fixture, trace_id)
    assert got["content"] == "Order 7 is delivered."
    messages = json.loads(json.dumps(got["messages"]).replace('{\\"id\\": 7}', '{\\"id\\":7}'))  # each library spaces JSON its way
    assert [{key: value for key, value in message.items()} for message in messages] == CONVERSATION
    assert got["tool_calls"] == [
        {"name": "get_order", "arguments": {"id": 7}, "result": {"status": "delivered", "total": 42.5}, "id": "call_1_get_order", "step": 1},
    ]
    assert [(step["kind"], step["step"], step.get("name")) for step in got["steps"]] == [("model", 1, None), ("tool", 1, "get_order"), ("model", 2, None)]
    assert [step["usage"]["input_tokens"] for step in got["steps"] if step["kind"] == "model"] == [9, 13]
    assert (got["usage"]["input_tokens"], got["usage"]["output_tokens"], got["usage"]["total_tokens"]) == (22, 4, 26)
    assert got["usage"]["latency_ms"] >= sum(step["latency_ms"] for step in got["steps"] if step["kind"] == "model")
    assert got["model"] == "gpt-4o-mini" and got["trace_id"] == trace_id
    assert [span["kind"] for span in got["spans"]] == ["agent", "model", "tool", "model"]


def test_a_trace_recorded_now_by_openinference_reads_as_the_committed_one(tmp_path):
    """The fixture is re-made by the instrumentation itself (a real openai client against the local
    fake server), so a change in what the library records shows here, not only in old files."""
    recorded = subprocess.run([sys.executable, str(FIXTURES / "generate.py"), "openinference", str(tmp_path / "now.jsonl")],
                              capture_output=True, text=True, timeout=120)
    assert recorded.returncode == 0, recorded.stderr
    index = index_file(tmp_path / "now.jsonl", "session_id")
    got, committed = answer_of(tmp_path / "now.jsonl", "session-refund-7", "session_id"), answer_of(FIXTURES / "openinference.jsonl", OI_AGENT)
    assert sorted(index.keys) == ["session-hello", "session-policy", "session-refund-7"]
    for key in ("content", "messages", "tool_calls", "model"):
        assert got[key] == committed[key], key
    assert got["usage"]["total_tokens"] == committed["usage"]["total_tokens"] == 26


def test_a_compact_span_keeps_its_attributes_but_no_message_content():
    got = answer_of(FIXTURES / "openinference.jsonl", OI_AGENT)
    model = got["spans"][1]
    assert model["attributes"]["llm.model_name"] == "gpt-4o-mini" and model["attributes"]["llm.token_count.prompt"] == 9
    assert not [key for span in got["spans"] for key in span["attributes"] if key.startswith(("llm.input_messages", "input.value"))]


def test_a_retriever_span_carries_its_document_count_and_the_chain_its_reply():
    got = answer_of(FIXTURES / "openinference.jsonl", OI_RAG)
    assert got["content"] == "Returns take 30 days."
    retriever = next(span for span in got["spans"] if span["kind"] == "retriever")
    assert (retriever["name"], retriever["documents"]) == ("retrieve", 3)


def test_a_session_id_names_the_trace_in_either_convention():
    assert answer_of(FIXTURES / "openinference.jsonl", "session-policy", "session_id")["trace_id"] == OI_RAG
    assert answer_of(FIXTURES / "genai.jsonl", "conversation-refund-7", "session_id")["trace_id"] == GENAI_AGENT
    assert answer_of(FIXTURES / "genai.jsonl", "invoke_agent", "attribute gen_ai.operation.name")["trace_id"] == GENAI_AGENT


def test_base64_ids_and_a_pretty_printed_document_read_as_hex_ids_do(tmp_path):
    documents = [json.loads(line) for line in (FIXTURES / "genai.jsonl").read_text().splitlines()]
    for document in documents:
        for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            for key in ("traceId", "spanId", "parentSpanId"):
                if span.get(key):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    merged = {"resourceSpans": [resource for document in documents for resource in document["resourceSpans"]]}
    (tmp_path / "pretty.json").write_text(json.dumps(merged, indent=2))
    got = answer_of(tmp_path / "pretty.json", GENAI_HELLO)
    assert (got["content"], got["trace_id"], got["messages"]) == ("Hello!", GENAI_HELLO, [
        {"role": "user", "content": "Say hello"}, {"role": "assistant", "content": "Hello!"}])
    assert answer_of(tmp_path / "pretty.json", base64.b64encode(bytes.fromhex(GENAI_AGENT)).decode())["content"] == "Order 7 is delivered."


def span(name, span_id, attributes=(), events=(), parent=None, start=1_000_000, end=2_000_000, status=None):
    raw = {"traceId": "ab" * 16, "spanId": span_id, "name": name, "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
           "attributes": [{"key": key, "value": value} for key, value in attributes],
           "events": [{"name": event, "attributes": [{"key": k, "value": v} for k, v in pairs]} for event, pairs in events]}
    if parent:
        raw["parentSpanId"] = parent
    if status:
        raw["status"] = status
    return raw


def export(tmp_path, *spans, name="spans.jsonl"):
    path = tmp_path / name
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}) + "\n")
    return path


def text(value):
    return {"stringValue": value}


def test_the_older_genai_span_events_give_the_messages(tmp_path):
    chat = span("chat gpt-4", "01" * 8, [("gen_ai.operation.name", text("chat")), ("gen_ai.request.model", text("gpt-4")),
                                         ("gen_ai.usage.input_tokens", {"intValue": "5"}), ("gen_ai.usage.output_tokens", {"intValue": 2})],
                events=[("gen_ai.user.message", [("content", text("hi"))]),
                        ("gen_ai.choice", [("message", {"kvlistValue": {"values": [{"key": "content", "value": text("hello")}]}})])])
    got = answer_of(export(tmp_path, chat), "ab" * 16)
    assert got["messages"] == [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert (got["content"], got["model"], got["usage"]["total_tokens"]) == ("hello", "gpt-4", 7)


def test_a_trace_in_neither_convention_is_an_error_naming_what_was_missing(tmp_path):
    path = export(tmp_path, span("GET /orders", "01" * 8, [("http.method", text("GET"))]))
    with pytest.raises(TraceError, match=r"no span follows the OpenTelemetry GenAI conventions \(a `gen_ai.operation.name` attribute\) "
                                         r"or OpenInference's \(an `openinference.span.kind` attribute\); the trace's 1 span\(s\) are named GET /orders"):
        answer_of(path, "ab" * 16)


def test_a_failed_tool_span_is_a_failed_step_with_an_error_result(tmp_path):
    tool = span("refund", "02" * 8, [("openinference.span.kind", text("TOOL")), ("tool.name", text("refund")), ("input.value", text('{"amount": 5}'))],
                status={"code": 2, "message": "card declined"})
    got = answer_of(export(tmp_path, tool), "ab" * 16)
    assert got["tool_calls"] == [{"name": "refund", "arguments": {"amount": 5}, "result": {"error": "card declined"}, "id": "02" * 8, "step": 1}]
    assert got["steps"][0]["error"] is True and got["spans"][0]["error"] is True


def test_a_genai_tool_span_with_its_opt_in_arguments_and_result_gives_them(tmp_path):
    chat = span("chat", "01" * 8, [("gen_ai.operation.name", text("chat")), ("gen_ai.output.messages", text(json.dumps(
        [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "refund", "arguments": {"amount": 5}}]}])))])
    tool = span("execute_tool refund", "02" * 8, [
        ("gen_ai.operation.name", text("execute_tool")), ("gen_ai.tool.name", text("refund")), ("gen_ai.tool.call.id", text("c1")),
        ("gen_ai.tool.call.arguments", text('{"amount": 5}')), ("gen_ai.tool.call.result", text('{"refunded": true}'))],
        start=3_000_000, end=4_500_000)
    got = answer_of(export(tmp_path, chat, tool), "ab" * 16)
    assert got["tool_calls"] == [{"name": "refund", "arguments": {"amount": 5}, "result": {"refunded": True}, "id": "c1", "step": 1}]
    assert got["steps"][1] == {"kind": "tool", "step": 1, "name": "refund", "id": "c1", "latency_ms": 1.5}
    assert got["messages"] == [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "refund", "arguments": '{"amount":5}'}}]}]


# -- the spans evaluator ----------------------------------------------------------------------------


def spans_result(answer, *checks):
    evaluator = Spans.model_validate({"type": "spans", "checks": list(checks)})
    ctx = EvalContext(case_id="c", input=None, expected=None, output=answer, metadata={}, base_dir=Path("."))
    return evaluator.evaluate(ctx)


def test_spans_checks_count_kind_name_error_duration_and_attributes():
    got = answer_of(FIXTURES / "openinference.jsonl", OI_RAG)
    result = spans_result(got, {"kind": "retriever", "attribute": "documents", "at_least": 3}, {"kind": "model", "count": 1},
                          {"error": False}, {"max_ms": 60_000, "percentile": 95}, {"where": {"llm.model_name": "gpt-4o-mini"}, "min_count": 1})
    assert (result.verdict, result.score, result.misses) == ("pass", 1.0, [])
    result = spans_result(got, {"kind": "retriever", "attribute": "documents", "at_least": 4}, {"name": "retrieve", "count": 2},
                          {"error": True}, {"kind": "model", "max_ms": 0.001}, {"kind": "tool", "attribute": "tool.name", "equals": "x"})
    assert (result.verdict, result.score) == ("fail", 0.0)
    assert result.misses[:4] == [
        "kind=retriever: span 'retrieve': `documents` is 3, expected at least 4",
        "name=retrieve: 1 span(s), expected 2",
        "all spans: no span ended in an error",
        f"kind=model: p100 duration {got['spans'][2]['duration_ms']:g} ms > 0.001 ms",
    ]
    assert result.misses[4] == "kind=tool: no span to check `tool.name` on"


def test_spans_on_an_answer_without_spans_is_an_error_and_a_check_must_assert_something():
    assert spans_result({"content": "hi"}, {"count": 1}).error == "the answer carries no `spans` list (a `traces` target's answers do)"
    with pytest.raises(ValueError, match="a check asserts something"):
        Spans.model_validate({"type": "spans", "checks": [{"kind": "tool"}]})
    with pytest.raises(ValueError, match="`attribute` needs `equals`, `at_least` or `at_most`"):
        Spans.model_validate({"type": "spans", "checks": [{"attribute": "documents"}]})


# -- the traces target, through the command line ----------------------------------------------------

SUITE = """
name: production
target: {{type: traces, file: {file}, match: {match}}}
evaluators:
  - {{type: tool_calls, calls: [{{name: get_order, arguments: {{id: 7}}}}]}}
  - {{type: contains, path: content, reference: delivered}}
  - {{type: spans, checks: [{{kind: model, count: 2}}, {{error: false}}]}}
cases: cases.jsonl
"""


def run(tmp_path, *args):
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return SimpleNamespace(returncode=result.exit_code, stdout=result.stdout), {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def test_a_traces_target_scores_each_case_on_its_own_trace(tmp_path):
    shutil.copy(FIXTURES / "openinference.jsonl", tmp_path / "spans.jsonl")
    write(tmp_path, "s.yaml", SUITE.format(file="spans.jsonl", match="session_id"))
    write(tmp_path, "cases.jsonl", "\n".join(json.dumps(case) for case in [
        {"id": "refund", "metadata": {"session_id": "session-refund-7"}},
        {"id": "hello", "metadata": {"session_id": "session-hello"}},
        {"id": "session-gone"},
    ]) + "\n")
    result, lines = run(tmp_path)
    assert result.returncode == 3, result.stdout
    assert lines["refund"]["verdict"] == "pass"
    assert lines["refund"]["usage"]["total_tokens"] == 26
    hello = {item["name"]: item["verdict"] for item in lines["hello"]["evaluator_results"]}
    assert hello == {"tool_calls": "fail", "contains": "fail", "spans": "fail"}
    assert lines["session-gone"]["verdict"] == "error"
    assert lines["session-gone"]["error"] == "traces target: no trace with session_id 'session-gone' in spans.jsonl"


def test_a_bad_match_is_refused_at_load(tmp_path):
    write(tmp_path, "s.yaml", SUITE.format(file="spans.jsonl", match="span_name"))
    write(tmp_path, "cases.jsonl", json.dumps({"id": "a"}) + "\n")
    result = run_cli("validate", tmp_path / "s.yaml")
    assert result.returncode == 2
    assert "s.yaml:2: target.match: give `trace_id`, `session_id` or `attribute NAME` (e.g. `attribute user.id`), not 'span_name'" in result.stderr, result.stderr
