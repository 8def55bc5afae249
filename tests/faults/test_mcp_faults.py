"""MCP servers that misbehave (tests/hostile_mcp_server.py, a real stdio server): a crash mid-call,
a call that never ends, a 100 MB message, a result of the wrong shape, 10,000 tools, a program
that does not exist, a reply that is not JSON-RPC, a URL refusing the credentials. Each is a tool
error the model sees or that case's error, bounded by the loop's limits; an interrupted run, or a
server that exits leaving children, leaves no server process behind."""

from __future__ import annotations

import json
import shutil
import signal
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from conftest import alive, write
from fault_suites import kill_pids, live_processes, start_run, wait_until_gone
from llm_server import LLMServer, calls

from agenteval.endpoints import Endpoints
from agenteval.process import Processes
from agenteval.suite.loader import SuiteInvalid, load_suite
from agenteval.suite.models import Case
from agenteval.targets.base import TargetRun
from agenteval.targets.openai import OpenAITarget

HOSTILE = Path(__file__).parent.parent / "hostile_mcp_server.py"


def _server_in(folder: Path) -> Path:
    script = folder / "hostile_mcp_server.py"
    shutil.copy(HOSTILE, script)
    return script


def _answer(server: LLMServer, tools: list, folder: Path, processes: Processes):
    model_target = OpenAITarget.model_validate({"type": "openai", "base_url": server.base_url, "model": "m1", "backoff": 0.01, "tools": tools})
    endpoints = Endpoints()
    try:
        return model_target.answer(Case(id="a", input="x"), TargetRun(folder, processes, endpoints))
    finally:
        endpoints.close()


def test_a_crashing_hanging_flooding_or_malformed_mcp_server_is_a_tool_error_the_model_sees(tmp_path):
    script = _server_in(tmp_path)
    processes = Processes()
    entry = {"mcp": {"command": ["python", str(script)], "max_output_mb": 1}, "timeout": 1}
    with LLMServer() as server:
        server.play(calls(("crash", {}), ("echo", {"n": 1}), ("hang", {}), ("flood", {}), ("malformed", {}), ("echo", {"n": 2})),
                    {"role": "assistant", "content": "done"})
        started = time.monotonic()
        try:
            got = _answer(server, [entry], tmp_path, processes)
        finally:
            processes.stop_all()
        took = time.monotonic() - started
        sent = [json.loads(m["content"]) for m in server.received[1].body["messages"] if m["role"] == "tool"]
    assert got.error is None and got.output["stopped"] == "answered" and got.output["content"] == "done"
    results = [call["result"] for call in got.output["tool_calls"]]
    assert sent == results  # what the model saw
    crash, after_crash, hang, flood, malformed, after_all = results
    assert crash == {"error": "tool 'crash': the MCP call failed: the server closed its stdout (exit code 3); "
                              "MCPError: Connection closed; stderr: hostile server: crashing mid-call"}
    assert after_crash == {"echo": {"n": 1}}  # the next call started the server afresh
    assert hang == {"error": "tool 'hang': the MCP server did not answer within 1 s; it was stopped"}
    assert flood == {"error": "tool 'flood': the MCP call failed: the server wrote a message larger than 1 MiB (max_output_mb); "
                              "it was stopped; MCPError: Connection closed"}
    assert malformed["error"].startswith("tool 'malformed': the MCP call failed: ValidationError: 2 validation errors for CallToolResult")
    assert after_all == {"echo": {"n": 2}}
    assert [step.get("error", False) for step in got.output["steps"] if step["kind"] == "tool"] == [True, False, True, True, True, False]
    assert took < 20  # each fault bounded by its 1 s timeout or its 1 MiB, plus a server start per fault
    assert wait_until_gone(tmp_path) == []


def test_an_mcp_server_listing_10000_tools_or_that_cannot_start_is_that_cases_error(tmp_path, monkeypatch):
    script = _server_in(tmp_path)
    monkeypatch.setenv("HOSTILE_MANY_TOOLS", "10000")
    processes = Processes()
    with LLMServer() as server:
        try:
            flooded = _answer(server, [{"mcp": {"command": ["python", str(script)]}}], tmp_path, processes)
            server.play(calls(("echo_9999", {"k": "v"})), {"role": "assistant", "content": "done"})
            chosen = _answer(server, [{"mcp": {"command": ["python", str(script)]}, "tools": ["echo_9999"]}], tmp_path, processes)
            missing = _answer(server, [{"mcp": {"command": ["no-such-mcp-server-program"]}}], tmp_path, processes)
        finally:
            processes.stop_all()
        offered = server.received[0].body["tools"]
    assert flooded.error == (f"openai target: MCP server 'python {script}' lists 10009 tools, more than max_tools (128); "
                             "choose the ones to offer with `tools: [...]`")
    assert chosen.error is None and [tool["function"]["name"] for tool in offered] == ["echo_9999"]
    assert chosen.output["tool_calls"][0]["result"] == {"echo": {"k": "v"}}
    assert missing.error.startswith("openai target: MCP server 'no-such-mcp-server-program': could not start the MCP server no-such-mcp-server-program:")
    assert wait_until_gone(tmp_path) == []


