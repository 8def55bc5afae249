"""Reports of a run and of finished results: the failures section, JUnit, Markdown, `report --format`."""

import json
import os
import re

import pytest
from junitparser import Error, Failure, JUnitXml

from conftest import EXAMPLES, ROOT, read_jsonl, run_cli, write
from junit_schema import check_junit_if_possible

GOLDEN = ROOT / "tests" / "golden"
INVOICES = EXAMPLES / "invoices" / "suite.yaml"
MIXED = """
name: mixed
evaluators:
  - name: fields
    type: field_accuracy
    fields: [{path: a}, {path: b, match: numeric_tolerance, tolerance: 0.1}]
cases:
  - {id: ok, expected: {a: x, b: 1}, output: {a: x, b: 1.05}, tags: [smoke]}
  - {id: wrong, expected: {a: z, b: 3}, output: {a: q, b: 3}, tags: [smoke]}
  - {id: "<&>\\"odd\\"", expected: {a: w, b: 4}, output: {a: w, b: 9}}
  - {id: unanswered, expected: {a: v, b: 5}}
"""


def normalized(text):
    """Run ids, times and durations vary from run to run; everything else must match the golden file."""
    text = re.sub(r"run `[^`]+`", "run `RUN`", text)
    text = re.sub(r" · \d+\.\d\d s", " · N s", text)
    text = re.sub(r'name="run_id" value="[^"]*"', 'name="run_id" value="RUN"', text)
    return re.sub(r'(time|timestamp)="[^"]*"', r'\1="T"', text)


def check_golden(name, text):
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from the golden file (UPDATE_GOLDEN=1 rewrites it after a deliberate change)"


@pytest.fixture(scope="module")
def invoices_run(tmp_path_factory):
    """The invoices example, once, with every report (one worker: results in case order)."""
    folder = tmp_path_factory.mktemp("invoices")
    done = run_cli(
        "run", INVOICES, "-o", folder / "r.jsonl", "--workers", "1", "--show-failures", "2",
        "--junit", folder / "junit.xml", "--markdown", folder / "report.md", "--html", folder / "report.html",
    )
    assert done.returncode == 1, done.stderr
    return folder, done


# --- the failures section -------------------------------------------------------------------------

def test_failures_section_lists_the_worst_cases_with_expected_and_actual_values(invoices_run):
    _, done = invoices_run
    section = done.stdout[done.stdout.index("Failures ("):done.stdout.index("results: ")]
    assert section.splitlines() == [
        "Failures (2 of 5, worst first)",
        "FAIL inv-006 (score 0.815)",
        "  header (field_accuracy, partial, 0.667)",
        '    invoice.total (type mismatch): expected 7200.0, got "7,200.00"',
        "FAIL inv-004 (score 0.857)",
        "  header (field_accuracy, partial, 0.714)",
        "    invoice.total: expected 15600.0, got 16500.0",
        "... and 3 more failing or errored cases (--show-failures N shows more)",
    ]
    assert done.stdout.index("Fields across the dataset") < done.stdout.index("Failures (")


def test_errors_show_their_message_and_come_first(tmp_path):
    done = run_cli("run", write(tmp_path, "s.yaml", MIXED), "-o", tmp_path / "r.jsonl")
    assert done.returncode == 3
    section = done.stdout[done.stdout.index("Failures ("):done.stdout.index("results: ")].splitlines()
    assert section[0] == "Failures (3 of 3, worst first)"
    assert section[1] == "ERROR unanswered (score 0.000): case 'unanswered' has no recorded `output` (add one, or pass --predictions)"
    assert section[2:5] == [
        'FAIL <&>"odd" (score 0.500)',
        "  fields (field_accuracy, partial, 0.500)",
        "    b: expected 4, got 9",
    ]


def test_quiet_keeps_its_one_line_and_zero_hides_the_section(tmp_path):
    suite = write(tmp_path, "s.yaml", MIXED)
    quiet = run_cli("run", suite, "-o", "-", "-q")
    assert quiet.stderr.strip().splitlines()[-1] == "mixed: 4 cases, 1 passed, 2 failed, 1 errored, pass rate 25.0%"
    assert "Failures" not in quiet.stderr + quiet.stdout
    hidden = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--show-failures", "0")
    assert "Failures" not in hidden.stdout and "Fields across the dataset" in hidden.stdout
    negative = run_cli("run", suite, "-o", tmp_path / "r2.jsonl", "--show-failures", "-1")
    assert negative.returncode == 2 and "--show-failures must be 0 or more" in negative.stderr
    assert not (tmp_path / "r2.jsonl").exists()


# --- JUnit ----------------------------------------------------------------------------------------

