"""Stopping a run part-way (Ctrl-C, SIGTERM, kill -9), then `--resume`: nothing lost, nothing twice.

Contract (README "Exit codes"): an interrupted run exits 130 with the finished cases on disk, a
summary marked `interrupted: true`, and no target or judge left running; `--resume` runs the rest.
"""

from __future__ import annotations

import json
import signal

import pytest

from fault_suites import (
    assert_each_case_once, assert_no_traceback, healthy, kill_pids, run_suite, start_run, summary_of,
    target_suite, wait_for_file, wait_for_lines, wait_until_gone,
)

COUNT = 12
ALL_IDS = {f"c{i}" for i in range(COUNT)}

# Case c3 hangs the first time it runs (so the signal lands while a target is running) and
# answers at once when the run is resumed; the other cases take 50 ms each.
SLOW_TARGET = """
import json, os, sys, time
case = json.load(sys.stdin)
if case["q"] == 3 and not os.path.exists("hung-once"):
    open("hung-once", "w").close()
    time.sleep(60)
time.sleep(0.05)
print(json.dumps({"a": case["q"]}))
"""


def _interrupted_run(tmp_path, how: signal.Signals, workers: int):
    suite = target_suite(tmp_path, SLOW_TARGET, healthy(COUNT), timeout=120)
    out = tmp_path / "r.jsonl"
    proc = start_run(suite, out, "--workers", str(workers))
    try:
        wait_for_lines(out, 3, proc)
        wait_for_file(tmp_path / "hung-once", proc)  # c3's target is running now
        proc.send_signal(how)
        stderr = proc.communicate(timeout=20)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return suite, out, proc.returncode, stderr


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_run_keeps_finished_cases_and_resume_completes_it(tmp_path, how, workers):
    suite, out, code, stderr = _interrupted_run(tmp_path, how, workers)
    left = wait_until_gone(tmp_path)
    kill_pids(left)
    assert not left, f"D3: a target was left running after {how.name} (workers={workers}): pids {left}"
    assert "Traceback (most recent call last)" not in stderr, stderr
    assert code == 130, stderr

    first = assert_each_case_once(out, set(_ids(out)))
    assert first.keys() <= ALL_IDS and "c3" not in first and len(first) >= 3
    summary = summary_of(out)
    assert summary["interrupted"] is True
    assert summary["counts"]["total"] == len(first)
    assert f"interrupted: {len(first)} of {COUNT} cases are on disk" in stderr
    assert "--resume" in stderr

    resumed = run_suite(suite, out, "--resume", "--workers", str(workers))
    assert_no_traceback(resumed)
    assert resumed.returncode == 0, resumed.stderr
    every = assert_each_case_once(out, ALL_IDS)
    assert {line["run_id"] for line in every.values()} == {first["c0"]["run_id"]}
    assert all(line["verdict"] == "pass" for line in every.values())
    final = summary_of(out)
    assert final["interrupted"] is False and final["counts"]["total"] == COUNT


def _ids(out):
    return [json.loads(line)["case_id"] for line in out.read_text().splitlines() if line.strip()]


FAST_TARGET = """
import json, sys, time
case = json.load(sys.stdin)
time.sleep(0.1)
print(json.dumps({"a": case["q"]} if case["q"] % 3 else {"a": -1}))
"""


def test_kill_9_then_resume_equals_an_uninterrupted_run(tmp_path):
    """Row 5: `kill -9` mid-run, then `--resume`: the same cases, with the same verdicts, each once."""
    count = 20
    suite = target_suite(tmp_path, FAST_TARGET, healthy(count), timeout=10)
    whole = tmp_path / "whole.jsonl"
    uninterrupted = run_suite(suite, whole, "--workers", "2")
    assert uninterrupted.returncode == 1, uninterrupted.stderr  # every third case fails on purpose
    expected = {line["case_id"]: line["verdict"] for line in assert_each_case_once(whole, {f"c{i}" for i in range(count)}).values()}

    out = tmp_path / "r.jsonl"
    proc = start_run(suite, out, "--workers", "2")
    try:
        wait_for_lines(out, 5, proc)
        proc.kill()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    kill_pids(wait_until_gone(tmp_path))  # orphans of a SIGKILLed run end on their own in 0.1 s
    on_disk = len(_ids(out))
    assert 5 <= on_disk < count

    resumed = run_suite(suite, out, "--resume", "--workers", "2")
    assert_no_traceback(resumed)
    assert resumed.returncode == 1, resumed.stderr
    after = assert_each_case_once(out, expected.keys())
    assert {case_id: line["verdict"] for case_id, line in after.items()} == expected
