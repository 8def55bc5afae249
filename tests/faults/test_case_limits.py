"""Bounded work per case, interruptible at any worker count, and `-o -` carrying JSONL only.

Contract (docs/reliability.md "Stopping a run" and "Limits"): a case whose evaluators run past
`limits.case_seconds` is an `error` naming the evaluator and the limit, the other cases are
unaffected; Ctrl-C or SIGTERM ends a run within two seconds whatever a worker is computing,
with every finished case on disk; with `-o -`, stdout holds result lines only.
"""

from __future__ import annotations

import json
import signal
import time

import pytest

from conftest import read_jsonl, run_cli, write
from fault_suites import assert_each_case_once, assert_no_traceback, signal_mid_run, summary_of

JUDGES = """
import time

def spin(payload):          # pure Python that never returns
    while True:
        pass

def sleep(payload):         # a blocking call: the thread cannot be stopped, only given up
    time.sleep(3600)

def chatty(payload):
    print("debug:", payload["case_id"])
    return 1.0
"""


def _suite(tmp_path, evaluators, cases, limits=None):
    write(tmp_path, "judges.py", JUDGES)
    write(tmp_path, "cases.jsonl", "".join(json.dumps(case) + "\n" for case in cases))
    trusted = any("evaluators" in case for case in cases)  # case-level python evaluators: our own cases file
    suite = {"name": "limits", "evaluators": evaluators, "cases": "cases.jsonl", "trust_cases": trusted}
    if limits:
        suite["limits"] = limits
    return write(tmp_path, "suite.yaml", json.dumps(suite))


def _cases(count):
    return [{"id": f"c{i}", "expected": "x", "output": "x"} for i in range(count)]


@pytest.mark.parametrize("workers", [1, 3])
def test_case_time_limit_turns_a_runaway_python_evaluator_into_an_error_naming_it(tmp_path, workers):
    evaluators = [{"type": "equals"}, {"name": "runaway", "type": "python", "function": "judges:spin"}, {"name": "after", "type": "equals"}]
    suite = _suite(tmp_path, evaluators, _cases(3), {"case_seconds": 0.5})
    out = tmp_path / "r.jsonl"
    started = time.monotonic()
    done = run_cli("run", suite, "-o", out, "-q", "--workers", str(workers), cwd=tmp_path, timeout=60)
    took = time.monotonic() - started
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    lines = assert_each_case_once(out, ["c0", "c1", "c2"])
    for line in lines.values():
        first, runaway, after = line["evaluator_results"]
        assert (first["name"], first["verdict"]) == ("equals", "pass")  # scored before the runaway one
        assert runaway["verdict"] == "error"
        assert "scoring took longer than 0.5 s in this evaluator" in runaway["error"]
        assert "limits.case_seconds: 0.5" in runaway["error"]
        assert after["verdict"] == "error" and "not run" in after["error"] and "`runaway`" in after["error"]
        assert line["verdict"] == "error"
    assert took < 20, f"three runaway cases took {took:.1f} s"


@pytest.mark.parametrize("workers", [1, 3])
def test_a_case_bringing_a_runaway_evaluator_into_a_suite_of_pure_checks_is_still_held_to_the_limit(tmp_path, workers):
    """The suite's own checks need no watching (pure: the watchdog is not even started); a case
    with its own evaluator that never returns starts it, and only that case errors."""
    cases = _cases(3)
    cases[1]["evaluators"] = [{"name": "runaway", "type": "python", "function": "judges:spin"}]
    suite = _suite(tmp_path, [{"type": "equals"}], cases, {"case_seconds": 0.5})
    out = tmp_path / "r.jsonl"
    done = run_cli("run", suite, "-o", out, "-q", "--workers", str(workers), cwd=tmp_path, timeout=60)
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    lines = assert_each_case_once(out, ["c0", "c1", "c2"])
    assert lines["c0"]["verdict"] == lines["c2"]["verdict"] == "pass"
    runaway = {result["name"]: result for result in lines["c1"]["evaluator_results"]}["runaway"]
    assert runaway["verdict"] == "error" and "scoring took longer than 0.5 s in this evaluator" in runaway["error"]
    assert lines["c1"]["verdict"] == "error"


SLEEPY_JUDGE = """
import json, sys, time
payload = json.load(sys.stdin)
if payload["case_id"] == "stuck":
    time.sleep(3600)
print(json.dumps({"score": 1}))
"""


