"""Targets and code judges that misbehave: the run goes on, the case says why, the exit code tells CI.

Contract (README "Exit codes"): a target or judge failure makes that case verdict `error`, the
other cases are scored as usual, results and summary are written, and the run exits 3.

Faults of one kind share one run (a case per fault, healthy cases between them), so the matrix
stays fast; each fault is still its own test, checking its own case.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import alive, read_jsonl
from fault_suites import (
    JSONL_JUDGE, JUDGE, TARGET, FaultRun, assert_finished_run, case_ids, error_of, has_error_line, healthy,
    judge_suite, kill_pids, program, run_measured, run_suite, summary_of, target_suite, wait_until_gone,
)

EXIT_OK, EXIT_FAILED, EXIT_ERRORED = 0, 1, 3

HANG = "time.sleep(60)"
EXIT_7 = "sys.stderr.write('boom: bad input\\n'); sys.stderr.flush(); sys.exit(7)"
NOT_JSON = "print('this is not json'); sys.exit(0)"
NOTHING = "sys.exit(0)"
HUNDRED_MB = "chunk = 'x' * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\nsys.stdout.flush()\nsys.exit(0)"
GRANDCHILD = "g = subprocess.Popen(['sleep', '30'])\nopen('grandchild.pid', 'w').write(str(g.pid))"
SETSID_GRANDCHILD = "g = subprocess.Popen(['sleep', '30'], start_new_session=True)\nopen('grandchild.pid', 'w').write(str(g.pid))"


def _interleaved(faults) -> list[str | None]:
    """A healthy case first and after every fault: c0, fault, c2, fault, c4..."""
    return [None] + [item for name in faults for item in (name, None)]


def _shared_run(folder: Path, build, template: str, table: dict, *args: str, **options) -> FaultRun:
    faults = _interleaved(table)
    suite = build(folder, program(template, {name: code for name, (code, _) in table.items()}), faults, **options)
    return run_measured(suite, folder / "r.jsonl", case_ids(faults), *args)


def _healthy_cases_pass(run: FaultRun, table: dict) -> None:
    by_id = assert_finished_run(run.done, run.out, run.ids, EXIT_ERRORED)
    assert [by_id[i]["verdict"] for i in run.ids if i not in table] == ["pass"] * (len(table) + 1)


# --- command targets ---------------------------------------------------------------------------

TARGET_ERRORS = {
    # fault: (code run for its case, what its result says)
    "hangs": (HANG, "target timed out after 1s"),
    "exits_non_zero": (EXIT_7, "target exited with code 7; stderr: boom: bad input"),
    "prints_100_mb": (HUNDRED_MB, "target output larger than"),
}
# Output that is not JSON is a text answer, scored like any other: here the field is missing.
TARGET_ANSWERS_THAT_FAIL = {
    "prints_non_json": (NOT_JSON, "a (required, missing)"),
    "prints_nothing": (NOTHING, "a (required, missing)"),
    "answers_nan": ("print('{\"a\": NaN}'); sys.exit(0)", "a"),
}


@pytest.fixture(scope="module")
def target_errors(tmp_path_factory) -> FaultRun:
    return _shared_run(tmp_path_factory.mktemp("target-errors"), target_suite, TARGET, TARGET_ERRORS, timeout=1)


@pytest.fixture(scope="module")
def target_failures(tmp_path_factory) -> FaultRun:
    return _shared_run(tmp_path_factory.mktemp("target-failures"), target_suite, TARGET, TARGET_ANSWERS_THAT_FAIL)


@pytest.mark.parametrize("fault", TARGET_ERRORS)
def test_target_failure_is_an_error_for_that_case_only(target_errors, fault):
    _healthy_cases_pass(target_errors, TARGET_ERRORS)
    line = {line["case_id"]: line for line in _lines(target_errors)}[fault]
    assert line["verdict"] == "error" and line["output"] is None
    assert TARGET_ERRORS[fault][1] in error_of(line)


@pytest.mark.parametrize("fault", TARGET_ANSWERS_THAT_FAIL)
def test_target_answer_that_is_wrong_but_readable_is_scored(target_failures, fault):
    by_id = assert_finished_run(target_failures.done, target_failures.out, target_failures.ids, EXIT_FAILED)
    healthy_verdicts = [by_id[i]["verdict"] for i in target_failures.ids if i not in TARGET_ANSWERS_THAT_FAIL]
    assert healthy_verdicts == ["pass"] * (len(TARGET_ANSWERS_THAT_FAIL) + 1)
    line = by_id[fault]
    assert line["verdict"] == "fail"
    says = TARGET_ANSWERS_THAT_FAIL[fault][1]
    assert any(miss.startswith(says) for miss in line["evaluator_results"][0]["misses"]), line


def test_target_answer_with_a_huge_integer_and_nan_is_written(tmp_path):
    """JSON with NaN is parsed by Python's json (orjson refuses NaN), which keeps a 30-digit integer
    exact; the results line must still be written (orjson cannot write integers beyond 64 bits)."""
    faults = _interleaved(["huge_integer"])
    answer = "print('{\"a\": 123456789012345678901234567890, \"b\": NaN}'); sys.exit(0)"
    suite = target_suite(tmp_path, program(TARGET, {"huge_integer": answer}), faults)
    out = tmp_path / "r.jsonl"
    by_id = assert_finished_run(run_suite(suite, out), out, case_ids(faults), EXIT_FAILED)
    assert by_id["huge_integer"]["verdict"] == "fail"
    assert by_id["c0"]["verdict"] == by_id["c2"]["verdict"] == "pass"


def test_target_output_of_100_mb_keeps_memory_bounded(target_errors):
    """Row 3: stdout is capped while it is read, so peak memory stays far below the 100 MB printed
    (it used to reach 627 MB)."""
    assert target_errors.peak_mb < 250


@pytest.mark.parametrize("kind", ["target", "judge"])
def test_program_that_cannot_start_errors_every_case(tmp_path, kind):
    suite = (target_suite if kind == "target" else judge_suite)(tmp_path, "", healthy(3))
    suite.write_text(suite.read_text().replace('"python"', '"no-such-program-xyz"'))
    out = tmp_path / "r.jsonl"
    by_id = assert_finished_run(run_suite(suite, out), out, case_ids(healthy(3)), EXIT_ERRORED)
    for line in by_id.values():
        assert line["verdict"] == "error"
        assert f"{kind} could not start: no-such-program-xyz" in error_of(line)


def test_target_answer_nested_too_deep_is_confined_to_its_case(tmp_path):
    """D5: a valid but 100,000-deep JSON answer must not abort the run (it raised RecursionError).
    The case is an error or a failed text answer; either way the other cases are scored."""
    faults = _interleaved(["too_deep"])
    script = program(TARGET, {"too_deep": "print('[' * 100000 + ']' * 100000); sys.exit(0)"})
    suite = target_suite(tmp_path, script, faults)
    out = tmp_path / "r.jsonl"
    done = run_suite(suite, out, "--workers", "1")
    by_id = assert_finished_run(done, out, case_ids(faults), EXIT_ERRORED if has_error_line(out) else EXIT_FAILED)
    assert by_id["too_deep"]["verdict"] in ("error", "fail")
    assert by_id["c0"]["verdict"] == by_id["c2"]["verdict"] == "pass"


def test_target_that_never_reads_its_large_stdin_still_answers(tmp_path):
    """Row 13: closing stdin early (1 MiB of input never read) is the target's right; its answer counts."""
    script = "import os\nos.close(0)\nprint('{\"a\": 0}')\n"
    suite = target_suite(tmp_path, script, healthy(3), input_pad=1 << 20)
    out = tmp_path / "r.jsonl"
    by_id = assert_finished_run(run_suite(suite, out), out, case_ids(healthy(3)), EXIT_FAILED)
    assert by_id["c0"]["verdict"] == "pass"
    assert [by_id[c]["output"] for c in ("c1", "c2")] == [{"a": 0}, {"a": 0}]  # answered and scored, not errors
    assert by_id["c1"]["verdict"] == by_id["c2"]["verdict"] == "fail"


