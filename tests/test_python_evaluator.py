"""type: python — a judge function called in-process with the code_judge payload."""

from __future__ import annotations

import string
import sys
from pathlib import Path

import orjson
from conftest import read_jsonl, run_cli, write
from pydantic import TypeAdapter

from agenteval.evaluators import EvalContext, EvaluatorSpec
from agenteval.evaluators.code_judge import judge_payload


def evaluator(**keys):
    return TypeAdapter(EvaluatorSpec).validate_python({"type": "python", **keys})


def context(base_dir: Path, output="Total: 42", expected="42", case_id="c1") -> EvalContext:
    return EvalContext(case_id, {"doc": "invoice"}, expected, output, {"agent_id": "a1"}, base_dir)


def test_a_number_is_the_score_and_graded_like_a_code_judge(tmp_path):
    write(tmp_path, "judges.py", """
        def half(payload):
            return 0.5
        def perfect(payload):
            return 1
    """)
    half = evaluator(function="judges:half").evaluate(context(tmp_path))
    assert (half.score, half.verdict, half.error) == (0.5, "partial", None)
    perfect = evaluator(function="judges:perfect").evaluate(context(tmp_path))
    assert (perfect.score, perfect.verdict) == (1.0, "pass")


def test_a_bool_is_pass_or_fail(tmp_path):
    write(tmp_path, "judges.py", """
        def contains(payload):
            return payload["reference_answer"] in payload["candidate_answer"]
    """)
    judge = evaluator(function="judges:contains")
    hit = judge.evaluate(context(tmp_path))
    miss = judge.evaluate(context(tmp_path, output="Total: 41"))
    assert (hit.score, hit.verdict) == (1.0, "pass")
    assert (miss.score, miss.verdict) == (0.0, "fail")


def test_a_result_dict_keeps_hits_misses_details_and_its_verdict(tmp_path):
    write(tmp_path, "judges.py", """
        def words(payload):
            wanted = payload["config"]["words"]
            text = payload["candidate_answer"].lower()
            found = [w for w in wanted if w in text]
            return {"score": len(found) / len(wanted), "hits": found,
                    "misses": [w for w in wanted if w not in found], "details": {"n": len(wanted)},
                    "reasoning": "word check"}
    """)
    result = evaluator(function="judges:words", words=["total", "42", "eur"], min_score=0.6).evaluate(context(tmp_path))
    assert result.score == 2 / 3
    assert result.verdict == "pass"  # min_score overrides the graded default, as for code_judge
    assert (result.hits, result.misses, result.details, result.reasoning) == (["total", "42"], ["eur"], {"n": 3}, "word check")


def test_the_function_receives_exactly_the_code_judge_payload(tmp_path):
    write(tmp_path, "judges.py", """
        import json
        SEEN = []
        def record(payload):
            SEEN.append(json.loads(json.dumps(payload)))
            payload["candidate_answer"]["total"] = "mutated"
            return 1.0
    """)
    judge = evaluator(function="judges:record", config={"a": 1}, threshold=0.8)
    ctx = context(tmp_path, output={"total": 42.0, "items": (1, 2)}, expected={"total": 42})
    judge.evaluate(ctx)
    module = sys.modules.get("judges")
    assert module is None  # the suite's module is not left in sys.modules
    seen = judge._loaded.__globals__["SEEN"]
    assert seen == [orjson.loads(judge_payload(ctx, {"a": 1, "threshold": 0.8}))]
    assert seen[0]["config"] == {"a": 1, "threshold": 0.8}
    assert ctx.output == {"total": 42.0, "items": (1, 2)}  # the function got a copy


def test_an_exception_is_an_error_verdict_with_the_traceback_tail(tmp_path):
    write(tmp_path, "judges.py", """
        def broken(payload):
            total = payload["candidate_answer"]["total"]
            return total / 0
    """)
    result = evaluator(function="judges:broken").evaluate(context(tmp_path, output={"total": 3}))
    assert (result.score, result.verdict) == (0.0, "error")
    lines = result.error.splitlines()
    assert lines[0] == "judges:broken raised ZeroDivisionError: division by zero"
    assert any('judges.py", line 3, in broken' in line for line in lines)
    assert "return total / 0" in result.error
    assert lines[-1] == "ZeroDivisionError: division by zero"


def test_a_score_outside_the_unit_range_or_a_wrong_return_type_is_an_error(tmp_path):
    write(tmp_path, "judges.py", """
        def too_big(payload):
            return {"score": 7}
        def text(payload):
            return "good"
    """)
    big = evaluator(function="judges:too_big").evaluate(context(tmp_path))
    assert big.verdict == "error"
    assert big.error == "judges:too_big result is invalid: score 7 is outside [0, 1]"
    text = evaluator(function="judges:text").evaluate(context(tmp_path))
    assert text.error == "judges:text returned str; expected a number, a bool or a dict with `score`"


