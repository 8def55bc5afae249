"""The HTML report in a real headless browser: a Chromium on PATH (or Playwright's own), driven by Playwright.

Every request other than the report file itself is blocked and recorded, so a page that tried
to load anything from a network fails the test.
"""

import json
import re

import pytest
from playwright.sync_api import sync_playwright

from browsers import ARGS as CHROMIUM_ARGS, chromium_or_skip
from conftest import EXAMPLES, run_cli, write


@pytest.fixture(scope="module")
def browser():
    chromium = chromium_or_skip()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def invoices_html(tmp_path_factory):
    folder = tmp_path_factory.mktemp("html")
    done = run_cli("run", EXAMPLES / "invoices" / "suite.yaml", "-o", folder / "r.jsonl", "--html", folder / "report.html", "--workers", "1")
    assert done.returncode == 1, done.stderr
    return folder / "report.html"


class Page:
    """A page opened on a report, with what it logged and every request it attempted."""

    def __init__(self, browser, path):
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.problems = []
        self.requests = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda message: message.type in ("error", "warning") and self.problems.append(message.text))
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("body[data-ready=true]", timeout=30_000)

    def _route(self, route):
        self.requests.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    def text(self, selector):
        return self.page.inner_text(selector)

    def case_ids(self):
        return [cell.inner_text() for cell in self.page.query_selector_all("#case-table tbody tr.case td:first-child")]

    def close(self):
        self.context.close()


@pytest.fixture
def opened(browser, invoices_html):
    page = Page(browser, invoices_html)
    yield page
    page.close()


def test_the_page_loads_offline_without_errors(opened, invoices_html):
    assert opened.problems == []
    assert opened.requests == [invoices_html.as_uri()]
    assert re.search(r"https?://", invoices_html.read_text()) is None


def test_the_page_shows_the_counts_of_the_run(opened):
    counts = {key: opened.text(f"#count-{key}") for key in ("total", "passed", "failed", "errored", "pass-rate", "mean-score")}
    assert counts == {"total": "8", "passed": "3", "failed": "5", "errored": "0", "pass-rate": "37.5%", "mean-score": "0.925"}
    assert opened.text("#case-count") == "8 of 8 cases"
    assert opened.case_ids() == [f"inv-00{i}" for i in range(1, 9)]
    histogram = opened.page.query_selector_all("svg.histogram g title")
    assert sum(int(n) for title in histogram for n in re.findall(r"(\d+) (?:pass|fail|error)", title.text_content())) == 8
    evaluator_bars = [title.text_content() for title in opened.page.query_selector_all("#evaluator-chart g title")]
    assert evaluator_bars == ["header: 62.5% pass, mean 0.902", "party_names: 75.0% pass, mean 0.948"]
    field_bars = [title.text_content() for title in opened.page.query_selector_all("#field-chart g title")]
    assert field_bars[0] == "invoice.total: 75.0% (6/8)" and len(field_bars) == 7
    assert opened.text("#tags tbody").splitlines()[0].split("\t") == ["apac", "1", "0", "1", "0", "0.0%"]


def test_the_filters_narrow_the_table(opened):
    page = opened.page
    page.select_option("#verdict", "fail")
    assert opened.text("#case-count") == "5 of 8 cases"
    assert opened.case_ids() == ["inv-002", "inv-004", "inv-005", "inv-006", "inv-007"]
    page.select_option("#tag", label="us")
    assert opened.case_ids() == ["inv-002", "inv-004", "inv-007"]
    page.select_option("#evaluator", label="did not pass: party_names")
    assert opened.case_ids() == ["inv-002", "inv-007"]
    page.select_option("#verdict", "")
    page.select_option("#tag", "")
    page.select_option("#evaluator", "")
    page.fill("#search", "type mismatch")  # searches the misses too
    page.wait_for_function("document.getElementById('case-count').textContent === '1 of 8 cases'")
    assert opened.case_ids() == ["inv-006"]
    page.fill("#search", "")
    page.select_option("#sort", "low")
    page.wait_for_function("document.getElementById('case-count').textContent === '8 of 8 cases'")
    assert opened.case_ids()[:2] == ["inv-006", "inv-004"]


def test_a_case_opens_to_show_its_misses_side_by_side(opened):
    opened.page.click("#case-table tbody tr.case >> text=inv-004")
    detail = opened.page.wait_for_selector("td.detail")
    expected = detail.query_selector('pre.expected .miss[data-path="invoice.total"]')
    candidate = detail.query_selector('pre.candidate .miss[data-path="invoice.total"]')
    assert expected.inner_text() == '"total": 15600'
    assert candidate.inner_text() == '"total": 16500'
    assert detail.query_selector('pre.candidate .hit[data-path="invoice.number"]').inner_text() == '"number": "SI-5530"'
    missed_rows = [row.inner_text().split("\t") for row in detail.query_selector_all("table.fields tr.miss")]
    assert missed_rows == [["header", "invoice.total", "miss", "15600", "16500"]]
    evaluators = [block.query_selector("h4").inner_text() for block in detail.query_selector_all(".evaluator")]
    assert evaluators == ["header field_accuracy partial 0.714", "party_names code_judge pass 1.000"]
    assert detail.query_selector(".evaluator.partial ul.misses").inner_text() == "invoice.total"
    detail.query_selector(".evaluator.pass details summary").click()
    assert '"buyer.name"' in detail.query_selector(".evaluator.pass details pre").inner_text()
    opened.page.click("#case-table tbody tr.case >> text=inv-004")
    assert opened.page.query_selector("td.detail") is None


def test_many_cases_are_paged(browser, tmp_path):
    cases = [{"id": f"c{i:03d}", "expected": {"n": i}, "output": {"n": i if i % 10 else -1}} for i in range(250)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    suite = write(tmp_path, "s.yaml", "name: many\nevaluators: [{type: field_accuracy, fields: [{path: n}]}]\ncases: cases.jsonl\n")
    assert run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--html", tmp_path / "r.html").returncode == 1
    page = Page(browser, tmp_path / "r.html")
    try:
        assert page.text("#page") == "1–100 (page 1 of 3)" and len(page.case_ids()) == 100
        page.page.click("#next")
        assert page.text("#page") == "101–200 (page 2 of 3)" and page.case_ids()[0] == "c100"
        page.page.select_option("#verdict", "fail")
        assert page.text("#case-count") == "25 of 250 cases" and page.text("#page") == "1–25 (page 1 of 1)"
        assert page.problems == []
    finally:
        page.close()


def test_dataset_metrics_appear_in_the_page(browser, tmp_path):
    results = tmp_path / "r.jsonl"
    assert run_cli("run", EXAMPLES / "invoices-lineitems" / "suite.yaml", "-o", results).returncode == 1
    assert run_cli("report", results, "--format", "html", "-o", tmp_path / "r.html").returncode == 1
    page = Page(browser, tmp_path / "r.html")
    try:
        headings = [h.inner_text() for h in page.page.query_selector_all("#dataset-metrics h3")]
        assert headings == ["header macro-F1 0.821", "items macro-F1 0.647", "header_judge macro-F1 0.821", "items_judge macro-F1 0.647"]
        first = page.page.query_selector("#dataset-metrics tbody tr").inner_text().split("\t")
        assert first == ["invoice.number", "4", "0", "0", "0", "1.000", "1.000", "1.000"]
        assert page.problems == [] and len(page.requests) == 1
    finally:
        page.close()