def test_a_case_stuck_in_a_blocking_call_is_given_up_and_the_other_cases_finish(tmp_path):
    # The judge's own timeout is an hour, so the case thread blocks in a system call (waiting for
    # the judge) where no exception can reach it: the run gives the thread up and goes on.
    judge = write(tmp_path, "judge.py", SLEEPY_JUDGE)
    cases = [{"id": "stuck", "expected": "x", "output": "x"}, *_cases(4)]
    evaluators = [{"name": "stuck", "type": "code_judge", "command": ["python", "-S", str(judge)], "timeout": 3600}]
    suite = _suite(tmp_path, evaluators, cases, {"case_seconds": 0.5})
    out = tmp_path / "r.jsonl"
    started = time.monotonic()
    done = run_cli("run", suite, "-o", out, "-q", "--workers", "2", cwd=tmp_path, timeout=60)
    took = time.monotonic() - started
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    lines = assert_each_case_once(out, ["stuck", "c0", "c1", "c2", "c3"])
    assert lines["stuck"]["verdict"] == "error"
    assert "scoring took longer than 0.5 s (in evaluator `stuck`)" in lines["stuck"]["error"]
    assert "limits.case_seconds: 0.5" in lines["stuck"]["error"]
    assert all(lines[f"c{i}"]["verdict"] == "pass" for i in range(4))
    assert took < 15, f"the run took {took:.1f} s: the stuck thread was waited for"



# A pattern that backtracks for far longer than the test runs; the engine releases the GIL while
# matching, so the threads that wait and write results (and the signal handler) keep running.
RUNAWAY = {"name": "words", "type": "regex", "pattern": "(a|aa)+$"}


@pytest.mark.parametrize("workers", [1, 2, 8])
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_ends_a_run_within_two_seconds_while_a_case_is_stuck_in_a_c_level_match(tmp_path, how, workers):
    quick = [{"id": f"ok{i}", "expected": None, "output": "aaa"} for i in range(4)]
    evil = [{"id": "evil", "expected": None, "output": "a" * 90 + "!"}]
    suite = _suite(tmp_path, [RUNAWAY], quick + evil, {"pattern_seconds": 120, "case_seconds": 300})
    out = tmp_path / "r.jsonl"
    stderr, took = signal_mid_run(suite, out, how, workers, finished=4)  # the evil case is matching
    assert took < 2.0, f"{how.name} with {workers} workers took {took:.2f} s to end the run"
    kept = assert_each_case_once(out, {f"ok{i}" for i in range(4)})
    assert all(line["verdict"] == "pass" for line in kept.values())
    assert summary_of(out)["interrupted"] is True
    assert "interrupted: 4 of 5 cases are on disk" in stderr


def test_dash_o_stdout_carries_only_result_lines_whatever_an_evaluator_prints(tmp_path):
    suite = _suite(tmp_path, [{"type": "python", "function": "judges:chatty"}], _cases(3))
    done = run_cli("run", suite, "-o", "-", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["case_id"] for line in lines] == ["c0", "c1", "c2"]
    assert [line["verdict"] for line in lines] == ["pass", "pass", "pass"]
    assert "debug: c0" in done.stderr and "debug: c2" in done.stderr


def test_results_of_a_case_limit_read_back_with_report(tmp_path):
    evaluators = [{"name": "runaway", "type": "python", "function": "judges:spin"}]
    suite = _suite(tmp_path, evaluators, _cases(2), {"case_seconds": 0.3})
    out = tmp_path / "r.jsonl"
    done = run_cli("run", suite, "-o", out, "-q", cwd=tmp_path, timeout=60)
    assert done.returncode == 3, done.stderr
    report = run_cli("report", out, "--format", "json", cwd=tmp_path)
    assert report.returncode == 3, report.stderr
    figures = json.loads(report.stdout)
    assert figures["counts"] == json.loads((tmp_path / "r.summary.json").read_text())["counts"]
    assert figures["counts"]["errored"] == 2
    assert [line["score"] for line in read_jsonl(out)] == [0.0, 0.0]


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_ends_a_run_at_once_while_workers_sleep_in_a_hanging_python_evaluator(tmp_path, how):
    """E14: the interrupt was handled, then the interpreter waited for the pool's threads for ever."""
    evaluators = [{"name": "hang", "type": "python", "function": "judges:sleep", "timeout": 3600}]
    suite = _suite(tmp_path, [{"type": "equals"}], [
        *_cases(3), *[{"id": f"h{i}", "expected": "x", "output": "x", "evaluators": evaluators} for i in range(2)],
    ])
    out = tmp_path / "r.jsonl"
    _, took = signal_mid_run(suite, out, how, 2, finished=3)  # both workers are in the hanging evaluator
    assert took < 2.0, f"{how.name} took {took:.2f} s to end the run"
    assert set(assert_each_case_once(out, {"c0", "c1", "c2"})) == {"c0", "c1", "c2"}
