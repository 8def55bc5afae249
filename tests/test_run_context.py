"""The run's context (run id, suite, cell, case) reaches the code a run starts: command targets and
code judges as AGENTEVAL_* variables, judges' payloads as fields, Python checks as `ctx.run`, and
a python target's function through `agenteval.current_run()`."""

from __future__ import annotations

import asyncio
import json

import agenteval
from conftest import read_jsonl, run_cli, write

TARGET = """
import json, os, sys
json.loads(sys.stdin.read())
print(json.dumps({name: os.environ.get(name) for name in
                  ("AGENTEVAL_RUN_ID", "AGENTEVAL_SUITE", "AGENTEVAL_CASE_ID", "AGENTEVAL_CELL", "AGENTEVAL_REPETITION")}))
"""
JUDGE = """
import json, os, sys
payload = json.loads(sys.stdin.readline())
env = {name: os.environ.get(name) for name in ("AGENTEVAL_RUN_ID", "AGENTEVAL_CASE_ID")}
print(json.dumps({"score": 1.0, "details": {"payload": {key: payload.get(key) for key in ("run_id", "suite", "cell", "repetition", "case_id")}, "env": env}}))
"""
CHECKS = """
def fields(payload):
    return {"score": 1.0, "details": {key: payload.get(key) for key in ("run_id", "suite", "cell", "repetition", "case_id")}}
"""


def test_commands_and_judges_are_told_the_run_case_and_cell(tmp_path):
    write(tmp_path, "target.py", TARGET)
    write(tmp_path, "judge.py", JUDGE)
    write(tmp_path, "checks.py", CHECKS)
    write(tmp_path, "suite.yaml", """
        name: context
        targets:
          fast: {type: command, command: [python3, target.py]}
          slow: {type: command, command: [python3, target.py], env: {AGENTEVAL_SUITE: mine}}
        evaluators:
          - {type: code_judge, name: judge, command: [python3, judge.py]}
          - {type: python, name: check, function: "checks:fields"}
        cases: [{id: a, input: 1}, {id: b, input: 2}]
    """)
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", "--repeat", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = read_jsonl(tmp_path / "r.jsonl")
    (run_id,) = {line["run_id"] for line in lines}
    assert len(lines) == 8
    for line in lines:
        cell, case, repetition = line["target"], line["case_id"], line["repetition"]
        assert line["output"] == {
            "AGENTEVAL_RUN_ID": run_id, "AGENTEVAL_SUITE": "context" if cell == "fast" else "mine",  # the suite's own env wins
            "AGENTEVAL_CASE_ID": case, "AGENTEVAL_CELL": cell, "AGENTEVAL_REPETITION": str(repetition),
        }
        judge, check = line["evaluator_results"]
        fields = {"run_id": run_id, "suite": "context", "cell": cell, "repetition": repetition, "case_id": case}
        assert judge["details"] == {"payload": fields, "env": {"AGENTEVAL_RUN_ID": run_id, "AGENTEVAL_CASE_ID": case}}
        assert check["details"] == fields


def test_a_one_cell_run_names_no_cell_and_a_long_lived_judge_reads_the_payload(tmp_path):
    write(tmp_path, "judge.py", """
        import json, os, sys
        for line in sys.stdin:
            payload = json.loads(line)
            details = {key: payload.get(key) for key in ("run_id", "suite", "cell", "repetition")}
            details["env"] = [os.environ.get("AGENTEVAL_RUN_ID"), os.environ.get("AGENTEVAL_SUITE")]
            print(json.dumps({"case_id": payload["case_id"], "score": 1.0, "details": details}), flush=True)
    """)
    write(tmp_path, "suite.yaml", """
        name: one
        evaluators: [{type: code_judge, command: [python3, judge.py], protocol: jsonl}]
        cases: [{id: a, output: x}, {id: b, output: y}]
    """)
    assert run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", cwd=tmp_path).returncode == 0
    for line in read_jsonl(tmp_path / "r.jsonl"):
        assert line["evaluator_results"][0]["details"] == {
            "run_id": line["run_id"], "suite": "one", "cell": None, "repetition": 0, "env": [line["run_id"], "one"],  # the run's, at its start
        }


def test_python_checks_and_python_targets_see_the_context():
    seen = []

    def task(value):
        context = agenteval.current_run()
        return {"value": value, "case": context.case_id, "run": context.run_id}

    async def atask(value):
        await asyncio.sleep(0)
        context = agenteval.current_run()
        return {"value": value, "case": context.case_id, "run": context.run_id}

    def check(ctx):
        seen.append((ctx.case_id, ctx.run.run_id, ctx.run.suite, ctx.run.cell))
        return ctx.output["case"] == ctx.case_id

    cases = [{"id": f"c{i}", "input": i} for i in range(5)]
    for function in (task, atask):
        seen.clear()
        run = agenteval.evaluate(cases, [check], task=function, name="ctx")
        results = list(run)
        assert [result.verdict for result in results] == ["pass"] * 5, [result.error for result in results]
        assert {result.output["run"] for result in results} == {run.run_id}
        assert sorted(seen) == [(f"c{i}", run.run_id, "ctx", None) for i in range(5)]
    assert agenteval.current_run() is None  # outside a call there is none


def test_a_case_id_no_environment_can_hold_still_runs(tmp_path):
    write(tmp_path, "target.py", TARGET)
    write(tmp_path, "suite.yaml", json.dumps({
        "name": "odd", "target": {"type": "command", "command": ["python3", "target.py"]},
        "evaluators": [{"type": "equals", "path": "AGENTEVAL_SUITE"}],
        "cases": [{"id": "nul\u0000id", "input": 1, "expected": {"AGENTEVAL_SUITE": "odd"}}, {"id": "plain", "input": 2, "expected": {"AGENTEVAL_SUITE": "odd"}}],
    }))
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    outputs = {line["case_id"]: line["output"] for line in read_jsonl(tmp_path / "r.jsonl")}
    assert outputs["nul\u0000id"]["AGENTEVAL_CASE_ID"] is None and outputs["plain"]["AGENTEVAL_CASE_ID"] == "plain"