@pytest.mark.parametrize("kind", ["target", "judge"])
@pytest.mark.parametrize("grandchild", [GRANDCHILD, SETSID_GRANDCHILD], ids=["same_group", "own_session"])
def test_grandchild_holding_stdout_does_not_hold_the_answer(tmp_path, kind, grandchild):
    """Rows 10, 25 (D15, D4b): the answer counts once the process itself exits; a `sleep 30` it
    left holding stdout must not make the case time out, and one in its process group is stopped."""
    faults = [None, "grandchild", None]
    build, template = (target_suite, TARGET) if kind == "target" else (judge_suite, JUDGE)
    suite = build(tmp_path, program(template, {"grandchild": grandchild}), faults, timeout=5)
    out = tmp_path / "r.jsonl"
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    try:
        done = run_suite(suite, out, timeout=25)
        elapsed = time.monotonic() - started
        by_id = assert_finished_run(done, out, case_ids(faults), EXIT_OK)
        assert by_id["grandchild"]["verdict"] == "pass"
        assert elapsed < 5, f"the run waited {elapsed:.1f}s for a process that had answered"
        if grandchild == GRANDCHILD:
            pid = int(pid_file.read_text())
            deadline = time.monotonic() + 2
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not alive(pid), "the grandchild in the process group was left running"
    finally:
        if pid_file.exists():  # the one in its own session is beyond agenteval's reach: ours to end
            kill_pids([int(pid_file.read_text())])



