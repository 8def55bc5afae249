"""Live agents under hostile data and misbehaving servers: tool loops, conversations, simulated
users and the anthropic target, run as a user runs them (the real CLI in a subprocess) against a
real model server on 127.0.0.1 (tests/llm_server.py), with real tool processes and real files.

Whatever a model, a tool, a simulated user or a cases file does, the outcome is a clear result the
model sees or one case's `error` naming the problem: never a traceback, never unbounded work, every
other case scored and written, and an unusable reply is never cached (a re-run asks again).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import read_jsonl, run_cli, write
from fault_suites import (
    assert_each_case_once, assert_no_traceback, assert_problem_lines, kill_pids, run_measured, run_suite,
    signal_mid_run, summary_of, wait_until_gone,
)
from llm_server import Fault, LLMServer, block_text, calls

SHIPPED = {"id": 7, "status": "shipped"}
ORDER_TOOL = {
    "name": "get_order", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}},
    "mock": [{"when": {"id": 7}, "result": SHIPPED}, {"result": {"error": "no such order"}}],
}
DONE = {"type": "contains", "name": "done", "path": "content", "reference": "done"}


def _write_suite(folder: Path, suite: dict, cases: list[dict]) -> Path:
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    return write(folder, "suite.yaml", json.dumps({"cases": "cases.jsonl", **suite}))


def _user_text(body: dict) -> str:
    """The first user message of a request (the case's input), in either API's shape."""
    first = next((m for m in body.get("messages", []) if m.get("role") == "user"), {})
    return block_text(first.get("content"))


def _after_tools(body: dict) -> int:
    """How many tool results the request carries (OpenAI `tool` messages or `tool_result` blocks)."""
    count = 0
    for message in body.get("messages", []):
        content = message.get("content")
        count += message.get("role") == "tool"
        if isinstance(content, list):
            count += sum(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    return count


def _requests_for(server: LLMServer, text: str) -> int:
    return sum(1 for r in server.received if isinstance(r.body, dict) and _user_text(r.body) == text)


def _lines(out: Path) -> dict[str, dict]:
    return {line["case_id"]: line for line in read_jsonl(out)}


# -- hostile model replies in the middle of a tool loop ---------------------------------------------

DEEP_300 = '{"a": ' * 300 + "1" + "}" * 300
HOSTILE_REPLIES = {
    "healthy": calls(("get_order", {"id": 7})),
    "hundreds_of_calls": calls(*[("get_order", {"id": i}) for i in range(500)]),
    "arguments_not_json": calls(("get_order", '{"id": 7')),
    "arguments_nested_10000_deep": calls(("get_order", "[" * 10_000 + "]" * 10_000)),
    "arguments_nested_300_deep": calls(("get_order", DEEP_300)),
    "arguments_of_2_mb": calls(("get_order", {"id": 7, "note": "x" * 2_000_000})),
    "name_not_a_string": {"role": "assistant", "content": None,
                          "tool_calls": [{"id": "c1", "type": "function", "function": {"name": 42, "arguments": "{}"}}]},
    "calls_not_objects": {"role": "assistant", "content": "done, without calls", "tool_calls": [42, "get_order", None]},
    "no_choices_mid_loop": calls(("get_order", {"id": 7})),
}


class HostileModel(LLMServer):
    """Plays, per case (its input names the fault), a model reply from HOSTILE_REPLIES; after the
    tool results it answers `done` (or, for `no_choices_mid_loop`, a 200 without `choices`)."""

    def answer(self, path: str, body):  # noqa: ANN001, ANN201 - the server's hook
        if path.endswith("/chat/completions") and isinstance(body, dict):
            fault = _user_text(body)
            if _after_tools(body):
                if fault == "no_choices_mid_loop":
                    return 200, {"choices": []}
                self.play({"role": "assistant", "content": f"done after {_after_tools(body)} results"})
            else:
                self.play(HOSTILE_REPLIES[fault])
        return super().answer(path, body)


def test_hostile_tool_calls_in_a_model_reply_are_a_clear_result_or_that_cases_error(tmp_path):
    with HostileModel() as server:
        suite = _write_suite(tmp_path, {
            "name": "hostile-calls",
            "target": {"type": "openai", "base_url": server.base_url, "model": "m", "temperature": 0, "retries": 0,
                       "max_response_mb": 8, "tools": [ORDER_TOOL]},
            "evaluators": [DONE],
        }, [{"id": fault, "input": fault} for fault in HOSTILE_REPLIES])
        out = tmp_path / "r.jsonl"
        started = time.monotonic()
        done = run_suite(suite, out, "--workers", "1", timeout=120)
        took = time.monotonic() - started
        assert_no_traceback(done)
        assert done.returncode == 3, done.stderr
        lines = assert_each_case_once(out, set(HOSTILE_REPLIES))
        assert took < 60, f"the run took {took:.1f} s"

        def results(case_id):
            return [call["result"] for call in lines[case_id]["output"]["tool_calls"]]

        assert lines["healthy"]["verdict"] == "pass" and results("healthy") == [SHIPPED]
        many = lines["hundreds_of_calls"]
        assert many["verdict"] == "pass" and many["output"]["content"] == "done after 500 results"
        assert len(results("hundreds_of_calls")) == 500 and results("hundreds_of_calls")[7] == SHIPPED
        assert results("hundreds_of_calls")[8] == {"error": "no such order"}
        for fault in ("arguments_not_json", "arguments_nested_10000_deep"):
            assert lines[fault]["verdict"] == "pass", lines[fault]["error"]
            assert "the arguments of 'get_order' could not be read: not JSON" in results(fault)[0]["error"]
            assert lines[fault]["output"]["steps"][1] == {**lines[fault]["output"]["steps"][1], "kind": "tool", "error": True}
        deep = lines["arguments_nested_300_deep"]
        assert deep["verdict"] == "error" and deep["error"].startswith("answer nested deeper than 200 levels (at `answer.tool_calls[0].arguments")
        assert "limits.answer_depth: 200" in deep["error"]
        huge = lines["arguments_of_2_mb"]
        assert huge["verdict"] == "pass" and len(huge["output"]["tool_calls"][0]["arguments"]["note"]) == 2_000_000
        assert results("arguments_of_2_mb") == [SHIPPED]
        assert lines["name_not_a_string"]["verdict"] == "pass"
        assert results("name_not_a_string") == [{"error": "there is no tool named '' (tools: get_order)"}]
        assert lines["calls_not_objects"]["verdict"] == "pass" and lines["calls_not_objects"]["output"]["tool_calls"] == []
        no_choices = lines["no_choices_mid_loop"]
        assert no_choices["verdict"] == "error"
        assert "the reply has no choices[0].message" in no_choices["error"] and "(at model call 2 of the tool loop)" in no_choices["error"]

        # a re-run replays the usable replies from the cache; the reply without choices is asked for again
        asked = _requests_for(server, "no_choices_mid_loop"), _requests_for(server, "healthy")
        again = run_suite(suite, tmp_path / "again.jsonl", "--workers", "1", timeout=120)
        assert again.returncode == 3, again.stderr
        assert _requests_for(server, "healthy") == asked[1]
        assert _requests_for(server, "no_choices_mid_loop") == asked[0] + 1  # the first step is cached, the broken one is not
        assert {k: v["verdict"] for k, v in _lines(tmp_path / "again.jsonl").items()} == {k: v["verdict"] for k, v in lines.items()}


# -- tools that misbehave ---------------------------------------------------------------------------

PYTHON_TOOLS = """
import math


def nan():
    return float("nan")


def deep():
    value = 1
    for _ in range(230):
        value = {"a": value}
    return value


def deeper_than_json():
    value = 1
    for _ in range(5000):
        value = [value]
    return value


def surrogate():
    return "cut emoji \\ud83d"


def hangs():
    import time
    time.sleep(60)
"""
TOOL_FAULTS = ("healthy", "prints_1_gb", "stderr_1_gb", "hangs", "python_nan", "python_deep", "python_deeper_than_json", "python_surrogate",
               "python_hangs", "command_surrogate", "http_drips", "http_endless", "loop_timeout")


def _tool(name: str, implementation: dict) -> dict:
    return {"name": name, "parameters": {"type": "object"}, **implementation}


def test_misbehaving_tools_are_bounded_and_the_run_goes_on(tmp_path):
    write(tmp_path, "pytools.py", PYTHON_TOOLS)
    big = write(tmp_path, "big.py", "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n")
    loud = write(tmp_path, "loud.py", "import sys\nchunk = 'e' * (1 << 20)\nfor _ in range(1024):\n    sys.stderr.write(chunk)\nprint('{\"ok\": 2}')\n")
    sleeper = write(tmp_path, "sleeper.py", "import time\ntime.sleep(60)\n")
    surrogate = write(tmp_path, "surrogate.py", "print('\"cut emoji \\\\ud83d\"')\n")

    def model(body):
        fault = _user_text(body)
        return {"role": "assistant", "content": "done"} if _after_tools(body) else calls((fault, {}))

    with LLMServer(chat=model) as server, LLMServer() as service, LLMServer() as endless:
        service.fail(Fault("drip", seconds=0.5))
        endless.fail(Fault("endless"))
        tools = [
            _tool("healthy", {"mock": [{"result": SHIPPED}]}),
            _tool("prints_1_gb", {"command": ["python", "-S", str(big)]}),
            _tool("stderr_1_gb", {"command": ["python", "-S", str(loud)]}),
            _tool("hangs", {"command": ["python", "-S", str(sleeper)], "timeout": 1}),
            _tool("python_nan", {"python": "pytools:nan"}),
            _tool("python_deep", {"python": "pytools:deep"}),
            _tool("python_deeper_than_json", {"python": "pytools:deeper_than_json"}),
            _tool("python_surrogate", {"python": "pytools:surrogate"}),
            _tool("python_hangs", {"python": "pytools:hangs", "timeout": 1}),
            _tool("command_surrogate", {"command": ["python", "-S", str(surrogate)]}),
            _tool("http_drips", {"http": {"url": service.url + "/tool", "timeout": 1, "retries": 0}}),
            _tool("http_endless", {"http": {"url": endless.url + "/tool", "max_response_mb": 1, "retries": 0}}),
            _tool("loop_timeout", {"command": ["python", "-S", str(sleeper)]}),  # its own timeout is 30 s: the loop's 3 s win
        ]
        suite = _write_suite(tmp_path, {
            "name": "tools", "evaluators": [DONE],
            "target": {"type": "openai", "base_url": server.base_url, "model": "m", "retries": 0, "tools": tools, "loop": {"timeout": 3}},
        }, [{"id": fault, "input": fault} for fault in TOOL_FAULTS])
        out = tmp_path / "r.jsonl"
        run = run_measured(suite, out, list(TOOL_FAULTS), "--workers", "2", timeout=120)
    assert_no_traceback(run.done)
    assert run.done.returncode == 1, run.done.stderr  # the loop a timeout ended fails; nothing is an error
    lines = assert_each_case_once(out, set(TOOL_FAULTS))
    assert run.peak_mb < 250, f"peak memory {run.peak_mb:.0f} MB"
    assert summary_of(out)["counts"] == {"total": 13, "passed": 12, "failed": 1, "errored": 0}
    assert not wait_until_gone(tmp_path), "a tool process was left running"

    def result(fault):
        line = lines[fault]
        assert line["error"] is None, line["error"]
        return line["output"]["tool_calls"][0]["result"]

    assert result("healthy") == SHIPPED
    assert result("prints_1_gb") == {"error": "tool 'prints_1_gb' output larger than 16 MiB"}
    assert result("stderr_1_gb") == {"ok": 2}
    assert result("hangs") == {"error": "tool 'hangs' timed out after 1s"}
    assert result("python_nan") is None  # NaN has no JSON form: the model is sent `null`
    assert result("python_deep")["error"].startswith(
        "tool 'python_deep' returned a value that cannot be used: result nested deeper than 200 levels (at `result.a.a.a.a.a.a")
    assert result("python_deeper_than_json")["error"].startswith("pytools:deeper_than_json returned a value with no JSON form")
    assert "pytools:surrogate returned a value with no JSON form" in result("python_surrogate")["error"]
    assert result("python_hangs") == {"error": "pytools:hangs took longer than its timeout of 1 s; the call was abandoned"}
    assert result("command_surrogate")["error"].startswith(
        "tool 'command_surrogate' returned a value that cannot be used: result holds a lone surrogate at `result` (U+D83D")
    assert result("http_drips")["error"].startswith("tool 'http_drips': POST ") and "timed out after 1s" in result("http_drips")["error"]
    assert result("http_endless")["error"].startswith("tool 'http_endless': POST ")
    assert "the reply is larger than 1 MiB (max_response_mb)" in result("http_endless")["error"]
    stopped = lines["loop_timeout"]
    assert stopped["verdict"] == "fail" and stopped["output"]["stopped"] == "timeout"
    assert re.fullmatch(r"tool 'loop_timeout' timed out after [23](\.\d+)?s", result("loop_timeout")["error"]), result("loop_timeout")
    assert stopped["evaluator_results"][-1]["name"] == "agent_limits"
    assert stopped["evaluator_results"][-1]["misses"] == ["the tool loop ran past its timeout of 3 s (loop.timeout)"]
    for fault in TOOL_FAULTS:
        assert lines[fault]["output"]["steps"][1]["kind"] == "tool"
        if fault not in ("healthy", "python_nan", "stderr_1_gb"):
            assert lines[fault]["output"]["steps"][1]["error"] is True, fault


# -- simulated users and their judges ---------------------------------------------------------------

def _conversation_model(body: dict) -> dict:
    """The agent, the simulated user and the goal judge, told apart by their system prompts."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    if system.startswith("You decide whether"):
        return {"role": "assistant", "content": "Perhaps."}
    if system.startswith("You are playing the user"):
        return {"role": "assistant", "content": f"Tell me more ({len(body['messages'])})."}
    if "backtracking" in system:
        return {"role": "assistant", "content": "a" * 40 + "!"}
    return {"role": "assistant", "content": "Here is more."}


def test_a_simulated_user_that_never_stops_a_garbage_judge_and_a_backtracking_stop_rule_are_bounded(tmp_path):
    with LLMServer(chat=_conversation_model) as server:
        user = {"endpoint": "customer", "goal": "Get a refund."}
        suite = _write_suite(tmp_path, {
            "name": "users", "limits": {"pattern_seconds": 0.2},
            "models": {"agent": {"base_url": server.base_url, "model": "agent", "temperature": 0, "retries": 0},
                       "customer": {"base_url": server.base_url, "model": "customer", "retries": 0}},
            "target": {"type": "openai", "endpoint": "agent", "messages": [{"role": "system", "content": "You are the agent ({{ input }})."}]},
            "evaluators": [{"type": "contains", "name": "more", "path": "content", "reference": "more"}],
        }, [
            {"id": "never_stops", "input": "patient", "user": {**user, "max_turns": 4}},
            {"id": "garbage_judge", "input": "judged", "user": {**user, "stop": {"judge": True}}},
            {"id": "backtracking_stop", "input": "backtracking", "user": {**user, "stop": {"regex": "^(a|aa)+$"}}},
        ])
        out = tmp_path / "r.jsonl"
        started = time.monotonic()
        done = run_suite(suite, out, "--workers", "3")
        assert time.monotonic() - started < 30
        assert_no_traceback(done)
        assert done.returncode == 3, done.stderr
        lines = assert_each_case_once(out, {"never_stops", "garbage_judge", "backtracking_stop"})
        endless = lines["never_stops"]
        assert endless["verdict"] == "pass" and endless["output"]["stopped"] == "max_turns"
        assert len(endless["output"]["turns"]) == 4 and endless["output"]["goal"] == {"reached": False, "rule": None, "turn": None}
        assert lines["garbage_judge"]["error"] == "turn 1: goal judge: the reply is neither yes nor no: 'Perhaps.'"
        regex = lines["backtracking_stop"]["error"]
        assert regex.startswith("turn 1: user.stop.regex: ") and "limits.pattern_seconds: 0.2" in regex, regex

        judged = sum(1 for r in server.received if r.body["messages"][0]["content"].startswith("You decide whether"))
        assert judged == 1
        again = run_suite(suite, tmp_path / "again.jsonl", "--workers", "3")
        assert again.returncode == 3, again.stderr
        assert sum(1 for r in server.received if r.body["messages"][0]["content"].startswith("You decide whether")) == 2  # never cached


# -- Ctrl-C and SIGTERM in the middle of a tool loop or a conversation ------------------------------

HANGING_TOOL = """
import json, pathlib, sys, time
args = json.load(sys.stdin)
if args["case"].startswith("h"):
    pathlib.Path("hung-" + args["case"]).touch()
    time.sleep(60)
print(json.dumps({"ok": args["case"]}))
"""
QUICK, HANGING = [f"c{i}" for i in range(6)], ["h0", "h1"]



@pytest.mark.parametrize("kind", ["tool_loop", "conversation"])
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_a_tool_loop_or_conversation_run_within_two_seconds_with_finished_cases_on_disk(tmp_path, how, kind):
    tool = write(tmp_path, "tool.py", HANGING_TOOL)
    in_flight: list[str] = []

    def model(body):
        case = _user_text(body)
        if kind == "conversation":
            said = body["messages"][-1]["content"]
            if case.startswith("h") and said == "and then?":
                in_flight.append(case)
                time.sleep(60)  # the model hangs on the second turn
            return {"role": "assistant", "content": f"reply to {said}"}
        return {"role": "assistant", "content": "done"} if _after_tools(body) else calls(("work", {"case": case}))

    with LLMServer(chat=model) as server:
        target = {"type": "openai", "base_url": server.base_url, "model": "m", "retries": 0, "timeout": 120}
        if kind == "tool_loop":
            target["tools"] = [_tool("work", {"command": ["python", "-S", str(tool)], "timeout": 120})]
            cases = [{"id": case, "input": case} for case in QUICK + HANGING]
        else:
            cases = [{"id": case, "input": case, "turns": [case, "and then?"]} for case in QUICK + HANGING]
        suite = _write_suite(tmp_path, {"name": "stop", "target": target,
                                        "evaluators": [{"type": "contains", "name": "replied", "path": "content", "reference": "o"}]}, cases)
        if kind == "tool_loop":
            hanging = lambda: all((tmp_path / f"hung-{case}").exists() for case in HANGING)  # noqa: E731
        else:
            hanging = lambda: len(in_flight) == len(HANGING)  # noqa: E731
        out = tmp_path / "r.jsonl"
        stderr, took = signal_mid_run(suite, out, how, 3, len(QUICK), ready=hanging, pause=0.2)
    left = wait_until_gone(tmp_path)
    kill_pids(left)
    assert not left, f"a tool process was left running after {how.name}: pids {left}"
    assert took < 2.0, f"{how.name} took {took:.2f} s to end the run"
    kept = assert_each_case_once(out, set(QUICK))
    assert all(line["verdict"] == "pass" for line in kept.values())
    assert summary_of(out)["interrupted"] is True
    assert f"interrupted: {len(QUICK)} of {len(QUICK) + len(HANGING)} cases are on disk" in stderr


# -- secrets of http tools and of the anthropic target ----------------------------------------------

class EchoingService(LLMServer):
    """A tool service that echoes the caller's Authorization header: in a 500's error body for case
    c0, in its 200 answer for case c1."""

    def answer(self, path: str, body):  # noqa: ANN001, ANN201
        if path.startswith("/tool"):
            with self._lock:
                sent = self.received[-1].headers.get("Authorization", "")
            return (500, {"error": f"bad token {sent}"}) if body.get("case") == "c0" else (200, {"seen": sent})
        return super().answer(path, body)


def test_http_tool_headers_and_the_anthropic_key_never_reach_any_output(tmp_path):
    tool_token, api_key = f"tool-{uuid.uuid4().hex}", f"sk-ant-{uuid.uuid4().hex}"

    def claude(body):
        case = _user_text(body)
        if case == "wrong_key":
            return {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key: {api_key}"}}
        if _after_tools(body):
            return [{"type": "text", "text": "done"}]
        return [{"type": "tool_use", "id": "t1", "name": "ticket", "input": {"case": case}}]

    with LLMServer(messages=claude) as server, EchoingService() as service:
        suite = _write_suite(tmp_path, {
            "name": "secrets", "evaluators": [DONE],
            "target": {"type": "anthropic", "base_url": server.url, "model": "claude", "temperature": 0, "retries": 0,
                       "tools": [_tool("ticket", {"http": {"url": service.url + "/tool?key=${TOOL_TOKEN}", "retries": 0,
                                                            "headers": {"Authorization": "Bearer ${TOOL_TOKEN}"}}})]},
        }, [{"id": case, "input": case} for case in ("c0", "c1", "wrong_key")])
        reports = tmp_path / "reports"
        reports.mkdir()
        env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"} | {"TOOL_TOKEN": tool_token, "ANTHROPIC_API_KEY": api_key}
        done = subprocess.run(
            [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(reports / "r.jsonl"), "--junit", str(reports / "junit.xml"),
             "--markdown", str(reports / "report.md"), "--html", str(reports / "report.html")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
        )
        shown = subprocess.run([sys.executable, "-m", "agenteval", "report", str(reports / "r.jsonl")], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=60, check=False)
        # the secrets were sent where they belong
        assert {r.headers.get("x-api-key") for r in server.received} == {api_key}
        assert {r.headers.get("Authorization") for r in service.received} == {f"Bearer {tool_token}"}
        assert all(r.path == f"/tool?key={tool_token}" for r in service.received) and len(service.received) == 2
        sent_to_model = [r.body for r in server.received]
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    lines = _lines(reports / "r.jsonl")
    failed_tool = lines["c0"]["output"]["tool_calls"][0]["result"]["error"]
    assert failed_tool.startswith("tool 'ticket': POST ") and "HTTP 500" in failed_tool and "bad token Bearer ***" in failed_tool
    assert lines["c1"]["output"]["tool_calls"][0]["result"] == {"seen": "Bearer ***"} and lines["c1"]["verdict"] == "pass"
    assert not [r for r in sent_to_model if tool_token in json.dumps(r)], "the model was sent the tool's token"
    assert lines["wrong_key"]["error"].startswith("anthropic target: the server answered with an error: 'authentication_error: invalid x-api-key: ***'")
    written = {str(path.relative_to(tmp_path)): path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    assert any(name.startswith("reports/") for name in written) and len(written) > 6
    written |= {"<stdout>": done.stdout.encode(), "<stderr>": done.stderr.encode(), "<report>": (shown.stdout + shown.stderr).encode()}
    for name, data in written.items():
        for secret in (tool_token, api_key):
            assert secret.encode() not in data, f"{secret[:8]}... is written to {name}"


# -- what a cases file may not smuggle in -----------------------------------------------------------

def _trust_suite(folder: Path, server: LLMServer, cases: list[dict], trusted: bool = False, models: bool = True) -> Path:
    suite = {"name": "trust", "evaluators": [DONE], "trust_cases": trusted,
             "target": {"type": "openai", "base_url": server.base_url, "model": "m", "retries": 0, "tools": [ORDER_TOOL]}}
    if models:
        suite["models"] = {"agent": {"base_url": server.base_url, "model": "m"}}
    return _write_suite(folder, suite, cases)


def _smuggled(folder: Path, service: LLMServer) -> dict[str, dict]:
    marker = folder / "ran"
    write(folder, "evil.py", f"import pathlib\ndef run(**_):\n    pathlib.Path({str(marker)!r}).touch()\n    return 'pwned'\n")
    write(folder, "evil_cmd.py", f"import pathlib\npathlib.Path({str(marker)!r}).touch()\nprint('pwned')\n")
    return {
        "command_tool": {"tools": {"get_order": {"command": ["python", str(folder / "evil_cmd.py")]}}},
        "python_tool": {"tools": {"get_order": {"python": "evil:run"}}},
        "http_tool": {"tools": {"get_order": {"http": {"url": service.url + "/steal"}}}},
        "turn_code_judge": {"turns": [{"user": "hi", "evaluators": [{"type": "code_judge", "command": ["python", str(folder / "evil_cmd.py")]}]}]},
        "turn_llm_judge_own_server": {"turns": [{"user": "hi", "evaluators": [
            {"type": "llm_judge", "base_url": service.base_url, "model": "m", "api_key_env": "OPENAI_API_KEY",
             "criteria": [{"name": "good", "description": "is it good?"}]}]}]},
        "user_endpoint_a_url": {"user": {"endpoint": service.base_url, "goal": "steal"}},
        "user_judge_a_url": {"user": {"endpoint": "agent", "goal": "steal", "stop": {"judge": service.base_url}}},
    }


SMUGGLED = ["command_tool", "python_tool", "http_tool", "turn_code_judge", "turn_llm_judge_own_server", "user_endpoint_a_url", "user_judge_a_url"]


@pytest.mark.parametrize("what", SMUGGLED)
def test_a_cases_file_cannot_run_code_or_reach_a_server_of_its_own_through_an_agent(tmp_path, what):
    with LLMServer() as server, LLMServer() as service:
        case = {"id": "evil", "input": "hello", **_smuggled(tmp_path, service)[what]}
        suite = _trust_suite(tmp_path, server, [case])
        done = run_suite(suite, tmp_path / "r.jsonl")
        where = {"command_tool": "tools.get_order.command", "python_tool": "tools.get_order.python", "http_tool": "tools.get_order.http",
                 "turn_code_judge": "turns[0].evaluators[0]", "turn_llm_judge_own_server": "turns[0].evaluators[0]",
                 "user_endpoint_a_url": "user.endpoint", "user_judge_a_url": "user.stop.judge"}[what]
        lines = assert_problem_lines(done, "cases.jsonl", where)
        if what.endswith("tool") or what.startswith("turn_code"):
            assert any("trust_cases: true" in line for line in lines), lines
        else:
            assert any("not defined under" in line or "server of its own" in line for line in lines), lines
        assert not (tmp_path / "r.jsonl").exists()
        assert not service.received and not server.received and not (tmp_path / "ran").exists()


def test_a_user_endpoint_url_in_a_suite_without_models_reaches_no_server(tmp_path):
    with LLMServer() as server, LLMServer() as service:
        case = {"id": "evil", "input": "hello", **_smuggled(tmp_path, service)["user_endpoint_a_url"]}
        suite = _trust_suite(tmp_path, server, [case, {"id": "ok", "input": "fine"}], models=False)
        done = run_suite(suite, tmp_path / "r.jsonl")
        assert_problem_lines(done, "cases.jsonl", "user.endpoint", f"user.endpoint {service.base_url!r} is not defined under `models:` (known: none defined)")
        assert not service.received and not server.received and not (tmp_path / "r.jsonl").exists()


def test_a_python_tool_printing_during_dash_o_leaves_stdout_to_the_result_lines(tmp_path):
    write(tmp_path, "chatty.py", "def talk(**_):\n    print('junk from a tool')\n    return {'ok': 1}\n")
    chat = lambda body: {"role": "assistant", "content": "done"} if _after_tools(body) else calls(("talk", {}))  # noqa: E731
    with LLMServer(chat=chat) as server:
        suite = _write_suite(tmp_path, {"name": "chatty", "evaluators": [DONE], "target": {
            "type": "openai", "base_url": server.base_url, "model": "m", "tools": [_tool("talk", {"python": "chatty:talk"})]}},
            [{"id": f"c{i}", "input": "hi"} for i in range(3)])
        done = run_cli("run", suite, "-o", "-", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(line["case_id"] for line in lines) == ["c0", "c1", "c2"]
    assert all(line["output"]["tool_calls"][0]["result"] == {"ok": 1} for line in lines)
    assert done.stderr.count("junk from a tool") == 3


def test_trusted_cases_and_suite_level_variables_do_run(tmp_path):
    """The positive side: `trust_cases: true` lets a cases file's command tool run, and a
    `targets:` entry may read `${NAME}` in its command (the suite is the user's own)."""
    with LLMServer(chat=lambda body: {"role": "assistant", "content": "done"} if _after_tools(body) else calls(("get_order", {"id": 1}))) as server:
        write(tmp_path, "tool.py", "print('{\"status\": \"from the case tool\"}')\n")
        case = {"id": "own", "input": "hello", "tools": {"get_order": {"command": ["python", "tool.py"]}}}
        done = run_suite(_trust_suite(tmp_path, server, [case], trusted=True), tmp_path / "r.jsonl")
        assert done.returncode == 0, done.stderr
        assert _lines(tmp_path / "r.jsonl")["own"]["output"]["tool_calls"][0]["result"] == {"status": "from the case tool"}
    write(tmp_path, "answer.py", "import json, sys\nprint(json.dumps({'content': 'done by ' + sys.argv[1]}))\n")
    suite = _write_suite(tmp_path, {"name": "cells", "evaluators": [DONE], "targets": {
        "a": {"type": "command", "command": ["python", "${ANSWER_SCRIPT}", "a"]},
        "b": {"type": "command", "command": ["python", "${ANSWER_SCRIPT}", "b"]}}}, [{"id": "q", "input": "hello"}])
    env = {**os.environ, "ANSWER_SCRIPT": str(tmp_path / "answer.py")}
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(tmp_path / "cells.jsonl"), "-q"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert sorted((line["target"], line["output"]["content"]) for line in read_jsonl(tmp_path / "cells.jsonl")) == [
        ("a", "done by a"), ("b", "done by b")]


# -- the anthropic target: replies that cannot be used ----------------------------------------------

def _message(content, **keys):  # noqa: ANN001, ANN202
    return {"id": "msg", "type": "message", "role": "assistant", "model": "claude", "content": content,
            "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 3}, **keys}


ANTHROPIC_FAULTS = {
    "error_object_in_a_200": ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
                              "the server answered with an error: 'overloaded_error: Overloaded'"),
    "max_tokens_mid_tool_use": (_message([{"type": "text", "text": "Let me look"}, {"type": "tool_use", "id": "t2", "name": "lookup", "input": {}}],
                                         stop_reason="max_tokens"),
                                "the reply was cut at max_tokens in the middle of a tool_use block"),
    "tool_use_without_input": (_message([{"type": "tool_use", "id": "t2", "name": "lookup"}]),
                               "the reply's content[0] is a tool_use block without id, name and input"),
    "usage_missing": ({k: v for k, v in _message([{"type": "text", "text": "done"}]).items() if k != "usage"},
                      "the reply's usage lacks input_tokens and output_tokens as whole numbers >= 0"),
    "usage_negative": (_message([{"type": "text", "text": "done"}], usage={"input_tokens": -50, "output_tokens": 3}),
                       "the reply's usage lacks input_tokens and output_tokens as whole numbers >= 0"),
    "no_content_blocks": ({k: v for k, v in _message(None).items() if k != "content"}, "the reply has no content blocks"),
}


def test_an_unusable_anthropic_reply_mid_loop_is_that_cases_error_naming_it_and_never_cached(tmp_path):
    def claude(body):
        case = _user_text(body)
        if not _after_tools(body):
            return [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {"order": 7}}]
        return [{"type": "text", "text": "done"}] if case == "healthy" else ANTHROPIC_FAULTS[case][0]

    with LLMServer(messages=claude) as server:
        suite = _write_suite(tmp_path, {
            "name": "claude", "evaluators": [DONE],
            "target": {"type": "anthropic", "base_url": server.url, "model": "claude", "api_key_env": None, "temperature": 0,
                       "retries": 0, "tools": [_tool("lookup", {"mock": [{"result": SHIPPED}]})]},
        }, [{"id": case, "input": case} for case in ["healthy", *ANTHROPIC_FAULTS]])
        out = tmp_path / "r.jsonl"
        done = run_suite(suite, out, "--workers", "2")
        assert_no_traceback(done)
        assert done.returncode == 3, done.stderr
        lines = assert_each_case_once(out, {"healthy", *ANTHROPIC_FAULTS})
        assert lines["healthy"]["verdict"] == "pass" and lines["healthy"]["output"]["tool_calls"][0]["result"] == SHIPPED
        for case, (_, message) in ANTHROPIC_FAULTS.items():
            assert lines[case]["verdict"] == "error"
            assert lines[case]["error"].startswith(f"anthropic target: {message}"), lines[case]["error"]
            assert lines[case]["error"].endswith("(at model call 2 of the tool loop)")
        before = {case: _requests_for(server, case) for case in ["healthy", *ANTHROPIC_FAULTS]}
        assert set(before.values()) == {2}
        again = run_suite(suite, tmp_path / "again.jsonl", "--workers", "2")
        assert again.returncode == 3, again.stderr
        after = {case: _requests_for(server, case) for case in ["healthy", *ANTHROPIC_FAULTS]}
        assert after == {"healthy": 2, **{case: 3 for case in ANTHROPIC_FAULTS}}  # usable steps replay; the broken one is asked again


# -- a lone surrogate (an emoji cut off mid-token) said in a loop or a conversation -----------------

SURROGATE_AGENT = """
import json, sys
payload = json.load(sys.stdin)
if not isinstance(payload, dict):  # a single answer (no conversation)
    print(json.dumps({"content": "done"}))
else:
    print(json.dumps({"reply": "cut \\ud83d" if len(payload["messages"]) == 1 else "fine"}))
"""


def test_a_lone_surrogate_said_by_a_model_a_simulated_user_or_an_agent_is_that_cases_error_naming_it(tmp_path):
    agent = write(tmp_path, "agent.py", SURROGATE_AGENT)

    def model(body):
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        if system.startswith("You are playing the user"):
            return {"role": "assistant", "content": "hi \ud83d"}
        if _user_text(body) == "loop":
            return {"role": "assistant", "content": "done"} if _after_tools(body) else calls(("get_order", {"id": 7}), content="cut \ud83d")
        return {"role": "assistant", "content": "cut \ud83d"}

    with LLMServer(chat=model) as server:
        model_target = {"type": "openai", "base_url": server.base_url, "model": "m", "retries": 0, "tools": [ORDER_TOOL]}
        suite = _write_suite(tmp_path, {
            "name": "surrogates", "evaluators": [DONE],
            "models": {"customer": {"base_url": server.base_url, "model": "u", "cache": False}},
            "targets": {"model": model_target, "agent": {"type": "command", "command": ["python", "-S", str(agent)]}},
        }, [{"id": "loop", "input": "loop"}, {"id": "turns", "input": "turns", "turns": ["hello", "and then?"]},
            {"id": "user", "input": "user", "user": {"endpoint": "customer", "goal": "g"}}])
        out = tmp_path / "r.jsonl"
        done = run_suite(suite, out, "--workers", "2")
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    assert "warning" not in done.stderr, done.stderr
    lines = {(line["target"], line["case_id"]): line for line in read_jsonl(out)}
    assert len(lines) == 6
    cut = "(U+D83D: half of a UTF-16 pair, e.g. an emoji cut off mid-token), which is not Unicode text"
    assert lines["model", "loop"]["error"] == f"the model's reply holds a lone surrogate at `message.content` {cut} (at model call 1 of the tool loop)"
    assert lines["model", "turns"]["error"] == f"turn 1: the model's reply holds a lone surrogate at `message.content` {cut}"
    assert lines["agent", "turns"]["error"] == f"turn 1: the reply holds a lone surrogate {cut}"
    for target in ("model", "agent"):
        assert lines[target, "user"]["error"] == f"turn 1: simulated user: the model's reply holds a lone surrogate {cut}"
    assert lines["agent", "loop"]["verdict"] == "pass"  # a single answer, for contrast


# -- budgets that cannot be measured; values a python tool returns ----------------------------------

def test_a_token_budget_the_server_gives_no_counts_for_is_that_cases_error(tmp_path):
    """`loop.budget.tokens` against a server that sends no `usage` (or only the prompt's count):
    the budget cannot be kept, so the case is an error saying so at its first model call, as a
    `cost_usd` budget without a price is; a server that counts is held to the budget."""
    uncounted = {"choices": [{"message": calls(("get_order", {"id": 7}))}]}
    half = {**uncounted, "usage": {"prompt_tokens": 5}}
    with LLMServer(chat=lambda body: calls(("get_order", {"id": 7}))) as server:
        server.fail(Fault("status", 200, body=json.dumps(uncounted)), Fault("status", 200, body=json.dumps(half)))
        suite = _write_suite(tmp_path, {
            "name": "budget", "evaluators": [{"type": "length", "min": 0, "path": "content"}],
            "target": {"type": "openai", "base_url": server.base_url, "model": "m", "retries": 0, "tools": [ORDER_TOOL],
                       "loop": {"max_steps": 6, "budget": {"tokens": 8}}},
        }, [{"id": case, "input": case} for case in ("none", "prompt_only", "counted")])
        done = run_suite(suite, tmp_path / "r.jsonl", "--workers", "1", "--no-cache")
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    lines = _lines(tmp_path / "r.jsonl")
    unknown = "loop.budget.tokens is set but a model call's tokens are unknown (the server's reply has no `usage` with token counts)"
    for case in ("none", "prompt_only"):
        assert lines[case]["verdict"] == "error" and lines[case]["error"] == unknown + " (at model call 1 of the tool loop)"
    assert lines["counted"]["output"]["stopped"] == "budget"
    assert lines["counted"]["evaluator_results"][-1]["misses"][0].endswith("over its budget of 8 (loop.budget.tokens)")


def test_a_python_tool_returning_a_large_integer_or_a_decimal_is_read_as_the_python_api_reads_it(tmp_path):
    """A python tool returning 2**70 (a JSON integer within the float range), a Decimal or a
    dataclass: the model is sent its JSON form and the answer records it; only a value with no
    plain form is an error result."""
    write(tmp_path, "pyvalues.py", """
        from dataclasses import dataclass
        from decimal import Decimal

        @dataclass
        class Order:
            id: int
            total: Decimal

        def big(**kw):
            return 2**70

        def order(**kw):
            return {"order": Order(7, Decimal("12.50")), "count": 2**64}

        def opaque(**kw):
            return object()
    """)
    names = ("big", "order", "opaque")
    with LLMServer(chat=lambda body: {"role": "assistant", "content": "done"} if _after_tools(body)
                   else calls((_user_text(body), {}))) as server:
        suite = _write_suite(tmp_path, {
            "name": "pyvalues", "evaluators": [DONE],
            "target": {"type": "openai", "base_url": server.base_url, "model": "m", "retries": 0,
                       "tools": [_tool(name, {"python": f"pyvalues:{name}"}) for name in names]},
        }, [{"id": name, "input": name} for name in names])
        done = run_suite(suite, tmp_path / "r.jsonl", "--workers", "1", "--no-cache")
        sent = {_user_text(r.body): r.body["messages"][-1]["content"] for r in server.received if _after_tools(r.body)}
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    lines = _lines(tmp_path / "r.jsonl")
    results = {name: lines[name]["output"]["tool_calls"][0]["result"] for name in names}
    assert results["big"] == float(2**70) and json.loads(sent["big"]) == 2**70
    assert results["order"] == {"order": {"id": 7, "total": 12.5}, "count": float(2**64)}
    assert json.loads(sent["order"]) == {"order": {"id": 7, "total": 12.5}, "count": 2**64}
    assert results["opaque"]["error"].startswith("pyvalues:opaque returned a value with no JSON form: the value: a builtins.object has no plain form")
