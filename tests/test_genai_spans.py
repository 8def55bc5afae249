"""--otel in the OpenTelemetry GenAI conventions: a client span per model request (targets, tool
loops, judges, embeddings), an `execute_tool` span per tool call, a `gen_ai.evaluation.result`
event per verdict. Real runs in a subprocess against fake model servers on 127.0.0.1, exporting
over OTLP/HTTP to a receiver on 127.0.0.1."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import read_jsonl, write
from llm_server import LLMServer, calls
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from otlp_receiver import OTLPReceiver, run_traced

CLIENT, INTERNAL = 3, 1  # OTLP span kinds
GOOD = json.dumps({"correct": {"reasoning": "It says the order shipped.", "score": "pass"}})
ORDER_TOOL = {
    "name": "get_order", "description": "Look an order up by its id.",
    "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    "mock": [{"when": {"id": 7}, "result": {"id": 7, "status": "shipped"}}],
}


def agent_suite(folder, model_server, judge_server):
    write(folder, "tools.py", """
        def broken(**arguments):
            raise KeyError("the archive is offline")
    """)
    suite = {
        "name": "spans",
        "target": {"type": "openai", "base_url": model_server.base_url, "model": "m1", "backoff": 0.01, "temperature": 0,
                   "tools": [ORDER_TOOL, {"name": "broken", "python": "tools:broken"}]},
        "evaluators": [
            {"name": "judge", "type": "llm_judge", "base_url": judge_server.base_url, "model": "grader", "backoff": 0.01, "path": "content",
             "criteria": [{"name": "correct", "description": "Says where the order is.", "scale": "pass_fail"}]},
            {"name": "similar", "type": "semantic_similarity", "base_url": judge_server.base_url, "model": "embedder", "path": "content"},
            {"name": "mentions", "type": "contains", "path": "content", "reference": "lost"},
        ],
        "cases": [{"id": "order", "input": "where is order 7?", "expected": "Order 7 has shipped."}],
    }
    return write(folder, "suite.yaml", json.dumps(suite))


def play_agent(server):
    server.play(calls(("get_order", {"id": 7}), ("broken", {})), {"role": "assistant", "content": "Order 7 has shipped."})


def by_name(spans, prefix):
    return [span for span in spans if span.name.startswith(prefix)]


def test_model_tool_and_evaluation_spans_of_a_tool_loop_case(tmp_path):
    with LLMServer() as model, LLMServer(chat=lambda body: {"role": "assistant", "content": GOOD}) as judge, OTLPReceiver() as receiver:
        play_agent(model)
        suite = agent_suite(tmp_path, model, judge)
        done = run_traced(suite, receiver, tmp_path, "-o", "out.jsonl")
        assert done.returncode == 1, done.stderr  # `mentions` fails
        spans = receiver.spans()
    (case,) = by_name(spans, "agenteval.case")
    chats, tools, embeddings = by_name(spans, "chat "), by_name(spans, "execute_tool "), by_name(spans, "embeddings ")
    # two model steps of the loop, one judge request; one embeddings request for both texts
    assert sorted(span.name for span in chats) == ["chat grader", "chat m1", "chat m1"] and len(embeddings) == 1
    for span in chats + tools + embeddings:  # every one under the case's span, in its trace
        assert (span.trace_id, span.parent_span_id) == (case.trace_id, case.span_id)
    step = next(span for span in chats if span.name == "chat m1")
    assert step.kind == CLIENT
    assert {key: step.attributes[key] for key in (
        gen_ai.GEN_AI_OPERATION_NAME, gen_ai.GEN_AI_PROVIDER_NAME, gen_ai.GEN_AI_REQUEST_MODEL, gen_ai.GEN_AI_RESPONSE_MODEL,
        gen_ai.GEN_AI_RESPONSE_ID, gen_ai.GEN_AI_RESPONSE_FINISH_REASONS, "server.address", "agenteval.cache_hit",
    )} == {
        gen_ai.GEN_AI_OPERATION_NAME: "chat", gen_ai.GEN_AI_PROVIDER_NAME: "openai", gen_ai.GEN_AI_REQUEST_MODEL: "m1",
        gen_ai.GEN_AI_RESPONSE_MODEL: "m1", gen_ai.GEN_AI_RESPONSE_ID: "chatcmpl-test",
        gen_ai.GEN_AI_RESPONSE_FINISH_REASONS: ["tool_calls"], "server.address": "127.0.0.1", "agenteval.cache_hit": False,
    }
    assert step.attributes["server.port"] == int(model.url.rsplit(":", 1)[1])
    # the tokens are the server's counts, as the answer's usage adds them up
    usage = read_jsonl(tmp_path / "out.jsonl")[0]["usage"]
    loop = [span for span in chats if span.name == "chat m1"]
    assert sum(span.attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] for span in loop) == usage["input_tokens"] > 0
    assert sum(span.attributes[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] for span in loop) == usage["output_tokens"] > 0
    assert embeddings[0].attributes[gen_ai.GEN_AI_OPERATION_NAME] == "embeddings"
    assert embeddings[0].attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] > 0
    # no content without the opt-in
    assert not any(key in span.attributes for span in spans for key in (
        gen_ai.GEN_AI_INPUT_MESSAGES, gen_ai.GEN_AI_OUTPUT_MESSAGES, gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS, gen_ai.GEN_AI_TOOL_CALL_RESULT))

    tool = {span.attributes[gen_ai.GEN_AI_TOOL_NAME]: span for span in tools}
    assert sorted(tool) == ["broken", "get_order"]
    assert tool["get_order"].attributes[gen_ai.GEN_AI_TOOL_CALL_ID] == "call_1_get_order"
    assert tool["get_order"].attributes[gen_ai.GEN_AI_OPERATION_NAME] == "execute_tool" and "error.type" not in tool["get_order"].attributes
    assert tool["broken"].attributes["error.type"] == "tool_error" and tool["broken"].status_code == 2
    assert "archive is offline" in tool["broken"].status_message

    events = {attrs[gen_ai.GEN_AI_EVALUATION_NAME]: attrs for name, attrs in case.events if name == "gen_ai.evaluation.result"}
    assert sorted(events) == ["judge", "mentions", "similar"]
    assert events["judge"] == {
        gen_ai.GEN_AI_EVALUATION_NAME: "judge", gen_ai.GEN_AI_EVALUATION_SCORE_VALUE: 1.0, gen_ai.GEN_AI_EVALUATION_SCORE_LABEL: "pass",
        gen_ai.GEN_AI_EVALUATION_EXPLANATION: "correct: It says the order shipped.", gen_ai.GEN_AI_RESPONSE_ID: "chatcmpl-test",
    }
    assert events["mentions"][gen_ai.GEN_AI_EVALUATION_SCORE_LABEL] == "fail" and events["mentions"][gen_ai.GEN_AI_EVALUATION_SCORE_VALUE] == 0.0
    assert events["mentions"][gen_ai.GEN_AI_EVALUATION_EXPLANATION]  # the first miss


def test_a_replayed_request_is_marked_and_a_failed_one_has_its_error_type(tmp_path):
    with LLMServer() as model, LLMServer(chat=lambda body: {"role": "assistant", "content": GOOD}) as judge:
        play_agent(model)
        suite = agent_suite(tmp_path, model, judge)
        with OTLPReceiver() as receiver:
            assert run_traced(suite, receiver, tmp_path, "-o", "first.jsonl").returncode == 1
        with OTLPReceiver() as receiver:  # the same conversation again: every model request comes from the cache
            assert run_traced(suite, receiver, tmp_path, "-o", "again.jsonl").returncode == 1
            replayed = receiver.spans()
        sent = len(model.received)
    steps = by_name(replayed, "chat ") + by_name(replayed, "embeddings ")
    assert len(steps) == 4 and all(span.attributes["agenteval.cache_hit"] is True for span in steps)
    assert sent == 2  # the replay sent nothing
    assert all(span.attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] > 0 for span in steps if span.name.startswith("chat"))

    failing = write(tmp_path / "down", "suite.yaml", json.dumps({
        "name": "down", "target": {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m1", "retries": 0},
        "evaluators": [{"type": "contains", "path": "content", "reference": "x"}], "cases": [{"id": "a", "input": "hi"}],
    }))
    with OTLPReceiver() as receiver:
        assert run_traced(failing, receiver, tmp_path / "down", "-o", "out.jsonl", "--no-cache").returncode == 3
        spans = receiver.spans()
    (step,) = by_name(spans, "chat ")
    assert step.attributes["error.type"] == "_OTHER" and step.status_code == 2 and "ConnectError" in step.status_message
    (case,) = by_name(spans, "agenteval.case")
    assert step.parent_span_id == case.span_id


def test_the_messages_api_and_content_only_when_asked(tmp_path):
    secret = "sk-ant-content-secret-0042"

    def blocks(body):
        if not any(isinstance(m.get("content"), list) for m in body["messages"]):
            return [{"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"id": 7}}]
        return [{"type": "text", "text": "Order 7 has shipped."}]

    with LLMServer(messages=blocks) as server, OTLPReceiver() as receiver:
        suite = write(tmp_path, "suite.yaml", json.dumps({
            "name": "claude", "target": {"type": "anthropic", "base_url": server.url, "model": "claude-x", "api_key_env": "ANT_KEY",
                                         "messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "{{ input }}"}],
                                         "tools": [ORDER_TOOL]},
            "evaluators": [{"type": "contains", "path": "content", "reference": "shipped"}],
            "cases": [{"id": "a", "input": "where is order 7?"}],
        }))
        done = run_traced(suite, receiver, tmp_path, "-o", "out.jsonl", env={
            "ANT_KEY": secret, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
        assert done.returncode == 0, done.stderr
        spans = receiver.spans()
    first, second = sorted(by_name(spans, "chat claude-x"), key=lambda span: span.attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS])
    assert first.attributes[gen_ai.GEN_AI_PROVIDER_NAME] == "anthropic" and first.attributes[gen_ai.GEN_AI_RESPONSE_ID] == "msg_test"
    assert first.attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] == ["tool_use"]
    assert second.attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] == ["end_turn"]
    assert json.loads(first.attributes[gen_ai.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "where is order 7?"}]}]
    assert json.loads(first.attributes[gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS]) == [{"type": "text", "content": "Answer briefly."}]
    assert json.loads(second.attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "Order 7 has shipped."}], "finish_reason": "end_turn"}]
    (tool,) = by_name(spans, "execute_tool")
    assert json.loads(tool.attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"id": 7}
    assert json.loads(tool.attributes[gen_ai.GEN_AI_TOOL_CALL_RESULT]) == {"id": 7, "status": "shipped"}
    assert secret not in str([span.attributes for span in spans])


def renamed_or_removed() -> dict[str, str]:
    """Attribute names the semconv package marks as replaced by another name or removed: the
    constant's value, and its docstring's word on it (names that only moved repository stay)."""
    tree = ast.parse(inspect.getsource(gen_ai))
    found, body = {}, tree.body
    for node, following in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Constant) and isinstance(following, ast.Expr):
            doc = str(following.value.value).strip()
            if doc.startswith("Deprecated:") and ("Replaced by" in doc or "Removed" in doc):
                found[node.value.value] = doc
    return found


def test_no_name_the_conventions_renamed_or_removed_is_emitted(tmp_path):
    old = renamed_or_removed()
    assert {"gen_ai.system", "gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens"} <= set(old)  # the walk finds them
    with LLMServer() as model, LLMServer(chat=lambda body: {"role": "assistant", "content": GOOD}) as judge, OTLPReceiver() as receiver:
        play_agent(model)
        suite = agent_suite(tmp_path, model, judge)
        run_traced(suite, receiver, tmp_path, "-o", "out.jsonl", env={"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
        spans = receiver.spans()
    emitted = {key for span in spans for key in span.attributes} | {key for span in spans for _, attrs in span.events for key in attrs}
    assert {gen_ai.GEN_AI_PROVIDER_NAME, gen_ai.GEN_AI_USAGE_INPUT_TOKENS, gen_ai.GEN_AI_EVALUATION_NAME} <= emitted
    assert {name: old[name] for name in emitted & set(old)} == {}


def test_the_python_api_traces_the_same_with_otel_true(tmp_path):
    with LLMServer() as model, LLMServer(chat=lambda body: {"role": "assistant", "content": GOOD}) as judge, OTLPReceiver() as receiver:
        play_agent(model)
        suite = agent_suite(tmp_path, model, judge)
        script = (
            "import agenteval, sys\n"
            f"run = agenteval.run_suite({str(suite)!r}, otel=True, output={str(tmp_path / 'api.jsonl')!r})\n"
            "print(run.tracing, run.summary['counts']['failed']); run.close(); print(run.otel_warning)\n"
        )
        done = subprocess.run([sys.executable, "-c", script], env={**os.environ, **receiver.env}, cwd=tmp_path,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        spans = receiver.spans()
    assert done.stdout.split() == ["True", "1", "None"]
    (case,) = by_name(spans, "agenteval.case")
    names = sorted(span.name for span in spans if span.parent_span_id == case.span_id and not span.name.startswith("agenteval."))
    assert names == ["chat grader", "chat m1", "chat m1", "embeddings embedder", "execute_tool broken", "execute_tool get_order"]
    assert sorted(attrs[gen_ai.GEN_AI_EVALUATION_NAME] for _, attrs in case.events) == ["judge", "mentions", "similar"]


MONITORED = '''
import json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import agenteval

memory = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(memory))
trace.set_tracer_provider(provider)

@agenteval.monitor([{"name": "polite", "type": "contains", "reference": "please"}], sample=1.0, otel=True)
def reply(text):
    return "please wait" if "order" in text else "no"

app = trace.get_tracer("app")
with app.start_as_current_span("handle request"):
    reply("my order")
reply("hello")
assert reply.monitor.close()
print(json.dumps([{
    "name": s.name, "trace": s.context.trace_id, "span": s.context.span_id, "parent": s.parent.span_id if s.parent else None,
    "events": [[e.name, dict(e.attributes)] for e in s.events], "case": s.attributes.get("agenteval.case_id"),
} for s in memory.get_finished_spans()]))
'''


def test_a_monitored_call_is_evaluated_inside_the_applications_span(tmp_path):
    done = subprocess.run([sys.executable, "-c", MONITORED], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    spans = json.loads(done.stdout)
    (request,) = [span for span in spans if span["name"] == "handle request"]
    cases = sorted((span for span in spans if span["name"] == "agenteval.case"), key=lambda span: span["case"])
    assert len(cases) == 2
    inside, alone = cases  # the first call was made in the application's span, the second outside any
    assert (inside["trace"], inside["parent"]) == (request["trace"], request["span"])
    assert alone["parent"] is None and alone["trace"] != request["trace"]
    assert [(name, attrs["gen_ai.evaluation.score.label"]) for name, attrs in inside["events"]] == [("gen_ai.evaluation.result", "pass")]
    assert [(name, attrs["gen_ai.evaluation.score.label"]) for name, attrs in alone["events"]] == [("gen_ai.evaluation.result", "fail")]


def test_an_mcp_tool_and_a_simulated_user_get_their_spans(tmp_path):
    hostile = str(Path(__file__).parent / "hostile_mcp_server.py")

    def agent(body):
        said = [m for m in body["messages"] if m["role"] == "tool"]
        return {"role": "assistant", "content": "noted"} if said else calls(("echo", {"x": 1}))

    def customer(body):
        return {"role": "assistant", "content": "GOAL_REACHED"}

    with LLMServer(chat=agent) as model, LLMServer(chat=customer) as user, OTLPReceiver() as receiver:
        suite = write(tmp_path, "suite.yaml", json.dumps({
            "name": "talk",
            "models": {"customer": {"base_url": user.base_url, "model": "persona"}},
            "target": {"type": "openai", "base_url": model.base_url, "model": "agent",
                       "tools": [{"mcp": {"command": [sys.executable, hostile]}, "tools": ["echo"]}]},
            "evaluators": [{"type": "conversation", "max_turns": 4}],
            "cases": [{"id": "chat", "input": "hi", "user": {"endpoint": "customer", "persona": "terse", "goal": "be heard",
                                                             "first_message": "hello", "max_turns": 2}}],
        }))
        done = run_traced(suite, receiver, tmp_path, "-o", "out.jsonl")
        assert done.returncode in (0, 1), done.stderr
        spans = receiver.spans()
    (case,) = by_name(spans, "agenteval.case")
    under = [span for span in spans if span.parent_span_id == case.span_id]
    assert {span.name for span in under} >= {"chat agent", "chat persona", "execute_tool echo"}
    (tool,) = by_name(spans, "execute_tool echo")
    assert tool.attributes[gen_ai.GEN_AI_TOOL_CALL_ID] == "call_1_echo" and "error.type" not in tool.attributes
    assert {span.attributes[gen_ai.GEN_AI_REQUEST_MODEL] for span in by_name(spans, "chat persona")} == {"persona"}


@pytest.mark.parametrize("vendor", ["bedrock", "azure_openai", "gemini"])
def test_the_vendor_apis_get_their_model_spans_by_their_provider_name(tmp_path, vendor):
    from gemini_server import GeminiServer
    from vendor_servers import AzureServer, BedrockServer

    operation = "chat"
    if vendor == "gemini":
        server = GeminiServer(gemini=lambda body, model: [{"text": "fine"}])
        env = {"GEMINI_API_KEY": "AIza-test-key"}
        target = {"type": "gemini", "model": "gemini-test", "retries": 0}
        provider, model, operation = "gcp.gemini", "gemini-test", "generate_content"
    elif vendor == "bedrock":
        server = BedrockServer(lambda body, model: {"text": "fine"}, credentials=("AKIDTESTTESTTEST", "secret-test", "token-test"))
        env = {"AWS_ACCESS_KEY_ID": "AKIDTESTTESTTEST", "AWS_SECRET_ACCESS_KEY": "secret-test", "AWS_SESSION_TOKEN": "token-test",
               "AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
               "AWS_EC2_METADATA_DISABLED": "true"}
        target = {"type": "bedrock", "model": "amazon.nova-lite-v1:0", "region": "us-east-1", "retries": 0}
        provider, model = "aws.bedrock", "amazon.nova-lite-v1:0"
    else:
        server = AzureServer(lambda body, deployment: {"content": "fine"}, key="azkey-test")
        env = {"AZURE_OPENAI_API_KEY": "azkey-test"}
        target = {"type": "azure_openai", "deployment": "gpt", "retries": 0}
        provider, model = "azure.ai.openai", None
    with server, OTLPReceiver() as receiver:
        target["base_url"] = server.url
        suite = write(tmp_path, "suite.yaml", json.dumps({
            "name": "vendor", "target": target, "evaluators": [{"type": "contains", "path": "content", "reference": "fine"}],
            "cases": [{"id": "a", "input": "hi"}],
        }))
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AZURE_"))}
        done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(suite), "--otel", "-q", "-o", "r.jsonl"],
                              env={**clean, **receiver.env, **env}, cwd=tmp_path, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
        spans = receiver.spans()
    (case,) = by_name(spans, "agenteval.case")
    (call,) = [span for span in spans if span.attributes.get(gen_ai.GEN_AI_PROVIDER_NAME) == provider]
    assert call.kind == CLIENT and call.parent_span_id == case.span_id
    assert call.attributes[gen_ai.GEN_AI_OPERATION_NAME] == operation
    if model:
        assert call.name == f"{operation} {model}" and call.attributes[gen_ai.GEN_AI_REQUEST_MODEL] == model
    usage = read_jsonl(tmp_path / "r.jsonl")[0]["usage"]
    assert call.attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] == usage["input_tokens"] > 0
    assert call.attributes[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] == usage["output_tokens"] > 0
    assert call.attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS]
