"""code_judge with real judge processes: payload, config pass-through, details, failure modes."""

import sys
import time
from pathlib import Path

import pytest

from agenteval.evaluators import EvalContext
from agenteval.evaluators.code_judge import CodeJudge
from agenteval.process import Processes

from conftest import write

ECHO_JUDGE = """
import json, sys
payload = json.load(sys.stdin)
print(json.dumps({"score": 0.75, "reasoning": "echo", "hits": ["a"], "misses": ["b"],
                  "details": {"payload": payload, "nested": {"list": [1, {"x": None}]}}}))
"""


def judge(tmp_path, script, **config):
    write(tmp_path, "judge.py", script)
    return CodeJudge.model_validate({"type": "code_judge", "command": ["python", "judge.py"], **config})


def context(tmp_path, output=None, expected=None, **extra):
    return EvalContext("case-1", {"doc": "x"}, expected, output, {"source": "test"}, tmp_path, Processes(), **extra)


def test_payload_carries_case_and_unknown_keys_as_config(tmp_path):
    evaluator = judge(tmp_path, ECHO_JUDGE, fields=[{"path": "supplier.name", "threshold": 0.85}], algorithm="levenshtein")
    result = evaluator.evaluate(context(tmp_path, output={"a": 1}, expected={"a": 2}))
    payload = result.details["payload"]
    assert payload == {
        "protocol": 1, "case_id": "case-1", "input": {"doc": "x"}, "candidate_answer": {"a": 1},
        "reference_answer": {"a": 2}, "metadata": {"source": "test"},
        "config": {"fields": [{"path": "supplier.name", "threshold": 0.85}], "algorithm": "levenshtein"},
    }


def test_result_fields_and_details_are_kept_verbatim(tmp_path):
    result = judge(tmp_path, ECHO_JUDGE).evaluate(context(tmp_path))
    assert (result.score, result.verdict, result.hits, result.misses, result.reasoning) == (0.75, "partial", ["a"], ["b"], "echo")
    assert result.details["nested"] == {"list": [1, {"x": None}]}
    assert result.error is None


def test_judge_verdict_is_used_and_min_score_overrides_it(tmp_path):
    script = 'print(\'{"score": 0.6, "verdict": "pass"}\')'
    assert judge(tmp_path, script).evaluate(context(tmp_path)).verdict == "pass"
    assert judge(tmp_path, script, min_score=0.7).evaluate(context(tmp_path)).verdict == "fail"


def test_explicit_config_merges_with_unknown_keys(tmp_path):
    evaluator = judge(tmp_path, ECHO_JUDGE, config={"a": 1}, b=2)
    assert evaluator.evaluate(context(tmp_path)).details["payload"]["config"] == {"a": 1, "b": 2}


def test_payload_of_many_megabytes_goes_through_stdin(tmp_path):
    script = """
import json, sys
payload = json.load(sys.stdin)
print(json.dumps({"score": 1.0, "details": {"length": len(payload["candidate_answer"])}}))
"""
    big = "x" * (8 * 1024 * 1024)
    result = judge(tmp_path, script).evaluate(context(tmp_path, output=big))
    assert result.error is None
    assert result.details == {"length": len(big)}


def test_last_json_line_is_taken_when_the_judge_prints_noise_first(tmp_path):
    script = 'print("loading model...")\nprint(\'{"score": 1}\')'
    result = judge(tmp_path, script).evaluate(context(tmp_path))
    assert (result.score, result.verdict) == (1.0, "pass")


@pytest.mark.parametrize(
    ("script", "expected_error"),
    [
        ("import sys\nsys.stderr.write('boom: bad config\\n')\nsys.exit(2)", "judge exited with code 2; stderr: boom: bad config"),
        ("print('not json at all')", "judge printed no JSON object (stdout: 'not json at all')"),
        ("print('[1, 2]')", "judge printed no JSON object (stdout: '[1, 2]')"),
        ("print('{\"score\": 1.5}')", "judge output is invalid: score 1.5 is outside [0, 1]"),
        ("print('{\"score\": -0.1}')", "judge output is invalid: score -0.1 is outside [0, 1]"),
        ("print('{\"score\": \"high\"}')", "judge output is invalid: score: Input should be a valid number"),
        ("print('{\"reasoning\": \"no score\"}')", "judge output is invalid: no `score`"),
        ("print('{\"score\": 0.5, \"verdict\": \"great\"}')", "judge output is invalid: verdict: Input should be 'pass', 'partial', 'fail' or 'error'"),
        ("raise RuntimeError('judge bug')", "judge exited with code 1; stderr: Traceback"),
    ],
)
def test_every_judge_failure_becomes_an_error_verdict(tmp_path, script, expected_error):
    result = judge(tmp_path, script).evaluate(context(tmp_path))
    assert result.verdict == "error"
    assert result.score == 0.0
    assert result.error.startswith(expected_error), result.error


