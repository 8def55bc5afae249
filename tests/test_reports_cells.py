"""Reports of a matrix run (several targets or prompts): the cells table, the comparisons in words and
the gate per cell in the terminal, Markdown and HTML; one JUnit testsuite per cell; and the HTML
comparison view, cases where the cells disagree first, in a real headless browser."""

import io
import json
import re

from rich.console import Console

from conftest import run_cli, write
from junit_schema import assert_valid_junit
from test_html_report import Page, browser  # noqa: F401 (the module's browser fixture, reused)

from agenteval.reports.markdown import summary_markdown
from agenteval.reports.table import render_summary

SIGNIFICANT = "gpt-b/terse vs gpt-a/terse: pass rate +50.0 points (95% CI +20.0 to +80.0), McNemar p = 0.004"
NOISE = "gpt-a/detailed vs gpt-a/terse: no detectable difference in pass rate (n = 4)"


def _evaluator(mean, criteria=None):
    entry = {"type": "llm_judge", "count": 4, "mean_score": mean, "verdicts": {"pass": 2, "fail": 2}, "mean_duration_ms": 1.0, "criterion": None}
    if criteria:
        entry["criteria"] = {name: {"count": 4, "mean_score": value, "verdicts": {"pass": 2, "fail": 2}} for name, value in criteria.items()}
    return entry


def _usage(p50, p95, tokens, cost):
    return {
        "latency_ms": {"p50": p50, "p95": p95, "mean": p50, "max": p95},
        "target": {"requests": 4, "cached": 0, "tokens": {"input": tokens // 2, "output": tokens - tokens // 2, "total": tokens}, "cost_usd": cost},
        "judges": {"requests": 0, "cached": 0, "tokens": {"input": 0, "output": 0, "total": 0}, "cost_usd": None},
        "total_tokens": tokens, "total_cost_usd": cost,
    }


def _cell(target, prompt, passed, mean, quality, correct, usage, gate):
    return {
        "target": target, "prompt": prompt, "label": f"{target}/{prompt}",
        "counts": {"total": 4, "passed": passed, "failed": 4 - passed, "errored": 0}, "pass_rate": passed / 4, "mean_score": mean,
        "evaluators": {"quality": _evaluator(quality, {"correct": correct}), "short": _evaluator(1.0)},
        **({"usage": usage} if usage else {}), "gate": gate,
    }


def matrix_summary():
    """A summary of the shape a matrix run writes: three cells, two comparisons (the significant one last)."""
    return {
        "suite": "qa", "run_id": "r1",
        "counts": {"total": 12, "passed": 7, "failed": 5, "errored": 0}, "pass_rate": 7 / 12, "mean_score": 0.7,
        "mean_case_duration_ms": 1.0, "evaluators": {"quality": _evaluator(0.7, {"correct": 0.6}), "short": _evaluator(1.0)},
        "fields": {}, "tags": {}, "dataset_metrics": {}, "slowest_cases": [],
        "cells": [
            _cell("gpt-a", "terse", 1, 0.4, 0.25, 0.125, _usage(120.0, 480.5, 300, 0.0021), {"passed": False, "reason": "3 of 4 cases failed"}),
            _cell("gpt-b", "terse", 3, 0.8, 0.75, 0.5, _usage(95.5, 150.0, 420, 0.0042), {"passed": False, "reason": "1 of 4 cases failed"}),
            _cell("gpt-a", "detailed", 4, 1.0, 1.0, 1.0, None, {"passed": True, "reason": None}),
        ],
        "comparisons": [
            {"a": "gpt-a/terse", "b": "gpt-a/detailed", "n": 4, "significant": False, "text": NOISE},
            {"a": "gpt-a/terse", "b": "gpt-b/terse", "n": 4, "significant": True, "text": SIGNIFICANT},
        ],
    }


def terminal(summary, width=220):
    out = io.StringIO()
    render_summary(summary, Console(file=out, width=width, color_system=None, highlight=False))
    return out.getvalue()


def table_header(text, title):
    """The column headers of the terminal table titled `title` (headers folded onto several lines joined)."""
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.strip() == title))
    parts = [[cell.strip() for cell in line.strip("┃").split("┃")] for line in lines[start + 1:] if line.startswith("┃")]
    return [" ".join(part for part in column if part) for column in zip(*parts)]


def table_rows(text, title):
    """The body rows of the terminal table titled `title`, as lists of cell texts."""
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.strip() == title))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append([cell.strip() for cell in line.strip("│").split("│")])
    return rows


# --- terminal -------------------------------------------------------------------------------------

