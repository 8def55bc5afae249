"""--otel: one span per case and one per evaluator, through the OpenTelemetry SDK.

In-process the spans go to the SDK's in-memory exporter (an application's own provider is
used); the CLI exports them over OTLP/HTTP to a real server on 127.0.0.1, configured only by
the standard OTEL_* environment variables.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime
from http.server import BaseHTTPRequestHandler

import pytest
from conftest import read_jsonl, serving, write
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agenteval.execute import RunOptions, execute


def traced_suite(folder):
    write(folder, "judges.py", """
        def strict(payload):
            if payload["case_id"] == "boom":
                raise ValueError("cannot judge this one")
            return {"score": 1.0 if payload["candidate_answer"] == payload["reference_answer"] else 0.0,
                    "misses": [] if payload["candidate_answer"] == payload["reference_answer"] else ["answer", "format"]}
    """)
    return write(folder, "suite.yaml", """
        name: traced
        evaluators:
          - {name: same, type: equals}
          - {name: judge, type: python, function: "judges:strict"}
        cases:
          - {id: ok, expected: "4", output: "4", metadata: {agent_id: bot-7, session_id: s-1}}
          - {id: wrong, expected: "4", output: "5"}
          - {id: boom, expected: "4", output: "4"}
    """)


@pytest.fixture(scope="module")
def exporter():
    """The application's provider (set once per process, as applications do) with an in-memory exporter."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    return memory


def test_a_span_per_case_and_per_evaluator_with_scores_and_verdicts(tmp_path, exporter):
    exporter.clear()
    suite = traced_suite(tmp_path)
    assert execute(RunOptions(suite=suite, output=str(tmp_path / "out.jsonl"), otel=True, quiet=True)) == 3
    spans = exporter.get_finished_spans()
    cases = {span.attributes["agenteval.case_id"]: span for span in spans if span.name == "agenteval.case"}
    evaluators = [span for span in spans if span.name == "agenteval.evaluator"]
    assert sorted(cases) == ["boom", "ok", "wrong"] and len(evaluators) == 6 and len(spans) == 9
    results = {line["case_id"]: line for line in read_jsonl(tmp_path / "out.jsonl")}

    ok = cases["ok"]
    assert {key: ok.attributes[key] for key in ("agenteval.suite", "agenteval.score", "agenteval.verdict", "agenteval.agent_id", "agenteval.session_id")} == {
        "agenteval.suite": "traced", "agenteval.score": 1.0, "agenteval.verdict": "pass",
        "agenteval.agent_id": "bot-7", "agenteval.session_id": "s-1",
    }
    assert ok.attributes["agenteval.run_id"] == results["ok"]["run_id"]
    assert ok.end_time - ok.start_time == int(results["ok"]["duration_ms"] * 1_000_000)
    assert ok.end_time == int(datetime.fromisoformat(results["ok"]["timestamp"]).timestamp() * 1_000_000_000)

    wrong_judge = next(s for s in evaluators if s.attributes["agenteval.case_id"] == "wrong" and s.attributes["agenteval.evaluator.name"] == "judge")
    assert {key: wrong_judge.attributes[key] for key in ("agenteval.evaluator.type", "agenteval.score", "agenteval.verdict", "agenteval.misses_count")} == {
        "agenteval.evaluator.type": "python", "agenteval.score": 0.0, "agenteval.verdict": "fail", "agenteval.misses_count": 2,
    }
    assert wrong_judge.parent.span_id == cases["wrong"].context.span_id
    assert wrong_judge.context.trace_id == cases["wrong"].context.trace_id

    boom_judge = next(s for s in evaluators if s.attributes["agenteval.case_id"] == "boom" and s.attributes["agenteval.evaluator.name"] == "judge")
    assert boom_judge.status.status_code == StatusCode.ERROR
    assert boom_judge.attributes["agenteval.error"].startswith("judges:strict raised ValueError: cannot judge this one")
    assert cases["boom"].status.status_code == StatusCode.ERROR and cases["wrong"].status.status_code == StatusCode.UNSET

    for case_id, case_span in cases.items():
        own = sorted((s for s in evaluators if s.attributes["agenteval.case_id"] == case_id), key=lambda s: s.start_time)
        assert [s.attributes["agenteval.evaluator.name"] for s in own] == ["same", "judge"]  # in the order they ran
        assert case_span.start_time <= own[0].start_time and own[0].end_time == own[1].start_time and own[1].end_time == case_span.end_time
        recorded = [e["duration_ms"] for e in results[case_id]["evaluator_results"]]
        assert [s.attributes["agenteval.duration_ms"] for s in own] == recorded


class _Collector(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.requests.append((self.path, self.headers.get("Content-Type"), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_the_cli_exports_over_otlp_http_as_the_environment_says(tmp_path):
    with serving(_Collector) as server:
        server.requests = []
        env = {
            **os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "nightly-evals",
        }
        suite = traced_suite(tmp_path)
        done = subprocess.run(
            [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(tmp_path / "out.jsonl"), "--otel", "-q"],
            env=env, capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 3, done.stderr
    assert {(path, kind) for path, kind, _ in server.requests} == {("/v1/traces", "application/x-protobuf")}
    spans, services = [], set()
    for _, _, body in server.requests:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            services |= {a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"}
            spans += [span for scope in resource_spans.scope_spans for span in scope.spans]
    assert services == {"nightly-evals"}
    assert sorted(span.name for span in spans) == ["agenteval.case"] * 3 + ["agenteval.evaluator"] * 6
    verdicts = {
        next(a.value.string_value for a in span.attributes if a.key == "agenteval.case_id"):
        next(a.value.string_value for a in span.attributes if a.key == "agenteval.verdict")
        for span in spans if span.name == "agenteval.case"
    }
    assert verdicts == {line["case_id"]: line["verdict"] for line in read_jsonl(tmp_path / "out.jsonl")}
    assert verdicts == {"ok": "pass", "wrong": "fail", "boom": "error"}
