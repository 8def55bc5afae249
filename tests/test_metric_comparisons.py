"""Cells compared metric by metric: each evaluator's score and each criterion (a retrieval metric, a
judge's criterion) gets the paired statistics of the comparison feature, over the cases where both
cells measured it, in the run's summary, `report` and every format."""

from __future__ import annotations

import json

import numpy as np
from scipy import stats

from agenteval.evaluators.base import EvaluatorResult
from agenteval.reports.cell_table import comparison_lines
from agenteval.results import MAX_PAIRED_METRICS, CaseResult, Summary
from agenteval.statistics import compare_metric
from conftest import run_cli, write


def _result(case_id, target, metrics, verdict="pass"):
    """A case of cell `target` whose `retrieval` evaluator measured `metrics` ({name: score})."""
    evaluator = EvaluatorResult(
        name="retrieval", type="retrieval", score=sum(metrics.values()) / max(1, len(metrics)), verdict=verdict,
        details={"criteria": {name: {"score": score} for name, score in metrics.items()}} if verdict != "error" else {},
    )
    return CaseResult(run_id="r", suite="s", case_id=case_id, score=evaluator.score, verdict=verdict,
                      evaluator_results=[evaluator], target=target)


def test_each_criterion_is_compared_case_by_case_as_the_sign_flip_test_and_bootstrap_say():
    rng = np.random.default_rng(7)
    a_ndcg, b_ndcg = rng.random(12), rng.random(12)
    a_rr, b_rr = rng.random(12), rng.random(12) * 0.2 + 0.8
    summary = Summary(cells=[("bm25", None), ("dense", None)])
    for k in reversed(range(12)):  # finished in any order: pairs are made by case id
        summary.add(_result(f"q{k:02d}", "dense", {"ndcg@3": float(b_ndcg[k]), "rr": float(b_rr[k])}))
        summary.add(_result(f"q{k:02d}", "bm25", {"ndcg@3": float(a_ndcg[k]), "rr": float(a_rr[k])}))
    comparison = summary.to_dict()["comparisons"][0]
    by_name = {metric["name"]: metric for metric in comparison["metrics"]}
    assert list(by_name) == ["retrieval", "retrieval: ndcg@3", "retrieval: rr"]
    ndcg = by_name["retrieval: ndcg@3"]
    assert ndcg["n"] == 12
    assert ndcg["a"] == sum(a_ndcg.tolist()) / 12 and abs(ndcg["b"] - sum(b_ndcg.tolist()) / 12) < 1e-12
    assert abs(ndcg["difference"] - (b_ndcg - a_ndcg).mean()) < 1e-12
    # 12 nonzero differences: the sign-flip test is exact, as scipy's paired permutation test
    exact = stats.permutation_test((b_ndcg, a_ndcg), lambda x, y: np.mean(x - y), permutation_type="samples",
                                   n_resamples=np.inf, alternative="two-sided")
    assert abs(ndcg["p_value"] - exact.pvalue) < 1e-12
    assert ndcg["low"] < ndcg["difference"] < ndcg["high"]
    rr = by_name["retrieval: rr"]
    assert rr["difference"] > 0.3 and rr["p_value"] < 0.05 and rr["significant"]
    assert rr["text"].startswith("retrieval: rr +0.") and "sign-flip p" in rr["text"]


def test_a_case_whose_evaluator_errored_in_one_cell_is_left_out_of_that_metrics_pairs():
    summary = Summary(cells=[("a", None), ("b", None)])
    for k in range(6):
        summary.add(_result(f"q{k}", "a", {"recall@5": 0.5}))
        summary.add(_result(f"q{k}", "b", {"recall@5": 1.0}, verdict="error" if k == 0 else "pass"))
    metric = {m["name"]: m for m in summary.to_dict()["comparisons"][0]["metrics"]}["retrieval: recall@5"]
    assert metric["n"] == 5 and metric["a"] == 0.5 and metric["b"] == 1.0
    assert metric["p_value"] == 2 / 2**5  # all five differences positive: the exact two-sided tail


def test_metrics_past_the_cap_are_counted_and_memory_does_not_follow_them():
    summary = Summary(cells=[("a", None), ("b", None)])
    names = {f"m{n:02d}": 0.5 for n in range(MAX_PAIRED_METRICS + 4)}
    for k in range(3):
        summary.add(_result(f"q{k}", "a", names))
        summary.add(_result(f"q{k}", "b", names))
    comparison = summary.to_dict()["comparisons"][0]
    assert len(comparison["metrics"]) == MAX_PAIRED_METRICS
    assert comparison["metrics_not_compared"] == 3 * 2 * 5  # 5 names (the evaluator's score took a place) x 3 cases x 2 cells


