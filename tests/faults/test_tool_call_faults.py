"""tool_calls under hostile expected calls and answers: long augmenting paths (E39) and
backtracking patterns in `match: regex` argument checks (E28), run through the CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import read_jsonl, run_cli, write

from agenteval.evaluators import EvalContext
from agenteval.evaluators.tools import ToolCalls
from agenteval.limits import DEFAULT_LIMITS, Limits


def _run(folder: Path, suite: str, cases: list[dict]) -> tuple[int, dict[str, dict]]:
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    write(folder, "suite.yaml", suite)
    done = run_cli("run", folder / "suite.yaml", "-o", folder / "out.jsonl", "--quiet", timeout=120)
    results = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(folder / "out.jsonl")}
    return done.returncode, results


def test_a_thousand_step_augmenting_path_still_satisfies_every_expected_call(tmp_path):
    """E39: each of 1,200 expected calls accepts x=i or x=i+1, and one more accepts only x=0: giving
    it its call shifts all 1,200 earlier pairs, far deeper than Python's recursion limit."""
    count = 1200
    expected = [{"name": "f", "arguments": {"x": {"match": "any_of", "values": [i, i + 1]}}} for i in range(count)]
    expected.append({"name": "f", "arguments": {"x": {"match": "any_of", "values": [0]}}})
    output = [{"name": "f", "arguments": {"x": j}} for j in range(count + 1)]
    code, results = _run(
        tmp_path, "name: e39\nevaluators:\n  - {type: tool_calls, expected_path: calls}\ncases: cases.jsonl\n",
        [{"id": "chain", "input": {}, "expected": {"calls": expected}, "output": output}],
    )
    assert code == 0
    assert (results["chain"]["verdict"], results["chain"]["score"]) == ("pass", 1.0)
    assert results["chain"]["reasoning"] == f"{count + 1}/{count + 1} expected calls satisfied"


def test_a_backtracking_argument_pattern_is_an_error_naming_it_and_the_other_cases_run(tmp_path):
    """E28, tool_calls part: a `match: regex` check from the cases file meets a long argument."""
    evil = {"name": "f", "arguments": {"q": {"match": "regex", "pattern": "^(a|aa)+$"}}}  # 2^28 splits of 40 a's
    repro = {"name": "f", "arguments": {"q": {"match": "regex", "pattern": "^(a+)+$"}}}  # the reported one: the engine ends it at once
    long = [{"name": "f", "arguments": {"q": "a" * 40 + "!"}}]
    cases = [
        {"id": "evil", "input": {}, "expected": {"calls": [evil]}, "output": long},
        {"id": "fine", "input": {}, "expected": {"calls": [evil]}, "output": [{"name": "f", "arguments": {"q": "aaaa"}}]},
        {"id": "repro", "input": {}, "expected": {"calls": [repro]}, "output": long},
    ]
    started = time.monotonic()
    code, results = _run(
        tmp_path,
        "name: e28\nlimits: {pattern_seconds: 0.2}\nevaluators:\n  - {type: tool_calls, expected_path: calls}\ncases: cases.jsonl\n",
        cases,
    )
    assert time.monotonic() - started < 60
    assert code == 3
    assert results["evil"]["verdict"] == "error"
    assert results["evil"]["error"] == (
        "tool_calls 'tool_calls': pattern '^(a|aa)+$' ran longer than 0.2 s on this text "
        "(limit `limits.pattern_seconds: 0.2`; raise it in the suite's `limits:` if this is expected)"
    )
    assert (results["fine"]["verdict"], results["fine"]["score"]) == ("pass", 1.0)
    assert results["repro"]["misses"] == ["f (q: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... does not match '^(a+)+$')"]


def _evaluate(config: dict, output: object, limits: Limits = DEFAULT_LIMITS):
    evaluator = ToolCalls.model_validate({"type": "tool_calls", **config})
    return evaluator.evaluate(EvalContext("case", None, None, output, {}, Path("."), limits=limits))


def test_an_any_order_array_check_past_the_pairs_limit_is_an_error_naming_the_limit():
    check = {"match": "array", "items": [{"match": "regex", "pattern": "x\\d+"}] * 300, "order": "any"}
    result = _evaluate({"calls": [{"name": "f", "arguments": {"v": check}}]}, [{"name": "f", "arguments": {"v": ["x1"] * 300}}], Limits(pairs=50_000))
    assert (result.verdict, result.error) == (
        "error",
        "an array check in any order would weigh 90,000 element pairs (limit `limits.pairs: 50000`; "
        "raise it in the suite's `limits:` if this is expected)",
    )
    assert _evaluate({"calls": [{"name": "f", "arguments": {"v": check}}]}, [{"name": "f", "arguments": {"v": ["x1"] * 300}}]).score == 1.0


def test_twenty_thousand_results_without_call_ids_are_linked_in_linear_time():
    count = 20_000
    output = [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"i": i}}} for i in range(count)]}]
    output += [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"i": i}}} for i in range(count)]}]
    calls = [{"name": "f", "arguments": {"i": count - 1}, "result": {"match": "object", "properties": {"i": count - 1}}}]
    started = time.process_time()
    result = _evaluate({"calls": calls}, output)
    assert (result.score, result.verdict) == (1.0, "pass")
    assert time.process_time() - started < 5  # a quadratic link would take minutes
