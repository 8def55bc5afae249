"""code_judge speaking AgentV's code-grader I/O, with real judge processes.

`payload: agentv` adds AgentV's field names (`output`, `expected_output`; `input` is shared) beside
agenteval's own; an answer `{score, assertions: [{text, passed, evidence}]}` becomes hits and misses.
Output that is not JSON stays an error (AgentV would score it 1.0).
"""

import json
import subprocess
import sys

from agenteval.evaluators import EvalContext
from agenteval.evaluators.code_judge import CodeJudge
from agenteval.process import Processes

from conftest import write

# An AgentV-style grader, as AgentV's docs write one: reads `output` and `expected_output`.
AGENTV_GRADER = """
import json, sys
data = json.load(sys.stdin)
output, expected = data["output"], data["expected_output"]
assertions = [
    {"text": "names the city", "passed": "Paris" in output},
    {"text": "matches the reference", "passed": output == expected, "evidence": f"got {output!r}"},
]
print(json.dumps({"score": sum(a["passed"] for a in assertions) / len(assertions), "assertions": assertions,
                  "reasoning": "checked " + str(len(assertions))}))
"""

ECHO = """
import json, sys
print(json.dumps({"score": 1.0, "details": {"payload": json.load(sys.stdin)}}))
"""


def judge(tmp_path, script, **config):
    write(tmp_path, "grader.py", script)
    return CodeJudge.model_validate({"type": "code_judge", "command": ["python", "grader.py"], **config})


def context(tmp_path, output, expected):
    return EvalContext("case-1", [{"role": "user", "content": "capital of France?"}], expected, output, {}, tmp_path, Processes())


def test_agentv_payload_carries_agentv_names_beside_agenteval_ones(tmp_path):
    result = judge(tmp_path, ECHO, payload="agentv").evaluate(context(tmp_path, "Paris", "Paris."))
    payload = result.details["payload"]
    assert payload["output"] == payload["candidate_answer"] == "Paris"
    assert payload["expected_output"] == payload["reference_answer"] == "Paris."
    assert payload["input"] == [{"role": "user", "content": "capital of France?"}]
    assert payload["config"] == {}  # `payload` is the evaluator's own key, never passed as config


def test_default_payload_has_no_agentv_names(tmp_path):
    payload = judge(tmp_path, ECHO).evaluate(context(tmp_path, "Paris", "Paris.")).details["payload"]
    assert "output" not in payload and "expected_output" not in payload


def test_agentv_grader_runs_unchanged_and_assertions_become_hits_and_misses(tmp_path):
    result = judge(tmp_path, AGENTV_GRADER, payload="agentv").evaluate(context(tmp_path, "Paris", "Paris."))
    assert (result.score, result.verdict) == (0.5, "partial")
    assert result.hits == ["names the city"]
    assert result.misses == ["matches the reference: got 'Paris'"]
    assert result.reasoning == "checked 2"
    assert result.error is None


def test_all_assertions_passed_is_a_pass(tmp_path):
    result = judge(tmp_path, AGENTV_GRADER, payload="agentv").evaluate(context(tmp_path, "Paris", "Paris"))
    assert (result.score, result.verdict, result.hits, result.misses) == (1.0, "pass", ["names the city", "matches the reference"], [])


def test_malformed_assertions_are_an_error_naming_the_item(tmp_path):
    script = 'import json; print(json.dumps({"score": 1, "assertions": [{"text": "ok", "passed": "yes"}]}))'
    result = judge(tmp_path, script, payload="agentv").evaluate(context(tmp_path, "a", "a"))
    assert result.verdict == "error"
    assert "assertions[0]: expected {text: string, passed: true|false, evidence?: string}" in result.error


def test_assertions_that_are_not_a_list_are_an_error(tmp_path):
    script = 'import json; print(json.dumps({"score": 1, "assertions": "all good"}))'
    result = judge(tmp_path, script).evaluate(context(tmp_path, "a", "a"))
    assert result.verdict == "error"
    assert "assertions: expected a list of {text, passed, evidence}, got str" in result.error


def test_non_json_output_stays_an_error(tmp_path):
    result = judge(tmp_path, "print('looks fine to me')", payload="agentv").evaluate(context(tmp_path, "a", "a"))
    assert (result.score, result.verdict) == (0.0, "error")
    assert "judge printed no JSON object (stdout: 'looks fine to me')" in result.error


def test_unknown_payload_value_is_refused_at_load(tmp_path):
    write(tmp_path, "suite.yaml", """
name: s
evaluators: [{type: code_judge, command: [python, grader.py], payload: agentvv}]
cases: [{id: a, input: 1, expected: 1, output: 1}]
""")
    done = subprocess.run([sys.executable, "-m", "agenteval", "validate", str(tmp_path / "suite.yaml")], capture_output=True, text=True)
    assert done.returncode == 2
    assert "evaluators[0].payload" in done.stderr and "agentv" in done.stderr


def test_agentv_grader_in_a_run(tmp_path):
    write(tmp_path, "grader.py", AGENTV_GRADER)
    write(tmp_path, "suite.yaml", """
name: graded
evaluators: [{name: grader, type: code_judge, command: [python, grader.py], payload: agentv}]
cases:
  - {id: right, input: q, expected: Paris, output: Paris}
  - {id: close, input: q, expected: Paris., output: Paris}
""")
    out = tmp_path / "results.jsonl"
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(tmp_path / "suite.yaml"), "-o", str(out), "-q"],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    lines = {row["case_id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert lines["right"]["verdict"] == "pass"
    assert lines["close"]["evaluator_results"][0]["misses"] == ["matches the reference: got 'Paris'"]