def test_timeout_stops_the_judge_and_its_children(tmp_path):
    script = """
import subprocess, sys, time
sys.stderr.write('thinking\\n'); sys.stderr.flush()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
time.sleep(60)
"""
    started = time.monotonic()
    result = judge(tmp_path, script, timeout=1).evaluate(context(tmp_path))
    assert time.monotonic() - started < 10
    assert result.verdict == "error"
    assert result.error == "judge timed out after 1s; stderr: thinking"


def test_missing_command_is_an_error_result(tmp_path):
    evaluator = CodeJudge.model_validate({"type": "code_judge", "command": ["no-such-judge-binary"]})
    result = evaluator.evaluate(context(tmp_path))
    assert result.verdict == "error"
    assert result.error.startswith("judge could not start: no-such-judge-binary")


def test_py_script_runs_with_the_current_interpreter(tmp_path):
    write(tmp_path, "which.py", 'import json, sys\nprint(json.dumps({"score": 1, "details": {"exe": sys.executable}}))')
    evaluator = CodeJudge.model_validate({"type": "code_judge", "command": "which.py"})
    assert evaluator.evaluate(context(tmp_path)).details == {"exe": sys.executable}


def test_judge_runs_in_the_suite_folder_without_a_shell(tmp_path):
    write(tmp_path, "j.py", 'import json, os, sys\nprint(json.dumps({"score": 1, "details": {"cwd": os.getcwd(), "argv": sys.argv[1:]}}))')
    evaluator = CodeJudge.model_validate({"type": "code_judge", "command": ["python", "j.py", "$HOME", "a b"]})
    details = evaluator.evaluate(context(tmp_path)).details
    assert Path(details["cwd"]) == tmp_path
    assert details["argv"] == ["$HOME", "a b"]


HELPER_JUDGE = """
from agenteval.judge import run_judge

def judge(payload):
    if payload["case_id"] == "explode":
        raise ValueError("cannot judge this one")
    return {"score": 1.0 if payload["candidate_answer"] == payload["reference_answer"] else 0.0,
            "details": {"pid": __import__("os").getpid()}}

run_judge(judge)
"""


@pytest.mark.parametrize("protocol", [1, "jsonl"])
def test_helper_turns_an_exception_into_a_clean_error(tmp_path, protocol):
    evaluator = judge(tmp_path, HELPER_JUDGE, protocol=protocol)
    ctx = context(tmp_path, output=1, expected=1)
    ctx.case_id = "explode"
    result = evaluator.evaluate(ctx)
    evaluator.close()
    assert result.verdict == "error"
    assert result.error.startswith("ValueError: cannot judge this one")


def test_jsonl_protocol_keeps_one_process_for_many_cases(tmp_path):
    evaluator = judge(tmp_path, HELPER_JUDGE, protocol="jsonl")
    processes = Processes()
    results = [
        evaluator.evaluate(EvalContext(f"c{i}", None, i % 2, 1, {}, tmp_path, processes)) for i in range(20)
    ]
    evaluator.close()
    assert [r.score for r in results] == [0.0, 1.0] * 10
    assert len({r.details["pid"] for r in results}) == 1


def test_jsonl_judge_that_dies_is_restarted_for_the_next_case(tmp_path):
    script = """
import json, sys
for line in sys.stdin:
    payload = json.loads(line)
    if payload["case_id"] == "die":
        sys.stderr.write("fatal: out of memory\\n"); sys.exit(3)
    print(json.dumps({"score": 1}), flush=True)
"""
    evaluator = judge(tmp_path, script, protocol="jsonl")
    processes = Processes()
    died = evaluator.evaluate(EvalContext("die", None, 1, 1, {}, tmp_path, processes))
    after = evaluator.evaluate(EvalContext("next", None, 1, 1, {}, tmp_path, processes))
    evaluator.close()
    assert died.verdict == "error"
    assert died.error == "judge exited with code 3 before answering; stderr: fatal: out of memory"
    assert after.verdict == "pass"


def test_jsonl_judge_that_hangs_times_out(tmp_path):
    evaluator = judge(tmp_path, "import time\ntime.sleep(60)", protocol="jsonl", timeout=0.5)
    result = evaluator.evaluate(context(tmp_path))
    evaluator.close()
    assert result.error == "judge timed out after 0.5s"


def test_helper_accepts_a_bare_score(tmp_path):
    from agenteval.judge import judge_once

    assert judge_once(lambda p: 0.5, {}) == {"score": 0.5}
    assert judge_once(lambda p: True, {}) == {"score": 1.0}
    failed = judge_once(lambda p: "high", {})
    assert failed["verdict"] == "error" and failed["error"].startswith("TypeError: the judge function returned str")


