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


# --- input, expected and candidate side by side; transcripts; judges' reasoning ---------------

def _open_case(page, case_id):
    page.page.click(f"#case-table tbody tr.case >> text={case_id}")
    return page.page.wait_for_selector("td.detail")


def test_a_failing_qa_llm_case_shows_input_expected_candidate_and_the_judges_reasoning(browser, tmp_path, monkeypatch):
    monkeypatch.setenv("QA_LLM_BASE_URL", "http://localhost:11434/v1")  # the default: the key the committed cache holds
    done = run_cli("run", EXAMPLES / "qa-llm" / "suite.yaml", "-o", tmp_path / "r.jsonl", "--html", tmp_path / "r.html")
    assert done.returncode == 1, done.stderr
    page = Page(browser, tmp_path / "r.html")
    try:
        detail = _open_case(page, "capital-australia")
        assert "no expected values" not in detail.inner_text()
        assert detail.query_selector(".side-input pre.input").inner_text() == '{\n  "question": "What is the capital of Australia?"\n}'
        assert detail.query_selector(".side-expected pre.expected").inner_text() == '{\n  "answer": "Canberra"\n}'
        assert '"content": "The capital of Australia is Sydney."' in detail.query_selector(".side-candidate pre.candidate").inner_text()
        quality = [block for block in detail.query_selector_all(".evaluator") if block.query_selector("h4").inner_text().startswith("quality")][0]
        assert quality.query_selector(".reasoning").is_visible()
        assert quality.query_selector(".reasoning").inner_text() == "reasoning correct: fail; concise: 5"
        criteria = [item.inner_text() for item in quality.query_selector_all("ul.criteria li")]
        assert criteria == ["correct fail The answer says Sydney; the reference is Canberra.", "concise 5 One short sentence, though wrong."]
        assert all(item.is_visible() for item in quality.query_selector_all("ul.criteria li"))
        turns = [(turn.query_selector(".role").inner_text(), turn.query_selector(".said").inner_text()) for turn in detail.query_selector_all(".transcript .turn")]
        assert turns == [
            ("SYSTEM", "Answer the question in one short sentence."), ("USER", "What is the capital of Australia?"),
            ("ASSISTANT", "The capital of Australia is Sydney."),
        ]
        assert page.problems == [] and len(page.requests) == 1
    finally:
        page.close()


def _turns(detail):
    """Each turn as (role, text, [(tool, arguments)], [(tool, result)])."""
    found = []
    for turn in detail.query_selector_all(".transcript .turn"):
        said = turn.query_selector(".said")
        calls = [(call.query_selector(".tool-name").inner_text(), json.loads(call.query_selector("pre.arguments").inner_text()))
                 for call in turn.query_selector_all(".call")]
        results = [(result.query_selector(".tool-name").inner_text(), result.query_selector("pre").inner_text())
                   for result in turn.query_selector_all(".result")]
        found.append((turn.query_selector(".role").inner_text(), said.inner_text() if said else None, calls, results))
    return found


def test_the_support_agent_trajectory_reads_as_a_chat_transcript_with_tool_calls(browser, tmp_path):
    done = run_cli("run", EXAMPLES / "support-agent" / "suite.yaml", "-o", tmp_path / "r.jsonl", "--html", tmp_path / "r.html")
    assert done.returncode == 1, done.stderr
    page = Page(browser, tmp_path / "r.html")
    try:
        detail = _open_case(page, "refund-ok-openai")
        turns = _turns(detail)
        assert turns[:5] == [
            ("USER", "My order A-1001 arrived damaged, I want my money back.", [], []),
            ("ASSISTANT", None, [("lookup_order", {"order_id": "A-1001"})], []),
            ("TOOL", None, [], [("lookup_order", '{"order_id": "A-1001", "status": "delivered", "total": 25.0}')]),
            ("ASSISTANT", None, [("issue_refund", {"order_id": "A-1001", "amount": 25.0, "reason": "item arrived damaged"})], []),
            ("TOOL", None, [], [("issue_refund", '{"ok": true}')]),
        ]
        assert turns[5][0] == "ASSISTANT" and turns[5][1].startswith("I'm sorry your order A-1001 arrived damaged.")
        assert detail.query_selector(".side-input pre.input").inner_text() == '{\n  "customer_message": "My order A-1001 arrived damaged, I want my money back."\n}'
        assert '"issue_refund"' in detail.query_selector(".side-expected pre.expected").inner_text()
        page.page.click("#case-table tbody tr.case >> text=refund-ok-openai")
        detail = _open_case(page, "refund-ok-anthropic")  # Anthropic content blocks
        turns = _turns(detail)
        assert turns[:3] == [
            ("USER", "The jacket in order A-1002 is the wrong size, please refund it.", [], []),
            ("ASSISTANT", "Let me check that order.", [("lookup_order", {"order_id": "A-1002"})], []),
            ("USER", None, [], [("lookup_order", '{"order_id": "A-1002", "status": "delivered", "total": 49.99}')]),
        ]
        assert page.problems == [] and len(page.requests) == 1
    finally:
        page.close()


