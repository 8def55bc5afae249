"""`agenteval view` on what a SQL store and the claim-level and trace readers produce: a run being
written into a SQLite store by a real `agenteval run` grows on the page without a reload, and a
case page shows each claim of a RAG judge with its verdict and evidence and an answer read from a
trace as its span tree (as the HTML report does). One headless Chromium for the module."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from browsers import ARGS as CHROMIUM_ARGS, chromium_or_skip
from conftest import EXAMPLES, read_jsonl, run_cli, write
from test_view import Server, Tab

pytest.importorskip("starlette")
TRACES = Path(__file__).parent / "fixtures" / "traces"
LIVE_CASES = 12
GATED_FROM = 3

SLOW_TARGET = f"""
import json, pathlib, sys, time
case = json.load(sys.stdin)
if case["n"] >= {GATED_FROM}:  # the first cases land, then the run waits for the test's go
    gate = pathlib.Path(__file__).with_name("go")
    for _ in range(1200):
        if gate.exists():
            break
        time.sleep(0.05)
time.sleep(0.25)  # each case is 0.25 s of work: the store commits it as it is saved
print(json.dumps(("answer" if case["n"] % 4 else "wrong") + " " + str(case["n"])))
"""


@pytest.fixture(scope="module")
def browser():
    chromium = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def _stored_cases(database: Path) -> int:
    if not database.exists():
        return 0
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        try:
            return conn.execute("SELECT count(*) FROM case_results").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


def test_a_run_being_written_into_a_sqlite_store_grows_on_the_page_without_a_reload(browser, tmp_path):
    pytest.importorskip("sqlalchemy")
    write(tmp_path, "slow.py", SLOW_TARGET)
    cases = "".join(f"  - {{id: c{i:02d}, input: {{n: {i}}}}}\n" for i in range(LIVE_CASES))
    write(tmp_path, "suite.yaml", "name: live-store\ntarget: {type: command, command: [python, slow.py], timeout: 90}\n"
          "evaluators:\n  - {name: says, type: contains, reference: answer}\ncases:\n" + cases)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    writer = subprocess.Popen([sys.executable, "-m", "agenteval", "run", "suite.yaml", "--store", url, "--workers", "1", "-q"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    server = None
    try:
        deadline = time.monotonic() + 60
        while _stored_cases(tmp_path / "runs.db") < GATED_FROM and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _stored_cases(tmp_path / "runs.db") == GATED_FROM
        server = Server("--store", url, cwd=tmp_path)
        tab = Tab(browser, server)
        tab.open()
        row = tab.page.query_selector("#runs-table tbody tr.run")
        page = tab.open(f"/runs/{row.get_attribute('data-key')}")
        assert page.inner_text("#count-total") == str(GATED_FROM)
        assert page.inner_text("#writing") == "still being written"
        page.evaluate("window.sameDocument = true")
        (tmp_path / "go").write_text("")
        expect(page.locator("#count-total")).to_have_text(str(LIVE_CASES), timeout=60_000)
        expect(page.locator("#case-count")).to_have_text(re.compile(rf"^{LIVE_CASES} cases"), timeout=15_000)
        expect(page.locator("#writing")).to_have_text(re.compile("^finished"), timeout=15_000)
        assert page.evaluate("window.sameDocument") is True  # no reload
        assert writer.wait(timeout=60) == 1  # every fourth answer is wrong
        page = tab.open(page.url.removeprefix(server.base))  # reloaded: the summary the run wrote into the store
        assert page.inner_text("#count-failed") == str(LIVE_CASES // 4) and page.query_selector("#writing") is None
        assert tab.problems == []
        tab.close()
    finally:
        (tmp_path / "go").write_text("")
        if writer.poll() is None:
            writer.kill()
        writer.communicate()
        if server is not None:
            assert "Traceback" not in server.stop()


@pytest.fixture(scope="module")
def rag_and_traces(tmp_path_factory):
    """A run of examples/rag (claim-level judges, from its committed cache) and a run of a traces
    target over the OpenInference fixture, both through the command line."""
    folder = tmp_path_factory.mktemp("claims")
    rag = folder / "rag"
    shutil.copytree(EXAMPLES / "rag", rag, ignore=shutil.ignore_patterns("agenteval-results", "__pycache__"))
    results = folder / "agenteval-results"
    results.mkdir()
    done = run_cli("run", rag / "suite.yaml", "-o", results / "rag.jsonl", "-q", cwd=folder)
    assert done.returncode == 1, done.stderr
    shutil.copy(TRACES / "openinference.jsonl", folder / "spans.jsonl")
    write(folder, "traced.yaml", "name: traced\ntarget: {type: traces, file: spans.jsonl, match: session_id}\n"
          "evaluators:\n  - {type: contains, path: content, reference: delivered}\n"
          "cases:\n  - {id: refund, metadata: {session_id: session-refund-7}}\n")
    done = run_cli("run", folder / "traced.yaml", "-o", results / "traced.jsonl", "-q", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def test_a_case_shows_each_claim_with_its_verdict_and_evidence_and_a_traced_answer_as_spans(browser, rag_and_traces):
    lines = {line["case_id"]: line for line in read_jsonl(rag_and_traces / "agenteval-results" / "rag.jsonl")}
    faithful = next(e for e in lines["luggage"]["evaluator_results"] if e["name"] == "faithful")
    claims = faithful["details"]["claims"]
    assert {claim["verdict"] for claim in claims} >= {"supported"} and faithful["verdict"] == "fail"
    traced = read_jsonl(rag_and_traces / "agenteval-results" / "traced.jsonl")[0]["output"]
    server = Server(rag_and_traces / "agenteval-results", cwd=rag_and_traces)
    tab = Tab(browser, server)
    try:
        tab.open()
        page = tab.open("/runs/rag/cases/luggage")
        table = page.locator(".evaluator", has=page.locator("h4", has_text="faithful")).locator("table.claims tbody tr")
        shown = [[cell.inner_text() for cell in row.query_selector_all("td")] for row in table.element_handles()]
        assert shown == [[claim["claim"], claim["verdict"], f"“{claim['evidence']}”" if claim["evidence"] else ""] for claim in claims]
        unsupported = [row for row in table.element_handles() if row.query_selector(".v").inner_text() != "supported"]
        assert unsupported and all("pass" not in row.query_selector(".v").get_attribute("class") for row in unsupported)
        page = tab.open("/runs/traced/cases/refund")
        assert page.inner_text("h4:has-text('spans') .note") == f"trace {traced['trace_id']}"
        rows = [[cell.inner_text() for cell in row.query_selector_all("td")] for row in page.query_selector_all("table.spans tbody tr")]
        by_id = {span["span_id"]: span for span in traced["spans"]}

        def depth(span):
            return 0 if span["parent_id"] not in by_id else 1 + depth(by_id[span["parent_id"]])

        assert [(row[0].strip("\u00a0└ "), row[1]) for row in rows] == [(span["name"], span["kind"]) for span in traced["spans"]]
        assert [len(row[0]) - len(row[0].lstrip("\u00a0")) for row in rows] == [2 * depth(span) for span in traced["spans"]]
        assert rows[0][3] == f"{traced['spans'][0]['duration_ms']:.1f} ms" or rows[0][3] == f"{traced['spans'][0]['duration_ms']:.0f} ms"
        chat = page.inner_text(".chat")  # the trace's conversation, its tool call and result inline, per-step figures
        assert [chat.index(text) for text in ("Where is order 7?", "get_order", "delivered", "Order 7 is delivered.")] == sorted(
            chat.index(text) for text in ("Where is order 7?", "get_order", "delivered", "Order 7 is delivered."))
        figures = [item.inner_text() for item in page.query_selector_all(".chat .msg .figures")]
        assert [re.sub(r"[\d.]+ ms", "N ms", text) for text in figures] == ["N ms · 9 tokens (9 in, 0 out)", "N ms", "N ms · 17 tokens (13 in, 4 out)"]
        assert tab.problems == []
        tab.close()
    finally:
        assert "Traceback" not in server.stop()
    report = rag_and_traces / "traced.html"
    assert run_cli("report", rag_and_traces / "agenteval-results" / "traced.jsonl", "--format", "html", "-o", report).returncode == 0
    context = browser.new_context()
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: message.type in ("error", "warning") and problems.append(message.text))
    page.goto(report.as_uri())
    page.click("#cases tbody tr >> nth=0")
    page.wait_for_selector("table.spans")
    names = [row.query_selector("td").inner_text().strip("\u00a0└ ") for row in page.query_selector_all("table.spans tbody tr")]
    assert names == [span["name"] for span in traced["spans"]] and problems == []
    context.close()


def test_a_span_tree_nests_children_in_start_order_and_survives_loops_and_strangers():
    from agenteval.reports.spans import span_tree

    spans = [
        {"name": "agent", "kind": "agent", "span_id": "a", "parent_id": None, "start_ms": 0, "duration_ms": 90.5, "error": False},
        {"name": "search", "kind": "tool", "span_id": "c", "parent_id": "a", "start_ms": 40, "duration_ms": 10, "error": True},
        {"name": "chat", "kind": "model", "span_id": "b", "parent_id": "a", "start_ms": 1, "duration_ms": float("nan"), "error": False},
        {"name": "orphan", "kind": "other", "span_id": "d", "parent_id": "gone", "start_ms": 95, "duration_ms": 1e300},
        {"name": "loop-1", "span_id": "x", "parent_id": "y", "start_ms": 99}, {"name": "loop-2", "span_id": "y", "parent_id": "x", "start_ms": 98},
        "not a span",
    ]
    trace_id, rows = span_tree({"trace_id": "t1", "spans": spans})
    assert trace_id == "t1"
    assert rows == [
        [0, "agent", "agent", 0.0, 90.5, False], [1, "chat", "model", 1.0, None, False], [1, "search", "tool", 40.0, 10.0, True],
        [0, "orphan", "other", 95.0, None, False], [0, "loop-2", "", 98.0, None, False], [1, "loop-1", "", 99.0, None, False],
    ]
    assert span_tree({"content": "hi"}) is None and span_tree("text") is None and span_tree({"spans": []}) is None


MONITORED_APP = """
import sys