def _lines(run: FaultRun) -> list[dict]:
    return read_jsonl(run.out)


# --- code judges, one process per case -----------------------------------------------------------

JUDGE_ERRORS = {
    "hangs": (HANG, "judge timed out after 1s"),
    "exits_non_zero": (EXIT_7, "judge exited with code 7; stderr: boom: bad input"),
    "prints_non_json": (NOT_JSON, "judge printed no JSON object (stdout: 'this is not json')"),
    "prints_nothing": (NOTHING, "judge printed no JSON object"),
    "prints_100_mb": (HUNDRED_MB, "judge output larger than"),
    "answers_nan": ("print('{\"score\": NaN}'); sys.exit(0)", "score nan is outside [0, 1]"),
    "answers_2": ("print('{\"score\": 2}'); sys.exit(0)", "score 2 is outside [0, 1]"),
    "answers_string": ("print('{\"score\": \"0.5\"}'); sys.exit(0)", "score: Input should be a valid number"),
    "answers_no_score": ("print('{\"verdict\": \"pass\"}'); sys.exit(0)", "no `score`"),
    "answers_a_list": ("print('[1]'); sys.exit(0)", "judge printed no JSON object"),
    "closes_stdin_and_exits": ("os.close(0); sys.exit(0)", "judge printed no JSON object"),
}


@pytest.fixture(scope="module")
def judge_errors(tmp_path_factory) -> FaultRun:
    return _shared_run(tmp_path_factory.mktemp("judge-errors"), judge_suite, JUDGE, JUDGE_ERRORS, timeout=1)


@pytest.mark.parametrize("fault", JUDGE_ERRORS)
def test_judge_failure_is_an_error_verdict_for_that_case_only(judge_errors, fault):
    _healthy_cases_pass(judge_errors, JUDGE_ERRORS)
    line = {line["case_id"]: line for line in _lines(judge_errors)}[fault]
    assert line["verdict"] == "error" and line["evaluator_results"][0]["verdict"] == "error"
    assert JUDGE_ERRORS[fault][1] in error_of(line)
    verdicts = summary_of(judge_errors.out)["evaluators"]["judge"]["verdicts"]
    assert verdicts == {"pass": len(JUDGE_ERRORS) + 1, "error": len(JUDGE_ERRORS)}


def test_judge_output_of_100_mb_keeps_memory_bounded(judge_errors):
    """Row 3: the judge run peaked at 627 MB reading a 100 MB answer."""
    assert judge_errors.peak_mb < 250