def test_nan_score_from_python_json_is_reported_as_out_of_range(tmp_path):
    script = 'import json\nprint(json.dumps({"score": float("nan")}))'
    result = judge(tmp_path, script).evaluate(context(tmp_path))
    assert result.verdict == "error"
    assert result.error == "judge output is invalid: score nan is outside [0, 1]"


def test_jsonl_answer_for_another_case_is_refused_and_the_judge_restarted(tmp_path):
    script = """
import json, os, sys, time
for line in sys.stdin:
    case = json.loads(line)["case_id"]
    print(json.dumps({"score": 1, "case_id": case, "details": {"pid": os.getpid()}}), flush=True)
    if case == "c0":  # a second, late answer: it arrives while the next case is being judged
        time.sleep(0.3)
        print(json.dumps({"score": 0, "case_id": case}), flush=True)
"""
    evaluator = judge(tmp_path, script, protocol="jsonl", timeout=5)
    processes = Processes()
    results = [evaluator.evaluate(EvalContext(f"c{i}", None, 1, 1, {}, tmp_path, processes)) for i in range(3)]
    evaluator.close()
    assert results[0].verdict == "pass"
    assert results[1].verdict == "error"
    assert results[1].error == (
        "judge answered for case 'c0' while judging case 'c1' (an answer line left over from an earlier case?); "
        "the judge was restarted"
    )
    assert results[2].verdict == "pass"
    assert results[2].details["pid"] != results[0].details["pid"]


def test_jsonl_judge_dying_mid_line_errors_that_case_only(tmp_path):
    script = """
import json, os, sys
for line in sys.stdin:
    if json.loads(line)["case_id"] == "c1":
        sys.stdout.write('{"score": 0.'); sys.stdout.flush(); sys.exit(1)
    print(json.dumps({"score": 1, "details": {"pid": os.getpid()}}), flush=True)
"""
    evaluator = judge(tmp_path, script, protocol="jsonl")
    processes = Processes()
    results = [evaluator.evaluate(EvalContext(f"c{i}", None, 1, 1, {}, tmp_path, processes)) for i in range(4)]
    evaluator.close()
    assert [r.verdict for r in results] == ["pass", "error", "pass", "pass"]
    assert results[1].error == 'judge exited with code 1 before answering; stdout: {"score": 0.'
    assert results[0].details["pid"] != results[2].details["pid"] == results[3].details["pid"]


def test_jsonl_log_lines_are_skipped_and_shown_when_the_judge_fails(tmp_path):
    script = """
import json, sys
for line in sys.stdin:
    print("warming up", flush=True)
    if json.loads(line)["case_id"] == "bad":
        sys.stderr.write("fatal\\n"); sys.exit(4)
    print('{"score": 1}', flush=True)
"""
    evaluator = judge(tmp_path, script, protocol="jsonl")
    processes = Processes()
    good = evaluator.evaluate(EvalContext("good", None, 1, 1, {}, tmp_path, processes))
    bad = evaluator.evaluate(EvalContext("bad", None, 1, 1, {}, tmp_path, processes))
    evaluator.close()
    assert (good.verdict, good.error) == ("pass", None)
    assert bad.error == "judge exited with code 4 before answering; stdout: warming up; stderr: fatal"


@pytest.mark.parametrize("protocol", [1, "jsonl"])
@pytest.mark.parametrize(
    ("answer", "expected_error"),
    [
        ('{"score": NaN}', "judge output is invalid: score nan is outside [0, 1]"),
        ('{"score": "0.5"}', "judge output is invalid: score: Input should be a valid number"),
        ('{"score": 1, "details": ' + '{"a":' * 250 + "1" + "}" * 251, "judge printed JSON nested deeper than 200 levels"),
    ],
    ids=["nan", "string", "deep-details"],
)
def test_malformed_answers_are_errors_in_both_protocols(tmp_path, protocol, answer, expected_error):
    script = f"import sys\nfor line in sys.stdin:\n    print({answer!r}, flush=True)\n"
    evaluator = judge(tmp_path, script, protocol=protocol)
    result = evaluator.evaluate(context(tmp_path))
    evaluator.close()
    assert (result.verdict, result.score) == ("error", 0.0)
    assert result.error == expected_error


@pytest.mark.parametrize("protocol", [1, "jsonl"])
def test_max_output_mb_caps_what_a_judge_may_print(tmp_path, protocol):
    script = """
import sys
for line in sys.stdin:
    print('{"score": 1, "reasoning": "' + "x" * 600_000 + '"}', flush=True)
"""
    capped = judge(tmp_path, script, protocol=protocol, max_output_mb=0.5)
    roomy = judge(tmp_path, script, protocol=protocol, max_output_mb=1)
    results = [capped.evaluate(context(tmp_path)), roomy.evaluate(context(tmp_path))]
    capped.close()
    roomy.close()
    assert results[0].error == "judge output larger than 0.5 MiB"
    assert (results[1].verdict, len(results[1].reasoning)) == ("pass", 600_000)
