"""Suites that misbehave on purpose, and the checks every fault test makes on what the CLI did.

A fault suite's cases are named for the fault they trigger (`hangs`, `exits_non_zero`, ...) or
`c<i>` when they trigger none; each case's input is `{"q": i, "fault": name}`, and the target or
judge program runs the code of that fault before answering. So one run shows many faults side
by side, and that the healthy cases around them are unaffected. Every script is written with an
absolute path, so a process it leaves behind can be found by the test's folder in its command line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import read_jsonl, run_cli, write, MEASURE

TRACEBACK = "Traceback (most recent call last)"

# The three kinds of program; `{dispatch}` runs the code of the case's fault, if any.
TARGET = """
import json, os, subprocess, sys, time
case = json.load(sys.stdin)
fault = case["fault"]
{dispatch}
print(json.dumps({{"a": case["q"]}}))
"""
JUDGE = """
import json, os, subprocess, sys, time
payload = json.load(sys.stdin)
fault = payload["input"]["fault"]
{dispatch}
print(json.dumps({{"score": float(payload["candidate_answer"] == payload["reference_answer"]), "reasoning": "for " + payload["case_id"]}}))
"""
JSONL_JUDGE = """
import json, os, subprocess, sys, time
{startup}
for line in sys.stdin:
    payload = json.loads(line)
    fault = payload["input"]["fault"]
{dispatch}
    print(json.dumps({{"score": float(payload["candidate_answer"] == payload["reference_answer"]), "reasoning": "for " + payload["case_id"]}}), flush=True)
