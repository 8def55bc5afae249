"""Results files that were cut short or damaged, given to `run --resume`, `report` and `compare`.

A torn last line (a killed run) is expected and repaired or skipped; damage anywhere else is
refused with `file:line` and exit 2, and never silently drops finished results.
"""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import read_jsonl, run_cli, write
from fault_suites import assert_each_case_once, assert_no_traceback, assert_one_line_error, cases_file, healthy, run_suite, summary_of

SUITE = "name: stored\nevaluators: [{type: field_accuracy, fields: [{path: a}]}]\ncases: cases.jsonl\n"


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One finished run of 10 recorded cases: c3 fails, the rest pass."""
    folder = tmp_path_factory.mktemp("finished")
    cases = cases_file(folder, healthy(10), recorded=True)
    lines = cases.read_text().splitlines()
    lines[3] = lines[3].replace('"output": {"a": 3}', '"output": {"a": -3}')
    cases.write_text("\n".join(lines) + "\n")
    suite = write(folder, "suite.yaml", SUITE)
    out = folder / "r.jsonl"
    done = run_suite(suite, out)
    assert done.returncode == 1, done.stderr
    return suite, out


def _copy(finished, tmp_path):
    suite, out = finished
    for path in (suite, suite.parent / "cases.jsonl", out):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / suite.name, tmp_path / out.name


def _truncate_mid_line(out) -> None:
    """Cut the file in the middle of its last line, as a killed run leaves it."""
    data = out.read_bytes()
    out.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 40])


def _corrupt_line_3(out) -> None:
    lines = out.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"run_id": "x", "suite": "stored", "case_id": \n'
    out.write_bytes(b"".join(lines))


ALL = {f"c{i}" for i in range(10)}


def test_truncated_results_resume_repairs_the_torn_line(finished, tmp_path):
    suite, out = _copy(finished, tmp_path)
    _truncate_mid_line(out)
    done = run_suite(suite, out, "--resume")
    assert_no_traceback(done)
    assert done.returncode == 1, done.stderr  # c3 fails, as before
    assert_each_case_once(out, ALL)
    assert summary_of(out)["counts"] == {"total": 10, "passed": 9, "failed": 1, "errored": 0}


def test_truncated_results_report_counts_the_finished_lines(finished, tmp_path):
    _, out = _copy(finished, tmp_path)
    _truncate_mid_line(out)
    done = run_cli("report", out, "--json", cwd=tmp_path, timeout=30)
    assert_no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["counts"] == {"total": 9, "passed": 8, "failed": 1, "errored": 0}


def test_truncated_results_compare_reports_the_missing_case_as_a_regression(finished, tmp_path):
    """D12: a case that passed in BASE and is missing from NEW is not silently ignored."""
    _, base = finished
    _, out = _copy(finished, tmp_path)
    _truncate_mid_line(out)
    done = run_cli("compare", base, out, cwd=tmp_path, timeout=30)
    assert_no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 only in base" in done.stdout + done.stderr


@pytest.mark.parametrize("command", ["resume", "report", "compare-base", "compare-new"])
def test_corrupt_results_line_is_refused_with_file_and_line(finished, tmp_path, command):
    suite, out = _copy(finished, tmp_path)
    _corrupt_line_3(out)
    before = out.read_bytes()
    if command == "resume":
        done = run_suite(suite, out, "--resume")
    elif command == "report":
        done = run_cli("report", out, cwd=tmp_path, timeout=30)
    else:
        pair = (out, finished[1]) if command == "compare-base" else (finished[1], out)
        done = run_cli("compare", *pair, cwd=tmp_path, timeout=30)
    assert_one_line_error(done, 2, f"{out.name}:3: ")
    assert out.read_bytes() == before, "a refused file is left as it was"


@pytest.mark.parametrize(
    "line",
    [
        {"run_id": "x", "suite": "stored", "case_id": "w", "score": "high", "verdict": "pass", "evaluator_results": []},
        {"run_id": "x", "suite": "stored", "case_id": "w", "score": 1.0, "verdict": "pass", "evaluator_results": "none"},
        [1, 2, 3],
    ],
    ids=["score_is_text", "evaluator_results_not_a_list", "not_an_object"],
)
def test_results_line_with_wrong_types_is_refused_by_report(tmp_path, line):
    """D11: well-formed JSON of the wrong shape used to crash `report` with a TypeError."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(line) + "\n")
    done = run_cli("report", bad, cwd=tmp_path, timeout=30)
    assert_one_line_error(done, 2, "bad.jsonl:1: ")