import agenteval


def positive_total(ctx):
    return ctx.output["total"] > 0


def total(document: str) -> dict:
    return {"total": float(document)}


if __name__ == "__main__":
    monitored = agenteval.monitor([positive_total], sample=1.0, store=sys.argv[1], name="extractor")(total)
    for text in ["1.5", "-2", "3", "4"]:
        monitored(text)
    assert monitored.monitor.flush(10) and monitored.monitor.close()
"""


def test_sampled_production_calls_in_a_store_are_reviewed_and_become_cases_that_run(browser, tmp_path):
    pytest.importorskip("sqlalchemy")
    write(tmp_path, "prod.py", MONITORED_APP)
    url = f"sqlite:///{tmp_path / 'monitoring.db'}"
    done = subprocess.run([sys.executable, "prod.py", url], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    other = write(tmp_path, "cases.yaml", "- {id: kept, input: '7'}\n")  # a cases file the user did not name
    server = Server("--store", url, "--cases", tmp_path / "regressions.yaml", cwd=tmp_path)
    tab = Tab(browser, server)
    try:
        tab.open()
        row = tab.page.query_selector("#runs-table tbody tr.run")
        assert "extractor" in row.inner_text()
        key = row.get_attribute("data-key")
        page = tab.open(f"/runs/{key}/queue?kind=failures")
        assert page.inner_text("#case-id") == "call-2"  # the one failing call
        assert page.inner_text("#input") == "-2"
        page.fill("#reviewer", "ops")
        page.check("input[name='verdict:positive_total'][value=right]")
        page.check("#expected-wrong")
        page.fill("textarea[name=corrected_expected]", '{"total": -2.0}')
        page.click("#save-review")
        page.wait_for_selector("#saved")
        page.click("#add-case")
        page.wait_for_selector("#saved")
        assert page.inner_text("#saved") == "added to regressions.yaml"
        page = tab.open(f"/runs/{key}/queue?kind=sample")
        assert page.inner_text("#case-id") in {"call-1", "call-3", "call-4"}  # the reviewed call is not asked again
        assert tab.problems == []
        tab.close()
    finally:
        assert "Traceback" not in server.stop()
    assert other.read_text() == "- {id: kept, input: '7'}\n"
    exported = [json.loads(line) for line in run_cli("feedback", "export", "latest", "--store", url).stdout.splitlines()]
    assert [(r["case_id"], r["reviewer"], r["verdicts"], r["corrected_expected"]) for r in exported] == [
        ("call-2", "ops", {"positive_total": "right"}, {"total": -2.0})]
    write(tmp_path, "regressions-suite.yaml", "name: regressions\ntarget: {type: python, function: 'prod:total'}\n"
          "evaluators: [{type: field_accuracy, fields: [{path: total, match: numeric_tolerance}]}]\ncases: regressions.yaml\n")
    assert run_cli("validate", tmp_path / "regressions-suite.yaml").returncode == 0
    ran = run_cli("run", tmp_path / "regressions-suite.yaml", "-o", tmp_path / "regressions.jsonl")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert [(line["case_id"], line["input"], line["output"]) for line in read_jsonl(tmp_path / "regressions.jsonl")] == [
        ("call-2", "-2", {"total": -2.0})]


def test_a_criterion_scored_by_clicking_on_its_own_scale_lands_beside_the_committed_reviews(browser, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(EXAMPLES / "review" / "run", run)
    before = (run / "run.reviews.jsonl").read_text()
    server = Server(run, cwd=tmp_path)
    tab = Tab(browser, server)
    try:
        tab.open()
        page = tab.open("/runs/run/cases/ticket-00")
        assert [r.inner_text() for r in page.query_selector_all("#reviews .review b")] == ["ana", "bo"]  # the committed reviews
        criteria = {row.query_selector("td").inner_text().split(" ")[0]: row for row in page.query_selector_all("table.criterion-scores tbody tr")}
        assert sorted(criteria) == ["empathy", "resolution"]
        assert criteria["empathy"].query_selector("td:nth-child(2)").inner_text() == "5"  # what the judge said, on its 1-5 scale
        field = criteria["empathy"].query_selector("input")
        assert (field.get_attribute("min"), field.get_attribute("max"), field.get_attribute("step")) == ("1", "5", "1")
        page.fill("#reviewer", "cy")
        page.fill("input[name='score:empathy']", "2")
        page.fill("#note", "no next step offered")
        page.click("#save-review")
        page.wait_for_selector("#saved")
        assert [r.inner_text() for r in page.query_selector_all("#reviews .review b")] == ["ana", "bo", "cy"]
        assert tab.problems == []
        tab.close()
    finally:
        assert "Traceback" not in server.stop()
    added = (run / "run.reviews.jsonl").read_text()
    assert added.startswith(before)
    review = json.loads(added[len(before):])
    assert (review["case_id"], review["reviewer"], review["scores"], review["note"]) == ("ticket-00", "cy", {"empathy": 2}, "no next step offered")
    agreement = json.loads(run_cli("report", run / "run.jsonl", "--agreement", "--json").stdout)
    assert agreement["reviews"] == len(before.splitlines()) + 1
