"""Traces into a run: `--traces FILE` for any suite, the W3C traceparent a live case sends, and the
spans a live system exports received into its answer (`traces: {receive: true}`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from agenteval.api import RunError, run_suite
from agenteval.cli import app
from agenteval.traces.propagation import new_traceparent, parent_id_of, trace_id_of
from conftest import read_jsonl, serving, write

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
GENAI_AGENT = "5250dc14c7363298eca7d21c8ca4ce6e"
OI_AGENT = "c4fc954438a364ef5f26e52cc1138065"

LIVE_SUITE = """
name: support
target: {type: http, url: "http://127.0.0.1:1/never"}
evaluators:
  - {type: tool_calls, calls: [{name: get_order, arguments: {id: 7}}]}
  - {type: contains, path: content, reference: delivered}
cases: cases.jsonl
"""


def run(tmp_path: Path, *args: object) -> tuple[SimpleNamespace, dict]:
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}
    return SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr), lines


# -- --traces FILE ----------------------------------------------------------------------------------


def test_traces_option_scores_any_suite_on_recorded_traces_in_place_of_its_target(tmp_path):
    write(tmp_path, "s.yaml", LIVE_SUITE)  # its http target is never called: the answers are the traces
    write(tmp_path, "cases.jsonl", "\n".join(json.dumps(case) for case in [
        {"id": "oi", "metadata": {"trace_id": OI_AGENT}},
        {"id": GENAI_AGENT},  # no metadata: the case id is the key
        {"id": "gone", "metadata": {"trace_id": "ef" * 16}},
    ]) + "\n")
    shutil.copy(FIXTURES / "openinference.jsonl", tmp_path / "all.jsonl")
    with (tmp_path / "all.jsonl").open("a") as file:
        file.write((FIXTURES / "genai.jsonl").read_text())
    result, lines = run(tmp_path, "--traces", tmp_path / "all.jsonl")
    assert result.returncode == 3, result.stdout
    assert lines["oi"]["verdict"] == "pass" and lines[GENAI_AGENT]["verdict"] == "pass"
    assert lines["oi"]["output"]["tool_calls"][0]["result"] == {"status": "delivered", "total": 42.5}
    assert lines[GENAI_AGENT]["usage"]["total_tokens"] == 26
    assert lines["gone"]["verdict"] == "error"
    assert lines["gone"]["error"] == f"--traces: no trace with trace_id '{'ef' * 16}' in all.jsonl"


def test_traces_match_finds_traces_by_session_and_a_bad_one_is_refused(tmp_path):
    write(tmp_path, "s.yaml", LIVE_SUITE)
    write(tmp_path, "cases.jsonl", json.dumps({"id": "refund", "metadata": {"session_id": "session-refund-7"}}) + "\n")
    result, lines = run(tmp_path, "--traces", FIXTURES / "openinference.jsonl", "--traces-match", "session_id")
    assert result.returncode == 0 and lines["refund"]["verdict"] == "pass"
    result, lines = run(tmp_path, "--traces", FIXTURES / "openinference.jsonl", "--traces-match", "span_name")
    assert result.returncode == 2 and not lines
    assert "--traces-match: give `trace_id`, `session_id` or `attribute NAME`" in result.stderr


def test_a_missing_traces_file_is_a_usage_error_before_any_case_runs(tmp_path):
    write(tmp_path, "s.yaml", LIVE_SUITE)
    write(tmp_path, "cases.jsonl", json.dumps({"id": "a"}) + "\n")
    result, lines = run(tmp_path, "--traces", tmp_path / "missing.jsonl")
    assert result.returncode == 2 and not lines
    assert f"error: --traces {tmp_path / 'missing.jsonl'}: no such file" in result.stderr
    result, _ = run(tmp_path, "--traces", tmp_path / "missing.jsonl", "--predictions", tmp_path / "p.jsonl")
    assert result.returncode == 2 and "--traces and --predictions are two sources of answers; give one" in result.stderr


def test_run_suite_takes_traces_as_a_setting(tmp_path):
    write(tmp_path, "s.yaml", LIVE_SUITE)
    write(tmp_path, "cases.jsonl", json.dumps({"id": OI_AGENT}) + "\n")
    with run_suite(tmp_path / "s.yaml", traces=FIXTURES / "openinference.jsonl", cache=False) as outcome:
        results = list(outcome)
    assert [result.verdict for result in results] == ["pass"]
    with pytest.raises(RunError, match="--traces-match goes with --traces"):
        run_suite(tmp_path / "s.yaml", traces_match="session_id")


# -- traceparent ------------------------------------------------------------------------------------


def test_a_traceparent_is_valid_and_fresh_for_every_case():
    first, second = new_traceparent(), new_traceparent()
    assert trace_id_of(first) and trace_id_of(second) and trace_id_of(first) != trace_id_of(second)
    assert first == f"00-{trace_id_of(first)}-{parent_id_of(first)}-01" and len(parent_id_of(first)) == 16
    assert trace_id_of("00-" + "0" * 32 + "-" + "1" * 16 + "-01") is None  # all zeros is invalid (W3C)
    assert trace_id_of("not a traceparent") is None


def test_inside_an_active_opentelemetry_span_a_case_joins_its_trace():
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("run") as span:
        traceparent = new_traceparent()
        assert trace_id_of(traceparent) == f"{span.get_span_context().trace_id:032x}"
        assert parent_id_of(traceparent) != f"{span.get_span_context().span_id:016x}"  # each case its own parent id


def test_cases_run_on_threads_inside_an_applications_span_join_its_trace(tmp_path):
    """`run_suite` iterated inside the application's span: every case joins that trace, also when the
    cases run on worker threads (the default for a command target), as with one worker."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    import agenteval

    write(tmp_path, "agent.py", "import os, sys, json\nsys.stdin.read()\nprint(json.dumps({'content': os.environ['TRACEPARENT']}))\n")
    suite = write(tmp_path, "s.yaml", f"""
name: joined
target: {{type: command, command: [{sys.executable}, agent.py]}}
evaluators: [{{type: contains, path: content, reference: "00-"}}]
cases: [{{id: a, input: q}}, {{id: b, input: q}}, {{id: c, input: q}}, {{id: d, input: q}}]
""")
    tracer = TracerProvider().get_tracer("app")
    with tracer.start_as_current_span("nightly eval") as span:
        mine = f"{span.get_span_context().trace_id:032x}"
        for workers in (1, 4):
            results = list(agenteval.run_suite(suite, workers=workers))
            assert [result.verdict for result in results] == ["pass"] * 4
            assert {result.trace_id for result in results} == {mine}, workers
            assert {trace_id_of(result.output["content"]) for result in results} == {mine}
    outside = list(agenteval.run_suite(suite, workers=4))  # outside it, each case its own trace
    assert len({result.trace_id for result in outside}) == 4 and mine not in {result.trace_id for result in outside}
    assert trace.get_current_span().get_span_context().is_valid is False