def test_junit_reads_back_with_junitparser(invoices_run):
    folder, _ = invoices_run
    durations = {line["case_id"]: line["duration_ms"] for line in read_jsonl(folder / "r.jsonl")}
    suites = list(JUnitXml.fromfile(str(folder / "junit.xml")))
    assert [(s.name, s.tests, s.failures, s.errors, s.skipped) for s in suites] == [("invoice-extraction", 8, 5, 0, 0)]
    cases = {case.name: case for case in suites[0]}
    assert sorted(cases) == sorted(durations)
    for name, case in cases.items():
        assert case.classname == "invoice-extraction"
        assert case.time == round(durations[name] / 1000, 3)  # milliseconds: the three decimals junit-10.xsd allows
    assert [case.name for case in cases.values() if case.is_passed] == ["inv-001", "inv-003", "inv-008"]
    failure = cases["inv-004"].result[0]
    assert isinstance(failure, Failure)
    assert failure.message == "score 0.857: invoice.total: expected 15600.0, got 16500.0"
    assert "header (field_accuracy, partial, 0.714)" in failure.text
    assert cases["inv-002"].result[0].message == 'score 0.896: vendor.name: expected "Globex Corporation", got "Globex Corp"'
    check_golden("invoices.junit.xml", normalized((folder / "junit.xml").read_text()))
    check_junit_if_possible(folder / "junit.xml")


def test_junit_carries_errors_and_odd_names_even_from_stdout_runs(tmp_path):
    suite = write(tmp_path, "s.yaml", MIXED)
    done = run_cli("run", suite, "-o", "-", "--junit", tmp_path / "j.xml")
    assert done.returncode == 3
    suites = list(JUnitXml.fromfile(str(tmp_path / "j.xml")))
    assert [(s.tests, s.failures, s.errors) for s in suites] == [(4, 2, 1)]
    cases = {case.name: case for case in suites[0]}
    assert set(cases) == {"ok", "wrong", '<&>"odd"', "unanswered"}
    error = cases["unanswered"].result[0]
    assert isinstance(error, Error)
    assert error.message == "case 'unanswered' has no recorded `output` (add one, or pass --predictions)"
    assert cases['<&>"odd"'].result[0].message == "score 0.500: b: expected 4, got 9"
    check_junit_if_possible(tmp_path / "j.xml")


# --- Markdown -------------------------------------------------------------------------------------

def test_markdown_matches_the_golden_file_and_fills_the_step_summary(invoices_run, tmp_path):
    folder, _ = invoices_run
    check_golden("invoices.md", normalized((folder / "report.md").read_text()))
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n")
    done = subprocess_run_with_env(
        {"GITHUB_STEP_SUMMARY": str(step)},
        "report", folder / "r.jsonl", "--format", "markdown", "-o", tmp_path / "again.md", "--show-failures", "2",
    )
    assert done.returncode == 1, done.stderr
    assert (tmp_path / "again.md").read_text() == (folder / "report.md").read_text().replace(" · " + _duration(folder), "")
    assert step.read_text() == "earlier step\n" + (tmp_path / "again.md").read_text()


def test_a_step_summary_that_cannot_be_written_is_a_warning_and_the_exit_code_stays_the_verdicts(invoices_run, tmp_path):
    """GITHUB_STEP_SUMMARY naming a folder (a runner's odd set-up): the Markdown report is written,
    a warning says the summary was not, and the exit code is the run's own (it was 2, "nothing ran")."""
    folder, _ = invoices_run
    (tmp_path / "a-folder").mkdir()
    done = subprocess_run_with_env(
        {"GITHUB_STEP_SUMMARY": str(tmp_path / "a-folder")}, "report", folder / "r.jsonl", "--format", "markdown", "-o", tmp_path / "again.md",
    )
    assert done.returncode == 1, done.stderr
    assert "warning: cannot append the Markdown report to GITHUB_STEP_SUMMARY" in done.stderr
    assert (tmp_path / "again.md").read_text().startswith("## ")


def test_markdown_shows_dataset_metrics(tmp_path):
    done = run_cli("run", EXAMPLES / "invoices-lineitems" / "suite.yaml", "-o", tmp_path / "r.jsonl", "--markdown", tmp_path / "r.md")
    assert done.returncode == 1, done.stderr
    text = normalized((tmp_path / "r.md").read_text())
    assert "### Dataset metrics: items" in text
    check_golden("invoices-lineitems.md", text)


def _duration(folder):
    """`report` knows no run duration: the run's Markdown has one more fact in its status line."""
    return re.search(r"\d+\.\d\d s", (folder / "report.md").read_text()).group(0)


def subprocess_run_with_env(env, *args):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "agenteval", *map(str, args)], capture_output=True, text=True, timeout=120, env={**os.environ, **env},
    )


# --- `report` over finished results ---------------------------------------------------------------

