"""--otel into a real tracing backend: MLflow's tracking server (the `dev` extra) on 127.0.0.1
ingests the run over OTLP/HTTP, and its own client reads back what it made of it: model-call
spans with their token counts, tool spans, and each case's evaluation results.

The one slow test of tracing (the server takes tens of seconds to start on a busy machine); the
rest use an in-process OTLP receiver (tests/test_genai_spans.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
from conftest import read_jsonl
from llm_server import LLMServer
from test_genai_spans import GOOD, agent_suite, play_agent

START_SECONDS = 300  # a busy 2-core machine; it starts in 20-60 s


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_mlflow(folder):
    port = free_port()
    # no telemetry, and no background job runners (what a trace store needs is the server alone)
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    log = open(folder / "mlflow.log", "wb")  # noqa: SIM115 - closed with the server
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}", "--default-artifact-root", str(folder / "artifacts")],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_SECONDS
    try:
        while time.monotonic() < deadline:
            assert server.poll() is None, (folder / "mlflow.log").read_text()[-3000:]
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    # its first request sets the server up (tens of seconds on a busy machine): not the run's
                    warm = httpx.get(url + "/api/2.0/mlflow/experiments/get", params={"experiment_id": "0"}, timeout=START_SECONDS)
                    assert warm.json()["experiment"]["name"] == "Default", warm.text
                    return server, log, url
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"mlflow server did not start in {START_SECONDS} s: {(folder / 'mlflow.log').read_text()[-3000:]}")
    except BaseException:
        stop(server, log)
        raise


def stop(server, log):
    """The server and every process it started (its own session's group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(timeout=20)
            time.sleep(0.5)  # its children leave after it
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    log.close()


def test_a_tool_loop_run_is_read_back_from_mlflow_as_model_tool_and_evaluation_records(tmp_path):
    from mlflow import MlflowClient

    backend, log, url = start_mlflow(tmp_path)
    try:
        with LLMServer() as model, LLMServer(chat=lambda body: {"role": "assistant", "content": GOOD}) as judge:
            play_agent(model)
            suite = agent_suite(tmp_path, model, judge)
            env = {
                **os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_HEADERS": "x-mlflow-experiment-id=0", "OTEL_SERVICE_NAME": "agenteval-backend-test",
                "OTEL_EXPORTER_OTLP_TIMEOUT": "60",
            }
            done = subprocess.run(
                [sys.executable, "-m", "agenteval", "run", str(suite), "--otel", "-q", "-o", "out.jsonl"],
                env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
            )
            assert done.returncode == 1, done.stderr  # `mentions` fails
            assert "could not be exported" not in done.stderr and "no OpenTelemetry collector" not in done.stderr
        (trace,) = MlflowClient(tracking_uri=url).search_traces(locations=["0"], max_results=10)
    finally:
        stop(backend, log)
    spans = trace.data.spans
    result = read_jsonl(tmp_path / "out.jsonl")[0]

    # model calls: MLflow recognises them from the GenAI attributes, and counts their tokens
    chats = [span for span in spans if span.span_type == "CHAT_MODEL"]
    assert sorted(span.name for span in chats) == ["chat grader", "chat m1", "chat m1"]
    loop = [span for span in chats if span.name == "chat m1"]
    usage = [span.attributes["mlflow.chat.tokenUsage"] for span in loop]
    assert sum(u["input_tokens"] for u in usage) == result["usage"]["input_tokens"] > 0
    assert sum(u["output_tokens"] for u in usage) == result["usage"]["output_tokens"] > 0
    assert {span.attributes["gen_ai.provider.name"] for span in chats} == {"openai"}
    (embedding,) = [span for span in spans if span.span_type == "EMBEDDING"]
    assert embedding.attributes["mlflow.chat.tokenUsage"]["input_tokens"] > 0

    # tool calls, the failing one marked
    tools = {span.attributes["gen_ai.tool.name"]: span for span in spans if span.span_type == "TOOL"}
    assert sorted(tools) == ["broken", "get_order"]
    assert tools["broken"].attributes["error.type"] == "tool_error" and tools["broken"].status.status_code.value == "ERROR"
    assert tools["get_order"].attributes["gen_ai.tool.call.id"] == "call_1_get_order"

    # the case span holds one gen_ai.evaluation.result per verdict, as the results file has them
    (case,) = [span for span in spans if span.name == "agenteval.case"]
    assert all(span.parent_id == case.span_id for span in chats + list(tools.values()) + [embedding])
    events = {event.attributes["gen_ai.evaluation.name"]: event.attributes for event in case.events if event.name == "gen_ai.evaluation.result"}
    verdicts = {entry["name"]: entry for entry in result["evaluator_results"]}
    assert sorted(events) == sorted(verdicts) == ["judge", "mentions", "similar"]
    for name, attributes in events.items():
        assert attributes["gen_ai.evaluation.score.label"] == verdicts[name]["verdict"]
        assert attributes["gen_ai.evaluation.score.value"] == verdicts[name]["score"]
    assert events["judge"]["gen_ai.evaluation.explanation"] == "correct: It says the order shipped."
    assert json.dumps(case.attributes["agenteval.case_id"]) == '"order"'
