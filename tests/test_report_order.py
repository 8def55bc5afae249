"""What a run said is what its reports say: cells and comparisons keep the suite's order and
direction in the run, `report` (from the file and from a store), the HTML report and `compare`,
and every statistic is a function of the cases, not of the order they finished in."""

from __future__ import annotations

import json
import random
import shutil

from conftest import run_cli, write
from test_html_report import Page, browser  # noqa: F401 (the module's browser fixture, reused)

# Declared zeta, mid, alpha: neither alphabetical nor (with random delays) the order cells finish in.
ORDER = ["zeta", "mid", "alpha"]
DIRECTIONS = [("zeta", "mid"), ("zeta", "alpha"), ("mid", "alpha")]  # (baseline a, b): the earlier cell is the baseline


def _matrix_suite(folder):
    write(folder, "answers.py", """
        import random, time

        def _answer(case, right):
            time.sleep(random.random() / 200)  # cases and cells finish in any order
            n = case["n"]
            return {f"f{k}": n if (n * 7 + k * 3) % 10 < right else -1 for k in range(5)}

        def zeta(case): return _answer(case, 4)
        def mid(case): return _answer(case, 6)
        def alpha(case): return _answer(case, 8)
    """)
    cases = "".join(json.dumps({"id": f"c{n:02d}", "input": {"n": n}, "expected": {f"f{k}": n for k in range(5)}}) + "\n" for n in range(30))
    write(folder, "cases.jsonl", cases)
    return write(folder, "suite.yaml", """
        name: order
        targets:
          zeta: {type: python, function: "answers:zeta"}
          mid: {type: python, function: "answers:mid"}
          alpha: {type: python, function: "answers:alpha"}
        evaluators:
          - {type: field_accuracy, name: fields, fields: [{path: f0}, {path: f1}, {path: f2}, {path: f3}, {path: f4}]}
        cases: cases.jsonl
    """)


def _reversed(results, folder, name):
    """The same results, last case first and the cells in alphabetical order (alpha, mid, zeta: as
    a report that sorted or kept the order of the lines would show them), with the run's summary beside them."""
    lines = results.read_text().splitlines(keepends=True)
    lines.sort(key=lambda line: (json.loads(line)["target"], [-ord(c) for c in json.loads(line)["case_id"]]))
    copy = folder / f"{name}.jsonl"
    copy.write_text("".join(lines))
    shutil.copy(results.with_name(results.name.replace(".jsonl", ".summary.json")), folder / f"{name}.summary.json")
    return copy


def _directions(summary):
    return [(item["a"], item["b"]) for item in summary["comparisons"]]


def test_report_of_a_matrix_run_keeps_the_suites_cell_order_and_direction(tmp_path):
    suite = _matrix_suite(tmp_path)
    results = tmp_path / "r.jsonl"
    ran = run_cli("run", suite, "-o", results, "--show-failures", "0")
    assert ran.returncode == 1, ran.stderr
    said = json.loads((tmp_path / "r.summary.json").read_text())
    assert [cell["label"] for cell in said["cells"]] == ORDER
    assert _directions(said) == DIRECTIONS
    printed = [line.rstrip() for line in ran.stdout.splitlines()]
    first = printed.index("Comparisons") + 1
    texts = [item["text"] for item in said["comparisons"] if item["significant"]] + [item["text"] for item in said["comparisons"] if not item["significant"]]
    assert printed[first:first + 3] == texts
    for source in (results, _reversed(results, tmp_path, "backwards")):
        reported = json.loads(run_cli("report", source, "--json").stdout)
        assert [cell["label"] for cell in reported["cells"]] == ORDER
        assert reported["comparisons"] == said["comparisons"]  # the same direction, texts, p-values and intervals
        table = [line.rstrip() for line in run_cli("report", source, "--show-failures", "0").stdout.splitlines()]
        rows = [line.strip("│ ").split()[0] for line in table[table.index("Cells") + 4:] if line.startswith("│")][:3]
        assert rows == ORDER
        assert table[table.index("Comparisons") + 1:table.index("Comparisons") + 4] == printed[first:first + 3]


def test_report_from_a_store_keeps_the_suites_cell_order(tmp_path):
    suite = _matrix_suite(tmp_path)
    ran = run_cli("run", suite, "--store", f"sqlite:///{tmp_path / 'runs.db'}", "--show-failures", "0")
    assert ran.returncode == 1, ran.stderr
    reported = json.loads(run_cli("report", "latest", "--store", f"sqlite:///{tmp_path / 'runs.db'}", "--json").stdout)
    assert [cell["label"] for cell in reported["cells"]] == ORDER
    assert _directions(reported) == DIRECTIONS


def test_compare_of_two_matrix_runs_pairs_cells_in_the_suites_order(tmp_path):
    suite = _matrix_suite(tmp_path)
    results = tmp_path / "r.jsonl"
    assert run_cli("run", suite, "-o", results).returncode == 1
    backwards = _reversed(results, tmp_path, "backwards")
    compared = json.loads(run_cli("compare", backwards, results, "--format", "json").stdout)
    assert [item["a"] for item in compared["statistics"]] == [f"base {label}" for label in ORDER]
    assert list(compared["cell_deltas"]) == ORDER


