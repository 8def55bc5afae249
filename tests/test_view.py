"""`agenteval view` as a person uses it: the real command in a child process, a real headless
Chromium driven by Playwright, real files.

Every request the browser makes is recorded: only the viewer's own address is ever asked. Pages
load without console errors and show the run's counts; a review made by clicking lands in the
reviews file and in `report --agreement`; an answer holding `<script>` stays text; without the
token every request is refused; a run still being written grows on the page; a 100,000-case run
pages. With AGENTEVAL_SCREENSHOTS=1 the screenshots are also written into docs/ for docs/viewer.md.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest
from playwright.sync_api import expect, sync_playwright

from browsers import ARGS as CHROMIUM_ARGS, chromium_or_skip
from conftest import read_jsonl, run_cli, write

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

DOCS = Path(__file__).resolve().parent.parent / "docs"
CASES = 24
HOSTILE = "<script>window.hostile = 1; alert(1)</script><img src=x onerror=\"window.hostile=2\">"


def _suite(folder: Path, name: str, wrong_every: int) -> Path:
    lines = []
    for i in range(CASES):
        answer = HOSTILE if i == 5 else ("answer" if i % wrong_every else "wrong") + f" {i}"
        lines.append({"id": f"c{i:02d}", "input": {"question": f"question {i}"}, "expected": f"answer {i}", "output": answer, "tags": [f"t{i % 2}"]})
    write(folder, f"{name}.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    return write(folder, f"{name}.yaml", f"name: viewed\nevaluators:\n  - {{name: same, type: equals}}\n  - {{name: says, type: contains, reference: answer}}\ncases: {name}.jsonl\n")


class Server:
    """`agenteval view` in a child process; its URL read from what it prints."""

    def __init__(self, *args: str | Path, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agenteval", "view", *map(str, args), "--no-open"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
        )
        line = self.process.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
        assert found, line + self.process.stderr.read()
        self.base, self.token = found.group(1), found.group(2)
        self.url = f"{self.base}/?token={self.token}"

    def stop(self) -> str:
        self.process.terminate()
        try:
            _, errors = self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, errors = self.process.communicate()
        return errors


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("view")
    results = folder / "agenteval-results"
    results.mkdir()
    for name, wrong_every, out in (("old", 6, "a-old.jsonl"), ("new", 3, "b-new.jsonl")):
        suite = _suite(folder, name, wrong_every)
        done = run_cli("run", suite, "-o", results / out)
        assert done.returncode == 1, done.stderr
    return folder


@pytest.fixture(scope="module")
def server(runs):
    started = Server(runs / "agenteval-results", "--cases", runs / "from-reviews.jsonl", cwd=runs)
    yield started
    errors = started.stop()
    assert "Traceback" not in errors, errors


@pytest.fixture(scope="module")
def browser():
    chromium = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Tab:
    """A browser tab with its console problems, dialogs and every URL it requested."""

    def __init__(self, browser, server: Server) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.server = server
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.context.on("request", lambda request: self.requests.append(request.url))
        self.page = self.context.new_page()
        self.page.on("console", lambda message: message.type in ("error", "warning") and self.problems.append(message.text))
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))

    def open(self, path: str = ""):
        self.page.goto(self.server.url if not path else self.server.base + path)
        self.page.wait_for_selector("body[data-ready=true]", timeout=30_000)
        return self.page

    def close(self) -> None:
        assert all(url.startswith(self.server.base) for url in self.requests), self.requests
        self.context.close()


@pytest.fixture
def tab(browser, server):
    opened = Tab(browser, server)
    opened.open()
    yield opened
    opened.close()


def _shot(page, name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 10_000
    if os.environ.get("AGENTEVAL_SCREENSHOTS"):
        shutil.copy(path, DOCS / name)


def test_without_the_token_every_request_is_refused(server, browser):
    for path in ("/", "/runs/a-old", "/runs/a-old/cases/c01", "/assets/view.js", "/runs/a-old/count.json"):
        assert httpx.get(server.base + path).status_code == 403
        assert httpx.get(server.base + path, params={"token": "not-the-token"}).status_code == 403
    assert httpx.get(server.base + "/", headers={"Host": "evil.example"}, params={"token": server.token}).status_code == 403
    context = browser.new_context()
    reply = context.new_page().goto(server.base + "/runs/a-old")
    assert reply.status == 403
    context.close()


def test_the_runs_list_shows_each_run_with_its_counts_and_the_trend(tab, tmp_path):
    page = tab.page
    rows = page.query_selector_all("#runs-table tbody tr.run")
    assert sorted(row.get_attribute("data-key") for row in rows) == ["a-old", "b-new"]
    assert [cell.inner_text() for cell in page.query_selector_all("#runs-table td.count")] == [str(CASES), str(CASES)]
    assert "viewed" in page.inner_text("#trends")
    assert tab.problems == []
    _shot(page, "viewer-runs.png", tmp_path)


def test_a_run_shows_its_summary_and_pages_its_cases(tab, runs, tmp_path):
    summary = json.loads((runs / "agenteval-results" / "b-new.summary.json").read_text())
    page = tab.open("/runs/b-new")
    counts = {key: page.inner_text(f"#count-{key}") for key in ("total", "passed", "failed", "errored")}
    assert counts == {key: str(summary["counts"][key]) for key in ("total", "passed", "failed", "errored")}
    assert page.inner_text("#case-count").startswith(f"{CASES} cases")
    page.select_option("select[name=verdict]", "fail")
    page.click("#filters button[type=submit]")
    page.wait_for_selector("body[data-ready=true]")
    failed = summary["counts"]["failed"]
    assert page.inner_text("#case-count").startswith(f"{failed} case")
    assert len(page.query_selector_all("#matrix tbody tr")) == failed
    page.fill("input[name=q]", "question 7")
    page.click("#filters button[type=submit]")
    page.wait_for_selector("body[data-ready=true]")
    assert page.inner_text("#case-count").startswith("0 cases")  # case 7 passed: not in the failures
    assert tab.problems == []
    _shot(tab.open("/runs/b-new"), "viewer-run.png", tmp_path)


def test_an_answer_holding_script_is_shown_as_text(tab):
    page = tab.open("/runs/b-new/cases/c05")
    assert HOSTILE in page.inner_text(".cell-answer pre.candidate")
    page.wait_for_timeout(300)
    assert page.evaluate("window.hostile") is None
    assert tab.dialogs == [] and tab.problems == []


def test_a_review_made_by_clicking_lands_in_the_store_and_in_the_agreement(tab, runs, tmp_path):
    page = tab.open("/runs/b-new/cases/c03")
    assert page.inner_text("#case-id") == "c03"
    page.fill("#reviewer", "ana")
    page.check("input[name='verdict:same'][value=wrong]")
    page.check("input[name='verdict:says'][value=right]")
    page.fill("#note", "the answer is fine <b>really</b>")
    page.click("#save-review")
    page.wait_for_selector("#saved")
    assert "review saved" in page.inner_text("#saved")
    assert "the answer is fine <b>really</b>" in page.inner_text("#reviews")
    results = runs / "agenteval-results" / "b-new.jsonl"
    stored = read_jsonl(runs / "agenteval-results" / "b-new.reviews.jsonl")
    assert [(r["case_id"], r["reviewer"], r["verdicts"], r["judged"]) for r in stored] == [
        ("c03", "ana", {"same": "wrong", "says": "right"}, {"same": "fail", "says": "fail"})]
    done = run_cli("report", results, "--agreement", "--json")
    found = {entry["name"]: entry for entry in json.loads(done.stdout)["agreement"]}
    assert found["same"]["cases"] == 1 and found["same"]["confusion"] == [[0, 1], [0, 0]]  # judge fail, people pass
    assert found["says"]["confusion"] == [[1, 0], [0, 0]]
    panel = tab.open("/runs/b-new/agreement")
    assert panel.inner_text("#review-count") == "1"
    assert "same: agrees on 0% of 1 reviewed case" in panel.inner_text(".agreement[data-name=same] .sentence")
    assert "too few for a kappa" in panel.inner_text(".agreement[data-name=same] .sentence")
    assert tab.problems == []
    _shot(panel, "viewer-agreement.png", tmp_path)


def test_the_keyboard_queue_reviews_failures_one_after_another(tab, runs):
    page = tab.open("/runs/a-old/queue?kind=failures")
    page.wait_for_selector("#review-form")
    first = page.inner_text("#case-id")
    page.fill("#reviewer", "bo")
    page.click("h1")  # keys act outside the text fields
    page.keyboard.press("a")
    page.keyboard.press("Shift+Digit1")
    page.keyboard.press("s")
    page.wait_for_url(re.compile(r"/runs/a-old/cases/(?!" + first + r")"))
    page.wait_for_selector("body[data-ready=true]")
    second = page.inner_text("#case-id")
    assert second != first
    stored = read_jsonl(runs / "agenteval-results" / "a-old.reviews.jsonl")
    assert [(r["case_id"], r["reviewer"], r["verdicts"]) for r in stored] == [(first, "bo", {"same": "wrong", "says": "right"})]
    assert page.input_value("#reviewer") == "bo"  # remembered for the next case
    assert tab.problems == []


def test_a_write_without_the_csrf_token_or_from_another_site_is_refused(server, runs):
    with httpx.Client(base_url=server.base) as client:
        client.get("/", params={"token": server.token})
        assert [(cookie.name.startswith("agenteval_view_"), cookie.value) for cookie in client.cookies.jar] == [(True, server.token)]
        page = client.get("/runs/b-new/cases/c01").text
        csrf = re.search(r'data-csrf="([^"]+)"', page).group(1)
        form = {"reviewer": "eve", "cell": "", "rep": "0", "note": "forged"}
        assert client.post("/runs/b-new/cases/c01/review", data=form).status_code == 403
        assert client.post("/runs/b-new/cases/c01/review", data={**form, "csrf": "wrong"}).status_code == 403
        assert client.post("/runs/b-new/cases/c01/review", data={**form, "csrf": csrf}, headers={"Origin": "http://evil.example"}).status_code == 403
        assert client.post("/runs/b-new/cases/c01/review", data={**form, "csrf": csrf, "note": "x" * 300_000}).status_code == 413
    reviews = runs / "agenteval-results" / "b-new.reviews.jsonl"
    assert "eve" not in (reviews.read_text() if reviews.exists() else "")


def test_a_case_added_from_the_case_page_validates_and_runs(tab, runs):
    page = tab.open("/runs/b-new/cases/c06")
    page.fill("#reviewer", "ana")
    page.check("#expected-wrong")
    page.fill("textarea[name=corrected_expected]", '"wrong 6"')
    page.click("#save-review")
    page.wait_for_selector("#saved")
    page.click("#add-case")
    page.wait_for_selector("#saved")
    assert "added to from-reviews.jsonl" in page.inner_text("#saved")
    cases = read_jsonl(runs / "from-reviews.jsonl")
    assert cases == [{"id": "c06", "input": {"question": "question 6"}, "expected": "wrong 6", "tags": ["t0"]}]
    cases[0]["output"] = "wrong 6"
    (runs / "from-reviews.jsonl").write_text(json.dumps(cases[0]) + "\n")
    write(runs, "again.yaml", "name: again\nevaluators:\n  - {name: same, type: equals}\ncases: from-reviews.jsonl\n")
    assert run_cli("validate", runs / "again.yaml").returncode == 0
    ran = run_cli("run", runs / "again.yaml", "-o", runs / "again.jsonl")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert tab.problems == []


def test_two_runs_side_by_side_list_regressions_first(tab):
    page = tab.open("/compare?base=a-old&new=b-new")
    counts = page.inner_text("#compare-counts")
    # old fails every 6th case, new every 3rd: cases 3, 9, 15, 21 regressed; case 5 holds the script answer in both
    assert counts.startswith("4 regressions, 0 improvements")
    kinds = [row.get_attribute("class") for row in page.query_selector_all("#compare-table tbody tr")]
    assert kinds[:4] == ["regression"] * 4 and "regression" not in kinds[4:]
    assert page.inner_text("#paired-line") == (  # 4 discordant cases: McNemar p = 0.125; the line says the figures too
        f"b-new vs a-old: no detectable difference (n = {CASES}): pass rate -16.7 points (95% CI -33.3 to -4.2), McNemar p = 0.125, not significant")
    assert tab.problems == []


def test_a_run_being_written_grows_on_the_page_without_a_reload(browser, tmp_path):
    folder = tmp_path / "live"
    folder.mkdir()
    results = folder / "live.jsonl"
    line = {"run_id": "live", "suite": "live", "score": 1.0, "verdict": "pass", "output": "a", "evaluator_results": []}
    results.write_bytes(b"".join(orjson.dumps({**line, "case_id": f"c{i}"}) + b"\n" for i in range(3)) + b'{"run_id": "live", "suite": "live", "case_id": "torn')
    server = Server(results, cwd=folder)
    tab = Tab(browser, server)
    try:
        tab.open()
        page = tab.open("/runs/live")
        assert page.inner_text("#count-total") == "3"
        page.evaluate("window.sameDocument = true")
        with results.open("ab") as handle:
            handle.write(b'", "score": 1.0, "verdict": "pass", "evaluator_results": []}\n')
            handle.write(b"".join(orjson.dumps({**line, "case_id": f"d{i}", **({"verdict": "fail", "score": 0.0} if i < 2 else {})}) + b"\n"
                                  for i in range(4)))
        expect(page.locator("#count-total")).to_have_text("8", timeout=15_000)
        expect(page.locator("#case-count")).to_have_text(re.compile(r"^8 cases"), timeout=15_000)
        for card, text in (("passed", "6"), ("failed", "2"), ("errored", "0"), ("pass-rate", "75.0%"), ("mean-score", "0.750")):
            expect(page.locator(f"#count-{card}")).to_have_text(text, timeout=15_000)  # every card follows, not only the total
        assert page.evaluate("window.sameDocument") is True  # no reload
        assert tab.problems == []
        with results.open("ab") as handle:  # the file changes shape: an error on the page, the server goes on
            handle.write(b'{"case_id": "odd", "verdict": "pass", "score": "high"}\n[1, 2]\n')
        page = tab.open("/runs/live")
        assert "the line at byte" in page.inner_text(".problem") and "[1, 2]" not in page.inner_text("#matrix")
        assert "odd" in page.inner_text("#matrix")
        reply = page.goto(server.base + "/runs/live/cases/odd")
        assert reply.status == 422 and "is not a result" in page.inner_text("#missing")
        page = tab.open("/runs/live")
        assert page.inner_text("#count-total") == "9" and page.inner_text("#writing") == "still being written"
        (folder / "live.summary.json").write_text(json.dumps({"counts": {"total": 9, "passed": 9, "failed": 0, "errored": 0}}))
        expect(page.locator("#writing")).to_have_text("finished (reload for its summary)", timeout=15_000)
        tab.problems.clear()
        tab.close()
    finally:
        server.stop()


def _big_run(path: Path, cases: int) -> None:
    with path.open("wb") as handle:
        for i in range(cases):
            verdict = "pass" if i % 4 else "fail"
            handle.write(orjson.dumps({
                "run_id": "big", "suite": "big", "case_id": f"case-{i:06d}", "score": 1.0 if verdict == "pass" else 0.0,
                "verdict": verdict, "output": f"answer {i}", "expected": f"answer {i}", "input": {"q": f"question {i}"},
                "evaluator_results": [{"name": "same", "type": "equals", "score": 1.0 if verdict == "pass" else 0.0, "verdict": verdict,
                                       "misses": [] if verdict == "pass" else ["answer"]}],
                "tags": [f"t{i % 3}"], "duration_ms": float(i % 100),
            }) + b"\n")


def test_a_100000_case_run_pages_on_the_server(browser, tmp_path):
    folder = tmp_path / "big"
    folder.mkdir()
    _big_run(folder / "big.jsonl", 100_000)
    server = Server(folder / "big.jsonl", cwd=folder)
    tab = Tab(browser, server)
    try:
        tab.open()
        page = tab.open("/runs/big")
        expect(page.locator("#case-count")).to_have_text(re.compile(r"^100000 cases"), timeout=60_000)
        page = tab.open("/runs/big?page=2")
        assert page.inner_text("#case-count") == "100000 cases · page 2 of 2000"
        assert page.query_selector_all("a.case-link")[0].inner_text() == "case-000050"
        page = tab.open("/runs/big?verdict=fail&sort=-latency")
        assert page.inner_text("#case-count") == "25000 cases · page 1 of 500"
        assert page.query_selector_all("a.case-link")[0].inner_text() == "case-000096"  # fails are multiples of 4; 96 ms is the slowest
        page.click("#next")
        page.wait_for_selector("body[data-ready=true]")
        assert page.inner_text("#page") == "2 / 500"
        assert len(page.content()) < 400_000  # one page of rows, not the run
        assert tab.problems == []
        tab.close()
    finally:
        server.stop()


def test_a_finished_run_opened_while_it_is_still_read_fills_its_table(browser, tmp_path):
    # The page comes after 0.3 s with the cases read so far, while its cards count from the summary:
    # the table must still grow to the whole run, against what it was cut from, not the cards.
    folder = tmp_path / "big"
    folder.mkdir()
    _big_run(folder / "big.jsonl", 150_000)
    (folder / "big.summary.json").write_text(json.dumps({"run_id": "big", "suite": "big",
                                                          "counts": {"total": 150000, "passed": 112500, "failed": 37500, "errored": 0}}))
    server = Server(folder / "big.jsonl", cwd=folder)
    tab = Tab(browser, server)
    try:
        tab.open()  # the runs (a finished run's count is its summary's: nothing read yet)
        page = tab.open("/runs/big")
        page.evaluate("window.sameDocument = true")
        expect(page.locator("#case-count")).to_have_text(re.compile(r"^150000 cases · page 1 of 3000"), timeout=60_000)
        expect(page.locator("#writing")).to_have_text("finished (reload for its summary)", timeout=15_000)
        assert page.inner_text("#count-total") == "150000" and page.evaluate("window.sameDocument") is True
        assert tab.problems == []
        tab.close()
    finally:
        server.stop()


def test_export_writes_static_pages_that_open_offline(browser, runs, tmp_path):
    out = tmp_path / "export"
    done = run_cli("view", runs / "agenteval-results", "--export", out)
    assert done.returncode == 0, done.stderr
    assert (out / "index.html").exists() and (out / "runs~b-new.html").exists() and (out / "runs~b-new~cases~c03.html").exists()
    context = browser.new_context()
    requests: list[str] = []
    context.on("request", lambda request: requests.append(request.url))
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: message.type in ("error", "warning") and problems.append(message.text))
    page.goto((out / "index.html").as_uri())
    page.click("#runs-table a >> nth=0")
    page.wait_for_selector("#matrix")
    page.click("a.case-link >> nth=0")
    page.wait_for_selector("#case-id")
    assert problems == []
    assert all(url.startswith("file://") for url in requests), requests
    context.close()


def test_a_host_other_than_loopback_needs_allow_remote(tmp_path):
    done = run_cli("view", tmp_path, "--host", "0.0.0.0", "--no-open")
    assert done.returncode == 2 and "--allow-remote" in done.stderr
    done = run_cli("view", tmp_path, "--host", "0.0.0.0", "--allow-remote", "--port", "70000", "--no-open")  # warned, then refused before listening
    assert done.returncode == 2 and done.stderr.splitlines()[0] == (
        "warning: listening on 0.0.0.0: other machines can reach the viewer (the token in the URL still guards it)")


def test_a_missing_source_is_a_clear_error(tmp_path):
    done = run_cli("view", tmp_path / "nowhere.jsonl", "--no-open")
    assert done.returncode == 2 and "nowhere.jsonl: no such file or folder" in done.stderr


def test_runs_of_a_sql_store_are_viewed_and_their_reviews_kept_in_the_store(browser, tmp_path):
    pytest.importorskip("sqlalchemy")
    suite = _suite(tmp_path, "stored", 3)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    done = run_cli("run", suite, "--store", url)
    assert done.returncode == 1, done.stderr
    server = Server("--store", url, cwd=tmp_path)
    tab = Tab(browser, server)
    try:
        tab.open()
        key = tab.page.query_selector("#runs-table tbody tr.run").get_attribute("data-key")
        page = tab.open(f"/runs/{key}")
        assert page.inner_text("#count-total") == str(CASES)
        page = tab.open(f"/runs/{key}/cases/c03")
        page.fill("#reviewer", "ana")
        page.check("input[name='verdict:same'][value=wrong]")
        page.click("#save-review")
        page.wait_for_selector("#saved")
        assert tab.problems == []
        tab.close()
    finally:
        server.stop()
    found = json.loads(run_cli("report", "latest", "--store", url, "--agreement", "--json").stdout)
    same = {entry["name"]: entry for entry in found["agreement"]}["same"]
    assert found["reviews"] == 1 and same["confusion"] == [[0, 1], [0, 0]]
    table = run_cli("report", "latest", "--store", url)
    assert "human:review" in table.stdout
    exported = run_cli("feedback", "export", "latest", "--store", url)
    assert [(r["case_id"], r["reviewer"], r["verdicts"]) for r in map(json.loads, exported.stdout.splitlines())] == [("c03", "ana", {"same": "wrong"})]
    written = run_cli("feedback", "cases", "latest", "--store", url, "-o", tmp_path / "more.yaml", "--case", "c03")
    assert written.returncode == 0 and "1 case added" in written.stdout, written.stderr
    assert "id: c03" in (tmp_path / "more.yaml").read_text()


def test_a_matrix_run_shows_cases_by_cells_with_disagreements_first(browser, tmp_path):
    from conftest import EXAMPLES

    results = tmp_path / "matrix.jsonl"
    done = run_cli("run", EXAMPLES / "compare-models" / "suite.yaml", "-o", results)
    assert done.returncode == 1, done.stderr
    printed = done.stdout.split("Comparisons\n", 1)[1].split("\ncell ", 1)[0].splitlines()
    lines = read_jsonl(results)
    verdicts: dict[str, set[str]] = {}
    for line in lines:
        verdicts.setdefault(line["case_id"], set()).add(line["verdict"])
    disagreeing = sum(len(found) > 1 for found in verdicts.values())
    server = Server(results, cwd=tmp_path)
    tab = Tab(browser, server)
    try:
        tab.open()
        page = tab.open("/runs/matrix")
        headers = [cell.inner_text() for cell in page.query_selector_all("#matrix thead th")]
        assert headers == ["case", "small/terse", "small/careful", "large/terse", "large/careful"]
        rows = page.query_selector_all("#matrix tbody tr")
        flags = ["disagree" in (row.get_attribute("class") or "") for row in rows]
        assert 0 < disagreeing < len(verdicts) and flags == [True] * disagreeing + [False] * (len(verdicts) - disagreeing)
        assert len(rows[0].query_selector_all(".answer-cell")) == 4
        items = page.query_selector_all("#comparisons li")
        assert [item.inner_text() for item in items] == [line.strip() for line in printed]  # as `agenteval run` printed them
        assert ["metric" in item.get_attribute("class") for item in items] == [line.startswith("  ") for line in printed]
        assert len([line for line in printed if not line.startswith("  ")]) == 4
        assert printed[0].startswith("large/terse vs small/terse: pass rate +30.0 points")
        assert tab.problems == []
        tab.close()
    finally:
        server.stop()


def test_the_runs_list_filters_by_suite_and_tag(tmp_path):
    results = tmp_path / "agenteval-results"
    for name, tag in (("alpha", "billing"), ("beta", "travel")):
        write(tmp_path, f"{name}.yaml", f"name: {name}\nevaluators: [{{type: length, min: 1}}]\n"
              f"cases: [{{id: a, output: x, tags: [{tag}]}}, {{id: b, output: '', tags: [{tag}]}}]\n")
        for number in (1, 2):
            assert run_cli("run", tmp_path / f"{name}.yaml", "-o", results / f"{name}-{number}.jsonl", "-q").returncode == 1
    server = Server(results, cwd=tmp_path)
    try:
        with httpx.Client(base_url=server.base) as client:
            client.get("/", params={"token": server.token})

            def listed(**query):
                page = client.get("/", params=query).text
                trends = page[page.index('id="trends"'):]
                return sorted(re.findall(r'<tr class="run" data-key="([^"]+)"', page)), re.findall(r"<tr><td>(\w+)</td><td>(\d+)</td>", trends)

            assert listed() == (["alpha-1", "alpha-2", "beta-1", "beta-2"], [("alpha", "2"), ("beta", "2")])
            assert listed(suite="alpha") == (["alpha-1", "alpha-2"], [("alpha", "2")])
            assert listed(tag="travel")[0] == ["beta-1", "beta-2"]
            assert listed(suite="alpha", tag="travel")[0] == []
    finally:
        assert "Traceback" not in server.stop()


def test_reading_that_fails_part_way_is_a_problem_on_the_page_not_a_silent_stop(tmp_path):
    """The index reads in a background thread: an error there (here, the results file replaced by a
    folder after its first lines were read) is one of the run's problems, which the page shows."""
    from agenteval.view.index import RunIndex

    results = tmp_path / "run.jsonl"
    _big_run(results, 3)
    index = RunIndex(results)
    index.follow(5)
    assert len(index) == 3 and index.problems == [] and index.caught_up
    results.unlink()
    results.mkdir()  # a size larger than what was read, and nothing that opens as a file
    index.follow(5)
    index.follow(5)  # every page asks again: the problem is said once
    assert len(index) == 3 and index.caught_up
    assert len(index.problems) == 1 and index.problems[0].startswith("run.jsonl: reading stopped at byte ")
    assert "IsADirectoryError" in index.problems[0]