class _Echo(BaseHTTPRequestHandler):
    seen: list[str | None] = []

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        _Echo.seen.append(self.headers.get("traceparent"))
        body = json.dumps({"content": self.headers.get("traceparent")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


def test_http_command_and_python_targets_receive_the_traceparent_recorded_in_the_result(tmp_path):
    with serving(_Echo) as server:
        _Echo.seen.clear()
        write(tmp_path, "agent.py", "import os, sys, json\nsys.stdin.read()\nprint(json.dumps({'content': os.environ.get('TRACEPARENT')}))\n")
        write(tmp_path, "task.py", "import agenteval\n\ndef answer(question):\n    return {'content': agenteval.current_run().traceparent}\n")
        write(tmp_path, "s.yaml", f"""
name: propagation
targets:
  web: {{type: http, url: "http://127.0.0.1:{server.server_address[1]}/answer", cache: false}}
  cli: {{type: command, command: [{sys.executable}, agent.py]}}
  py: {{type: python, function: "task:answer"}}
evaluators: [{{type: contains, path: content, reference: "00-"}}]
cases: [{{id: a, input: {{question: hi}}}}, {{id: b, input: {{question: ho}}}}]
""")
        result, _ = run(tmp_path)
        lines = read_jsonl(next(tmp_path.glob("r*.jsonl")))
    assert result.returncode == 0, result.stdout
    trace_ids = {(line["case_id"], line["target"]): line["trace_id"] for line in lines}
    assert len(trace_ids) == 6 and len(set(trace_ids.values())) == 6  # each case in each cell its own trace
    for line in lines:
        assert trace_id_of(line["output"]["content"]) == line["trace_id"]
    assert sorted(trace_id_of(header) for header in _Echo.seen) == sorted(
        trace_id for (_, target), trace_id in trace_ids.items() if target == "web")


# -- traces: {receive: true} ------------------------------------------------------------------------

AGENT = r'''
"""A support agent instrumented with the real OpenTelemetry SDK and OTLP/HTTP exporter, in the GenAI
conventions: invoke_agent > chat (asks for get_order), execute_tool get_order, chat (answers)."""
import json, os, sys
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
tracer = provider.get_tracer("support-agent")


def answer(question, traceparent):
    parent = TraceContextTextMapPropagator().extract({"traceparent": traceparent} if traceparent else {})
    order = int("".join(ch for ch in question if ch.isdigit()) or 0)
    with tracer.start_as_current_span("invoke_agent support", context=parent) as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
            chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                                 "gen_ai.usage.input_tokens": 9, "gen_ai.usage.output_tokens": 1})
        with tracer.start_as_current_span("execute_tool get_order") as tool:
            tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_order",
                                 "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": json.dumps({"id": order}),
                                 "gen_ai.tool.call.result": json.dumps({"status": "delivered"})})
        with tracer.start_as_current_span("chat gpt-4o-mini") as chat:
            reply = f"Order {order} is delivered."
            chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                                 "gen_ai.usage.input_tokens": 13, "gen_ai.usage.output_tokens": 3,
                                 "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": reply}]}])})
    return reply


if sys.argv[1:] == ["serve"]:  # a service behind an http target: the traceparent comes as a header
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            question = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["question"]
            body = json.dumps({"reply": answer(question, self.headers.get("traceparent"))}).encode()
            provider.force_flush()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
else:  # a command target: the traceparent comes as TRACEPARENT
    print(json.dumps({"content": answer(json.load(sys.stdin)["question"], os.environ.get("TRACEPARENT"))}))
    provider.shutdown()
'''

RECEIVE_SUITE = """
name: support-live
target: {target}
traces: {{receive: true{port}}}
evaluators:
  - {{type: tool_calls, path: tool_calls, calls: [{{name: get_order, arguments: {{id: 7}}}}]}}
  - {{type: contains, path: content, reference: delivered}}
  - {{type: spans, checks: [{{kind: model, count: 2}}, {{kind: tool, name: execute_tool get_order, count: 1}}]}}
cases:
  - {{id: seven, input: {{question: "Where is order 7?"}}}}
  - {{id: eight, input: {{question: "Where is order 8?"}}}}
"""


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def check_received(lines: dict) -> None:
    seven, eight = lines["seven"], lines["eight"]
    assert seven["verdict"] == "pass", seven
    assert seven["output"]["tool_calls"] == [
        {"name": "get_order", "arguments": {"id": 7}, "result": {"status": "delivered"}, "id": "call_1", "step": 1}]
    assert seven["output"]["trace_id"] == seven["trace_id"]
    assert (seven["output"]["usage"]["input_tokens"], seven["output"]["usage"]["output_tokens"]) == (22, 4)
    assert [span["kind"] for span in seven["output"]["spans"]] == ["agent", "model", "tool", "model"]
    # the other case called get_order with 8: its own spans, not the first case's
    assert eight["verdict"] == "fail" and eight["output"]["tool_calls"][0]["arguments"] == {"id": 8}


def test_a_command_agent_exporting_with_the_real_otlp_exporter_is_scored_on_its_received_spans(tmp_path):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    write(tmp_path, "agent.py", AGENT)
    write(tmp_path, "s.yaml", RECEIVE_SUITE.format(target=f"{{type: command, command: [{sys.executable}, agent.py]}}", port=""))
    result, lines = run(tmp_path, "--workers", "2")
    assert result.returncode == 1, result.stdout
    check_received(lines)
    assert lines["seven"]["output"]["content"] == "Order 7 is delivered."  # the reply's own content


def test_an_http_service_is_scored_on_the_tool_calls_it_really_made_not_only_its_reply(tmp_path):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    write(tmp_path, "agent.py", AGENT)
    port = free_port()
    env = {**os.environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces"}
    service = subprocess.Popen([sys.executable, str(tmp_path / "agent.py"), "serve"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        service_port = int(service.stdout.readline())
        target = f'{{type: http, url: "http://127.0.0.1:{service_port}/ask", response_path: reply, cache: false}}'
        write(tmp_path, "s.yaml", RECEIVE_SUITE.format(target=target, port=f", port: {port}"))
        result, lines = run(tmp_path)
    finally:
        service.terminate()
        service.wait(10)
    assert result.returncode == 1, result.stdout
    check_received(lines)
    assert lines["seven"]["output"]["content"] == "Order 7 is delivered."  # the reply (a string) is the content


def test_a_system_that_exports_nothing_makes_the_case_an_error_naming_the_wait(tmp_path):
    write(tmp_path, "agent.py", "import sys, json\nsys.stdin.read()\nprint(json.dumps({'content': 'no spans'}))\n")
    write(tmp_path, "s.yaml", RECEIVE_SUITE.format(
        target=f"{{type: command, command: [{sys.executable}, agent.py]}}", port=", wait_seconds: 0.2").replace(
        "  - {id: eight, input: {question: \"Where is order 8?\"}}\n", ""))
    result, lines = run(tmp_path)
    assert result.returncode == 3
    error = lines["seven"]["error"]
    found = re.match(r"traces: no span arrived for trace ([0-9a-f]{32}) \(traceparent 00-([0-9a-f]{32})-[0-9a-f]{16}-01\) ", error)
    assert found and found[1] == found[2] == lines["seven"]["trace_id"], error  # a case without an answer keeps its trace id
    assert "within 0.2 s (`traces.wait_seconds`): does the system export to http://127.0.0.1:" in error


# -- what evaluators make of a trace's answer -------------------------------------------------------


def test_the_conversation_evaluator_reads_the_turns_of_a_trace(tmp_path):
    write(tmp_path, "s.yaml", """
name: conversation-from-traces
target: {type: traces, file: spans.jsonl}
evaluators:
  - {type: conversation, max_turns: 1, facts: {order: 7}}
cases: [{id: c4fc954438a364ef5f26e52cc1138065}]
""")
    shutil.copy(FIXTURES / "openinference.jsonl", tmp_path / "spans.jsonl")
    result, lines = run(tmp_path)
    conversation = lines[OI_AGENT]["evaluator_results"][0]
    assert result.returncode == 0, conversation
    assert conversation["hits"] == ["turns taken: 1 (at most 1)", "no fact asked for again (order)"]
    assert conversation["details"]["turns"] == 1


def test_a_judge_is_shown_what_the_trace_said_and_did_never_its_spans_or_trace_id(tmp_path):
    from llm_server import LLMServer

    from agenteval.evaluators import EvalContext
    from agenteval.endpoints import Endpoints
    from agenteval.evaluators.model.llm_judge import LLMJudge
    from agenteval.traces.answer import trace_answer
    from agenteval.traces.index import index_file

    answer = trace_answer(index_file(FIXTURES / "genai.jsonl").spans(GENAI_AGENT))
    reply = json.dumps({"helpful": {"reasoning": "It looked the order up.", "score": "pass"}})
    with LLMServer(chat=lambda body: {"role": "assistant", "content": reply}) as server:
        judge = LLMJudge.model_validate({
            "type": "llm_judge", "base_url": server.base_url, "model": "grader", "backoff": 0.01,
            "criteria": [{"name": "helpful", "description": "Answers the question.", "scale": "pass_fail"}],
        })
        result = judge.evaluate(EvalContext("c", {"question": "Where is order 7?"}, None, answer, {}, tmp_path, None, Endpoints()))
        prompt = server.received[0].body["messages"][1]["content"]
    assert result.verdict == "pass"
    assert "Order 7 is delivered." in prompt and "get_order" in prompt  # what it said and the tool it called
    for hidden in (GENAI_AGENT, answer["spans"][0]["span_id"], '"spans"', "latency_ms"):
        assert hidden not in prompt


OI_RAG = "016a8c53538855b165984f58c59163e5"  # rag > retrieve (3 documents), ChatCompletion


def test_retriever_documents_become_the_contexts_a_faithfulness_judge_reads(tmp_path):
    from llm_server import LLMServer

    from agenteval.endpoints import Endpoints
    from agenteval.evaluators import EvalContext, evaluator_type
    from agenteval.traces.answer import trace_answer
    from agenteval.traces.index import index_file

    answer = trace_answer(index_file(FIXTURES / "openinference.jsonl").spans(OI_RAG))
    assert answer["contexts"] == [
        {"text": "Returns within 30 days.", "retriever": "retrieve", "id": "policy-1", "score": 0.9},
        {"text": "Refunds go to the card.", "retriever": "retrieve", "id": "policy-2", "score": 0.7},
        {"text": "Shipping is free over $50.", "retriever": "retrieve", "id": "policy-3", "score": 0.2},
    ]
    verdicts = {"claims": ["Returns take 30 days."], "verdicts": [{"claim": 1, "verdict": "supported", "evidence": "Returns within 30 days."}]}
    with LLMServer(chat=lambda body: {"role": "assistant", "content": json.dumps(verdicts)}) as server:
        for path in ({"path": "content"}, {}):  # (without `path`, a trace's answer is read at `content`: its reply)
            judge = evaluator_type("faithfulness").model_validate(
                {"type": "faithfulness", "base_url": server.base_url, "model": "grader", "backoff": 0.01, "retries": 0, **path})
            result = judge.evaluate(EvalContext("c", {"question": "How long do returns take?"}, None, answer, {}, tmp_path, None, Endpoints()))
            assert result.verdict == "pass" and result.score == 1.0, (path, result)
        prompts = [request.body["messages"][1]["content"] for request in server.received]
    assert len(prompts) == 2 and prompts[0] == prompts[1]
    assert "# Retrieved context\n[1] Returns within 30 days.\n\n[2] Refunds go to the card.\n\n[3] Shipping is free over $50." in prompts[0]


def test_a_genai_retrieval_span_gives_its_documents_as_contexts():
    from agenteval.traces.answer import trace_answer
    from agenteval.traces.otlp import Span

    documents = json.dumps([{"id": "doc-1", "score": 0.8, "content": "Returns within 30 days."}, {"id": "doc-2"}])
    span = Span("ab" * 16, "01" * 8, None, "retrieval shop-policies", 0, 1_000_000,
                {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": documents})
    answer = trace_answer([span])
    assert answer["contexts"] == [{"text": "Returns within 30 days.", "retriever": "retrieval shop-policies", "id": "doc-1", "score": 0.8}]
    assert answer["spans"][0]["kind"] == "retriever" and "gen_ai.retrieval.documents" not in answer["spans"][0]["attributes"]


# -- agenteval import traces ------------------------------------------------------------------------


def test_import_traces_writes_cases_to_fill_in_and_a_suite_that_runs(tmp_path):
    from conftest import run_cli

    done = run_cli("import", "traces", FIXTURES / "openinference.jsonl", "-o", tmp_path / "suite")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"{tmp_path / 'suite' / 'suite.yaml'}: ok (3 cases, 1 suite evaluator)"
    cases = {case["id"]: case for case in read_jsonl(tmp_path / "suite" / "cases.jsonl")}
    assert list(cases) == [OI_AGENT, "24191ce4a363a34151f910d88e928a36", OI_RAG]  # file order
    agent = cases[OI_AGENT]
    assert agent["input"] == "Where is order 7?" and agent["expected"] is None and agent["metadata"] == {"trace_id": OI_AGENT}
    assert agent["output"]["content"] == "Order 7 is delivered." and agent["output"]["tool_calls"][0]["name"] == "get_order"
    assert cases[OI_RAG]["output"]["contexts"][0]["text"] == "Returns within 30 days."
    ran = run_cli("run", tmp_path / "suite", "-o", tmp_path / "out.jsonl", "-q")
    assert ran.returncode == 0, ran.stderr
    assert [line["verdict"] for line in read_jsonl(tmp_path / "out.jsonl")] == ["pass"] * 3


def test_import_traces_by_session_makes_one_case_per_session(tmp_path):
    from conftest import run_cli

    done = run_cli("import", "traces", FIXTURES / "openinference.jsonl", "-o", tmp_path / "s", "--match", "session_id", "--max-cases", "2")
    assert done.returncode == 0, done.stderr
    cases = read_jsonl(tmp_path / "s" / "cases.jsonl")
    assert [(case["id"], case["metadata"]) for case in cases] == [
        ("session-refund-7", {"session_id": "session-refund-7"}), ("session-hello", {"session_id": "session-hello"})]
    assert f"note: {FIXTURES / 'openinference.jsonl'}: traces: 1 trace(s) past --max-cases 2" in done.stderr
    done = run_cli("import", "traces", FIXTURES / "genai.jsonl", "-o", tmp_path / "g", "--match", "session_id")
    assert done.returncode == 0, done.stderr
    assert [case["id"] for case in read_jsonl(tmp_path / "g" / "cases.jsonl")] == ["conversation-refund-7"]
    assert f"not carried over: {FIXTURES / 'genai.jsonl'}: traces: 1 trace(s) have no session_id: 9f34127367a143ec89db667fb0c39753" in done.stderr


def test_an_async_python_target_gets_a_traceparent_per_case_recorded_in_the_result(tmp_path):
    write(tmp_path, "task.py", "import agenteval\n\nasync def answer(question):\n    return {'content': agenteval.current_run().traceparent}\n")
    write(tmp_path, "s.yaml", """
name: async-propagation
target: {type: python, function: "task:answer"}
evaluators: [{type: contains, path: content, reference: "00-"}]
cases: [{id: a, input: {question: hi}}, {id: b, input: {question: ho}}]
""")
    result, lines = run(tmp_path)
    assert result.returncode == 0, result.stdout
    assert len({line["trace_id"] for line in lines.values()}) == 2
    for line in lines.values():
        assert trace_id_of(line["output"]["content"]) == line["trace_id"]


def test_the_pytest_plugin_takes_traces_as_a_marker_setting(tmp_path):
    from test_pytest_plugin import pytest_run

    shutil.copy(FIXTURES / "openinference.jsonl", tmp_path / "spans.jsonl")
    write(tmp_path, "suite.yaml", LIVE_SUITE.replace("cases: cases.jsonl", "cases: [{id: refund, metadata: {session_id: session-refund-7}}]"))
    write(tmp_path, "test_production.py", '''
import pytest
from agenteval.testing import assert_passed

@pytest.mark.agenteval(suite="suite.yaml", traces="spans.jsonl", traces_match="session_id")
def test_production_traces(agenteval_run):
    results = agenteval_run()
    assert [result.output["tool_calls"][0]["name"] for result in results] == ["get_order"]
    assert_passed(results)
''')
    done = pytest_run(tmp_path, "-p", "no:cacheprovider", "test_production.py")
    assert "1 passed" in done.stdout, done.stdout[-3000:]
