"""Tools from MCP servers in a tool loop: a real MCP server that other people wrote, installed from
PyPI (`mcp-server-time`, the reference time server), run over stdio through the official SDK, and
a scripted model on 127.0.0.1 (tests/llm_server.py) that calls its tools."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import alive, write
from llm_server import LLMServer, calls

from agenteval.endpoints import Endpoints
from agenteval.process import Processes
from agenteval.suite.loader import SuiteInvalid, load_suite
from agenteval.suite.models import Case
from agenteval.targets.base import TargetRun
from agenteval.targets.openai import OpenAITarget

TIME_SERVER = ["python", "-m", "mcp_server_time", "--local-timezone", "UTC"]
HOSTILE = Path(__file__).parent / "hostile_mcp_server.py"


def target(server, tools, **keys):
    return OpenAITarget.model_validate({"type": "openai", "base_url": server.base_url, "model": "m1", "backoff": 0.01, "tools": tools, **keys})


def run_case(model_target, folder: Path, processes: Processes, case=None):
    endpoints = Endpoints()
    try:
        return model_target.answer(case or Case(id="a", input="what time is it in Paris?"), TargetRun(folder, processes, endpoints))
    finally:
        endpoints.close()


def test_the_reference_time_server_answers_a_loop_through_its_listed_filtered_and_renamed_tools(tmp_path):
    processes = Processes()
    with LLMServer() as server:
        server.play(calls(("convert", {"source_timezone": "Europe/Paris", "time": "16:30", "target_timezone": "Asia/Tokyo"})),
                    {"role": "assistant", "content": "00:30 in Tokyo"})
        entry = {"mcp": {"command": TIME_SERVER}, "tools": ["convert_time"], "rename": {"convert_time": "convert"}}
        try:
            got = run_case(target(server, [entry]), tmp_path, processes)
        finally:
            processes.stop_all()
        offered = server.received[0].body["tools"]
    assert got.error is None and got.output["stopped"] == "answered" and got.output["content"] == "00:30 in Tokyo"
    # the model is told of the server's one chosen tool, under its new name, with the server's description and schema
    assert [tool["function"]["name"] for tool in offered] == ["convert"]
    function = offered[0]["function"]
    assert function["description"] == "Convert time between timezones"
    assert function["parameters"]["required"] == ["source_timezone", "time", "target_timezone"]
    # the call went to the server, and its structured answer came back to the model and into the answer
    [call] = got.output["tool_calls"]
    assert call["name"] == "convert" and call["arguments"]["time"] == "16:30"
    result = call["result"]
    assert result["source"]["timezone"] == "Europe/Paris" and result["target"]["timezone"] == "Asia/Tokyo"
    assert result["target"]["datetime"].endswith("T00:30:00+09:00") and result["time_difference"] == "+8.0h"
    sent = [m for m in server.received[1].body["messages"] if m["role"] == "tool"]
    assert json.loads(sent[0]["content"]) == result


def test_one_session_per_worker_is_kept_across_cases_and_the_server_is_gone_when_the_run_stops(tmp_path):
    script = tmp_path / "hostile_mcp_server.py"
    shutil.copy(HOSTILE, script)
    processes = Processes()
    with LLMServer() as server:
        model_target = target(server, [{"mcp": {"command": ["python", str(script)]}, "tools": ["pid"]}])
        pids = []
        for case in ("a", "b"):
            server.play(calls(("pid", {})), {"role": "assistant", "content": "done"})
            got = run_case(model_target, tmp_path, processes, Case(id=case, input="x"))
            pids.append(got.output["tool_calls"][0]["result"]["pid"])
        assert pids[0] == pids[1] and alive(pids[0])  # the same server answered both cases of this worker
        processes.stop_all()
    assert not alive(pids[0])


def test_a_server_tool_the_suite_names_but_the_server_lacks_is_that_cases_error(tmp_path):
    processes = Processes()
    with LLMServer() as server:
        entry = {"mcp": {"command": ["python", str(HOSTILE)]}, "tools": ["echo", "get_weather"]}
        try:
            got = run_case(target(server, [entry]), tmp_path, processes)
        finally:
            processes.stop_all()
        assert server.count() == 0  # the model is never asked
    assert got.error == (f"openai target: MCP server 'python {HOSTILE}' has no tool named 'get_weather' "
                         "(its tools: crash, echo, flood, garbage, hang, malformed, not_jsonrpc, orphan, pid)")


def test_an_mcp_server_entry_is_refused_at_load_when_it_is_neither_stdio_nor_http(tmp_path):
    write(tmp_path, "s.yaml", """
        name: t
        target: {type: openai, base_url: "http://127.0.0.1:9/v1", model: m, tools: [{mcp: {command: [x], url: "http://127.0.0.1:9/mcp"}}]}
        evaluators: [{type: contains, path: content, reference: x}]
        cases: [{id: a, input: hi}]
    """)
    with pytest.raises(SuiteInvalid) as refused:
        load_suite(tmp_path / "s.yaml")
    assert "an MCP server is `command: [...]` (stdio) or `url: ...` (streamable HTTP): give one of them" in refused.value.problems[0].render()