def test_report_over_shards_equals_the_whole_run(invoices_run, tmp_path):
    folder, _ = invoices_run
    first = run_cli("run", INVOICES, "-o", tmp_path / "s1.jsonl", "--shard", "1/2", "--workers", "1")
    second = run_cli("run", INVOICES, "-o", tmp_path / "s2.jsonl", "--shard", "2/2", "--workers", "1")
    assert first.returncode == second.returncode == 1
    shards = [tmp_path / "s1.jsonl", tmp_path / "s2.jsonl"]
    markdown = run_cli("report", *shards, "--format", "markdown").stdout
    expected = run_cli("report", folder / "r.jsonl", "--format", "markdown").stdout
    assert normalized(markdown) == normalized(expected)
    assert "**8 cases: 3 passed, 5 failed, 0 errored**" in markdown
    junit = run_cli("report", *shards, "--format", "junit", "-o", tmp_path / "j.xml")
    assert junit.returncode == 1 and junit.stdout == ""
    suites = list(JUnitXml.fromfile(str(tmp_path / "j.xml")))
    assert [(s.tests, s.failures, s.errors) for s in suites] == [(8, 5, 0)]
    check_junit_if_possible(tmp_path / "j.xml")


def test_report_formats_and_output_files(invoices_run, tmp_path):
    folder, _ = invoices_run
    results = folder / "r.jsonl"
    as_json = json.loads(run_cli("report", results, "--format", "json").stdout)
    assert as_json == json.loads(run_cli("report", results, "--json").stdout)
    assert as_json["counts"] == {"total": 8, "passed": 3, "failed": 5, "errored": 0}
    done = run_cli("report", results, "-o", tmp_path / "table.txt")
    assert done.returncode == 1 and done.stdout == ""
    table = (tmp_path / "table.txt").read_text()
    assert "Fields across the dataset" in table and "FAIL inv-006 (score 0.815)" in table
    assert "\x1b[" not in table  # no terminal colour codes in a file
    html = run_cli("report", results, "--format", "html", "-o", tmp_path / "r.html")
    assert html.returncode == 1 and (tmp_path / "r.html").read_text().startswith("<!doctype html>")
    assert oct((tmp_path / "r.html").stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    unknown = run_cli("report", results, "--format", "pdf")
    assert unknown.returncode == 2 and "unknown --format 'pdf'" in unknown.stderr


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_report_rejects_wrong_types_with_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"run_id":"x","suite":"s","case_id":"w","score":"high","verdict":"pass","evaluator_results":[]}\n')
    done = run_cli("report", bad)
    assert done.returncode == 2
    assert done.stderr == f'error: {bad}:1: not a result line: score must be a finite number, got "high"\n'
    bad.write_text('{"run_id":"x","suite":"s","case_id":"w","score":1,"verdict":"pass","evaluator_results":[{"name":"e","type":"t","score":1,"verdict":"pass","misses":[3]}]}\n')
    done = run_cli("report", bad)
    assert done.returncode == 2 and "evaluator_results[0].misses must be a list of strings, got [3]" in done.stderr


def test_report_validates_min_pass_rate_like_run(invoices_run):
    folder, _ = invoices_run
    for rate in ("-1", "nan"):
        done = run_cli("report", folder / "r.jsonl", "--min-pass-rate", rate)
        assert done.returncode == 2, rate
        assert "--min-pass-rate must be between 0 and 1" in done.stderr
    assert run_cli("report", folder / "r.jsonl", "--min-pass-rate", "0.3").returncode == 0


def test_report_counts_each_case_once_across_inputs(invoices_run):
    folder, _ = invoices_run
    results = folder / "r.jsonl"
    done = run_cli("report", results, results, "--json")
    assert json.loads(done.stdout)["counts"] == {"total": 8, "passed": 3, "failed": 5, "errored": 0}
    assert done.stderr == (
        f"warning: 8 duplicate results skipped (e.g. case 'inv-001' in {results}, which is given twice); each case is counted once\n"
    )


# --- reports during a run -------------------------------------------------------------------------

def test_a_resumed_run_reports_the_earlier_cases_too(tmp_path):
    out = tmp_path / "r.jsonl"
    assert run_cli("run", INVOICES, "-o", out, "--filter", "inv-00[1-4]").returncode == 1
    done = run_cli("run", INVOICES, "-o", out, "--resume", "--junit", tmp_path / "j.xml", "--markdown", tmp_path / "r.md")
    assert done.returncode == 1, done.stderr
    suites = list(JUnitXml.fromfile(str(tmp_path / "j.xml")))
    assert [(s.tests, s.failures) for s in suites] == [(8, 5)]
    check_junit_if_possible(tmp_path / "j.xml")
    assert "Failures (5 of 5, worst first)" in (tmp_path / "r.md").read_text()


