"""Reports given odd paths and hostile data: written through, escaped, shown but never obeyed.

Report paths that are a FIFO, a symlink or a device are written through, never replaced; data
(case ids, misses, errors, a target's stderr, field paths) can add no Markdown heading or row,
send no escape sequence to a terminal, and steer nothing in the HTML viewer. JUnit files keep
to the Jenkins/Surefire schema (junit-10.xsd).
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from conftest import read_jsonl, run_cli, write
from fault_suites import assert_no_traceback
from junit_schema import assert_valid_junit

ESC = "\x1b"
SUITE = "name: rf\nevaluators: [{type: equals}]\ncases: cases.jsonl\n"
NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="making a character device (mknod) needs root")


def _suite(folder: Path, cases: list[dict], suite: str = SUITE) -> Path:
    write(folder, "cases.jsonl", "".join(json.dumps(case) + "\n" for case in cases))
    return write(folder, "suite.yaml", suite)


def _simple(folder: Path) -> Path:
    return _suite(folder, [{"id": "c1", "expected": "x", "output": "x"}, {"id": "c2", "expected": "x", "output": "y"}])


# E12: report paths that are a FIFO, a symlink or a device are written through, never replaced


def test_report_paths_that_are_a_fifo_are_written_through(tmp_path):
    suite = _simple(tmp_path)
    for flag in ("--junit", "--markdown", "--html"):
        fifo = tmp_path / f"fifo{flag}"
        os.mkfifo(fifo)
        received = []
        reader = threading.Thread(target=lambda path=fifo: received.append(path.read_bytes()), daemon=True)
        reader.start()
        done = run_cli("run", suite, "-o", tmp_path / f"r{flag}.jsonl", "-q", flag, fifo, timeout=60)
        reader.join(30)
        assert done.returncode == 1, done.stderr
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode), f"{flag}: the FIFO was replaced"
        assert received and received[0], f"{flag}: nothing came through the FIFO"
        text = received[0].decode()
        assert {"--junit": "<testsuites", "--markdown": "## agenteval: rf", "--html": "<!doctype html>"}[flag] in text
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".fifo")], "a temporary file was left behind"


def test_report_paths_that_are_a_symlink_keep_the_link(tmp_path):
    suite = _simple(tmp_path)
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "junit.xml"
    target.write_text("old")
    link = tmp_path / "junit-link.xml"
    link.symlink_to(target)
    stdout_link = tmp_path / "fake-stdout"
    stdout_link.symlink_to("/proc/self/fd/1")  # what /dev/stdout is
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "real" / "made.html")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--junit", link, "--markdown", stdout_link, "--html", dangling)
    assert done.returncode == 1, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith('<?xml version="1.0"')  # the link's target got the report
    assert stdout_link.is_symlink() and os.readlink(stdout_link) == "/proc/self/fd/1"
    assert done.stdout.startswith("## agenteval: rf\n")  # --markdown /dev/stdout prints the report
    assert dangling.is_symlink() and (tmp_path / "real" / "made.html").read_text().startswith("<!doctype html>")
    again = run_cli("report", tmp_path / "r.jsonl", "--format", "junit", "-o", link)
    assert again.returncode == 1 and link.is_symlink() and "<testsuites" in target.read_text()


@NEEDS_ROOT
def test_report_paths_that_are_a_device_keep_the_device(tmp_path):
    suite = _simple(tmp_path)
    device = tmp_path / "fake-null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a private /dev/null; the real one is never touched
    before = os.lstat(device)
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--junit", device, "--markdown", device, "--html", device)
    assert done.returncode == 1, done.stderr
    report = run_cli("report", tmp_path / "r.jsonl", "--format", "html", "-o", device)
    assert report.returncode == 1, report.stderr
    after = os.lstat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.jsonl", "fake-null", "r.jsonl", "r.summary.json", "suite.yaml"]


# E20: Markdown data can add no heading, row or line


HOSTILE_ID = "inv-7\r## All checks passed\r| a | b |\n# Title\u2028## Sep\x85### NEL\x0b#### VT\x0c##### FF\r\n| c |"


def test_markdown_data_cannot_add_headings_or_rows(tmp_path):
    suite = _suite(tmp_path, [
        {"id": HOSTILE_ID, "expected": "x", "output": "y"},
        {"id": "ok", "expected": "x", "output": "x"},
    ], "name: e20\nevaluators: [{name: \"n\\r## name heading\", type: equals}]\ncases: cases.jsonl\n")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--markdown", tmp_path / "m.md")
    assert done.returncode == 1, done.stderr
    text = (tmp_path / "m.md").read_text()
    renderer = MarkdownIt("commonmark").enable("table")
    html = renderer.render(text)
    headings = [line for line in html.splitlines() if line.startswith("<h")]
    assert headings == ["<h2>agenteval: e20</h2>", "<h3>Evaluators</h3>", "<h3>Failures (1 of 1, worst first)</h3>"]
    assert html.count("<tr>") == 2  # the evaluator table: its header and one row
    cells, in_table = [], False
    for token in renderer.parse(text):
        in_table = {"table_open": True, "table_close": False}.get(token.type, in_table)
        if in_table and token.type == "inline":
            cells.append(token.content)
    assert cells == ["evaluator", "type", "mean score", "pass", "partial", "fail", "error",
                     "n ## name heading", "equals", "0.500", "1", "0", "1", "0"]  # the header and one row, the name on its line
    # every character of the id is still there to read, on one line
    items = [line for line in html.splitlines() if "FAIL inv-7" in line]
    assert len(items) == 1 and "## All checks passed | a | b | # Title ## Sep ### NEL #### VT ##### FF | c |" in items[0]
    assert "\r" not in text and "\u2028" not in text and "\x85" not in text and "\x0b" not in text and "\x0c" not in text


def test_compare_markdown_data_cannot_add_headings_or_rows(tmp_path):
    base = _suite(tmp_path, [{"id": HOSTILE_ID, "expected": "x", "output": "x"}])
    run_cli("run", base, "-o", tmp_path / "base.jsonl", "-q")
    _suite(tmp_path, [{"id": HOSTILE_ID, "expected": "x", "output": "y"}])
    run_cli("run", base, "-o", tmp_path / "new.jsonl", "-q")
    done = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl", "--format", "markdown")
    assert done.returncode == 1, done.stderr
    html = MarkdownIt("commonmark").enable("table").render(done.stdout)
    assert [line for line in html.splitlines() if line.startswith("<h")] == [
        "<h2>agenteval compare: rf</h2>", "<h3>Regressions (1)</h3>", "<h3>Evaluators</h3>",
    ]
    assert html.count("<tr>") == 2 + 2  # each table: a header and one row


MENTIONS = "@octocat and @acme/reviewers see #123, acme/app#9"
MENTIONING_TARGET = (
    "import json, sys\nif json.load(sys.stdin).get('fail'):\n"
    f"    sys.stderr.write({MENTIONS!r})\n    sys.exit(1)\n"
    f"print(json.dumps({MENTIONS!r}))\n"
)


def _shown_text(markdown: str) -> str:
    """The text a reader sees of `markdown` rendered as GitHub would (markup gone, entities read)."""
    from html import unescape

    return unescape(re.sub(r"<[^>]+>", " ", MarkdownIt("commonmark").enable("table").render(markdown)))


def test_markdown_data_mentions_no_one_and_links_no_issue(tmp_path):
    """`@octocat`, `@acme/reviewers`, `#123` and `acme/app#9` in a case id, an evaluator name, an
    answer and a target's error: the run's Markdown (the step summary, the PR comment) and compare's
    show each as written, with a zero-width space after its `@` or `#` (`@&#8203;octocat`, as
    Renovate writes them), so GitHub notifies no one and links no issue; our own headings stay."""
    write(tmp_path, "t.py", MENTIONING_TARGET)
    cases = [{"id": "@octocat #12", "input": {}, "expected": MENTIONS}, {"id": "c2", "input": {"fail": True}, "expected": "x"}]
    suite = (f"name: mentions\ntarget: {{type: command, command: [python, {tmp_path / 't.py'}]}}\n"
             "evaluators: [{name: \"@team-lead #7\", type: equals}]\ncases: cases.jsonl\n")
    _suite(tmp_path, cases, suite)
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "base.jsonl", "-q").returncode == 3  # (c2 errors)
    _suite(tmp_path, [cases[0] | {"expected": "x"}, cases[1]], suite)
    done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "new.jsonl", "-q", "--markdown", tmp_path / "m.md")
    assert done.returncode == 3, done.stderr
    compared = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl", "--format", "markdown")
    assert compared.returncode == 1, compared.stderr
    for markdown in ((tmp_path / "m.md").read_text(), compared.stdout):
        assert "@&#8203;octocat #&#8203;12" in markdown and "@&#8203;team-lead #&#8203;7" in markdown, markdown
        assert not re.search(r"@(?!&#8203;)\w|(?<!&)#(?!&#8203;)\d", markdown), markdown
        shown = _shown_text(markdown)
        assert not re.search(r"@\w|#\d", shown), shown  # what GitHub would link
        read = shown.replace("\u200b", "")
        assert "@octocat #12" in read and "@team-lead #7" in read and MENTIONS in read, read
    headings = [line for line in MarkdownIt("commonmark").render(compared.stdout).splitlines() if line.startswith("<h")]
    assert headings == ["<h2>agenteval compare: mentions</h2>", "<h3>Regressions (1)</h3>", "<h3>Evaluators</h3>"]
    assert "stderr: @&#8203;octocat and @&#8203;acme/reviewers see #&#8203;123, acme/app#&#8203;9" in (tmp_path / "m.md").read_text()


# E21: the terminal shows control characters as escapes, never sends them

ESCAPING_TARGET = (
    "import json, sys\nif json.load(sys.stdin).get('fail'):\n"
    "    sys.stderr.write('\\x1b[2J\\x1b[H\\x1b[32mALL CASES PASSED\\x1b[0m\\x1b]0;owned\\x07\\n')\n    sys.exit(1)\n"
    "print(json.dumps({'a': 2}))\n"
)


def test_terminal_shows_escape_sequences_instead_of_sending_them(tmp_path):
    write(tmp_path, "t.py", ESCAPING_TARGET)
    cases = [{"id": "c1", "input": {"fail": True}, "expected": {"a": 1}}, {"id": "c2\x1b[31mred\x9b2J", "input": {}, "expected": {"a": 1}}]
    suite = _suite(tmp_path, cases, (
        f"name: \"e21\\e[2J\"\ntarget: {{type: command, command: [python, {tmp_path / 't.py'}]}}\n"
        "evaluators: [{name: \"f\\e]0;title\\a\", type: field_accuracy, fields: [{path: a}]}]\ncases: cases.jsonl\n"
    ))
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl")
    assert done.returncode == 3, done.stderr
    assert_no_traceback(done)
    for stream in (done.stdout, done.stderr):
        assert ESC not in stream and "\x07" not in stream and "\x9b" not in stream
    assert "stderr: \\x1b[2J\\x1b[H\\x1b[32mALL CASES PASSED\\x1b[0m\\x1b]0;owned\\x07" in done.stdout
    assert "c2\\x1b[31mred\\x9b2J" in done.stdout and "e21\\x1b[2J" in done.stdout and "f\\x1b]0;title\\x07" in done.stdout
    quiet = run_cli("run", suite, "-o", tmp_path / "q.jsonl", "-q")  # the one line goes to stderr
    assert quiet.returncode == 3 and ESC not in quiet.stderr and quiet.stderr.startswith("e21\\x1b[2J: 2 cases")
    report = run_cli("report", tmp_path / "r.jsonl")
    assert report.returncode == 3 and ESC not in report.stdout + report.stderr and "\\x1b[2J" in report.stdout
    table = run_cli("report", tmp_path / "r.jsonl", "-o", tmp_path / "t.txt")
    assert table.returncode == 3 and ESC not in (tmp_path / "t.txt").read_text()
    failed = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}["c1"]  # cases finish in any order
    assert ESC in failed["error"]  # the data itself is kept as it was; only its display is escaped


def test_compare_shows_escape_sequences_instead_of_sending_them(tmp_path):
    base = _suite(tmp_path, [{"id": "c\x1b[2J", "expected": "x", "output": "x"}])
    run_cli("run", base, "-o", tmp_path / "base.jsonl", "-q")
    _suite(tmp_path, [{"id": "c\x1b[2J", "expected": "x", "output": "\x1b]0;owned\x07"}])
    run_cli("run", base, "-o", tmp_path / "new.jsonl", "-q")
    done = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl")
    assert done.returncode == 1, done.stderr
    assert ESC not in done.stdout + done.stderr and "c\\x1b[2J" in done.stdout


# F4, F5: JUnit


def test_junit_error_message_is_the_error_itself(tmp_path):
    suite = _suite(tmp_path, [{"id": "c1", "expected": "short", "output": "a longer answer"}], (
        "name: f4\nevaluators: [{name: same, type: equals}, {name: tone, type: sentiment, max_chars: 5}]\ncases: cases.jsonl\n"
    ))
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--junit", tmp_path / "j.xml")
    assert done.returncode == 3, done.stderr
    error = read_jsonl(tmp_path / "r.jsonl")[0]["evaluator_results"][1]["error"]
    assert error == "answer has 15 characters, more than max_chars (5)"
    from xml.etree import ElementTree

    element = ElementTree.parse(tmp_path / "j.xml").find(".//testcase/error")
    assert element is not None and element.get("message") == error
    assert "answer does not equal 'short'" in element.text  # the other evaluator's miss stays in the body
    assert_valid_junit(tmp_path / "j.xml")


def test_every_junit_file_validates_against_the_jenkins_schema(tmp_path):
    """Each way a JUnit file is made, with passes, failures, errors, odd names and a slow case."""
    write(tmp_path, "slow.py", "import sys, time, json\nsys.stdin.read()\ntime.sleep(1.2)\nprint(json.dumps({'a': 1}))\n")
    cases = [
        {"id": "pass", "input": {}, "expected": {"a": 1}},
        {"id": "<&>\"odd\" \x01\x1b name\ud7ff", "input": {}, "expected": {"a": 2}},
    ]
    suite = _suite(tmp_path, cases, (
        f"name: \"f5 <&>\"\ntarget: {{type: command, command: [python, {tmp_path / 'slow.py'}]}}\n"
        "evaluators: [{type: field_accuracy, fields: [{path: a}]}]\ncases: cases.jsonl\n"
    ))
    made = []
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--junit", tmp_path / "run.xml")
    assert done.returncode == 1, done.stderr
    made.append(tmp_path / "run.xml")
    errored = _suite(tmp_path / "e", [{"id": "e1", "expected": "x"}], "name: e\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    done = run_cli("run", errored, "-o", "-", "--junit", tmp_path / "stdout-run.xml")
    made.append(tmp_path / "stdout-run.xml")
    for fmt_input, name in (([tmp_path / "r.jsonl"], "report.xml"), ([tmp_path / "r.jsonl", tmp_path / "e" / "r.jsonl"], "two.xml")):
        if not (tmp_path / "e" / "r.jsonl").exists():
            run_cli("run", errored, "-o", tmp_path / "e" / "r.jsonl", "-q")
        done = run_cli("report", *fmt_input, "--format", "junit", "-o", tmp_path / name)
        assert done.returncode in (1, 3), done.stderr
        made.append(tmp_path / name)
    text = (tmp_path / "run.xml").read_text()
    assert 'time="1.' in text and "skipped" not in text.split("\n")[1]  # <testsuites> carries no `skipped`
    for path in made:
        assert_valid_junit(path)


# E25, F9: the HTML viewer in a real headless Chromium


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    from browsers import ARGS, chromium_or_skip

    chromium = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=ARGS)
        yield launched
        launched.close()


def _open(browser, path: Path):
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready=true]", timeout=30_000)
    return page, problems


PROTO_JUDGE = '''
def judge(payload):
    if payload["case_id"] == "c1":
        fields = [
            {"path": "__proto__.polluted", "status": "miss", "expected": "set by a judge", "actual": 2},
            {"path": "__proto__.e", "status": "miss", "expected": "forged", "actual": 2},
            {"path": "constructor.prototype.polluted2", "status": "miss", "expected": "via constructor", "actual": 2},
            {"path": "a[0].__proto__.polluted3", "status": "miss", "expected": "via a list", "actual": 2},
            {"path": "items.prototype", "status": "miss", "expected": "prototype", "actual": 2},
            {"path": "kept", "status": "miss", "expected": "shown", "actual": 2},
        ]
    else:
        fields = [{"path": "other", "status": "miss", "actual": 1}]
    return {"score": 0, "details": {"fields": fields}}
'''


def test_html_viewer_cannot_be_steered_by_prototype_keys(tmp_path, browser):
    write(tmp_path, "judges.py", PROTO_JUDGE)
    suite = _suite(tmp_path, [{"id": "c1", "expected": 1, "output": 2}, {"id": "c2", "expected": 1, "output": 2}], (
        "name: e25\nevaluators: [{name: j, type: python, function: \"judges:judge\"}]\ncases: cases.jsonl\n"
    ))
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 1, done.stderr
    # Lines without `expected` (as older runs wrote them, or a file from elsewhere): the viewer then
    # rebuilds the expected side from the judge's field rows, the path a hostile key could steer.
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    (tmp_path / "old.jsonl").write_text("".join(json.dumps({k: v for k, v in line.items() if k != "expected"}) + "\n" for line in lines))
    assert run_cli("report", tmp_path / "old.jsonl", "--format", "html", "-o", tmp_path / "r.html").returncode == 1
    page, problems = _open(browser, tmp_path / "r.html")
    try:
        page.click("tr.case[data-index='0']")
        page.wait_for_selector("td.detail pre.expected")
        leaked = page.evaluate(
            "() => [({}).polluted, ({}).e, ({}).polluted2, [].polluted3, Object.getOwnPropertyNames(Object.prototype).length,"
            " Object.getOwnPropertyNames(Array.prototype).length]"
        )
        fresh = page.evaluate("() => [Object.getOwnPropertyNames(Object.prototype).length, Object.getOwnPropertyNames(Array.prototype).length]")
        assert leaked[:4] == [None, None, None, None]
        assert leaked[4:] == fresh
        detail = page.inner_text("td.detail")
        assert '"kept": "shown"' in page.inner_text("pre.expected")  # the ordinary field is rebuilt
        assert "__proto__.polluted" in detail and "constructor.prototype.polluted2" in detail  # and every row still listed
        page.click("tr.case[data-index='1']")  # a case whose only field has no expected value
        page.wait_for_selector("tr.detail-row >> nth=1")
        second = page.inner_text("tr.detail-row >> nth=1")
        assert "no expected values in this result" in second and "forged" not in second
        assert problems == []
    finally:
        page.close()


def test_bidirectional_overrides_are_escaped_on_the_html_report_and_the_viewer(tmp_path, browser):
    """G27 on the pages a person reads: the HTML report (its header, tables and comparisons, and the
    cases its script draws) and `agenteval view` show every bidirectional override, isolate and mark
    as `\\u202e`, so no value reorders what follows it; form values keep the data, so a filter on
    such a tag still finds its cases."""
    import re
    import subprocess
    import sys
    from urllib.parse import urlencode

    cases = [{"id": "case\u2067id", "output": "y\u202eright", "expected": "x", "tags": ["t\u202e1"]}, {"id": "other", "output": "x", "expected": "x"}]
    write(tmp_path, "cases.jsonl", "".join(json.dumps(case) + "\n" for case in cases))
    suite = write(tmp_path, "suite.yaml", (
        'name: "bidi\u202esuite"\ntargets:\n  "ok\u202eevil": {type: recorded}\n  plain: {type: recorded}\n'
        'evaluators: [{name: "eq\u200fname", type: equals}, {type: contains, reference: "x\u202d"}]\ncases: cases.jsonl\n'
    ))
    results = tmp_path / "results"
    done = run_cli("run", suite, "-o", results / "r.jsonl", "--html", tmp_path / "r.html")
    assert done.returncode == 1, done.stderr
    escapes = ["bidi\\u202esuite", "ok\\u202eevil", "eq\\u200fname", "case\\u2067id"]

    page, problems = _open(browser, tmp_path / "r.html")
    try:
        page.click("tr.case[data-index='0']")
        page.wait_for_selector("td.detail pre")
        shown = page.inner_text("body")
        options = page.eval_on_selector_all("option", "options => options.map(option => option.textContent)")
        assert not [char for char in BIDI_CHARS if char in shown + "".join(options)]
        assert all(text in shown for text in escapes) and "y\\u202eright" in shown, shown
        assert "t\\u202e1" in options and "ok\\u202eevil" in options, options
        assert problems == []
    finally:
        page.close()

    viewer = subprocess.Popen([sys.executable, "-m", "agenteval", "view", str(results), "--no-open"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", viewer.stdout.readline())
        assert found, viewer.stderr.read()
        tab = browser.new_page()
        try:
            tab.goto(f"{found.group(1)}/?token={found.group(2)}")
            tab.goto(f"{found.group(1)}/runs/r")
            tab.wait_for_selector("body[data-ready=true]")
            run_page = tab.inner_text("body")
            tag_values = tab.eval_on_selector_all("select[name=tag] option", "options => options.map(option => option.value)")
            tab.goto(f"{found.group(1)}/runs/r?{urlencode({'tag': tag_values[-1]})}")  # the filter the option sends
            tab.wait_for_selector("body[data-ready=true]")
            filtered = tab.eval_on_selector_all("tr.case-row", "rows => rows.map(row => row.dataset.case)")
            tab.click("a.case-link")
            tab.wait_for_selector("pre.candidate")
            case_page = tab.inner_text("body")
        finally:
            tab.close()
    finally:
        viewer.terminate()
        _, errors = viewer.communicate(timeout=10)
    for text in (run_page, case_page):
        assert not [char for char in BIDI_CHARS if char in text], text
    assert "bidi\\u202esuite" in run_page and "case\\u2067id" in run_page and "t\\u202e1" in run_page, run_page
    assert "y\\u202eright" in case_page and "ok\\u202eevil" in case_page and "eq\\u200fname" in case_page, case_page
    assert "t\u202e1" in tag_values and filtered == ["case\u2067id"], (tag_values, filtered)
    assert "Traceback" not in errors, errors


def test_html_report_rounds_scores_once_like_the_terminal(tmp_path, browser):
    """0.97949 reads 0.979 everywhere (the page once rounded to 4 places, then to 3: 0.980)."""
    scores = {"a": 0.97949, "b": 0.8125, "c": 0.0005}  # a half-way 0.8125 is 0.812, as Python prints it
    write(tmp_path, "judges.py", f"SCORES = {scores!r}\ndef judge(payload):\n    return {{'score': SCORES[payload['case_id']]}}\n")
    suite = _suite(tmp_path, [{"id": case_id, "expected": 1, "output": 1} for case_id in scores], (
        "name: f9\nevaluators: [{name: j, type: python, function: \"judges:judge\"}]\ncases: cases.jsonl\n"
    ))
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--html", tmp_path / "r.html", "--markdown", tmp_path / "r.md")
    assert done.returncode == 1, done.stderr
    assert "FAIL a (score 0.979)" in done.stdout and "FAIL b (score 0.812)" in done.stdout
    page, problems = _open(browser, tmp_path / "r.html")
    try:
        rows = page.eval_on_selector_all("#case-table tbody tr.case", "rows => rows.map(r => [r.cells[0].innerText, r.cells[2].innerText])")
        assert rows == [["a", "0.979"], ["b", "0.812"], ["c", "0.001"]]
        page.click("tr.case[data-index='0']")
        assert "0.979" in page.inner_text("div.evaluator h4") and "0.980" not in page.inner_text("td.detail")
        assert problems == []
    finally:
        page.close()


def test_html_report_holds_inputs_nested_past_what_orjson_writes(tmp_path):
    deep = json.loads("[" * 300 + "]" * 300)
    write(tmp_path, "cases.jsonl", json.dumps({"id": "deep", "input": deep, "expected": {"a": 1}, "output": {"a": 2}}) + "\n")
    suite = write(tmp_path, "s.yaml", "name: deep\nevaluators: [{type: field_accuracy, fields: [{path: a}]}]\ncases: cases.jsonl\n")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--html", tmp_path / "r.html")
    assert_no_traceback(done)
    assert done.returncode == 1, done.stderr
    again = run_cli("report", tmp_path / "r.jsonl", "--format", "html", "-o", tmp_path / "again.html")
    assert again.returncode == 1, again.stderr
    for page in (tmp_path / "r.html", tmp_path / "again.html"):
        text = page.read_text()
        assert "deep" in text and "</html>" in text


# G27: bidirectional overrides and other controls in labels are escaped in every report, as on the terminal

BIDI_CHARS = ["\u202e", "\u202d", "\u202a", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u061c"]


def test_bidirectional_overrides_in_labels_are_escaped_in_markdown_and_junit(tmp_path):
    """A right-to-left override in a target name, a case id, an evaluator name and a miss would
    reverse what follows it in a PR comment or a CI test view: every report shows it as `\\u202e`."""
    write(tmp_path, "cases.jsonl", json.dumps({"id": "case\u2067id", "output": "y", "expected": "x"}) + "\n")
    suite = write(tmp_path, "suite.yaml", (
        'name: "bidi\u202esuite"\ntargets:\n  "ok\u202eevil": {type: recorded}\n  plain: {type: recorded}\n'
        'evaluators: [{name: "eq\u200fname", type: equals}, {type: contains, reference: "x\u202d\\a"}]\ncases: cases.jsonl\n'
    ))
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--markdown", tmp_path / "m.md", "--junit", tmp_path / "j.xml")
    assert done.returncode == 1, done.stderr
    report = run_cli("report", tmp_path / "r.jsonl", "--format", "markdown")
    junit = run_cli("report", tmp_path / "r.jsonl", "--format", "junit")
    outputs = {"run": done.stdout + done.stderr, "markdown": (tmp_path / "m.md").read_text(), "junit": (tmp_path / "j.xml").read_text(),
               "report markdown": report.stdout, "report junit": junit.stdout}
    for name, text in outputs.items():
        assert not [char for char in BIDI_CHARS + ["\x07"] if char in text], name
    for name in ("markdown", "report markdown"):
        text = MarkdownIt("commonmark").enable("table").render(outputs[name])  # as a PR comment shows it
        assert "ok\\u202eevil" in text and "case\\u2067id" in text and "eq\\u200fname" in text and "bidi\\u202esuite" in text, text
    for name in ("junit", "report junit"):
        text = outputs[name]
        assert 'name="case\\u2067id [ok\\u202eevil]"' in text and "\\x07" in text and 'value="ok\\u202eevil"' in text, text
    assert_valid_junit(tmp_path / "j.xml")
    assert "ok\u202eevil" in (tmp_path / "r.jsonl").read_text(encoding="utf-8")  # the results keep the data as it was
