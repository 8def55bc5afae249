"""The same command twice gives fresh results; an interrupted results file is refused with the two ways on.

Contract (README "Running"): a results file that holds a finished run is replaced when the new run
ends, in one rename, so a reader sees the old results or the new ones, never a mix; one that holds
an interrupted run is kept for `--resume`, and `--overwrite` starts it again. The API behaves the same.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

import agenteval
from agenteval.stores.base import StoreError
from conftest import read_jsonl, run_cli, write

SLOW_JUDGE = """
import time

def slow(payload):
    time.sleep(0.15)
    return 1.0
"""


def _suite(tmp_path, count=6, slow=False):
    write(tmp_path, "judges.py", SLOW_JUDGE)
    cases = [{"id": f"c{i}", "expected": "x", "output": "x"} for i in range(count)]
    evaluators = [{"type": "equals"}] + ([{"type": "python", "function": "judges:slow"}] if slow else [])
    return write(tmp_path, "suite.yaml", json.dumps({"name": "rerun", "evaluators": evaluators, "cases": cases}))


def start_run(suite, out, *args):
    return subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(out), "-q", *args],
        cwd=suite.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_for_lines(out, count, proc):
    deadline = time.monotonic() + 30
    while not (out.exists() and out.read_bytes().count(b"\n") >= count):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1]
        time.sleep(0.02)


def _run_ids(path):
    return {line["run_id"] for line in read_jsonl(path)}


def test_a_reader_sees_the_old_results_until_the_new_run_replaces_them(tmp_path):
    suite = _suite(tmp_path, slow=True)
    out = tmp_path / "r.jsonl"
    assert run_cli("run", suite, "-o", out, "-q", cwd=tmp_path).returncode == 0
    (old_id,) = _run_ids(out)
    proc = start_run(suite, out)
    seen = []
    while proc.poll() is None:
        seen.append((_run_ids(out), len(read_jsonl(out))))
        time.sleep(0.05)
    assert proc.returncode == 0, proc.communicate()[1]
    assert len(seen) > 5
    assert all(ids == {old_id} and count == 6 for ids, count in seen[:5]), "the old results changed while the new run was going"
    assert all(len(ids) == 1 and count == 6 for ids, count in seen), "a reader saw a mix of two runs"
    (new_id,) = _run_ids(out)
    assert new_id != old_id
    assert json.loads((tmp_path / "r.summary.json").read_text())["run_id"] == new_id
    assert not [path.name for path in tmp_path.iterdir() if path.name.endswith(".partial")]


def _interrupted(tmp_path):
    suite = _suite(tmp_path, count=30, slow=True)
    out = tmp_path / "r.jsonl"
    proc = start_run(suite, out)
    wait_for_lines(out, 3, proc)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 130
    return suite, out, len(read_jsonl(out))


def test_an_interrupted_results_file_is_refused_with_resume_and_overwrite_named(tmp_path):
    suite, out, kept = _interrupted(tmp_path)
    again = run_cli("run", suite, "-o", out, "-q", cwd=tmp_path)
    assert again.returncode == 2
    assert f"holds an interrupted run (its summary says it stopped after {kept} cases)" in again.stderr
    assert "--resume continues it, --overwrite starts again" in again.stderr
    assert len(read_jsonl(out)) == kept  # untouched


def test_overwrite_starts_an_interrupted_run_again(tmp_path):
    suite, out, kept = _interrupted(tmp_path)
    (old_id,) = _run_ids(out)
    done = run_cli("run", suite, "-o", out, "-q", "--overwrite", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = read_jsonl(out)
    assert len(lines) == 30 and {line["case_id"] for line in lines} == {f"c{i}" for i in range(30)}
    assert _run_ids(out) != {old_id}


def test_resume_still_continues_an_interrupted_run(tmp_path):
    suite, out, kept = _interrupted(tmp_path)
    (old_id,) = _run_ids(out)
    done = run_cli("run", suite, "-o", out, "-q", "--resume", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(read_jsonl(out)) == 30 and _run_ids(out) == {old_id}


def test_resume_and_overwrite_together_are_refused(tmp_path):
    suite = _suite(tmp_path)
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--resume", "--overwrite", cwd=tmp_path)
    assert done.returncode == 2
    assert "--resume continues the results file and --overwrite starts it again; give one" in done.stderr


def test_a_results_file_without_a_summary_is_treated_as_interrupted(tmp_path):
    suite = _suite(tmp_path)
    out = tmp_path / "r.jsonl"
    assert run_cli("run", suite, "-o", out, "-q", cwd=tmp_path).returncode == 0
    (tmp_path / "r.summary.json").unlink()
    again = run_cli("run", suite, "-o", out, "-q", cwd=tmp_path)
    assert again.returncode == 2 and "holds an interrupted run (no summary beside it)" in again.stderr


def test_the_api_run_twice_into_one_file_gives_fresh_results(tmp_path):
    suite = _suite(tmp_path)
    out = tmp_path / "r.jsonl"
    ids = []
    for _ in range(2):
        run = agenteval.run_suite(suite, output=out)
        assert [result.verdict for result in run] == ["pass"] * 6
        assert run.summary["counts"]["total"] == 6
        ids.append(_run_ids(out))
    assert len(ids[0]) == len(ids[1]) == 1 and ids[0] != ids[1]


def test_the_api_refuses_an_interrupted_file_unless_told(tmp_path):
    suite, out, kept = _interrupted(tmp_path)
    with pytest.raises(StoreError, match="holds an interrupted run"):
        agenteval.run_suite(suite, output=out)
    run = agenteval.run_suite(suite, output=out, overwrite=True)
    assert run.summary["counts"]["total"] == 30
