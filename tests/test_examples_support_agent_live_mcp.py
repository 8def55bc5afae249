"""examples/support-agent-live with its order tools served by an MCP server
(orders_mcp_server.py, on the MCP SDK's low-level server), over stdio and over streamable HTTP on
127.0.0.1: the agent is told of the same tools and given the same results as with the suite's
mocks, so every request replays from the committed cache, offline, with the same verdicts."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

from conftest import read_jsonl
from test_examples_support_agent_live import _copy, _run


def _lines(path) -> dict[str, dict]:
    return {line["case_id"]: line for line in read_jsonl(path) if "case_id" in line}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_order_tools_through_an_mcp_server_over_stdio_or_http_replay_the_same_conversations(tmp_path):
    folder = _copy(tmp_path)
    mocked = _run(tmp_path, "-q", "-o", "mock.jsonl")
    stdio = _run(tmp_path, "-q", "-o", "stdio.jsonl", "--set", "target.tools=[{mcp: {command: [python, orders_mcp_server.py]}}]")
    port = _free_port()
    server = subprocess.Popen([sys.executable, "orders_mcp_server.py", "--http", str(port)], cwd=folder)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        http = _run(tmp_path, "-q", "-o", "http.jsonl", "--set", f"target.tools=[{{mcp: {{url: 'http://127.0.0.1:{port}/mcp'}}}}]")
    finally:
        server.terminate()
        server.wait(10)
    summary = "support-agent-live: 10 cases, 7 passed, 3 failed, 0 errored, pass rate 70.0%"
    for done in (mocked, stdio, http):
        assert done.returncode == 1 and summary in done.stdout and "Traceback" not in done.stdout, done.stdout
    expected = _lines(tmp_path / "mock.jsonl")
    for name in ("stdio.jsonl", "http.jsonl"):
        got = _lines(tmp_path / name)
        assert got.keys() == expected.keys() and len(got) == 10
        for case_id, line in got.items():
            assert line["verdict"] == expected[case_id]["verdict"]
            assert line["output"]["messages"] == expected[case_id]["output"]["messages"]  # the same tools told, the same results
            assert line["output"]["tool_calls"] == expected[case_id]["output"]["tool_calls"]
            assert all(step["usage"].get("cached") for step in line["output"]["steps"] if step["kind"] == "model")
    refund_down = _lines(tmp_path / "http.jsonl")["refund-system-down"]["output"]["tool_calls"]
    assert any(call["name"] == "refund_order" and "error" in call["result"] for call in refund_down)  # the case's own mock lays over the server's tool