def test_judge_that_closes_stdin_early_still_counts(tmp_path):
    script = "import os\nos.close(0)\nprint('{\"score\": 1}')\n"
    suite = judge_suite(tmp_path, script, healthy(3), input_pad=1 << 20)
    out = tmp_path / "r.jsonl"
    by_id = assert_finished_run(run_suite(suite, out), out, case_ids(healthy(3)), EXIT_OK)
    assert {line["verdict"] for line in by_id.values()} == {"pass"}


# --- code judges under `protocol: jsonl` (one long-lived process) ----------------------------------

JSONL_ERRORS = {
    "hangs": (HANG, "judge timed out after 1s"),
    "exits_non_zero": (EXIT_7, "judge exited with code 7 before answering; stderr: boom: bad input"),
    "dies_mid_line": (
        "sys.stdout.write('{\"score\": 0.'); sys.stdout.flush(); os._exit(1)",
        'judge exited with code 1 before answering; stdout: {"score": 0.',
    ),
    # A line that is not JSON is not an answer (it may be a log line): the judge never answered,
    # so the case waits for its timeout, and the error shows what it printed.
    "prints_non_json": (
        "print('this is not json', flush=True)\ncontinue", "judge timed out after 1s; stdout: this is not json"
    ),
    "answers_nan": (
        "print('{\"score\": NaN}', flush=True)\ncontinue", "judge output is invalid: score nan is outside [0, 1]"
    ),
}


@pytest.fixture(scope="module")
def jsonl_errors(tmp_path_factory) -> FaultRun:
    """One judge process per worker; one worker, so every fault hits the same judge in turn."""
    folder = tmp_path_factory.mktemp("jsonl-errors")
    return _shared_run(folder, judge_suite, JSONL_JUDGE, JSONL_ERRORS, "--workers", "1", timeout=1, protocol="jsonl")


def assert_no_answer_shifted(by_id: dict[str, dict]) -> None:
    """D1: whatever a judge prints, a case is never scored with the answer meant for another case."""
    for case_id, line in by_id.items():
        judge = line["evaluator_results"][0]
        if judge["verdict"] != "error":
            assert judge["reasoning"] == f"for {case_id}", f"{case_id} got the answer {judge['reasoning']!r}"
            assert judge["verdict"] == "pass"  # every recorded answer is right; the judge says so


@pytest.mark.parametrize("fault", JSONL_ERRORS)
def test_jsonl_judge_failure_errors_that_case_and_the_judge_restarts(jsonl_errors, fault):
    _healthy_cases_pass(jsonl_errors, JSONL_ERRORS)
    by_id = {line["case_id"]: line for line in _lines(jsonl_errors)}
    assert by_id[fault]["verdict"] == "error"
    assert JSONL_ERRORS[fault][1] in error_of(by_id[fault])
    assert_no_answer_shifted(by_id)


def _nobody_asked(fault: str, shown: str = "") -> str:
    return f"judge printed an answer line nobody asked for, after its answer for case {fault!r}: {shown}"


# Both lines in one print: the second is in the pipe, whole or begun, before c2's payload is due.
TWICE = """line = json.dumps({'score': 1.0, 'reasoning': 'for ' + payload['case_id']})
print(line + '\\n' + line, flush=True)
continue"""
# The second line comes after c2's payload was sent; only its case_id tells it from c2's answer.
TWICE_LATE_WITH_CASE_ID = """case = payload['case_id']
line = json.dumps({'score': 1.0, 'reasoning': 'for ' + case, 'case_id': case})
print(line, flush=True)
time.sleep(0.3)
print(line, flush=True)
continue"""


def _then_unfinished(begun: str, rest: str) -> str:
    """The answer and the start of one more line in one write; the line ends after c2's payload was sent."""
    return (
        "line = json.dumps({'score': 1.0, 'reasoning': 'for ' + payload['case_id']})\n"
        f"sys.stdout.write(line + '\\n' + {begun!r})\nsys.stdout.flush()\n"
        f"time.sleep(0.5)\nprint({rest!r}, flush=True)\ncontinue"
    )