def test_the_html_side_by_side_columns_follow_the_suites_order(browser, tmp_path):  # noqa: F811
    suite = _matrix_suite(tmp_path)
    results = tmp_path / "r.jsonl"
    assert run_cli("run", suite, "-o", results).returncode == 1
    backwards = _reversed(results, tmp_path, "backwards")
    assert run_cli("report", backwards, "--format", "html", "-o", tmp_path / "r.html").returncode == 1
    page = Page(browser, tmp_path / "r.html")
    try:
        headers = [cell.inner_text() for cell in page.page.query_selector_all("#comparison-table thead th")]
        assert headers == ["case", *ORDER]
        options = [option.inner_text() for option in page.page.query_selector_all("#cell option")]
        assert options == ["all cells", *ORDER]
        cells = [row.inner_text().split("\t")[0] for row in page.page.query_selector_all("#cells tbody tr")]
        assert cells == ORDER
        row = page.page.query_selector("#comparison-table tbody tr.compared")
        case = row.get_attribute("data-case")
        lines = [json.loads(line) for line in results.read_text().splitlines()]
        verdicts = {line["target"]: line["verdict"] for line in lines if line["case_id"] == case}
        assert [side.query_selector(".v").inner_text() for side in row.query_selector_all("td.side")] == [verdicts[t] for t in ORDER]
        assert page.problems == []
    finally:
        page.close()


# --- statistics of the cases, not of their order ------------------------------------------------------


def _line(case_id, target, score):
    verdict = "pass" if score >= 1 else "fail"
    evaluator = {"name": "fields", "type": "field_accuracy", "score": score, "verdict": verdict if score in (0, 1) else "partial"}
    return {"run_id": "r1", "suite": "s", "case_id": case_id, "score": score, "verdict": verdict, "output": None,
            "evaluator_results": [evaluator], "duration_ms": 1.0, "target": target}


def test_a_reversed_results_file_gives_identical_p_values_and_intervals(tmp_path):
    """60 cases with graded scores: past 16 nonzero differences the sign-flip test samples sign
    patterns, and those were drawn over the cases in the order they finished."""
    rng = random.Random(5)
    lines = []
    for n in range(60):
        base = rng.randrange(11) / 10
        lines += [_line(f"c{n:02d}", "a", base), _line(f"c{n:02d}", "b", min(1.0, max(0.0, base + rng.choice((-3, -1, 1, 2, 3, 4)) / 10)))]
    rng.shuffle(lines)
    forward, backward = tmp_path / "f.jsonl", tmp_path / "b.jsonl"
    forward.write_text("".join(json.dumps(line) + "\n" for line in lines))
    backward.write_text("".join(json.dumps(line) + "\n" for line in reversed(lines)))
    one, other = (json.loads(run_cli("report", path, "--json").stdout)["comparisons"] for path in (forward, backward))
    assert len(one) == 1 and one[0]["n"] == 60
    assert one[0]["mean_score"]["p_value"] < 1 and one[0]["mean_score"]["low"] < one[0]["mean_score"]["high"]
    assert one == other  # same p-values, intervals and text, to the last digit
    first, second = (json.loads(run_cli("compare", path, "--cells", "a", "b", "--format", "json").stdout)["statistics"] for path in (forward, backward))
    assert first == second and first[0]["mean_score"]["p_value"] == one[0]["mean_score"]["p_value"]


def test_differences_are_exact_decimals_of_the_counts_and_noise_still_shows_its_figures(tmp_path):
    lines = [_line(f"c{n}", "a", 1.0) for n in range(10)] + [_line(f"c{n}", "b", 1.0 if n < 7 else 0.0) for n in range(10)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run_cli("report", tmp_path / "r.jsonl", "--json")
    [comparison] = json.loads(done.stdout)["comparisons"]
    assert comparison["pass_rate"]["difference"] == -0.3 and comparison["mean_score"]["difference"] == -0.3
    assert '"difference": -0.3,' in done.stdout and "0.30000000000000004" not in done.stdout
    assert comparison["significant"] is False
    low, high = comparison["pass_rate"]["low"], comparison["pass_rate"]["high"]
    assert comparison["text"] == (
        f"b vs a: no detectable difference (n = 10): pass rate -30.0 points (95% CI {low * 100:+.1f} to {high * 100:+.1f}), "
        "McNemar p = 0.250, not significant"
    )
    shown = run_cli("report", tmp_path / "r.jsonl").stdout.splitlines()
    assert shown[shown.index("Comparisons") + 1] == comparison["text"]


def test_cells_whose_every_case_errored_are_not_compared_as_statistics(tmp_path):
    broken = {"run_id": "r1", "suite": "s", "score": 0.0, "verdict": "error", "error": "no API key", "evaluator_results": [], "target": "b"}
    lines = [_line(f"c{n}", "a", 1.0 if n % 3 else 0.0) for n in range(10)] + [{**broken, "case_id": f"c{n}"} for n in range(10)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    [comparison] = json.loads(run_cli("report", tmp_path / "r.jsonl", "--json").stdout)["comparisons"]
    assert comparison == {
        "a": "a", "b": "b", "n": 10, "pass_rate": None, "mean_score": None, "mcnemar": None, "significant": False,
        "not_compared": "every case of b errored", "text": "b vs a: not compared, every case of b errored",
    }
    shown = run_cli("report", tmp_path / "r.jsonl").stdout
    assert "b vs a: not compared, every case of b errored" in shown and "no detectable difference" not in shown
    [paired] = json.loads(run_cli("compare", tmp_path / "r.jsonl", "--cells", "a", "b", "--format", "json").stdout)["statistics"]
    assert paired["text"] == "b vs a: not compared, every case of b errored" and paired["pass_rate"] is None