def test_an_interrupted_run_leaves_no_mcp_server_behind(tmp_path):
    script = _server_in(tmp_path)
    with LLMServer(chat=lambda body: calls(("hang", {}))) as server:
        suite = tmp_path / "suite.yaml"
        suite.write_text(json.dumps({
            "name": "mcp-hangs",
            "target": {"type": "openai", "base_url": server.base_url, "model": "m1",
                       "tools": [{"mcp": {"command": ["python", str(script)]}, "tools": ["hang"], "timeout": 600}]},
            "evaluators": [{"type": "contains", "path": "content", "reference": "x"}],
            "cases": [{"id": f"c{n}", "input": "x"} for n in range(4)],
        }))
        proc = start_run(suite, tmp_path / "out.jsonl", "--workers", "2")
        try:
            deadline = time.monotonic() + 30
            while len(_servers(tmp_path)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(_servers(tmp_path)) == 2, "two workers, two sessions of the server"
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            signalled = time.monotonic()
            _, stderr = proc.communicate(timeout=20)
            took = time.monotonic() - signalled
        finally:
            if proc.poll() is None:
                proc.kill()
    left = wait_until_gone(tmp_path)
    kill_pids(left)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert left == []
    assert took < 5  # each session: stdin closed, a second's grace, then its process group killed


def test_a_cases_file_may_not_start_or_name_an_mcp_server_without_trust(tmp_path):
    write(tmp_path, "s.yaml", """
        name: t
        target:
          type: openai
          base_url: "http://127.0.0.1:9/v1"
          model: m
          tools: [{name: get_order, mock: [{result: shipped}]}]
        evaluators: [{type: contains, path: content, reference: x}]
        cases: cases.jsonl
    """)
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(case) for case in [
        {"id": "starts", "input": "x", "tools": {"get_order": {"mcp": {"command": ["sh", "-c", "touch PWNED"]}}}},
        {"id": "names", "input": "x", "tools": {"get_order": {"mcp": {"url": "http://127.0.0.1:9/mcp", "tool": "steal"}}}},
    ]) + "\n")
    with pytest.raises(SuiteInvalid) as refused:
        load_suite(tmp_path / "s.yaml")
    cases = tmp_path / "cases.jsonl"
    needs = ("; cases files are data, so this needs `trust_cases: true` in the suite (only for a file you trust like your own code), "
             "or move the tool into the suite")
    assert [problem.render() for problem in refused.value.problems] == [
        f"{cases}:{line}: tools.get_order.mcp: case '{case}': a `mcp` tool implementation in a cases file starts or names an MCP server{needs}"
        for line, case in ((1, "starts"), (2, "names"))
    ]
    (tmp_path / "s.yaml").write_text((tmp_path / "s.yaml").read_text() + "trust_cases: true\n")
    assert load_suite(tmp_path / "s.yaml").index.count == 2
    assert not (tmp_path / "PWNED").exists()