@pytest.mark.parametrize(
    ("fault", "code", "startup", "c2_error"),
    [
        # Row 11: a second line after an answer is never the next case's answer: that case errors.
        ("answers_twice", TWICE, "", (_nobody_asked("answers_twice"),)),
        (
            "answers_twice_late_with_case_id", TWICE_LATE_WITH_CASE_ID, "",
            (  # the second if c2 comes over 0.3 s after the first answer
                "judge answered for case 'answers_twice_late_with_case_id' while judging case 'c2' ",
                _nobody_asked("answers_twice_late_with_case_id"),
            ),
        ),
        # Had c2's payload been sent, the end of the line would come after it, making it c2's answer.
        (
            "answer_line_unfinished", _then_unfinished('{"score": 0, "reasoning": "one line', ' too many"}'), "",
            (_nobody_asked("answer_line_unfinished", """'{"score": 0, "reasoning": "one line'; protocol jsonl"""),),
        ),
        (  # only blanks so far: it may still become an answer line
            "blanks_unfinished", _then_unfinished("  ", '{"score": 0}'), "",
            (_nobody_asked("blanks_unfinished", "''; protocol jsonl"),),
        ),
        ("log_line_unfinished", _then_unfinished("warming up", " done"), "", None),  # never an answer
        # A start-up line ("loading model weights...") must not push every answer one case on.
        (None, None, "print('loading model weights...', flush=True)", None),
    ],
    ids=[
        "answers_twice", "answers_twice_late_with_case_id", "answer_line_unfinished", "blanks_unfinished",
        "log_line_unfinished", "prints_a_banner_first",
    ],
)
def test_jsonl_judge_printing_extra_lines_never_shifts_answers(tmp_path, fault, code, startup, c2_error):
    """D1: every case is scored with its own answer except the one whose payload was due when the
    extra line showed up: that one errors, naming the protocol violation, and the judge restarts."""
    faults = [None, fault, None, None, None, None]
    script = program(JSONL_JUDGE, {fault: code} if fault else {}, startup)
    suite = judge_suite(tmp_path, script, faults, protocol="jsonl")
    out = tmp_path / "r.jsonl"
    done = run_suite(suite, out, "--workers", "1")
    by_id = assert_finished_run(done, out, case_ids(faults), EXIT_ERRORED if c2_error else EXIT_OK)
    assert_no_answer_shifted(by_id)
    assert {case: line["verdict"] for case, line in by_id.items()} == {
        case: "error" if case == "c2" and c2_error else "pass" for case in case_ids(faults)
    }
    if c2_error:
        assert error_of(by_id["c2"]).startswith(c2_error), error_of(by_id["c2"])


def test_jsonl_judge_that_never_reads_a_large_payload_times_out(tmp_path):
    """D4a: writing a payload bigger than the pipe buffer to a judge that never reads is bounded by the timeout."""
    script = "import time\nwhile True:\n    time.sleep(100)\n"
    suite = judge_suite(tmp_path, script, healthy(1), protocol="jsonl", timeout=1, input_pad=1 << 20)
    out = tmp_path / "r.jsonl"
    started = time.monotonic()
    by_id = assert_finished_run(run_suite(suite, out, timeout=20), out, ["c0"], EXIT_ERRORED)
    assert "judge timed out after 1s" in error_of(by_id["c0"])
    assert time.monotonic() - started < 8
    left = wait_until_gone(tmp_path)
    kill_pids(left)
    assert not left, f"the judge was left running: {left}"


def test_jsonl_judge_that_crashes_at_start_errors_every_case(tmp_path):
    script = "import sys\nsys.stderr.write('cannot load model\\n')\nsys.exit(3)\n"
    suite = judge_suite(tmp_path, script, healthy(3), protocol="jsonl")
    out = tmp_path / "r.jsonl"
    by_id = assert_finished_run(run_suite(suite, out), out, case_ids(healthy(3)), EXIT_ERRORED)
    for line in by_id.values():
        message = error_of(line)
        assert "judge exited with code 3" in message and "cannot load model" in message


def test_no_judge_is_left_running_after_a_run(jsonl_errors):
    left = wait_until_gone(jsonl_errors.out.parent)
    kill_pids(left)
    assert not left, f"left running: {left}"
