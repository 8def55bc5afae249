"""Hostile input to the gemini target: keys that would send a request elsewhere, and replies from a
Gemini server that are no answer (wrong shapes, non-finite numbers, an endless body). Each is a
clear error at load (exit 2) or that case's `error` verdict, never cached, and the run goes on."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, serving, write
from gemini_server import GeminiServer
from llm_server import Fault
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.endpoints import Endpoints
from agenteval.process import Processes
from agenteval.targets import GeminiTarget, TargetRun

KEY = {"GEMINI_API_KEY": "AIza-faults-1234"}


def run(tmp_path, *args, env=KEY):
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q", *map(str, args)], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return SimpleNamespace(returncode=result.exit_code, stderr=result.stderr), {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def suite(tmp_path, server_url, target="", cases='[{id: a, input: "x"}, {id: b, input: "y"}]'):
    return write(tmp_path, "s.yaml", f"""
name: hostile
target:
  type: gemini
  base_url: "{server_url}"
  model: gemini-test
  temperature: 0
  retries: 0
{target}
evaluators: [{{type: contains, path: content, reference: echo}}]
cases: {cases}
""")


@pytest.mark.parametrize(("target", "message"), [
    ("  vertex: {project: ../../other, location: us-central1}",
     "target.vertex.project: '../../other' is not a project id or a location (no slashes or spaces)"),
    ("  vertex: {project: p, location: 'us central1'}", "target.vertex.location: 'us central1' is not a location (`global` or a region such as us-central1)"),
    ("  vertex: {project: p, location: evil.example/x}", "target.vertex.location: 'evil.example/x' is not a location (`global` or a region such as us-central1)"),
    ("  vertex: {location: us-central1}", "target.vertex.project: required key is missing"),
    ("  max_tokens: -5", "target.max_tokens: must be >= 1, got -5"),
    ("  timeout: .nan", "target.timeout: must be a finite number, got nan"),
])
def test_a_bad_gemini_key_is_refused_at_load_with_file_and_line(tmp_path, target, message):
    path = suite(tmp_path, "http://127.0.0.1:9", target)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2, result.stderr
    first = result.stderr.splitlines()[0]
    assert first == f"{path}:8: {message}", first


def test_a_vertex_project_from_the_environment_cannot_leave_its_path_segment(tmp_path):
    with GeminiServer() as server:
        suite(tmp_path, server.url, '  vertex: {project: "${HOSTILE_PROJECT}", location: global}\n  headers: {Authorization: "Bearer ${TOKEN}"}',
              '[{id: a, input: "x"}]')
        done, lines = run(tmp_path, env={"HOSTILE_PROJECT": "p?alt=media#..%2F", "TOKEN": server.token})
        paths = [request.path for request in server.received]
        refused, refusals = run(tmp_path, "--no-cache", env={"HOSTILE_PROJECT": "p/../../v1beta/models/x", "TOKEN": server.token})
        assert server.count() == 1
    assert done.returncode == 0, lines
    assert paths == ["/v1/projects/p%3Falt%3Dmedia%23..%252F/locations/global/publishers/google/models/gemini-test:generateContent"]
    assert refused.returncode == 3
    assert refusals["a"]["error"] == "vertex.project: 'p/../../v1beta/models/x' is not a project id or a location (no slashes or spaces)"
    # a location names the host requests go to: one read from the environment that would change it is refused
    suite(tmp_path, "http://127.0.0.1:9", '  vertex: {project: p, location: "${HOSTILE_LOCATION}"}', '[{id: a, input: "x"}]')
    done, lines = run(tmp_path, env={"HOSTILE_LOCATION": "evil.example/x"})
    assert done.returncode == 3
    assert lines["a"]["error"] == "vertex.location: 'evil.example/x' is not a location (`global` or a region such as us-central1)"


USAGE = {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}
REPLIES = {
    "not_an_object": ([1, 2], "the reply is not a JSON object: '[1, 2]'"),
    "candidates_a_mapping": ({"candidates": {"0": {}}, "usageMetadata": USAGE}, "the reply's candidates are not a list: \"{'0': {}}\""),
    "parts_a_string": ({"candidates": [{"content": {"parts": "echo"}, "finishReason": "STOP"}], "usageMetadata": USAGE},
                       "the reply's content.parts is not a list: 'echo'"),
    "candidate_not_a_mapping": ({"candidates": ["x"], "usageMetadata": USAGE}, "the reply's candidates[0] is not a candidate: 'x'"),
    "text_not_a_string": ({"candidates": [{"content": {"parts": [{"text": 7}]}, "finishReason": "STOP"}], "usageMetadata": USAGE},
                          "the reply's parts[0] has a text that is not a string"),
    "args_not_an_object": ({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": [1]}}]}, "finishReason": "STOP"}],
                            "usageMetadata": USAGE}, "the reply's parts[0] is a functionCall without a name and object args: \"{'name': 'f', 'args': [1]}\""),
    "cut_before_any_text": ({"candidates": [{"content": {"role": "model", "parts": [{"text": "hmm", "thought": True}]}, "finishReason": "MAX_TOKENS"}],
                             "usageMetadata": {"promptTokenCount": 1, "thoughtsTokenCount": 8}},
                            "the reply was cut at max_tokens before it said anything (a thinking model's thoughts count against it: raise `max_tokens`)"),
    "negative_tokens": ({"candidates": [{"content": {"parts": [{"text": "echo"}]}, "finishReason": "STOP"}],
                         "usageMetadata": {"promptTokenCount": -1}}, "the reply's usageMetadata lacks promptTokenCount"),
    "huge_float_tokens": ({"candidates": [{"content": {"parts": [{"text": "echo"}]}, "finishReason": "STOP"}],
                           "usageMetadata": {"promptTokenCount": 1e308}}, "the reply's usageMetadata lacks promptTokenCount"),
}


@pytest.mark.parametrize("fault", list(REPLIES))
def test_a_gemini_reply_that_is_no_answer_is_that_cases_error_and_never_cached(tmp_path, fault):
    reply, error = REPLIES[fault]
    with GeminiServer() as server:
        suite(tmp_path, server.url)
        server.fail(Fault("status", 200, body=json.dumps(reply)))
        done, lines = run(tmp_path, "--workers", "1")
        assert done.returncode == 3
        assert lines["a"]["verdict"] == "error" and lines["a"]["error"].startswith(f"gemini target: {error}"), lines["a"]["error"]
        assert lines["b"]["verdict"] == "pass"  # the run went on
        again, relines = run(tmp_path, "--workers", "1")
        assert relines["a"]["verdict"] == "pass" and server.count() == 3  # the bad reply was not cached


@pytest.mark.parametrize("values", [[float("nan"), 1.0], [1e309, 1.0], ["1", 2.0], []])
def test_a_gemini_embedding_that_is_not_finite_numbers_is_an_error(tmp_path, values):
    body = json.dumps({"embeddings": [{"values": values}]}).replace("Infinity", "1e999")
    with GeminiServer() as server:
        server.fail(Fault("status", 200, body=body))
        target = GeminiTarget.model_validate({"type": "gemini", "base_url": server.url, "model": "gemini-embedding-001", "retries": 0})
        endpoints = Endpoints(environ=KEY)
        reply = target.embed(["a"], TargetRun(tmp_path, Processes(), endpoints))
        healthy = target.embed(["a"], TargetRun(tmp_path, Processes(), endpoints))
        endpoints.close()
    assert reply.vectors == [] and reply.error == "gemini target: the reply's embeddings[0] has no list of finite numbers in `values`"
    assert healthy.error is None and all(math.isfinite(v) for v in healthy.vectors[0])


def test_an_endless_gemini_reply_is_cut_at_max_response_mb(tmp_path):
    with GeminiServer() as server:
        suite(tmp_path, server.url, "  max_response_mb: 1", '[{id: a, input: "x"}]')
        server.fail(Fault("endless"))
        done, lines = run(tmp_path)
    assert done.returncode == 3
    assert lines["a"]["error"].endswith("the reply is larger than 1 MiB (max_response_mb)")


@pytest.mark.parametrize(("target", "error"), [
    ("  response_format: {type: yaml}", "response_format: \"{'type': 'yaml'}\" is not text, json_object, json_schema"),
    ("  response_format: {type: json_schema, json_schema: 7}", "response_format: json_schema needs `json_schema: {schema: {...}}`"),
    ("  tools: [{name: f}]\n  tool_choice: sometimes", "tool_choice: 'sometimes' is not auto, required (any), none or a function"),
])
def test_a_request_the_gemini_api_cannot_take_is_that_cases_error_and_nothing_is_sent(tmp_path, target, error):
    with GeminiServer() as server:
        suite(tmp_path, server.url, target, '[{id: a, input: "x"}]')
        done, lines = run(tmp_path)
        assert done.returncode == 3 and server.count() == 0
    assert lines["a"]["error"].startswith(error), lines["a"]["error"]


def test_a_token_endpoint_that_trickles_or_floods_is_that_cases_error_in_bounded_time_and_memory(tmp_path):
    """Vertex AI's token request to a `token_uri` that sends a byte every 0.5 s, or 300 MB: each
    request ends within the target's `timeout` (it waited for each byte: 158 s) and after 1 MiB
    (the whole reply was read: 1.6 GB); the case's error says so."""
    import time
    from http.server import BaseHTTPRequestHandler

    from gemini_server import service_account_file

    class Token(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                if self.path == "/trickle":
                    for _ in range(120):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.5)
                else:
                    for _ in range(300):
                        self.wfile.write(b" " * (1 << 20))
            except OSError:
                pass

        def log_message(self, *args):
            pass

    with serving(Token) as server:
        for name in ("trickle", "flood"):
            folder = tmp_path / name
            folder.mkdir()
            credentials = service_account_file(folder, f"http://127.0.0.1:{server.server_port}/{name}")
            write(folder, "s.yaml", """
                name: vx
                target: {type: gemini, model: gemini-test, vertex: {project: acme-evals, location: europe-west4}, timeout: 2, retries: 0}
                evaluators: [{type: contains, path: content, reference: x}]
                cases: [{id: a, input: hi}]
            """)
            started = time.monotonic()
            done = _run_vertex(folder, {"GOOGLE_APPLICATION_CREDENTIALS": str(credentials)})
            took = time.monotonic() - started
            assert done.returncode == 3, (name, done.stderr)
            [line] = read_jsonl(folder / "r.jsonl")
            assert "the Google credentials could not be refreshed" in line["error"], line["error"]
            assert ("did not answer whole within 2 s" if name == "trickle" else "is larger than 1 MiB") in line["error"], line["error"]
            assert took < 40, (name, took)


def _run_vertex(folder, env):
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "agenteval", "run", str(folder / "s.yaml"), "-o", str(folder / "r.jsonl"), "-q", "--no-cache"],
                          env={**{k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}, **env}, capture_output=True, text=True, timeout=120)