def test_an_mcp_url_that_refuses_hangs_or_answers_401_with_the_token_is_that_cases_error_without_the_token(tmp_path, monkeypatch):
    from llm_server import Fault

    token = "tok-5ecret-mcp-value"
    monkeypatch.setenv("MCP_TOKEN", token)
    processes = Processes()
    with LLMServer() as server, LLMServer() as refusing, LLMServer() as silent:
        refusing.fail(*[Fault("status", status=401, body=f'{{"error": "bad token {token}"}}')] * 5)
        silent.fail(*[Fault("sleep", seconds=30)] * 5)
        errors = []
        try:
            for url in ("http://127.0.0.1:9/mcp", refusing.url + "/mcp?key=${MCP_TOKEN}", silent.url + "/mcp"):
                entry = {"mcp": {"url": url, "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}, "startup_timeout": 2}, "timeout": 2}
                started = time.monotonic()
                errors.append((_answer(server, [entry], tmp_path, processes).error, time.monotonic() - started))
        finally:
            processes.stop_all()
        assert server.count() == 0  # the model is never asked
        assert refusing.received and refusing.received[0].headers.get("Authorization") == f"Bearer {token}"  # sent where it belongs
    (refused, _), (unauthorised, _), (silence, waited) = errors
    assert refused == ("openai target: MCP server 'http://127.0.0.1:9/mcp': could not start the MCP server: "
                       "connection refused at http://127.0.0.1:9/mcp: nothing is listening at 127.0.0.1:9; is the server started?")
    assert unauthorised == (f"openai target: MCP server '{refusing.url}/mcp?key=${{MCP_TOKEN}}': could not start the MCP server: "
                            f"HTTP 401 Unauthorized from {refusing.url}/mcp?key=${{MCP_TOKEN}}: check the credentials in the server's `headers`")
    assert silence == f"openai target: MCP server '{silent.url}/mcp': the MCP server did not start within 2 s (startup_timeout)"
    assert waited < 6
    assert not any(token in error for error, _ in errors)


def test_the_mcp_target_makes_a_crash_a_hang_or_a_malformed_result_that_cases_error_and_scores_the_rest(tmp_path):
    from conftest import read_jsonl, run_cli

    script = _server_in(tmp_path)
    write(tmp_path, "suite.yaml", f"""
        name: hostile-target
        target: {{type: mcp, command: [python, "{script}"], timeout: 1, max_output_mb: 1}}
        evaluators: [{{type: field_accuracy, fields: [{{path: echo.n}}]}}]
        cases:
          - {{id: crash, input: {{tool: crash}}, expected: {{}}}}
          - {{id: after-crash, input: {{tool: echo, arguments: {{n: 1}}}}, expected: {{echo: {{n: 1}}}}}}
          - {{id: hang, input: {{tool: hang}}, expected: {{}}}}
          - {{id: flood, input: {{tool: flood}}, expected: {{}}}}
          - {{id: malformed, input: {{tool: malformed}}, expected: {{}}}}
          - {{id: not-a-call, input: [1, 2], expected: {{}}}}
          - {{id: last, input: {{tool: echo, arguments: {{n: 2}}}}, expected: {{echo: {{n: 2}}}}}}
    """)
    done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q", "--workers", "1", cwd=tmp_path, timeout=60)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    got = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    assert [got[case]["verdict"] for case in ("after-crash", "last")] == ["pass", "pass"]
    assert got["crash"]["error"].startswith("mcp target: tool 'crash': the MCP call failed: the server closed its stdout (exit code 3)")
    assert got["hang"]["error"] == "mcp target: tool 'hang': the MCP server did not answer within 1 s; it was stopped"
    assert "the server wrote a message larger than 1 MiB (max_output_mb)" in got["flood"]["error"]
    assert "ValidationError: 2 validation errors for CallToolResult" in got["malformed"]["error"]
    assert got["not-a-call"]["error"] == "mcp target: the case's input is `{tool: NAME, arguments: {...}}` (or give the target a `tool:`)"
    assert wait_until_gone(tmp_path) == []


def _servers(folder: Path) -> list[int]:
    """The live hostile servers started from `folder`."""
    return [pid for pid in live_processes(folder) if b"hostile_mcp_server.py" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def test_an_mcp_servers_schemas_cannot_hang_the_run_nor_make_it_fetch_a_url(tmp_path, monkeypatch):
    """A tool whose output schema holds `^(a+)+$` and a result Python's `re` backtracks on for good
    (the SDK's own check held the process, deaf to Ctrl-C); a result its output schema refuses; an
    input schema whose `$ref` is a URL (it was fetched). Each is that case's error, in seconds, as
    the mcp target and as a tool of a model; nothing is fetched."""
    from http.server import BaseHTTPRequestHandler

    from conftest import read_jsonl, run_cli, serving

    fetched: list[str] = []

    class Schemas(BaseHTTPRequestHandler):
        def do_GET(self):
            fetched.append(self.path)
            body = b'{"type": "object", "properties": {"q": {"enum": ["secret-from-the-url"]}}}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serving(Schemas) as web:
        monkeypatch.setenv("HOSTILE_SCHEMAS", "1")
        monkeypatch.setenv("HOSTILE_REF_URL", f"http://127.0.0.1:{web.server_port}/schema.json")
        script = _server_in(tmp_path)
        write(tmp_path, "suite.yaml", f"""
            name: hostile-schemas
            target: {{type: mcp, command: [python, "{script}"], timeout: 5}}
            evaluators: [{{type: json_valid, as_json: true}}]
            cases:
              - {{id: backtrack, input: {{tool: backtrack}}}}
              - {{id: wrong-shape, input: {{tool: wrong_shape}}}}
              - {{id: far-ref, input: {{tool: far_ref, arguments: {{q: 5}}}}}}
              - {{id: fine, input: {{tool: echo, arguments: {{n: 1}}}}}}
        """)
        started = time.monotonic()
        done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q", "--workers", "1", cwd=tmp_path, timeout=120)
        took = time.monotonic() - started
        assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
        got = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
        assert got["backtrack"]["error"].startswith("mcp target: tool 'backtrack': the result of 'backtrack' does not match its output schema: s: ")
        assert got["wrong-shape"]["error"] == (
            "mcp target: tool 'wrong_shape': the result of 'wrong_shape' does not match its output schema: n: 'seven' is not of type 'integer'")
        assert got["far-ref"]["error"].startswith("mcp target: the arguments of 'far_ref' do not match its input schema: the schema cannot be used: a $ref")
        assert "secret-from-the-url" not in (tmp_path / "r.jsonl").read_text()
        assert got["fine"]["verdict"] == "pass" and took < 60, took

        processes = Processes()  # the same server's tools, called by a model
        with LLMServer() as server:
            server.play(calls(("backtrack", {}), ("wrong_shape", {})), {"role": "assistant", "content": "done"})
            try:
                answer = _answer(server, [{"mcp": {"command": ["python", str(script)]}, "timeout": 5}], tmp_path, processes)
            finally:
                processes.stop_all()
        backtrack, wrong = (call["result"] for call in answer.output["tool_calls"])
        assert backtrack["error"].startswith("tool 'backtrack': the result of 'backtrack' does not match its output schema: s: ")
        assert wrong == {"error": "tool 'wrong_shape': the result of 'wrong_shape' does not match its output schema: n: 'seven' is not of type 'integer'"}
    assert fetched == []
    assert wait_until_gone(tmp_path) == []


ENV_SERVER = r"""
import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("id") is None:
        continue
    method, ident = message["method"], message["id"]
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "e", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "token", "inputSchema": {"type": "object"}}, {"name": "die", "inputSchema": {"type": "object"}}]}
    elif message["params"]["name"] == "die":
        sys.stderr.write("config error: token " + os.environ["TOKEN"] + " refused\n")
        sys.exit(4)
    else:
        token = os.environ["TOKEN"]
        result = {"content": [{"type": "text", "text": json.dumps({"said": "token " + token, "length": len(token)})}]}
    print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)
"""


def test_an_mcp_servers_env_and_headers_reach_it_and_no_message_or_result(tmp_path, monkeypatch):
    """A stdio server's `env` may read `${NAME}` (it reached the server as the text `${GH_TOKEN}`),
    and its values are `***` in the error of a server that prints them to stderr (they were shown
    whole); a streamable-HTTP server that echoes its `${NAME}` header in a result passes `***`."""

    from conftest import read_jsonl, run_cli, serving

    token, literal, header = "ghp_" + "7" * 20, "tok_literal_SECRET_42", "mcp_SECRET_TOKEN_777"
    monkeypatch.setenv("GH_TOKEN_FOR_MCP", token)
    monkeypatch.setenv("MCP_HEADER_TOKEN", header)
    write(tmp_path, "env_server.py", ENV_SERVER)

    class Echo(_McpOverHttp):
        tools = ("who",)

        def call(self, ident, params):
            said = "you are " + str(self.headers.get("Authorization"))
            return {"content": [{"type": "text", "text": said}], "structuredContent": {"said": said}}

    with serving(Echo) as web:
        write(tmp_path, "suite.yaml", f"""
            name: mcp-secrets
            targets:
              read: {{type: mcp, command: [python, env_server.py], env: {{TOKEN: "${{GH_TOKEN_FOR_MCP}}"}}, timeout: 5}}
              literal: {{type: mcp, command: [python, env_server.py], env: {{TOKEN: "{literal}"}}, timeout: 5}}
              web: {{type: mcp, url: "http://127.0.0.1:{web.server_port}/mcp", headers: {{Authorization: "Bearer ${{MCP_HEADER_TOKEN}}"}}, timeout: 5}}
            evaluators: [{{type: json_valid, as_json: true}}]
            cases:
              - {{id: token, input: {{tool: token}}}}
              - {{id: die, input: {{tool: die}}}}
              - {{id: who, input: {{tool: who}}}}
        """)
        done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "--junit", tmp_path / "j.xml", "--workers", "1",
                       cwd=tmp_path, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    got = {(line["case_id"], line["target"]): line for line in read_jsonl(tmp_path / "r.jsonl")}
    assert got[("token", "read")]["output"] == {"said": "token ***", "length": len(token)}  # the server read the variable's value
    assert got[("token", "literal")]["output"] == {"said": "token ***", "length": len(literal)}
    assert "config error: token *** refused" in got[("die", "literal")]["error"]
    assert "config error: token *** refused" in got[("die", "read")]["error"]
    assert got[("who", "web")]["output"] == {"said": "you are Bearer ***"}
    written = (tmp_path / "r.jsonl").read_text() + (tmp_path / "j.xml").read_text() + done.stdout + done.stderr
    assert token not in written and literal not in written and header not in written


def test_two_tools_of_one_name_are_that_cases_error_not_the_last_one_answering(tmp_path):
    """A mock named `echo` beside an MCP server that lists `echo` too: both were sent to the model
    and the last one silently answered its calls; now the case's error names the clash."""
    script = _server_in(tmp_path)
    processes = Processes()
    tools = [{"name": "echo", "description": "a mock", "mock": [{"result": {"from": "mock"}}]}, {"mcp": {"command": ["python", str(script)]}}]
    with LLMServer() as server:
        server.play(calls(("echo", {"n": 1})), {"role": "assistant", "content": "done"})
        try:
            got = _answer(server, tools, tmp_path, processes)
        finally:
            processes.stop_all()
        assert server.count() == 0  # the model is never asked
    assert got.error == ("openai target: two of the target's tools are named 'echo' (an MCP server's among them, as it lists them): "
                         "give each its own name")
    assert wait_until_gone(tmp_path) == []


def test_an_mcp_servers_reply_that_cannot_be_read_is_that_cases_error_at_once_not_a_timeout(tmp_path):
    """A stdio server answering a call with a line that is not JSON (a `print()` left in) or with JSON
    that is no JSON-RPC message: the call waited out its `timeout` and was reported as a server that
    did not answer. Now the case's error says the reply could not be read, with the start of it,
    as soon as it comes; the server is stopped and the next case starts it afresh. Over streamable
    HTTP the SDK's own error came at once (`MCPError: Failed to parse JSON response: 1 validation error
    for ...`), and its log of it was a traceback on the run's stderr; now it names the status, the URL
    and the start of the reply."""
    from conftest import read_jsonl, run_cli, serving

    script = _server_in(tmp_path)
    with serving(_GarbageOverHttp) as web:
        write(tmp_path, "suite.yaml", f"""
            name: unreadable
            targets:
              stdio: {{type: mcp, command: [python, "{script}"], timeout: 30}}
              web: {{type: mcp, url: "http://127.0.0.1:{web.server_port}/mcp", timeout: 30}}
            evaluators: [{{type: field_accuracy, fields: [{{path: echo.n}}]}}]
            cases:
              - {{id: garbage, input: {{tool: garbage}}, expected: {{}}}}
              - {{id: not-jsonrpc, input: {{tool: not_jsonrpc}}, expected: {{}}}}
              - {{id: after, input: {{tool: echo, arguments: {{n: 1}}}}, expected: {{echo: {{n: 1}}}}}}
        """)
        started = time.monotonic()
        done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "--workers", "1", cwd=tmp_path, timeout=120)
        took = time.monotonic() - started
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    lines = read_jsonl(tmp_path / "r.jsonl")
    got = {line["case_id"]: line for line in lines if line["target"] == "stdio"}
    web_got = {line["case_id"]: line for line in lines if line["target"] == "web"}
    shown = "debug: " + "x" * 293 + "..."  # the first 300 characters of the 5,007 written
    assert got["garbage"]["error"] == (f"mcp target: tool 'garbage': the MCP call failed: the server's reply could not be read "
                                       f"as JSON-RPC: {shown!r}; it was stopped; MCPError: Connection closed")
    assert got["not-jsonrpc"]["error"] == ("mcp target: tool 'not_jsonrpc': the MCP call failed: the server's reply could not be read "
                                           """as JSON-RPC: '{"jsonrpc": "2.0", "id": 3, "answer": 42}'; it was stopped; MCPError: Connection closed""")
    assert got["after"]["verdict"] == "pass"
    url = f"http://127.0.0.1:{web.server_port}/mcp"
    assert web_got["garbage"]["error"] == (  # the first 120 characters
        f"mcp target: tool 'garbage': the MCP call failed: HTTP 200 OK from {url}: the reply is not MCP "
        f"(content type application/json, but not JSON: {'debug: ' + 'x' * 113 + '...'!r})")
    assert web_got["not-jsonrpc"]["error"] == (
        f"mcp target: tool 'not_jsonrpc': the MCP call failed: HTTP 200 OK from {url}: the reply is not MCP "
        """(JSON that is no JSON-RPC message: '{"jsonrpc": "2.0", "id": 3, "answer": 42}')""")  # (a new session after garbage's)
    assert web_got["after"]["verdict"] == "pass"
    assert took < 20, took  # not the four 30 s timeouts
    assert wait_until_gone(tmp_path) == []


def test_a_stdio_mcp_server_that_exits_leaves_none_of_its_children_running_after_the_run(tmp_path):
    """A server that starts two children (one holding its stdout and stderr, one not) and then exits
    by itself: both lived on after the run (its exit was collected before its process group was
    killed, and then the group was never killed). Now they are gone when the run ends."""
    from conftest import read_jsonl, run_cli

    script = _server_in(tmp_path)
    write(tmp_path, "suite.yaml", f"""
        name: orphans
        target: {{type: mcp, command: [python, "{script}"], timeout: 10}}
        evaluators: [{{type: json_valid, as_json: true}}]
        cases: [{{id: orphan, input: {{tool: orphan}}}}]
    """)
    done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q", "--workers", "1", cwd=tmp_path, timeout=60)
    [line] = read_jsonl(tmp_path / "r.jsonl")
    children = line["output"]["children"]
    left = wait_until_gone(tmp_path)
    running = [pid for pid in children if alive(pid)]
    kill_pids(left)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert len(children) == 2 and running == []
    assert left == []


def test_an_mcp_url_answering_401_or_403_names_the_status_the_url_and_the_headers_without_the_token(tmp_path, monkeypatch):
    """A streamable-HTTP server refusing the credentials: the case's error was `MCPError: Server
    returned an error response`. Now it names the HTTP status, the URL as the suite gives it and the
    key that carries the credentials; the token, sent in the URL and the header, is in no output."""
    from conftest import read_jsonl, run_cli
    from llm_server import Fault

    token = "tok-5ecret-mcp-value"
    monkeypatch.setenv("MCP_TOKEN", token)
    with LLMServer() as locked, LLMServer() as forbidden:
        locked.fail(*[Fault("status", status=401, body=f'{{"error": "bad token {token}"}}')] * 5)
        forbidden.fail(*[Fault("status", status=403, body='{"error": "not for you"}')] * 5)
        write(tmp_path, "suite.yaml", f"""
            name: refused
            targets:
              locked: {{type: mcp, url: "{locked.url}/mcp?key=${{MCP_TOKEN}}", headers: {{Authorization: "Bearer ${{MCP_TOKEN}}"}}}}
              forbidden: {{type: mcp, url: "{forbidden.url}/mcp", headers: {{Authorization: "Bearer ${{MCP_TOKEN}}"}}}}
            evaluators: [{{type: json_valid, as_json: true}}]
            cases: [{{id: who, input: {{tool: who}}}}]
        """)
        started = time.monotonic()
        done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "--workers", "1", cwd=tmp_path, timeout=60)
        took = time.monotonic() - started
        assert locked.received[0].headers.get("Authorization") == f"Bearer {token}"  # sent where it belongs
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    got = {line["target"]: line["error"] for line in read_jsonl(tmp_path / "r.jsonl")}
    assert got == {
        "locked": f"mcp target: tool 'who': could not start the MCP server: HTTP 401 Unauthorized from {locked.url}/mcp?key=${{MCP_TOKEN}}: "
                  "check the credentials in the server's `headers`",
        "forbidden": f"mcp target: tool 'who': could not start the MCP server: HTTP 403 Forbidden from {forbidden.url}/mcp: "
                     "check the credentials in the server's `headers`",
    }
    assert took < 30  # refused at once, not retried until a timeout
    written = (tmp_path / "r.jsonl").read_text() + done.stdout + done.stderr
    assert token not in written



def _replying(status: int, body: bytes, kind: str = "text/plain"):
    """A web server answering every request with one reply: not an MCP server, as a wrong URL reaches."""

    class Replying(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        seen: list[str] = []

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            Replying.seen.append(self.headers.get("Authorization") or "")
            sent = body.replace(b"$AUTH", (self.headers.get("Authorization") or "").encode())
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(sent)))
            self.end_headers()
            self.wfile.write(sent)

        def log_message(self, *args):
            pass

    return Replying


