"""The `mcp` target: a real MCP server that other people wrote (`mcp-server-time` from PyPI), its
tool called once per case through the real CLI, arguments checked against the server's schema."""

from __future__ import annotations

import json

from conftest import read_jsonl, run_cli, write


def test_the_mcp_target_calls_the_time_servers_tool_per_case_checks_its_schema_and_scores_the_result(tmp_path):
    write(tmp_path, "suite.yaml", """
        name: time-server
        target:
          type: mcp
          command: [python, -m, mcp_server_time, --local-timezone, UTC]
          tool: convert_time
        evaluators:
          - {type: field_accuracy, fields: [{path: target.timezone}, {path: time_difference}]}
        cases: cases.jsonl
    """)
    cases = [
        {"id": "paris-tokyo", "input": {"source_timezone": "Europe/Paris", "time": "16:30", "target_timezone": "Asia/Tokyo"},
         "expected": {"target": {"timezone": "Asia/Tokyo"}, "time_difference": "+8.0h"}},
        {"id": "wrong-difference", "input": {"source_timezone": "UTC", "time": "09:00", "target_timezone": "Asia/Kolkata"},
         "expected": {"target": {"timezone": "Asia/Kolkata"}, "time_difference": "+5.0h"}},
        {"id": "missing-time", "input": {"source_timezone": "Europe/Paris", "target_timezone": "UTC"}, "expected": {}},
        {"id": "no-such-zone", "input": {"source_timezone": "Mars/Olympus", "time": "16:30", "target_timezone": "UTC"}, "expected": {}},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr  # cases errored
    got = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    assert got["paris-tokyo"]["verdict"] == "pass"
    assert got["paris-tokyo"]["output"]["target"]["datetime"] == got["paris-tokyo"]["output"]["target"]["datetime"][:11] + "00:30:00+09:00"
    assert got["wrong-difference"]["verdict"] in ("fail", "partial")
    assert got["wrong-difference"]["output"]["time_difference"] == "+5.5h"
    assert got["missing-time"]["verdict"] == "error" and got["missing-time"]["error"] == (
        "mcp target: the arguments of 'convert_time' do not match its input schema: (the whole value): 'time' is a required property")
    assert got["no-such-zone"]["verdict"] == "error" and got["no-such-zone"]["error"] == (
        "mcp target: tool 'convert_time' answered with an error: Error executing tool convert_time: "
        "Invalid timezone: 'No time zone found with key Mars/Olympus'")
