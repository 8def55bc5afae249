"""examples/rag: retrieval metrics and claim-level judges from the committed cache, offline. The output
its README shows is what the run prints, each case fails the checks the README says, a replay
leaves the cache as it was, and make_example.py rebuilds the same cases and a cache giving the same verdicts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, normalized_run_output, read_jsonl
from test_doc_examples import console_blocks

FOLDER = EXAMPLES / "rag"
CACHE = Path(".agenteval") / "cache" / "responses.sqlite"
ENV = {**os.environ, "CI": "1", "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
ENV.pop("RAG_JUDGE_BASE_URL", None)  # the cache is keyed by the default base_url
FAILING = {  # case -> the evaluators it fails, as the README's table says
    "refund": [], "bike": [], "dog": ["retrieval", "faithful", "ranked_well", "complete_context"],
    "delay": ["retrieval", "ranked_well"], "luggage": ["faithful"], "children": ["on_topic"],
}


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(FOLDER, tmp_path / "examples" / "rag", ignore=shutil.ignore_patterns("agenteval-results", "__pycache__"))
    return tmp_path / "examples" / "rag"


def _failing(lines: list[dict]) -> dict[str, list[str]]:
    return {line["case_id"]: [e["name"] for e in line["evaluator_results"] if e["verdict"] != "pass"] for line in lines}


def test_the_readme_shows_what_the_run_prints_offline_and_which_case_fails_what(tmp_path):
    folder = _copy(tmp_path)
    cache_before = (folder / CACHE).read_bytes()
    (block,) = console_blocks([FOLDER / "README.md"])
    (step,) = block.steps
    assert (step.command, step.status) == ("agenteval run examples/rag/suite.yaml -o rag.jsonl", 1)
    done = subprocess.run(["bash", "-c", step.command], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    assert done.returncode == 1, done.stdout
    assert normalized_run_output(done.stdout.splitlines()) == normalized_run_output(step.output)
    assert (folder / CACHE).read_bytes() == cache_before  # a replay writes nothing

    lines = read_jsonl(tmp_path / "rag.jsonl")
    assert _failing(lines) == FAILING
    results = {line["case_id"]: {e["name"]: e for e in line["evaluator_results"]} for line in lines}
    luggage = results["luggage"]["faithful"]["details"]
    assert luggage["claims"][1] == {"claim": "Each suitcase may weigh up to 23 kg.", "verdict": "not_found", "evidence": "", "quote_found": None}
    assert luggage["claims"][0]["quote_found"] is True and luggage["formula"] == "supported / claims = 1 / 2"
    assert results["delay"]["retrieval"]["details"]["criteria"]["reciprocal_rank"] == {"score": 1 / 3}
    assert results["delay"]["ranked_well"]["score"] == pytest.approx(1 / 3)
    assert all(e["details"]["usage"]["cached"] for line in lines for e in line["evaluator_results"] if e["type"] != "retrieval")
    readme = (FOLDER / "README.md").read_text()
    summary = json.loads((tmp_path / "rag.summary.json").read_text())
    means = {name: figures["mean_score"] for name, figures in summary["evaluators"]["retrieval"]["criteria"].items()}
    for name, shown in (("ndcg@3", "nDCG@3"), ("recall@3", "recall@3"), ("reciprocal_rank", "MRR"), ("average_precision", "MAP")):
        assert f"{shown} {means[name]:.3f}" in readme


def test_make_example_rebuilds_the_cases_and_a_cache_with_the_same_verdicts(tmp_path, example_port):
    folder = _copy(tmp_path)
    cases_before = (folder / "cases.jsonl").read_text()
    made = subprocess.run([sys.executable, str(folder / "make_example.py")], env=ENV, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("wrote examples/rag/.agenteval/cache/responses.sqlite (")
    assert (folder / "cases.jsonl").read_text() == cases_before
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", "examples/rag/suite.yaml", "-q", "-o", "r.jsonl"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout
    assert _failing(read_jsonl(tmp_path / "r.jsonl")) == FAILING


def test_the_html_report_lists_each_claim_with_its_verdict_and_quote(tmp_path):
    from playwright.sync_api import sync_playwright

    from browsers import ARGS, chromium_or_skip
    from test_html_report import Page

    chromium = chromium_or_skip()
    folder = _copy(tmp_path)
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", "examples/rag/suite.yaml", "-q", "-o", "r.jsonl", "--html", "r.html"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (folder / CACHE).exists()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=ARGS)
        page = Page(browser, tmp_path / "r.html")
        try:
            page.page.click("#case-table tbody tr.case >> text=luggage")
            detail = page.page.wait_for_selector("td.detail")
            blocks = {block.query_selector("h4").inner_text().split()[0]: block for block in detail.query_selector_all(".evaluator")}
            claims = [item.inner_text() for item in blocks["faithful"].query_selector_all("ul.criteria li")]
            assert claims == [
                "You may bring two large suitcases and one piece of hand luggage. supported "
                "“Each passenger may bring two large suitcases and one piece of hand luggage.”",
                "Each suitcase may weigh up to 23 kg. not_found",
            ]
            chunks = [item.inner_text() for item in blocks["ranked_well"].query_selector_all("ul.criteria li")]
            assert chunks[0].startswith("chunk 1 useful “Each passenger") and chunks[1] == "chunk 2 not_useful"
            assert page.problems == []
        finally:
            page.close()
            browser.close()