"""


def indent(code: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in code.strip().splitlines())


def program(template: str, faults: dict[str, str], startup: str = "") -> str:
    """`template` with an `if fault == name:` branch per fault (indented to fit the template)."""
    spaces = 4 if template is JSONL_JUDGE else 0
    branches = [
        indent(f"{'if' if i == 0 else 'elif'} fault == {name!r}:\n{indent(code, 4)}", spaces)
        for i, (name, code) in enumerate(faults.items())
    ]
    return template.format(dispatch="\n".join(branches) or indent("pass", spaces), startup=startup)


def healthy(count: int) -> list[str | None]:
    return [None] * count


def case_ids(faults: Sequence[str | None]) -> list[str]:
    return [name or f"c{i}" for i, name in enumerate(faults)]


def cases_file(folder: Path, faults: Sequence[str | None], recorded: bool, input_pad: int = 0) -> Path:
    """One case per entry of `faults`; recorded cases carry the right answer as `output`."""
    lines = []
    for i, (case_id, fault) in enumerate(zip(case_ids(faults), faults)):
        case = {"id": case_id, "input": {"q": i, "fault": fault}, "expected": {"a": i}}
        if input_pad:
            case["input"]["pad"] = "z" * input_pad
        if recorded:
            case["output"] = {"a": i}
        lines.append(json.dumps(case))
    path = folder / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def target_suite(folder: Path, script: str, faults: Sequence[str | None], *, timeout: float = 2,
                 input_pad: int = 0, env: dict[str, str] | None = None) -> Path:
    """A suite whose command target runs `script` (a whole program) and a field check on `a`."""
    path = write(folder, "target.py", script)
    cases_file(folder, faults, recorded=False, input_pad=input_pad)
    target = {"type": "command", "command": ["python", "-S", str(path)], "timeout": timeout}  # -S: starts faster
    if env:
        target["env"] = env
    suite = {
        "name": "faults", "target": target,
        "evaluators": [{"name": "fields", "type": "field_accuracy", "fields": [{"path": "a"}]}],
        "cases": "cases.jsonl",
    }
    return write(folder, "suite.yaml", json.dumps(suite))  # JSON is YAML


def judge_suite(folder: Path, script: str, faults: Sequence[str | None], *, timeout: float = 2,
                protocol: int | str = 1, input_pad: int = 0) -> Path:
    """A suite of recorded answers (all right) scored by one code_judge running `script`."""
    path = write(folder, "judge.py", script)
    cases_file(folder, faults, recorded=True, input_pad=input_pad)
    judge = {"name": "judge", "type": "code_judge", "command": ["python", "-S", str(path)], "timeout": timeout, "protocol": protocol}
    suite = {"name": "faults", "evaluators": [judge], "cases": "cases.jsonl"}
    return write(folder, "suite.yaml", json.dumps(suite))


def run_suite(suite: Path, out: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_cli("run", suite, "-o", out, "-q", *args, cwd=suite.parent, timeout=timeout)


@dataclass
class FaultRun:
    """One finished `agenteval run` of a fault suite, with its peak memory."""

    done: subprocess.CompletedProcess[str]
    out: Path
    ids: list[str]
    peak_mb: float


def run_measured(suite: Path, out: Path, ids: list[str], *args: str, timeout: float = 60) -> FaultRun:
    """`agenteval run SUITE -o OUT -q ARGS`, also measuring its peak resident memory (and that of
    the processes it waited for) with wait4; killed after `timeout` seconds."""
    stdout, stderr = out.with_suffix(".stdout"), out.with_suffix(".stderr")
    with stdout.open("w") as out_handle, stderr.open("w") as err_handle:
        peak = out.with_suffix(".peak")
        proc = subprocess.Popen(
            [*MEASURE, str(peak), sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(out), "-q", *args],
            cwd=suite.parent, stdout=out_handle, stderr=err_handle,
        )
        watchdog = threading.Timer(timeout, proc.kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            watchdog.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout.read_text(), stderr.read_text())
    return FaultRun(done, out, ids, float(peak.read_text()) if peak.exists() else usage.ru_maxrss / 1024)


def summary_of(results: Path) -> dict:
    return json.loads(results.with_name(results.name.removesuffix(".jsonl") + ".summary.json").read_text())


def assert_no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert TRACEBACK not in done.stderr, done.stderr
    assert TRACEBACK not in (done.stdout or ""), done.stdout


def assert_one_line_error(done: subprocess.CompletedProcess[str], code: int, *phrases: str) -> str:
    """Exit `code`, no traceback, and stderr is one line holding every phrase (the user's message)."""
    assert_no_traceback(done)
    assert done.returncode == code, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


def assert_problem_lines(done: subprocess.CompletedProcess[str], file_name: str, *phrases: str) -> list[str]:
    """Exit 2, no traceback, and stderr is `file[:line]: message` lines (or `error: ...`), naming `file_name`."""
    assert_no_traceback(done)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines, "no message at all"
    for line in lines:
        assert re.match(r"(error|\S+?(:\d+)?): \S", line), f"not a file:line message: {line!r}"
    assert file_name in lines[0], lines
    for phrase in phrases:
        assert any(phrase in line for line in lines), (phrase, lines)
    return lines


def assert_each_case_once(results: Path, ids: list[str] | set[str]) -> dict[str, dict]:
    """Every finished case is on disk exactly once, and nothing else is."""
    lines = read_jsonl(results)
    found = [line["case_id"] for line in lines]
    assert len(found) == len(set(found)), f"duplicated: {sorted(i for i in set(found) if found.count(i) > 1)}"
    missing, unexpected = set(ids) - set(found), set(found) - set(ids)
    assert not missing and not unexpected, f"missing {sorted(missing)}, unexpected {sorted(unexpected)}"
    return {line["case_id"]: line for line in lines}


def assert_finished_run(done: subprocess.CompletedProcess[str], results: Path, ids: Sequence[str], code: int) -> dict[str, dict]:
    """A run that went to the end: the exit code, one summary line (-q), every case once, the summary."""
    assert_no_traceback(done)
    assert done.returncode == code, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("faults: "), done.stderr
    by_id = assert_each_case_once(results, ids)
    summary = summary_of(results)
    assert summary["interrupted"] is False
    assert summary["counts"]["total"] == len(ids)
    assert summary["counts"]["errored"] == sum(line["verdict"] == "error" for line in by_id.values())
    return by_id


def has_error_line(results: Path) -> bool:
    """Whether any case on disk errored (for faults where either an error or a clean answer is right)."""
    return results.exists() and any(line["verdict"] == "error" for line in read_jsonl(results))


def error_of(line: dict) -> str:
    """The message of an errored case: the case's own (target) or its evaluator's (judge)."""
    message = line["error"] or next(r["error"] for r in line["evaluator_results"] if r["verdict"] == "error")
    assert "\n" not in message.split("; stderr:")[0], message  # our part of it is one line
    return message


def live_processes(folder: Path) -> list[int]:
    """Pids of live (not zombie) processes whose command line mentions a file in `folder`."""
    marker = f"{folder}{os.sep}"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def wait_until_gone(folder: Path, seconds: float = 3.0) -> list[int]:
    """The processes running a file of `folder` still alive after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    while (left := live_processes(folder)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_pids(pids: list[int]) -> None:
    """Clean up after a product defect: end processes this test's scripts started (by pid)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for_lines(results: Path, count: int, proc: subprocess.Popen, seconds: float = 30) -> None:
    """Block until `results` holds `count` finished lines (the run is mid-way), or fail."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if results.exists() and results.read_bytes().count(b"\n") >= count:
            return
        assert proc.poll() is None, f"the run ended early (exit {proc.returncode}): ...{proc.communicate()[1][-800:]}"
        time.sleep(0.02)
    raise AssertionError(f"{results} did not reach {count} lines in {seconds}s")


def wait_for_file(path: Path, proc: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, f"the run ended before {path.name} appeared: ...{proc.communicate()[1][-800:]}"
        assert time.monotonic() < deadline, f"{path} did not appear in {seconds}s"
        time.sleep(0.02)


def start_run(suite: Path, out: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(out), "-q", *args],
        cwd=suite.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def signal_mid_run(
    suite: Path, out: Path, how: signal.Signals, workers: int, finished: int, ready: Any = None, pause: float = 0.3
) -> tuple[str, float]:
    """Start a run, wait for `finished` result lines (and, given `ready`, until it says the stuck
    cases started), a `pause` more, send `how`; (stderr, seconds from the signal to the exit).
    The run must exit 130, without a traceback."""
    proc = start_run(suite, out, "--workers", str(workers))
    try:
        wait_for_lines(out, finished, proc)
        deadline = time.monotonic() + 20
        while ready is not None and not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready is None or ready(), "the stuck cases never started"
        time.sleep(pause)
        sent = time.monotonic()
        proc.send_signal(how)
        stderr = proc.communicate(timeout=30)[1]
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback (most recent call last)" not in stderr, stderr
    assert proc.returncode == 130, stderr
    return stderr, took


@contextmanager
def tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A small tmpfs mounted at `where` (created) for the duration of the block: a read-only or full
    file system for real (mounting needs root: the tests using it skip elsewhere)."""
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True, capture_output=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False, capture_output=True)
