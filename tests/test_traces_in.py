"""Traces into a run: `--traces FILE` for any suite, the W3C traceparent a live case sends, and the
spans a live system exports received into its answer (`traces: {receive: true}`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from agenteval.api import RunError, run_suite
from agenteval.cli import app
from agenteval.traces.propagation import new_traceparent, parent_id_of, trace_id_of
from conftest import read_jsonl, write

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
    assert "--traces-match: Value error, give `trace_id`, `session_id` or `attribute NAME`" in result.stderr


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
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Echo.seen.clear()
    try:
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
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stdout
    trace_ids = {(line["case_id"], line["target"]): line["usage"]["trace_id"] for line in lines}
    assert len(trace_ids) == 6 and len(set(trace_ids.values())) == 6  # each case in each cell its own trace
    for line in lines:
        assert trace_id_of(line["output"]["content"]) == line["usage"]["trace_id"]
    assert sorted(trace_id_of(header) for header in _Echo.seen) == sorted(
        trace_id for (_, target), trace_id in trace_ids.items() if target == "web")