def test_an_unwritable_report_path_stops_before_anything_runs(tmp_path):
    (tmp_path / "file").write_text("")
    done = run_cli("run", INVOICES, "-o", tmp_path / "r.jsonl", "--html", tmp_path / "file" / "r.html")
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: cannot write a report to {tmp_path / 'file' / 'r.html'}: ")
    assert not (tmp_path / "r.jsonl").exists()
    folder = run_cli("run", INVOICES, "-o", tmp_path / "r.jsonl", "--junit", tmp_path)
    assert folder.returncode == 2 and f"{tmp_path} is a directory" in folder.stderr


def test_the_collector_keeps_exactly_the_worst_failures_as_a_full_sort_would():
    import random

    from agenteval.reports.failures import FailureCollector, failure_key
    from agenteval.results import CaseResult

    rng = random.Random(1)
    for _ in range(200):
        limit = rng.randint(0, 7)
        collector = FailureCollector(limit)
        results = [
            CaseResult("run", "s", f"c{rng.randint(0, 30)}-{i}", rng.choice([0.0, 0.25, 1.0, rng.random()]), rng.choice(["pass", "fail", "error"]))
            for i in range(rng.randint(0, 60))
        ]
        for result in results:
            collector.add(result)
        failing = [r for r in results if r.verdict != "pass"]
        assert [f.key for f in collector.worst()] == sorted(failure_key(r.verdict, r.score, r.case_id) for r in failing)[:limit]
        assert collector.total == len(failing) and collector.left_out == max(0, len(failing) - limit)


# --- on a real terminal (a pseudo-terminal of a given size) ---------------------------------------

def run_in_terminal(*args, columns=80, timeout=120):
    """`agenteval ARGS` with stdout and stderr on a pseudo-terminal `columns` wide: (exit code, screen text)."""
    import fcntl
    import pty
    import select
    import struct
    import subprocess
    import sys
    import termios
    import time

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES", "CI")}
    process = subprocess.Popen([sys.executable, "-m", "agenteval", *map(str, args)], stdin=subprocess.DEVNULL,
                               stdout=follower, stderr=follower, env={**env, "TERM": "xterm"}, close_fds=True)
    os.close(follower)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    code = process.wait(timeout=10)
    os.close(leader)
    screen = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", screen)  # colours and titles off: the text a person reads


def test_an_80_column_terminal_keeps_identifiers_whole(invoices_run, tmp_path):
    """`party_na…`, `invoice.po_numb…` were cut; numbers and headers give way instead."""
    folder, _ = invoices_run
    code, screen = run_in_terminal("report", folder / "r.jsonl", columns=80)
    assert code == 1, screen
    assert "…" not in screen
    lines = screen.splitlines()
    table_lines = [line for line in lines if line[:1] in ("┏", "┃", "┡", "│", "└")]
    assert table_lines and all(len(line) <= 80 for line in table_lines), max(table_lines, key=len)
    evaluator_rows = [line for line in lines if line.startswith("│ party_names ")]
    assert "code_judge" in evaluator_rows[0] and "0.948" in evaluator_rows[0]
    assert "Evaluators (2 of 2)" in [line.strip() for line in lines] or len(evaluator_rows) == 1  # too wide: split, each part naming the evaluator whole
    assert any(line.startswith("│ header ") and "field_accuracy" in line for line in lines)
    field_row = next(line for line in lines if "invoice.po_number" in line)
    assert "100.0%" in field_row and "3/3" in field_row  # the whole path, its numbers on the same line
    # a narrower terminal still shows every identifier whole, on one line: the least useful columns give way, named below
    code, narrow = run_in_terminal("report", folder / "r.jsonl", columns=60)
    assert code == 1 and "…" not in narrow and " of 2)" not in narrow
    assert all(len(line) <= 60 for line in narrow.splitlines() if line[:1] in ("┏", "┃", "┡", "│", "└"))
    rows = narrow.split("Evaluators", 1)[1].split("Fields across", 1)[0].splitlines()
    cells = [[cell.strip() for cell in line.split("│")[1:3]] for line in rows if line.startswith("│")]
    assert cells == [["header", "0.902"], ["party_names", "0.948"]]  # each name whole
    assert "not shown at 60 columns: type, mean ms" in [line.strip() for line in rows]
    assert any("invoice.po_number │" in line for line in narrow.splitlines())


def test_report_html_on_a_terminal_asks_for_an_output_file(invoices_run, tmp_path):
    folder, _ = invoices_run
    code, screen = run_in_terminal("report", folder / "r.jsonl", "--format", "html", columns=100)
    assert code == 2
    assert screen.strip() == "error: --format html writes a whole web page; give a file with -o PATH (e.g. -o report.html), or redirect stdout"
    piped = run_cli("report", folder / "r.jsonl", "--format", "html")  # not a terminal: the page goes to stdout
    assert piped.returncode == 1 and piped.stdout.startswith("<!doctype html>")