def test_an_mcp_url_answering_404_405_5xx_a_web_page_or_refusing_names_the_status_the_url_and_what_to_check(tmp_path, monkeypatch):
    """A wrong path (404), a GET-only endpoint (405), a failing server or proxy (500, 502, 503), a login
    page (200 text/html) and a port nothing listens at: the case's error was the SDK's words
    (`MCPError: Not Found`, `MCPError: Server returned an error response`, `MCPError: Unexpected content
    type: text/html`, `ConnectError: All connection attempts failed`). Now each names the status and the
    URL as the suite writes it, with what to check; the page's echo of the token is `***`."""
    from conftest import read_jsonl, refused_url, run_cli, serving

    token = "tok-5ecret-page-value"
    monkeypatch.setenv("MCP_TOKEN", token)
    page = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>You sent $AUTH. " + b"Sign in " * 40 + b"</body></html>"
    with (serving(_replying(404, b"Not Found")) as missing, serving(_replying(405, b"", "application/json")) as get_only,
          serving(_replying(500, b"Internal Server Error")) as failing, serving(_replying(502, b"<html>Bad Gateway</html>", "text/html")) as gateway,
          serving(_replying(503, b"")) as unavailable, serving(_replying(200, page, "text/html; charset=utf-8")) as login,
          refused_url() as nothing):
        urls = {
            "missing": f"http://127.0.0.1:{missing.server_port}/", "get_only": f"http://127.0.0.1:{get_only.server_port}/sse",
            "failing": f"http://127.0.0.1:{failing.server_port}/mcp", "gateway": f"http://127.0.0.1:{gateway.server_port}/mcp",
            "unavailable": f"http://127.0.0.1:{unavailable.server_port}/mcp", "login": f"http://127.0.0.1:{login.server_port}/mcp",
            "refused": nothing.removesuffix("/v1") + "/mcp",
        }
        targets = "".join(f'  {name}: {{type: mcp, url: "{url}", headers: {{Authorization: "Bearer ${{MCP_TOKEN}}"}}, timeout: 10}}\n'
                          for name, url in urls.items())
        (tmp_path / "suite.yaml").write_text(f"name: not-mcp\ntargets:\n{targets}evaluators: [{{type: json_valid, as_json: true}}]\n"
                                             "cases: [{id: who, input: {tool: who}}]\n")
        started = time.monotonic()
        done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "--workers", "1", "-q", cwd=tmp_path, timeout=120)
        took = time.monotonic() - started
        assert login.RequestHandlerClass.seen == [f"Bearer {token}"]  # sent where it belongs, once
    assert done.returncode == 3 and "Traceback" not in done.stderr and "mcp.client" not in done.stderr, done.stderr
    got = {line["target"]: line["error"] for line in read_jsonl(tmp_path / "r.jsonl")}
    start = "mcp target: tool 'who': could not start the MCP server: "
    shown = "<!DOCTYPE html> <html><head><title>Sign in</title></head><body>You sent Bearer ***. Sign in Sign in Sign in Sign in Sign..."
    port = urls["refused"].split(":")[2].split("/")[0]
    assert got == {
        "missing": start + f"HTTP 404 Not Found from {urls['missing']}: check the path: MCP servers usually serve at /mcp",
        "get_only": start + f"HTTP 405 Method Not Allowed from {urls['get_only']}: it takes no POST there: check the path: "
                            "MCP servers usually serve streamable HTTP at /mcp",
        "failing": start + f"HTTP 500 Internal Server Error from {urls['failing']}: the server failed; its own log says why",
        "gateway": start + f"HTTP 502 Bad Gateway from {urls['gateway']}: the server failed; its own log says why",
        "unavailable": start + f"HTTP 503 Service Unavailable from {urls['unavailable']}: the server failed; its own log says why",
        "login": start + f"HTTP 200 OK from {urls['login']}: the reply is not MCP (content type text/html; charset=utf-8: {shown!r}): "
                         "check that the URL is the server's MCP endpoint, usually at /mcp",
        "refused": start + f"connection refused at {urls['refused']}: nothing is listening at 127.0.0.1:{port}; is the server started?",
    }
    assert took < 30, took  # each told at once, none waiting out a timeout
    assert token not in (tmp_path / "r.jsonl").read_text() + done.stdout + done.stderr


