"""Secrets: targets and judges inherit the environment (documented), but no value from the
environment or from a command target's `env:` is ever written to results, summaries or reports."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
import zlib

import pytest

from conftest import run_cli, serving, write
from fault_suites import assert_no_traceback, cases_file

SEES_SECRETS = """
import json, os, sys
{read}
env_secret = os.environ.get("MY_SECRET_TOKEN", "")
suite_secret = os.environ.get("API_KEY", "")
{answer}
"""
# A target that fails prints its `env:` secret to stderr: the error message shows `***` instead.
TARGET_ANSWER = 'if case["fault"]:\n    sys.exit("failed with key " + suite_secret)\nprint(json.dumps({"a": case["q"], "saw_env": env_secret.startswith("hunter2-"), "saw_suite_env": suite_secret.startswith("sk-live-")}))'
JUDGE_ANSWER = 'print(json.dumps({"score": 1, "details": {"saw_env": env_secret.startswith("hunter2-")}}))'


FAULTS = [None, None, None, "leaks_key_to_stderr"]


def _secret_suite(folder, env_value: str):
    target = write(folder, "target.py", SEES_SECRETS.format(read="case = json.load(sys.stdin)", answer=TARGET_ANSWER))
    judge = write(folder, "judge.py", SEES_SECRETS.format(read="json.load(sys.stdin)", answer=JUDGE_ANSWER))
    cases_file(folder, FAULTS, recorded=False)
    suite = {
        "name": "secrets",
        "target": {"type": "command", "command": ["python", str(target)], "env": {"API_KEY": env_value}},
        "evaluators": [
            {"name": "fields", "type": "field_accuracy", "fields": [{"path": "a"}]},
            {"name": "judge", "type": "code_judge", "command": ["python", str(judge)]},
        ],
        "cases": "cases.jsonl",
    }
    return write(folder, "suite.yaml", json.dumps(suite))


@pytest.mark.parametrize("to_stdout", [False, True], ids=["results_file", "stdout"])
def test_secrets_reach_the_processes_but_never_any_output(tmp_path, to_stdout):
    env_secret = f"hunter2-{uuid.uuid4().hex}"
    suite_secret = f"sk-live-{uuid.uuid4().hex}"
    suite = _secret_suite(tmp_path, suite_secret)
    reports = tmp_path / "reports"
    reports.mkdir()
    out = "-" if to_stdout else reports / "r.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"} | {"MY_SECRET_TOKEN": env_secret}
    done = subprocess_run(suite, out, reports, env)
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr

    results_text = done.stdout if to_stdout else (reports / "r.jsonl").read_text()
    by_id = {line["case_id"]: line for line in map(json.loads, filter(str.strip, results_text.splitlines()))}
    answered = [by_id[case_id] for case_id in ("c0", "c1", "c2")]
    assert [line["output"]["saw_env"] for line in answered] == [True] * 3  # inherited, as documented
    assert [line["output"]["saw_suite_env"] for line in answered] == [True] * 3
    assert [line["evaluator_results"][1]["details"]["saw_env"] for line in answered] == [True] * 3
    assert "failed with key ***" in by_id["leaks_key_to_stderr"]["error"]

    written = {path.name: path.read_text() for path in reports.rglob("*") if path.is_file()}
    assert written, "nothing was written"
    if not to_stdout:
        assert "r.summary.json" in written
    written["<stdout>"], written["<stderr>"] = done.stdout, done.stderr
    for name, text in written.items():
        for secret in (env_secret, suite_secret):
            assert secret not in text, f"{secret[:8]}... is written to {name}"


def subprocess_run(suite, out, reports, env):
    """`agenteval run` with every report written into `reports`, in the given environment."""
    return subprocess.run(
        [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(out),
         "--junit", str(reports / "junit.xml"), "--markdown", str(reports / "report.md"), "--html", str(reports / "report.html")],
        cwd=suite.parent, env=env, capture_output=True, text=True, timeout=60, check=False,
    )


def test_report_of_the_results_shows_no_secret(tmp_path):
    """`agenteval report` reads back what the run wrote: the secret is not in there to show."""
    suite_secret = f"sk-live-{uuid.uuid4().hex}"
    suite = _secret_suite(tmp_path, suite_secret)
    out = tmp_path / "r.jsonl"
    done = run_cli("run", suite, "-o", out, "-q", cwd=tmp_path, timeout=60)
    assert done.returncode == 3, done.stderr
    shown = run_cli("report", out, "--json", cwd=tmp_path, timeout=30)
    assert shown.returncode == 3, shown.stderr
    assert suite_secret not in shown.stdout + shown.stderr


def test_a_suites_env_file_under_the_python_api_reaches_its_run_and_never_the_callers_environment(tmp_path):
    """`run_suite()` of two suites in one process, each with an `env_file:` naming the same variable:
    each suite's command target (its environment, and `${NAME}` in its command) and http target
    (`${NAME}` in a header) see that suite's value; the caller's os.environ never changes."""
    from llm_server import LLMServer

    for name in ("a", "b"):
        folder = tmp_path / name
        write(folder, ".env", f"SUITE_KEY=key-of-suite-{name}\n")
        write(folder, "t.py", "import json, os, sys\nsys.stdin.read()\nprint(json.dumps({'env': os.environ.get('SUITE_KEY'), 'arg': sys.argv[1]}))\n")
    script = write(tmp_path, "caller.py", """
        import json, os, sys
        import agenteval
        base = sys.argv[1]
        seen = {"before": os.environ.get("SUITE_KEY")}
        for name in ("a", "b"):
            suite = {"name": name, "env_file": ".env", "targets": {
                         "cmd": {"type": "command", "command": ["python", "t.py", "${SUITE_KEY}"]},
                         "svc": {"type": "http", "url": sys.argv[2] + "/svc", "headers": {"X-Key": "${SUITE_KEY}"}, "retries": 0}},
                     "evaluators": [{"type": "length", "min": 0}], "cases": [{"id": "c1", "input": {"q": 1}}]}
            path = os.path.join(base, name, "suite.yaml")
            open(path, "w").write(json.dumps(suite))
            seen[name] = {result.target: result.output for result in agenteval.run_suite(path, cache=False)}
            seen[name + "_after"] = os.environ.get("SUITE_KEY")
        print(json.dumps(seen))
    """)
    with LLMServer() as server:
        done = subprocess.run([sys.executable, str(script), str(tmp_path), server.url], capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in os.environ.items() if k != "SUITE_KEY"})
        headers = [request.headers.get("X-Key") for request in server.received]
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["before"] is None and seen["a_after"] is None and seen["b_after"] is None
    for name in ("a", "b"):
        assert seen[name]["cmd"] == {"env": f"key-of-suite-{name}", "arg": f"key-of-suite-{name}"}
        assert seen[name]["svc"]["path"] == "/svc"
    assert headers == ["key-of-suite-a", "key-of-suite-b"]


def test_a_gemini_key_and_a_vertex_ai_token_never_reach_any_output(tmp_path):
    """A Gemini server that echoes every header it was sent (the API key, the Vertex AI Bearer
    token) in its answers and in its errors: both are `***` in the results, summary, reports, the
    response cache and the console; the service account key file is the only place the key is."""
    from gemini_server import GeminiServer, service_account_file

    api_key = f"AIza-{uuid.uuid4().hex}"

    def echo_headers(body, model):
        headers = json.dumps(server._current.request.headers)
        said = body["contents"][-1]["parts"][0]["text"]
        if said == "fail":
            return {"error": {"code": 403, "message": f"denied for {headers}", "status": "PERMISSION_DENIED"}}
        return [{"text": f"I saw {headers}"}]

    with GeminiServer(gemini=echo_headers) as server:
        server.token = f"ya29.{uuid.uuid4().hex}"
        credentials = service_account_file(tmp_path, f"{server.url}/token")
        suite = write(tmp_path, "suite.yaml", json.dumps({
            "name": "gemini-secrets",
            "targets": {
                "key": {"type": "gemini", "base_url": server.url, "model": "m", "temperature": 0, "retries": 0, "api_key_env": "GEM_KEY"},
                "vertex": {"type": "gemini", "base_url": server.url, "model": "m", "temperature": 0, "retries": 0,
                           "vertex": {"project": "p", "location": "us-central1"}},
            },
            "evaluators": [{"type": "contains", "path": "content", "reference": "saw"}],
            "cases": [{"id": "ok", "input": "hi"}, {"id": "bad", "input": "fail"}],
        }))
        reports = tmp_path / "reports"
        reports.mkdir()
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"} | {
            "GEM_KEY": api_key, "GOOGLE_APPLICATION_CREDENTIALS": str(credentials)}
        done = subprocess_run(suite, reports / "r.jsonl", reports, env)
        sent = [request.headers for request in server.received if request.path != "/token"]
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    assert {h.get("x-goog-api-key") for h in sent} == {api_key, None} and f"Bearer {server.token}" in {h.get("Authorization") for h in sent}
    lines = [json.loads(line) for line in (reports / "r.jsonl").read_text().splitlines()]
    assert sorted(line["verdict"] for line in lines) == ["error", "error", "pass", "pass"]
    assert all("***" in (line["output"] or {}).get("content", line["error"] or "") for line in lines)
    cache = tmp_path / ".agenteval" / "cache" / "responses.sqlite"
    written = {path.name: path.read_bytes() for path in [*reports.rglob("*"), cache] if path.is_file()}
    assert {"r.jsonl", "r.summary.json", "junit.xml", "report.md", "report.html", "responses.sqlite"} <= set(written)
    for secret in (api_key, server.token):
        for name, data in written.items():
            assert secret.encode() not in data, f"{secret[:8]}... is written to {name}"
            if name.endswith(".sqlite"):
                stored = "".join(zlib.decompress(row[0]).decode() for row in sqlite3.connect(cache).execute("SELECT value FROM responses"))
                assert secret not in stored and "***" in stored
        assert secret not in done.stdout + done.stderr


def test_no_key_token_header_or_variable_value_reaches_an_exported_span(tmp_path):
    """--otel with message content captured (the most that is ever exported): a key, a `${NAME}`
    header value, the model echoing both in a tool call's arguments and in its reply, and a
    server's error body holding the key."""
    from llm_server import Fault, LLMServer, calls
    from otlp_receiver import OTLPReceiver, run_traced

    key, token = f"sk-otel-{uuid.uuid4().hex}", f"tok-{uuid.uuid4().hex}"
    tool = {"name": "lookup", "parameters": {"type": "object"}, "mock": [{"result": {"found": True}}]}
    with LLMServer(chat=lambda body: {"role": "assistant", "content": f"your key is {key}, token {token}"}) as server, OTLPReceiver() as receiver:
        server.fail(Fault("status", 401, body=json.dumps({"error": {"message": f"invalid key {key} with token {token}"}})))  # case `refused`
        server.play(calls(("lookup", {"q": key, "t": token})))  # case `echo`, then the echoing reply
        suite = write(tmp_path, "suite.yaml", json.dumps({
            "name": "otel-secrets",
            "target": {"type": "openai", "base_url": server.base_url, "model": "m1", "api_key_env": "OTEL_TEST_KEY", "retries": 0,
                       "headers": {"X-Token": "${OTEL_TEST_TOKEN}"}, "tools": [tool]},
            "evaluators": [{"type": "contains", "path": "content", "reference": "key"}],
            "cases": [{"id": "refused", "input": "hello"}, {"id": "echo", "input": "what is my key?"}],
        }))
        done = run_traced(suite, receiver, tmp_path, "-o", "r.jsonl", "--workers", "1", "--no-cache", env={
            "OTEL_TEST_KEY": key, "OTEL_TEST_TOKEN": token, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
        assert_no_traceback(done)
        assert done.returncode == 3, done.stderr
        raw = b"".join(receiver.raw)
        spans = receiver.spans()
    names = sorted(span.name for span in spans if not span.name.startswith("agenteval."))
    assert names == ["chat m1", "chat m1", "chat m1", "execute_tool lookup"]
    failed = next(span for span in spans if span.attributes.get("error.type") == "401")
    assert "invalid key ***" in failed.status_message
    assert any("***" in span.attributes.get("gen_ai.output.messages", "") for span in spans)  # content was captured, redacted
    assert "***" in next(span for span in spans if span.name == "execute_tool lookup").attributes["gen_ai.tool.call.arguments"]
    for secret in (key, token):
        assert secret.encode() not in raw, f"{secret[:8]}... is in an exported span"
    assert b"Bearer" not in raw and b"uthorization" not in raw


def test_a_key_an_error_reply_echoes_where_the_excerpt_is_cut_shows_no_part_of_it(tmp_path):
    """A 400 whose body echoes the Authorization header across the 300th character: the error is
    cut to an excerpt, and was cut before the key was redacted, so the key's first part reached the
    results, the JUnit and the Markdown report."""
    from http.server import BaseHTTPRequestHandler

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"e" * 252 + b" key=" + self.headers["Authorization"].encode()
            self.send_response(400)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    key = "sk-proj-" + uuid.uuid4().hex.upper()
    with serving(Echo) as server:
        write(tmp_path, "s.yaml", json.dumps({
            "name": "k", "target": {"type": "openai", "model": "m", "base_url": f"http://127.0.0.1:{server.server_port}/v1",
                                    "api_key_env": "CUT_KEY", "retries": 0},
            "evaluators": [{"type": "contains", "path": "content", "reference": "x"}], "cases": [{"id": "a", "input": "hi"}]}))
        done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "r.jsonl"),
                               "--junit", str(tmp_path / "j.xml"), "--markdown", str(tmp_path / "m.md"), "--no-cache"],
                              env={**os.environ, "CUT_KEY": key}, capture_output=True, text=True, timeout=120)
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    shown = "".join((tmp_path / name).read_text() for name in ("r.jsonl", "j.xml", "m.md")) + done.stdout + done.stderr
    assert "HTTP 400" in shown and " key=Bearer" in shown
    assert key[:12] not in shown  # neither the key nor the part of it the excerpt kept
