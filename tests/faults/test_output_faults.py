"""Output paths that cannot be written: exit 2 with one line naming the path and the reason.

The read-only and full-disk cases mount a small tmpfs, which needs root; elsewhere they skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import read_jsonl, run_cli, write
from fault_suites import assert_each_case_once, assert_no_traceback, assert_one_line_error, cases_file, healthy, tmpfs

SUITE = "name: out\nevaluators: [{type: field_accuracy, fields: [{path: a}]}]\ncases: cases.jsonl\n"
NEEDS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a tmpfs (read-only or 1 MB full) needs root; chmod cannot stop root writing"
)


def _suite(folder: Path, count: int = 3, pad: int = 0) -> Path:
    cases = cases_file(folder, healthy(count), recorded=True)
    if pad:  # metadata is copied into every result line
        records = [{**json.loads(line), "metadata": {"pad": "p" * pad}} for line in cases.read_text().splitlines()]
        cases.write_text("".join(json.dumps(record) + "\n" for record in records))
    return write(folder, "suite.yaml", SUITE)


@NEEDS_ROOT
def test_read_only_output_folder(tmp_path):
    suite = _suite(tmp_path)
    with tmpfs(tmp_path / "ro", "size=1M,ro") as mount:
        out = mount / "r.jsonl"
        done = run_cli("run", suite, "-o", out, "-q", cwd=tmp_path, timeout=30)
        assert_one_line_error(done, 2, str(out), "Read-only file system")


@NEEDS_ROOT
def test_full_disk_stops_the_run_with_valid_results(tmp_path):
    """D10: 2,000 results of ~1.1 KB each do not fit in 1 MB; the run stops cleanly, exit 2."""
    suite = _suite(tmp_path, count=2000, pad=1000)
    with tmpfs(tmp_path / "tiny", "size=1M") as mount:
        out = mount / "r.jsonl"
        done = run_cli("run", suite, "-o", out, "-q", cwd=tmp_path, timeout=60)
        assert_one_line_error(done, 2, str(out), "No space left on device")
        finished = read_jsonl(out)  # every line that made it is whole: no torn tail left behind
        assert 0 < len(finished) < 2000
        assert_each_case_once(out, {f"c{i}" for i in range(len(finished))})


@pytest.mark.parametrize(
    ("where", "says"),
    [
        (lambda tmp: tmp / "adir", "directory"),  # D17: not "already has results"
        (lambda tmp: Path("/proc/agenteval-cannot-be-here.jsonl"), "/proc/agenteval-cannot-be-here.jsonl"),  # row 2
        (lambda tmp: tmp / "afile" / "r.jsonl", "r.jsonl"),  # a parent that is a file
    ],
    ids=["a_directory", "under_proc", "parent_is_a_file"],
)
def test_output_path_that_cannot_be_written(tmp_path, where, says):
    suite = _suite(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("not a folder")
    out = where(tmp_path)
    done = run_cli("run", suite, "-o", out, "-q", cwd=tmp_path, timeout=30)
    line = assert_one_line_error(done, 2, says)
    assert "already has results" not in line


def test_dev_null_output_writes_no_summary_into_dev(tmp_path):
    """D17: `-o /dev/null` must not create /dev/null.summary.json."""
    stray = Path("/dev/null.summary.json")
    stray.unlink(missing_ok=True)  # left by an earlier defective run, if any
    suite = _suite(tmp_path)
    try:
        done = run_cli("run", suite, "-o", "/dev/null", "-q", cwd=tmp_path, timeout=30)
        assert_no_traceback(done)
        assert done.returncode == 0, done.stderr
        assert not stray.exists()
    finally:
        stray.unlink(missing_ok=True)


def test_reader_of_stdout_going_away_stops_cleanly(tmp_path):
    """Row 15: `agenteval run s.yaml -o - | head -1` stops with 130 and no traceback."""
    suite = _suite(tmp_path, count=3000)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", str(suite), "-o", "-", "-q"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    first = proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.communicate(timeout=30)[1].decode()
    assert first.startswith(b'{"run_id"')
    assert "Traceback (most recent call last)" not in stderr, stderr
    assert proc.returncode == 130, stderr