def test_the_only_evaluators_score_is_not_compared_twice():
    summary = Summary(cells=[("a", None), ("b", None)])
    for k in range(4):
        for cell, score in (("a", 0.2), ("b", 0.9)):
            evaluator = EvaluatorResult(name="exact", type="exact_match", score=score, verdict="fail")
            summary.add(CaseResult(run_id="r", suite="s", case_id=f"q{k}", score=score, verdict="fail",
                                   evaluator_results=[evaluator], target=cell))
    assert "metrics" not in summary.to_dict()["comparisons"][0]


def test_compare_metric_of_identical_cells_is_no_difference():
    found = compare_metric("faithful", [0.4, 0.6, 1.0], [0.4, 0.6, 1.0])
    assert found["difference"] == 0.0 and found["p_value"] == 1.0 and not found["significant"]
    assert found["text"] == "faithful +0.000 (95% CI +0.000 to +0.000), sign-flip p = 1.000, not significant"


def _retrieval_matrix(folder):
    write(folder, "rankers.py", """
        def bm25(case):
            return {"retrieved": case["noisy"]}

        def dense(case):
            return {"retrieved": case["clean"]}
    """)
    cases = []
    for n in range(16):
        relevant = [f"d{n}", f"d{n + 100}"]
        clean = [f"d{n}", f"d{n + 100}", "x1", "x2"]
        noisy = ["x1", f"d{n}", "x2", "x3"] if n % 4 else clean
        cases.append(json.dumps({"id": f"q{n:02d}", "input": {"clean": clean, "noisy": noisy}, "expected": {"relevant": relevant}}))
    write(folder, "cases.jsonl", "\n".join(cases) + "\n")
    return write(folder, "suite.yaml", """
        name: rankers
        targets:
          bm25: {type: python, function: "rankers:bm25"}
          dense: {type: python, function: "rankers:dense"}
        evaluators:
          - name: retrieval
            type: retrieval
            path: retrieved
            relevant_path: relevant
            metrics:
              - {metric: ndcg, k: 3, min: 0.5}
              - {metric: precision, k: 1}
        cases: cases.jsonl
    """)


def test_a_matrix_run_prints_and_reports_each_metrics_comparison(tmp_path):
    suite = _retrieval_matrix(tmp_path)
    results = tmp_path / "r.jsonl"
    ran = run_cli("run", suite, "-o", results, "--show-failures", "0", "--markdown", tmp_path / "r.md", "--html", tmp_path / "r.html")
    said = json.loads((tmp_path / "r.summary.json").read_text())
    comparison = said["comparisons"][0]
    assert (comparison["a"], comparison["b"]) == ("bm25", "dense")
    by_name = {metric["name"]: metric for metric in comparison["metrics"]}
    precision = by_name["retrieval: precision@1"]
    # 12 of 16 cases: bm25 ranks a wrong id first (precision@1 0 -> 1 with dense), the other 4 tie
    assert (precision["n"], precision["a"], precision["b"], precision["difference"]) == (16, 0.25, 1.0, 0.75)
    assert precision["p_value"] == 2 / 2**12 and precision["significant"]
    lines = comparison_lines(said)
    assert lines[0] == (comparison["text"], comparison["significant"])
    assert ("  " + precision["text"], True) in lines
    assert ran.returncode == 1, ran.stderr  # bm25's noisy rankings fail ndcg@3 >= 0.5
    assert "  " + precision["text"] in ran.stdout.splitlines()  # indented under its comparison
    markdown = (tmp_path / "r.md").read_text().splitlines()
    assert "  - **retrieval: precision@1 +0.750 (95% CI +0.562 to +0.938), sign-flip p \\< 0.001**" in markdown  # a nested item
    html = (tmp_path / "r.html").read_text()
    assert '<li class="significant metric">retrieval: precision@1 +0.750 (95% CI +0.562 to +0.938), sign-flip p &lt; 0.001</li>' in html
    reported = json.loads(run_cli("report", results, "--json").stdout)
    assert reported["comparisons"] == said["comparisons"]  # the same figures from the results alone


def test_compare_between_runs_and_between_cells_pairs_each_metric(tmp_path):
    suite = _retrieval_matrix(tmp_path)
    results = tmp_path / "r.jsonl"
    run_cli("run", suite, "-o", results)
    cells = json.loads(run_cli("compare", results, "--cells", "bm25", "dense", "--format", "json").stdout)
    said = json.loads((tmp_path / "r.summary.json").read_text())
    assert cells["statistics"][0]["metrics"] == said["comparisons"][0]["metrics"]  # the run's own figures, from the file
    printed = run_cli("compare", results, "--cells", "bm25", "dense").stdout.splitlines()
    assert any(line.startswith("  retrieval: precision@1 +0.750 (95% CI") for line in printed)
    # two runs of the same cells: each cell against itself, metric by metric (no difference here)
    between = json.loads(run_cli("compare", results, results, "--format", "json").stdout)
    metrics = between["statistics"][0]["metrics"]
    assert [m["name"] for m in metrics] == ["retrieval", "retrieval: ndcg@3", "retrieval: precision@1"]
    assert all(m["difference"] == 0.0 and m["p_value"] == 1.0 for m in metrics)