def test_torn_line_longer_than_1_mib_does_not_cost_finished_results(finished, tmp_path):
    """D2: --resume used to truncate the whole file when the torn last line was over 1 MiB."""
    suite, out = _copy(finished, tmp_path)
    lines = out.read_bytes().splitlines(keepends=True)
    torn = json.loads(lines[-1])
    out.write_bytes(b"".join(lines[:-1]))  # c9 is not finished...
    with out.open("ab") as handle:  # ...its 2 MiB line was cut by a kill
        handle.write(json.dumps({**torn, "output": "q" * (2 << 20)}).encode()[: (2 << 20) + 100])
    done = run_suite(suite, out, "--resume")
    assert_no_traceback(done)
    assert done.returncode == 1, done.stderr
    every = assert_each_case_once(out, ALL)
    assert every["c9"]["output"] == {"a": 9}


def test_a_results_file_naming_thousands_of_cells_is_reported_in_bounded_time_and_gated_whole(tmp_path):
    """A downloaded results file whose 5,000 lines each name another target: the report keeps 256
    cells apart (the rest count in the totals), pairs none of them (pairs grow with the square of
    the cells), and the gate still sees every failure."""
    import time

    lines = [
        {"run_id": "r", "suite": "s", "case_id": f"c{i % 50}", "score": 1.0 if i else 0.0, "verdict": "pass" if i else "fail",
         "target": f"t{i}", "prompt": None}
        for i in range(5_000)
    ]
    lines[4_999].update(score=0.0, verdict="fail")  # a failure in a cell past those kept apart
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    started = time.monotonic()
    done = run_cli("report", path, "--format", "json")
    assert time.monotonic() - started < 30
    assert_no_traceback(done)
    summary = json.loads(done.stdout)
    assert summary["counts"] == {"total": 5_000, "passed": 4_998, "failed": 2, "errored": 0}
    assert len(summary["cells"]) == 256 and summary["cells_not_kept"] == 5_000 - 256
    assert summary["comparisons"] == [] and summary["comparisons_skipped"] == "more than 32 cells: pairs are not compared"
    assert done.returncode == 1
    lines[0].update(score=1.0, verdict="pass")  # now the one failure is in a cell past those kept apart
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run_cli("report", path, "--format", "json").returncode == 1  # and it still fails the gate


def test_a_suite_declaring_thousands_of_targets_is_summarised_within_the_cell_caps(tmp_path):
    """A run of 2,000 declared targets keeps the same bounds as `report` of its results: 256 cells
    apart, the rest counted in the totals, no pairs past 32 cells, and the whole run gated."""
    targets = "".join(f"  t{i}: {{type: recorded}}\n" for i in range(2_000))
    suite = write(tmp_path, "suite.yaml", (
        "name: many\ntargets:\n" + targets + "evaluators: [{type: contains, reference: a}]\n"
        "cases:\n  - {id: c0, input: {}, output: a}\n  - {id: c1, input: {}, output: b}\n"
    ))
    out = tmp_path / "r.jsonl"
    done = run_suite(suite, out, "-q", timeout=120)
    assert_no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert len(out.read_text().splitlines()) == 4_000  # every case of every cell is on disk
    summary = summary_of(out)
    assert summary["counts"] == {"total": 4_000, "passed": 2_000, "failed": 2_000, "errored": 0}
    assert [cell["target"] for cell in summary["cells"]] == [f"t{i}" for i in range(256)]
    assert summary["cells_not_kept"] == 2 * (2_000 - 256)
    assert summary["comparisons"] == [] and summary["comparisons_skipped"] == "more than 32 cells: pairs are not compared"
    reported = json.loads(run_cli("report", out, "--format", "json").stdout)
    assert [cell["label"] for cell in reported["cells"]] == [cell["label"] for cell in summary["cells"]]
    assert reported["cells_not_kept"] == summary["cells_not_kept"]


# --- G10: a resumed run is the run it continues ------------------------------------------------------

DRIFT_SUITE = """
name: drift
targets: {small: {type: recorded}, large: {type: recorded}}
evaluators: [{name: says, type: contains, reference: answer}]
cases: cases.jsonl
"""


def _drift_folder(folder):
    write(folder, "suite.yaml", DRIFT_SUITE)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {}, "output": "answer"}) + "\n" for i in range(4)))
    return folder / "suite.yaml"


DRIFTS = {  # (what changes, the first run's options, the resume's options, what the refusal names)
    "evaluator_reference": (lambda f: write(f, "suite.yaml", DRIFT_SUITE.replace("reference: answer", "reference: nope")), (), (), "the suite's `evaluators`"),
    "a_case_added": (lambda f: (f / "cases.jsonl").open("a").write('{"id": "c9", "input": {}, "output": "answer"}\n'), (), (), "the cases"),
    "a_narrower_target": (lambda f: None, (), ("--target", "small"), "the cells (the run has small, large; this one small)"),
    "a_filter": (lambda f: None, (), ("--filter", "c1"), "--filter (the run: none; this one: c1)"),
    "a_repeat": (lambda f: None, ("--repeat", "2"), (), "--repeat (the run: 2; this one: 1)"),
}