def test_an_mcp_url_failing_a_call_mid_session_names_the_status_and_the_next_call_starts_afresh(tmp_path):
    """Once the session is open, a call answered with a 500, a web page or a 404 for the session: the
    call's error names the status, the URL and what happened, and the next case opens a new session and
    passes; a 404 carrying the server's own JSON-RPC error is told in its words (the session goes on).
    A 502 whose JSON body is 256 MiB is told by its status, and a 200 whose JSON is as long by its
    length (past `max_output_mb`): neither is read whole into memory (the SDK read both)."""
    import subprocess
    import sys

    from conftest import MEASURE, read_jsonl, serving

    with serving(_FailingMidSession) as web:
        url = f"http://127.0.0.1:{web.server_port}/mcp"
        write(tmp_path, "suite.yaml", f"""
            name: mid-session
            target: {{type: mcp, url: "{url}", timeout: 10}}
            evaluators: [{{type: field_accuracy, fields: [{{path: echo.n}}]}}]
            cases:
              - {{id: boom, input: {{tool: boom}}, expected: {{}}}}
              - {{id: after-boom, input: {{tool: echo, arguments: {{n: 1}}}}, expected: {{echo: {{n: 1}}}}}}
              - {{id: page, input: {{tool: page}}, expected: {{}}}}
              - {{id: forgot, input: {{tool: forgot}}, expected: {{}}}}
              - {{id: unknown, input: {{tool: unknown}}, expected: {{}}}}
              - {{id: flood, input: {{tool: flood}}, expected: {{}}}}
              - {{id: huge, input: {{tool: huge}}, expected: {{}}}}
              - {{id: last, input: {{tool: echo, arguments: {{n: 2}}}}, expected: {{echo: {{n: 2}}}}}}
        """)
        peak = tmp_path / "peak"
        done = subprocess.run([*MEASURE, str(peak), sys.executable, "-m", "agenteval", "run", "suite.yaml", "-o", "r.jsonl", "--workers", "1", "-q"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3 and "Traceback" not in done.stderr and "mcp.client" not in done.stderr, done.stderr
    assert float(peak.read_text()) < 200, peak.read_text()  # MB, where the 502's body alone is 256 MiB
    got = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    assert {case: line["error"] for case, line in got.items() if line["error"]} == {
        "boom": f"mcp target: tool 'boom': the MCP call failed: HTTP 500 Internal Server Error from {url}: the server failed; its own log says why",
        "page": f"mcp target: tool 'page': the MCP call failed: HTTP 200 OK from {url}: the reply is not MCP (content type text/html: "
                "'<html><body>Maintenance</body></html>'): check that the URL is the server's MCP endpoint, usually at /mcp",
        "forgot": f"mcp target: tool 'forgot': the MCP call failed: HTTP 404 Not Found from {url}: the server no longer knows this session "
                  "(it may have restarted); the next call starts another",
        "unknown": "mcp target: tool 'unknown': the MCP call failed: MCPError: no tool 'unknown' here",
        "flood": f"mcp target: tool 'flood': the MCP call failed: HTTP 502 Bad Gateway from {url}: the server failed; its own log says why",
        "huge": f"mcp target: tool 'huge': the MCP call failed: HTTP 200 OK from {url}: the reply is larger than 16 MiB (max_output_mb); "
                "it was not read further",
    }
    assert got["after-boom"]["verdict"] == got["last"]["verdict"] == "pass"
    assert _FailingMidSession.initialized == 6  # the first session, and one after each of boom, page, forgot, flood and huge

class _McpOverHttp(BaseHTTPRequestHandler):
    """A streamable-HTTP MCP server in a few lines: it lists `tools` and answers each call with `call`'s
    result, or with the raw reply `call` gives as (status, body) or (status, body, content type);
    `initialized` counts the sessions opened."""

    protocol_version = "HTTP/1.1"
    name, tools = "h", ()
    initialized = 0

    def call(self, ident, params):
        raise NotImplementedError

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if message.get("id") is None:
            return self._send(202, b"")
        method, ident = message["method"], message["id"]
        if method == "initialize":
            type(self).initialized += 1
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": self.name, "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in self.tools]}
        else:
            result = self.call(ident, message["params"])
            if result is None:  # `call` wrote the reply itself
                return None
            if isinstance(result, tuple):
                return self._send(*result)
        self._send(200, json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode())

    def do_DELETE(self):
        self._send(200, b"")

    def _send(self, status, body, kind="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Mcp-Session-Id", "s1")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _GarbageOverHttp(_McpOverHttp):
    """A streamable-HTTP MCP server whose tools answer as the hostile server's `garbage` and `not_jsonrpc` do."""

    name, tools = "g", ("garbage", "not_jsonrpc", "echo")

    def call(self, ident, params):
        if params["name"] == "garbage":
            return 200, b"debug: " + b"x" * 5000
        if params["name"] == "not_jsonrpc":
            return 200, json.dumps({"jsonrpc": "2.0", "id": ident, "answer": 42}).encode()
        return {"content": [], "structuredContent": {"echo": params["arguments"]}}

    def do_GET(self):
        self._send(405, b"")