def test_a_plain_list_of_calls_reads_as_a_transcript(browser, tmp_path):
    output = {"calls": [{"name": "search", "arguments": {"q": "weather"}, "result": "sunny"}, {"name": "reply", "arguments": "{\"text\": \"ok\"}"}]}
    case = {"id": "one", "input": "What is the weather?", "expected": {"tool_calls": [{"name": "search"}]}, "output": output}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    suite = write(tmp_path, "s.yaml", "name: calls\nevaluators: [{type: length, path: calls, max: 1}]\ncases: cases.jsonl\n")
    assert run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--html", tmp_path / "r.html").returncode == 1
    page = Page(browser, tmp_path / "r.html")
    try:
        detail = _open_case(page, "one")
        assert _turns(detail) == [("CALL", None, [("search", {"q": "weather"})], [("search", "sunny")]), ("CALL", None, [("reply", {"text": "ok"})], [])]
        assert detail.query_selector(".side-input pre.input").inner_text() == "What is the weather?"
        assert page.problems == []
    finally:
        page.close()


def test_an_extraction_case_shows_its_input_and_whole_reference_beside_the_field_view(opened):
    detail = _open_case(opened, "inv-004")
    assert detail.query_selector(".side-expected h4").inner_text() == "expected"
    assert detail.query_selector('.side-expected pre.expected .miss[data-path="invoice.total"]').inner_text() == '"total": 15600'
    assert detail.query_selector(".side-input pre.input").inner_text() != ""
    assert [row.inner_text().split("\t") for row in detail.query_selector_all("table.fields tr.miss")] == [["header", "invoice.total", "miss", "15600", "16500"]]
    assert detail.query_selector(".transcript") is None


def test_an_old_results_file_without_expected_still_renders(browser, invoices_html, tmp_path):
    lines = [json.loads(line) for line in (invoices_html.parent / "r.jsonl").read_text().splitlines()]
    assert all("expected" in line for line in lines)
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({k: v for k, v in line.items() if k != "expected"}) + "\n" for line in lines))
    done = run_cli("report", old, "--format", "html", "-o", tmp_path / "old.html")
    assert done.returncode == 1, done.stderr
    page = Page(browser, tmp_path / "old.html")
    try:
        detail = _open_case(page, "inv-004")
        assert detail.query_selector(".side-expected h4").inner_text() == "expected (the fields evaluators checked)"
        assert detail.query_selector('.side-expected pre.expected .miss[data-path="invoice.total"]').inner_text() == '"total": 15600'
        assert page.problems == [] and page.text("#case-count") == "8 of 8 cases"
    finally:
        page.close()


def test_an_expected_equal_to_the_candidate_is_shown_though_stored_once(browser, tmp_path):
    cases = [{"id": "same", "input": "q", "expected": {"n": 1, "s": "x"}, "output": {"n": 1, "s": "x"}},
             {"id": "float", "input": "q", "expected": {"n": 1}, "output": {"n": 1.0}}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    suite = write(tmp_path, "s.yaml", "name: same\nevaluators: [{type: field_accuracy, fields: [{path: n}]}]\ncases: cases.jsonl\n")
    assert run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--html", tmp_path / "r.html").returncode == 0
    page = Page(browser, tmp_path / "r.html")
    try:
        detail = _open_case(page, "same")
        assert detail.query_selector(".side-expected pre.expected").inner_text() == '{\n  "n": 1,\n  "s": "x"\n}'
        page.page.click("#case-table tbody tr.case >> text=same")
        detail = _open_case(page, "float")
        assert detail.query_selector(".side-expected pre.expected").inner_text() == '{\n  "n": 1\n}'
        assert "no expected values" not in detail.inner_text()
        assert page.problems == []
    finally:
        page.close()