@pytest.mark.parametrize(("drift", "destination"), [
    *((drift, "file") for drift in DRIFTS), ("evaluator_reference", "sqlite"), ("a_narrower_target", "sqlite"),
])
def test_resume_after_the_suite_cases_or_selection_changed_is_refused_naming_what_changed(tmp_path, drift, destination):
    """A run of 2 cells x 4 cases; then the suite, the cases or the options change: `--resume`
    exits 2 naming what changed, and the results are left as they were (never two suites in one
    run). Unchanged, it resumes."""
    if destination == "sqlite":
        pytest.importorskip("sqlalchemy")
    suite = _drift_folder(tmp_path)
    where = ["-o", "r.jsonl"] if destination == "file" else ["--store", "sqlite:///runs.db"]
    change, first, options, named = DRIFTS[drift]
    assert run_cli("run", suite, *where, "-q", *first, cwd=tmp_path).returncode == 0
    kept = (tmp_path / "r.jsonl").read_bytes() if destination == "file" else None
    change(tmp_path)
    done = run_cli("run", suite, *where, "-q", "--resume", *options, cwd=tmp_path)
    assert_one_line_error(done, 2, "--resume: the run in ", "began with another suite or selection; changed since: " + named)
    if kept is not None:
        assert (tmp_path / "r.jsonl").read_bytes() == kept
    if not first:  # the suite and cases as the run began: it resumes (a repeated run cannot be resumed at all)
        _drift_folder(tmp_path)
        again = run_cli("run", suite, *where, "-q", "--resume", cwd=tmp_path)
        assert again.returncode == 0, again.stderr


def test_resume_after_a_kill_9_still_knows_the_suite_the_run_began_with(tmp_path):
    """Killed before it could write its summary: the fingerprint the run wrote when it began is
    still beside the results, so a resume after an edit is refused; without the edit it finishes."""
    import signal

    from fault_suites import start_run, wait_for_lines

    write(tmp_path, "t.py", "import json, sys, time\ncase = json.load(sys.stdin)\nif case['slow']: time.sleep(60)\nprint(json.dumps('answer'))\n")
    text = "name: killed\ntarget: {type: command, command: [python, t.py]}\nevaluators: [{type: contains, reference: answer}]\ncases: cases.jsonl\n"
    suite = write(tmp_path, "suite.yaml", text)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"slow": i == 2}}) + "\n" for i in range(4)))
    proc = start_run(suite, tmp_path / "r.jsonl", "--workers", "1")
    try:
        wait_for_lines(tmp_path / "r.jsonl", 2, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 2
    write(tmp_path, "suite.yaml", text.replace("reference: answer", "reference: nope"))
    done = run_cli("run", suite, "-o", "r.jsonl", "-q", "--resume", cwd=tmp_path)
    assert_one_line_error(done, 2, "changed since: the suite's `evaluators`")
    write(tmp_path, "suite.yaml", text)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"slow": False}}) + "\n" for i in range(4)))
    done = run_cli("run", suite, "-o", "r.jsonl", "-q", "--resume", cwd=tmp_path)
    assert_one_line_error(done, 2, "changed since: the cases")  # (c2 no longer sleeps: another case)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"slow": i == 2}}) + "\n" for i in range(4)))
    write(tmp_path, "t.py", "import json, sys\njson.load(sys.stdin)\nprint(json.dumps('answer'))\n")  # the target is not the suite
    done = run_cli("run", suite, "-o", "r.jsonl", "-q", "--resume", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert_each_case_once(tmp_path / "r.jsonl", [f"c{i}" for i in range(4)])


def test_a_resume_of_every_case_widens_a_run_begun_on_some_and_a_narrower_one_is_refused(tmp_path):
    suite = _drift_folder(tmp_path)
    results = tmp_path / "r.jsonl"
    assert run_cli("run", suite, "-o", results, "--filter", "c[01]", "-q").returncode == 0
    widened = run_cli("run", suite, "-o", results, "--resume", "-q")
    assert widened.returncode == 0, widened.stderr
    rows = read_jsonl(results)
    assert sorted({row["case_id"] for row in rows}) == ["c0", "c1", "c2", "c3"] and len({row["run_id"] for row in rows}) == 1
    assert run_cli("run", suite, "-o", tmp_path / "s.jsonl", "--shard", "1/2", "-q").returncode == 0
    narrower = run_cli("run", suite, "-o", tmp_path / "s.jsonl", "--resume", "--shard", "2/2", "-q")
    assert narrower.returncode == 2 and "--shard (the run: 1/2; this one: 2/2)" in narrower.stderr