def test_terminal_shows_one_row_per_cell_with_evaluators_criteria_usage_and_gate():
    text = terminal(matrix_summary())
    assert table_header(text, "Cells") == [
        "cell", "cases", "pass rate", "mean score", "quality", "short", "quality: correct", "tokens", "cost", "p50", "p95", "gate",
    ]
    assert table_rows(text, "Cells") == [
        ["gpt-a/terse", "4", "25.0%", "0.400", "0.250", "1.000", "0.125", "300", "$0.0021", "120 ms", "480 ms", "FAILED"],
        ["gpt-b/terse", "4", "75.0%", "0.800", "0.750", "1.000", "0.500", "420", "$0.0042", "95.5 ms", "150 ms", "FAILED"],
        ["gpt-a/detailed", "4", "100.0%", "1.000", "1.000", "1.000", "1.000", "n/a", "n/a", "n/a", "n/a", "passed"],
    ]


def test_terminal_says_the_comparisons_in_words_significant_first_then_the_cells_that_failed_the_gate():
    lines = [line.rstrip() for line in terminal(matrix_summary()).splitlines()]
    start = lines.index("Comparisons")
    assert lines[start + 1:] == [
        SIGNIFICANT, NOISE,
        "cell gpt-a/terse failed the gate: 3 of 4 cases failed",
        "cell gpt-b/terse failed the gate: 1 of 4 cases failed",
    ]


def test_terminal_shows_control_characters_in_cell_labels_evaluator_names_and_texts_as_escapes():
    summary = matrix_summary()
    summary["cells"][0]["label"] = "gpt-a\x1b[2J/terse"
    summary["cells"][0]["gate"]["reason"] = "bad\x1b]0;title\x07"
    for cell in summary["cells"]:
        cell["evaluators"]["q\x1b[31m"] = cell["evaluators"].pop("short")
    summary["comparisons"][1]["text"] = "x\x1b[2Jy"
    text = terminal(summary, width=260)
    assert "\x1b" not in text and "\x07" not in text
    assert table_rows(text, "Cells")[0][0] == "gpt-a\\x1b[2J/terse"
    assert "q\\x1b[31m" in table_header(text, "Cells")
    assert "x\\x1b[2Jy" in text.splitlines()
    assert "cell gpt-a\\x1b[2J/terse failed the gate: bad\\x1b]0;title\\x07" in text.splitlines()


def test_a_run_of_one_cell_prints_exactly_what_it_printed_before():
    summary = matrix_summary()
    plain = {key: value for key, value in summary.items() if key not in ("cells", "comparisons")}
    before = terminal(plain)
    assert "Cells" not in before and "Comparisons" not in before
    one = {**plain, "cells": summary["cells"][:1], "comparisons": []}  # one named target: nothing to set side by side
    assert terminal(one) == before
    assert summary_markdown(one, [], 0) == summary_markdown(plain, [], 0)


# --- Markdown -------------------------------------------------------------------------------------

def test_markdown_has_the_cells_table_the_comparisons_and_the_gate():
    summary = matrix_summary()
    summary["cells"][2]["label"] = "gpt-a/det|ailed"
    text = summary_markdown(summary, [], 0)
    section = text[text.index("### Cells"):].splitlines()
    assert section[:7] == [
        "### Cells",
        "",
        "| cell | cases | pass rate | mean score | quality | short | quality: correct | tokens | cost | p50 | p95 | gate |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
        "| gpt-a/terse | 4 | 25.0% | 0.400 | 0.250 | 1.000 | 0.125 | 300 | $0.0021 | 120 ms | 480 ms | FAILED |",
        "| gpt-b/terse | 4 | 75.0% | 0.800 | 0.750 | 1.000 | 0.500 | 420 | $0.0042 | 95.5 ms | 150 ms | FAILED |",
        "| gpt-a/det\\|ailed | 4 | 100.0% | 1.000 | 1.000 | 1.000 | 1.000 | n/a | n/a | n/a | n/a | passed |",
    ]
    assert section[7:] == [
        "", "### Comparisons", "",
        "- **gpt-b/terse vs gpt-a/terse: pass rate +50.0 points (95% CI +20.0 to +80.0), McNemar p = 0.004**",
        "- gpt-a/detailed vs gpt-a/terse: no detectable difference in pass rate (n = 4)",
        "", "### Cells that failed the gate", "",
        "- cell gpt-a/terse failed the gate: 3 of 4 cases failed",
        "- cell gpt-b/terse failed the gate: 1 of 4 cases failed",
    ]


# --- from result lines: `agenteval report` (terminal, JUnit, HTML) --------------------------------

def _line(case_id, target, prompt, verdict, answer, repetition=0):
    score = {"pass": 1.0, "fail": 0.0, "error": 0.0}[verdict]
    evaluator = {"name": "right", "type": "contains", "score": score, "verdict": verdict, "hits": [], "misses": [] if verdict == "pass" else ["the answer"]}
    return {
        "run_id": "r1", "suite": "qa", "case_id": case_id, "score": score, "verdict": verdict, "output": {"content": answer},
        "evaluator_results": [] if verdict == "error" else [evaluator], "error": "target timed out" if verdict == "error" else None,
        "duration_ms": 2.0, "repetition": repetition, "target": target, "prompt": prompt,
    }