class _FailingMidSession(_McpOverHttp):
    """A streamable-HTTP MCP server that starts well and then fails some calls: a 500, a web page, a
    404 for a session it forgot (it restarted), a 404 carrying a JSON-RPC error of its own, and a 502
    and a 200 with 256 MiB of JSON (written a MiB at a time, for as long as the client reads)."""

    name, tools = "f", ("boom", "page", "forgot", "unknown", "flood", "huge", "echo")

    def call(self, ident, params):
        tool = params["name"]
        if tool in ("flood", "huge"):
            chunk = b" " * (1 << 20)
            self.send_response(502 if tool == "flood" else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(256 << 20))
            self.end_headers()
            try:
                for _ in range(256):
                    self.wfile.write(chunk)
            except OSError:  # the client stopped reading and closed
                self.close_connection = True
            return None
        if tool == "boom":
            return 500, b"Traceback (most recent call last): ..."
        if tool == "page":
            return 200, b"<html><body>Maintenance</body></html>", "text/html"
        if tool == "forgot":
            return 404, b"", "text/plain"
        if tool == "unknown":
            return 404, json.dumps({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no tool 'unknown' here"}}).encode()
        return {"content": [], "structuredContent": {"echo": params["arguments"]}}

    def do_GET(self):
        self._send(405, b"")