def test_a_scale_normalizes_the_returned_number(tmp_path):
    write(tmp_path, "judges.py", """
        def rating(payload):
            return 4
    """)
    result = evaluator(function="judges:rating", scale="likert5").evaluate(context(tmp_path))
    assert (result.score, result.verdict, result.details) == (0.75, "partial", {"raw_score": 4})


def test_an_async_function_is_awaited(tmp_path):
    write(tmp_path, "judges.py", """
        import asyncio
        async def slow(payload):
            await asyncio.sleep(0)
            return {"score": 1.0, "reasoning": "awaited"}
    """)
    result = evaluator(function="judges:slow").evaluate(context(tmp_path))
    assert (result.score, result.reasoning) == (1.0, "awaited")


def test_the_suite_module_wins_over_an_installed_one_and_leaves_no_trace(tmp_path):
    write(tmp_path, "string.py", """
        from helpers import double
        def judge(payload):
            return double(0.25)
    """)
    write(tmp_path, "helpers.py", """
        def double(x):
            return 2 * x
    """)
    path_before = list(sys.path)
    result = evaluator(function="string:judge").evaluate(context(tmp_path))
    assert (result.score, result.error) == (0.5, None)
    assert sys.path == path_before
    assert "helpers" not in sys.modules
    assert sys.modules["string"] is string and string.ascii_lowercase == "abcdefghijklmnopqrstuvwxyz"


def test_an_installed_module_is_imported_when_none_is_next_to_the_suite(tmp_path):
    result = evaluator(function="operator:truth").evaluate(context(tmp_path))
    assert (result.score, result.verdict) == (1.0, "pass")  # operator.truth(payload) is True


def test_a_package_folder_next_to_the_suite_works(tmp_path):
    write(tmp_path, "checks/__init__.py", "")
    write(tmp_path, "checks/scoring.py", """
        class Judges:
            @staticmethod
            def always(payload):
                return 0.25
    """)
    result = evaluator(function="checks.scoring:Judges.always").evaluate(context(tmp_path))
    assert result.score == 0.25


def test_import_failures_say_what_was_looked_for(tmp_path):
    missing = evaluator(function="nowhere_module_xyz:judge").evaluate(context(tmp_path))
    assert missing.verdict == "error"
    assert missing.error == (
        f"cannot import 'nowhere_module_xyz': no nowhere_module_xyz.py next to the suite (in {tmp_path}) "
        "and no installed module of that name"
    )
    write(tmp_path, "judges.py", "def judge(payload):\n    return 1\n")
    no_attr = evaluator(function="judges:jugde").evaluate(context(tmp_path))
    assert no_attr.error == f"judges ({tmp_path / 'judges.py'}) has no 'jugde'"
    write(tmp_path, "crashing.py", "raise RuntimeError('boom at import')\n")
    crashing = evaluator(function="crashing:judge").evaluate(context(tmp_path))
    assert crashing.error.startswith("cannot import crashing.py (next to the suite): RuntimeError: boom at import")


def test_a_malformed_reference_is_a_load_time_error(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: s
        evaluators:
          - {type: python, function: "judges.judge"}
        cases: [{id: a, expected: 1, output: 1}]
    """)
    done = run_cli("validate", suite)
    assert done.returncode == 2
    assert f"{suite}:3: evaluators[0].function: String should match pattern" in done.stderr


def test_a_suite_runs_a_python_judge_end_to_end(tmp_path):
    write(tmp_path, "judges.py", """
        def exact(payload):
            same = payload["candidate_answer"] == payload["reference_answer"]
            return {"score": 1.0 if same else 0.0, "misses": [] if same else [payload["case_id"]]}
    """)
    suite = write(tmp_path, "suite.yaml", """
        name: py
        evaluators:
          - {type: python, function: "judges:exact"}
        cases:
          - {id: a, expected: 1, output: 1}
          - {id: b, expected: 2, output: 3}
    """)
    done = run_cli("run", suite, "-o", tmp_path / "out.jsonl", "-q")
    assert done.returncode == 1, done.stderr
    lines = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(tmp_path / "out.jsonl")}
    assert (lines["a"]["verdict"], lines["a"]["type"]) == ("pass", "python")
    assert (lines["b"]["verdict"], lines["b"]["misses"]) == ("fail", ["b"])


def test_a_key_close_to_a_known_one_is_a_load_time_warning(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: s
        evaluators:
          - {type: python, function: "judges:judge", scael: likert5}
        cases: [{id: a, expected: 1, output: 1}]
    """)
    done = run_cli("validate", suite)
    assert done.returncode == 0
    assert f"{suite}:3: warning: evaluators[0].scael: `scael` is passed to the judge as config; did you mean `scale`?" in done.stderr