# q1 agrees (pass, pass), q2 agrees (fail, fail), q3 disagrees (pass, fail), q4 disagrees (error, pass), q5 ran in gpt-a only
VERDICTS = {"q1": ("pass", "pass"), "q2": ("fail", "fail"), "q3": ("pass", "fail"), "q4": ("error", "pass"), "q5": ("pass", None)}


def matrix_results(folder):
    lines = [
        _line(case_id, target, "terse", verdicts[index], f"{target} on {case_id}")
        for index, target in enumerate(("gpt-a", "gpt-b")) for case_id, verdicts in VERDICTS.items() if verdicts[index]
    ]
    path = folder / "r.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_report_on_a_matrix_runs_results_recomputes_the_cells_and_counts_every_cell(tmp_path):
    done = run_cli("report", matrix_results(tmp_path))
    assert done.returncode == 3, done.stderr  # a case errored
    assert "9 cases: 5 passed, 3 failed, 1 errored" in done.stdout  # one case id in two cells is no duplicate
    assert done.stderr == ""
    assert table_rows(done.stdout, "Cells") == [
        ["gpt-a/terse", "5", "60.0%", "0.600", "0.750", "FAILED"],
        ["gpt-b/terse", "4", "50.0%", "0.500", "0.500", "FAILED"],
    ]
    lines = done.stdout.splitlines()
    assert lines[lines.index("Comparisons") + 1] == (  # q1-q4 in both: one case each way
        "gpt-b/terse vs gpt-a/terse: no detectable difference (n = 4): pass rate +0.0 points (95% CI -75.0 to +75.0), "
        "McNemar p = 1.000, not significant"
    )
    assert "cell gpt-a/terse failed the gate: 1 of 5 cases errored" in lines
    summary = json.loads(run_cli("report", tmp_path / "r.jsonl", "--json").stdout)
    assert [cell["label"] for cell in summary["cells"]] == ["gpt-a/terse", "gpt-b/terse"]


def test_junit_has_one_testsuite_per_cell_with_unique_test_names_and_validates(tmp_path):
    done = run_cli("report", matrix_results(tmp_path), "--format", "junit", "-o", tmp_path / "j.xml")
    assert done.returncode == 3, done.stderr
    xml = (tmp_path / "j.xml").read_text()
    assert_valid_junit(tmp_path / "j.xml")
    suites = re.findall(r'<testsuite name="([^"]*)" tests="(\d+)" failures="(\d+)" errors="(\d+)"', xml)
    assert suites == [("qa [gpt-a/terse]", "5", "1", "1"), ("qa [gpt-b/terse]", "4", "2", "0")]
    names = re.findall(r'<testcase classname="([^"]*)" name="([^"]*)"', xml)
    assert names[:2] == [("qa [gpt-a/terse]", "q1 [gpt-a/terse]"), ("qa [gpt-a/terse]", "q2 [gpt-a/terse]")]
    assert len({name for _, name in names}) == len(names) == 9
    assert '<property name="cell" value="gpt-b/terse"/>' in xml and '<property name="target" value="gpt-b"/>' in xml
    assert '<property name="gate" value="failed: 2 of 4 cases failed"/>' in xml
    assert '<testsuites name="agenteval" tests="9" failures="3" errors="1"' in xml


def test_junit_of_a_single_cell_run_is_unchanged(tmp_path):
    lines = [{key: value for key, value in _line(case_id, None, None, "pass", "ok").items()} for case_id in ("a", "b")]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run_cli("report", tmp_path / "r.jsonl", "--format", "junit", "-o", tmp_path / "j.xml").returncode == 0
    xml = (tmp_path / "j.xml").read_text()
    assert re.findall(r"<testsuite name=\"([^\"]*)\"", xml) == ["qa"]
    assert re.findall(r'<testcase classname="([^"]*)" name="([^"]*)"', xml) == [("qa", "a"), ("qa", "b")]
    assert '"cell"' not in xml


