"""The batched results writer keeps its promise: a finished line reaches the kernel within
BATCH_SECONDS though no other case finishes (so `kill -9` loses at most that much), Ctrl-C in the
middle of a write loses and repeats nothing, a full disk leaves whole lines only, and every line
is in the file before it is read.

The full-disk cases mount a small tmpfs, which needs root; elsewhere they skip.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fault_suites import tmpfs

from agenteval.results import BATCH_BYTES, JsonlWriter, ResultsWriteError, case_from_dict, dump_line, read_results
from agenteval.stores import RunStart
from agenteval.stores.jsonl import JsonlStore

NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")

LINE = {
    "run_id": "r1", "suite": "s", "case_id": "c0", "score": 1.0, "verdict": "pass", "output": {"a": "x" * 800},
    "evaluator_results": [{"name": "f", "type": "field_accuracy", "score": 1.0, "verdict": "pass"}],
}


def result(index: int, pad: int = 800):
    return replace(case_from_dict(LINE), case_id=f"c{index}", output={"a": "x" * pad})


def ids(path: Path) -> list[str]:
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), "a torn line"
    return [json.loads(line)["case_id"] for line in data.splitlines()]


def wait_for(predicate, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.01)


CHILD = """
import sys, time
from dataclasses import replace
from agenteval.results import JsonlWriter, case_from_dict
line = {line!r}
writer = JsonlWriter(open(sys.argv[1], "ab", buffering=0), batched=True)
for index in range(3):
    writer.write(replace(case_from_dict(line), case_id=f"c{{index}}"))
print("written", flush=True)
time.sleep(60)  # a slow next case: nothing more is written, nothing is flushed by hand
"""


def test_finished_lines_reach_the_file_while_the_next_case_is_still_running_and_survive_kill_9(tmp_path):
    out = tmp_path / "r.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(line=LINE), str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert child.stdout.readline() == b"written\n"
        wait_for(lambda: out.read_bytes().count(b"\n") == 3)  # the timer hands them over (30 ms, more under load)
        assert child.poll() is None
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert ids(out) == ["c0", "c1", "c2"]


def test_lines_go_out_in_batches_in_order_and_all_of_them_on_close(tmp_path):
    out = tmp_path / "r.jsonl"
    expected = [dump_line(result(index)) for index in range(300)]  # about 4 batches of 64 KiB
    with out.open("ab", buffering=0) as handle:
        writer = JsonlWriter(handle, batched=True)
        for index in range(300):
            writer.write(result(index))
        on_disk = out.read_bytes()
        assert len(on_disk) >= BATCH_BYTES and expected and b"".join(expected).startswith(on_disk)
        writer.close()
    assert out.read_bytes() == b"".join(expected)


class InterruptedOnce(io.FileIO):
    """A results file whose first write is followed by Ctrl-C, as a signal landing just after the
    system call returned (before the writer saw how much was written)."""

    interrupted = False

    def write(self, data):
        written = super().write(data)
        if not InterruptedOnce.interrupted and written > BATCH_BYTES // 2:
            InterruptedOnce.interrupted = True
            raise KeyboardInterrupt
        return written


def test_ctrl_c_in_the_middle_of_a_batch_loses_nothing_and_writes_nothing_twice(tmp_path):
    out = tmp_path / "r.jsonl"
    handle = InterruptedOnce(out, "a")
    writer = JsonlWriter(handle, batched=True)
    written = 0
    with pytest.raises(KeyboardInterrupt):
        for index in range(300):
            writer.write(result(index))
            written += 1
    assert InterruptedOnce.interrupted
    writer.close()  # the run's close after Ctrl-C
    handle.close()
    assert ids(out) == [f"c{index}" for index in range(written)]


def test_the_store_hands_every_line_to_the_file_before_reading_it_back(tmp_path):
    out = tmp_path / "r.jsonl"
    store = JsonlStore(out)
    store.open_run(RunStart("r1", "s", None, "0", {}, (), None))
    try:
        for index in range(5):
            store.save(result(index, pad=10))
        assert [item.case_id for item in store.read_run("r1")] == [f"c{index}" for index in range(5)]
    finally:
        store.close()
    assert [item.case_id for item in read_results(out)] == [f"c{index}" for index in range(5)]


@pytest.fixture
def small_disk(tmp_path):
    with tmpfs(tmp_path / "small", "size=48k") as where:
        yield where


@NEEDS_ROOT
def test_a_full_disk_keeps_every_whole_line_that_fit_and_says_how_many_were_not_saved(small_disk):
    out = small_disk / "r.jsonl"
    with out.open("ab", buffering=0) as handle:
        writer = JsonlWriter(handle, str(out), batched=True)
        with pytest.raises(ResultsWriteError) as failed:
            for index in range(200):
                writer.write(result(index))
    message = str(failed.value)
    assert message.startswith(f"cannot write {out}: No space left on device (the last ") and message.endswith(" finished cases are not in it)")
    kept = ids(out)
    assert 0 < len(kept) < 200 and kept == [f"c{index}" for index in range(len(kept))]
    # the batch's lines that did not fit; the case whose write raised is not one (it never finished, as the run sees it)
    assert int(message.split("(the last ", 1)[1].split()[0]) == index - len(kept)


@NEEDS_ROOT
def test_a_full_disk_met_by_the_timer_is_raised_by_the_next_write(small_disk):
    out = small_disk / "r.jsonl"
    with out.open("ab", buffering=0) as handle:
        writer = JsonlWriter(handle, str(out), batched=True)
        writer.write(result(0, pad=10))
        writer.write(result(1, pad=60_000))  # larger than the disk, smaller than a batch: the timer writes it
        wait_for(lambda: writer._failure is not None)
        with pytest.raises(ResultsWriteError, match="No space left on device"):
            writer.write(result(2, pad=10))
        writer.close()
    assert ids(out) == ["c0"]  # the batch's whole lines that fit; the one that did not is cut off