def test_the_html_comparison_view_shows_the_disagreeing_cases_first_with_every_cells_answer(browser, tmp_path):  # noqa: F811
    done = run_cli("report", matrix_results(tmp_path), "--format", "html", "-o", tmp_path / "r.html")
    assert done.returncode == 3, done.stderr
    page = Page(browser, tmp_path / "r.html")
    try:
        rows = page.page.query_selector_all("#comparison-table tbody tr.compared")
        assert [row.get_attribute("data-case") for row in rows] == ["q3", "q4", "q1", "q2", "q5"]
        assert [row.get_attribute("class") for row in rows[:3]] == ["compared disagree", "compared disagree", "compared"]
        headers = [cell.inner_text() for cell in page.page.query_selector_all("#comparison-table thead th")]
        assert headers == ["case", "gpt-a/terse", "gpt-b/terse"]
        first = rows[0].query_selector_all("td.side")
        assert [side.query_selector(".v").inner_text() for side in first] == ["pass", "fail"]
        assert [side.query_selector("pre.answer").inner_text() for side in first] == ["gpt-a on q3", "gpt-b on q3"]
        second = rows[1].query_selector_all("td.side")
        assert second[0].query_selector(".case-error").inner_text() == "error: target timed out"
        assert rows[4].query_selector_all("td.side")[1].inner_text() == "not run"
        assert page.text("#comparison-count") == "2 of 5 cases disagree"
        page.page.check("#disagree-only")
        assert [row.get_attribute("data-case") for row in page.page.query_selector_all("#comparison-table tbody tr.compared")] == ["q3", "q4"]
        cells = [row.inner_text().split("\t")[:2] for row in page.page.query_selector_all("#cells tbody tr")]
        assert cells == [["gpt-a/terse", "5"], ["gpt-b/terse", "4"]]
        page.page.select_option("#cell", label="gpt-b/terse")  # the cases table: a cell column and filter
        assert page.text("#case-count") == "4 of 9 cases"
        assert [row.inner_text().split("\t")[:3] for row in page.page.query_selector_all("#case-table tbody tr.case")][0] == ["q1", "gpt-b/terse", "pass"]
        assert page.problems == [] and len(page.requests) == 1
    finally:
        page.close()


def test_a_matrix_run_writes_every_report_per_cell(tmp_path):
    write(tmp_path, "agents.py", "def good(question):\n    return {'answer': 'Paris'}\n\n"
          "def bad(question):\n    return {'answer': 'Paris' if question == 'q1' else 'Lyon'}\n")
    suite = write(tmp_path, "suite.yaml", """
name: mini
targets:
  good: {type: python, function: "agents:good"}
  bad: {type: python, function: "agents:bad"}
evaluators: [{name: answer, type: field_accuracy, fields: [{path: answer}]}]
cases:
  - {id: q1, input: q1, expected: {answer: Paris}}
  - {id: q2, input: q2, expected: {answer: Paris}}
""")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--workers", "1", "--junit", tmp_path / "j.xml",
                   "--markdown", tmp_path / "r.md", "--html", tmp_path / "r.html")
    assert done.returncode == 1, done.stderr
    assert table_header(done.stdout, "Cells") == ["cell", "cases", "pass rate", "mean score", "answer", "p50", "p95", "gate"]  # no tokens counted
    rows = table_rows(done.stdout, "Cells")
    assert [row[:5] + row[7:] for row in rows] == [["good", "2", "100.0%", "1.000", "1.000", "passed"], ["bad", "2", "50.0%", "0.500", "0.500", "FAILED"]]
    assert all(re.fullmatch(r"\d+(\.\d)? ms", value) for row in rows for value in row[5:7])
    assert "cell bad failed the gate: 1 of 2 cases failed" in done.stdout.splitlines()
    markdown = (tmp_path / "r.md").read_text().splitlines()
    assert any(re.fullmatch(r"\| good \| 2 \| 100\.0% \| 1\.000 \| 1\.000 \| [\d.]+ ms \| [\d.]+ ms \| passed \|", line) for line in markdown)
    assert re.findall(r"<testsuite name=\"([^\"]*)\"", (tmp_path / "j.xml").read_text()) == ["mini [good]", "mini [bad]"]
    assert_valid_junit(tmp_path / "j.xml")
    again = run_cli("report", tmp_path / "r.jsonl")
    assert again.returncode == 1 and table_rows(again.stdout, "Cells") == rows


def test_junit_names_each_repeat_run_in_a_cell_so_names_stay_unique(tmp_path):
    lines = [_line(case_id, target, None, "pass", "ok", repetition) for repetition in range(2) for target in ("gpt-a", "gpt-b") for case_id in ("q1", "q2")]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run_cli("report", tmp_path / "r.jsonl", "--format", "junit", "-o", tmp_path / "j.xml").returncode == 0
    names = re.findall(r'<testcase classname="[^"]*" name="([^"]*)"', (tmp_path / "j.xml").read_text())
    assert names == ["q1 [gpt-a]", "q2 [gpt-a]", "q1 [gpt-a] (run 2)", "q2 [gpt-a] (run 2)",
                     "q1 [gpt-b]", "q2 [gpt-b]", "q1 [gpt-b] (run 2)", "q2 [gpt-b] (run 2)"]
    assert_valid_junit(tmp_path / "j.xml")
