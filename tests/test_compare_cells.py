"""`agenteval compare RUN --cells A B` (two cells of one run), matrix runs against matrix runs,
runs of differently named suites, and per-criterion rows: real result files, the real command."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import EXAMPLES, read_jsonl, run_cli
from test_compare import check_fitted, compare_lines, notes, table

from agenteval.statistics import compare_cells


def line(case_id, verdict, score, target=None, prompt=None, suite="qa", run_id="run-1", repetition=0, evaluators=None):
    return {
        "run_id": run_id, "suite": suite, "case_id": case_id, "score": score, "verdict": verdict,
        "output": {}, "evaluator_results": evaluators or [], "error": "boom" if verdict == "error" else None,
        "duration_ms": 1.0, "tags": [], "metadata": {}, "repetition": repetition, "target": target, "prompt": prompt,
    }


def results_file(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def cli_json(*args):
    done = run_cli(*args, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


# gpt-a passes a, b, c; gpt-b passes a, b, d: c regressed, d improved, b's score dropped
GRID = {
    "gpt-a": [("a", "pass", 1.0), ("b", "pass", 1.0), ("c", "pass", 1.0), ("d", "fail", 0.2)],
    "gpt-b": [("a", "pass", 1.0), ("b", "pass", 0.9), ("c", "fail", 0.4), ("d", "pass", 1.0)],
}


def grid_rows(prompt=None, run_id="run-1", grid=GRID):
    rows = []
    for case in range(4):  # interleaved, as a run writes them
        for target, cases in grid.items():
            case_id, verdict, score = cases[case]
            rows.append(line(case_id, verdict, score, target, prompt, run_id=run_id))
    return rows


def test_two_cells_of_one_run_are_compared_case_by_case(tmp_path):
    run = results_file(tmp_path / "grid.jsonl", grid_rows())
    code, data, _ = cli_json("compare", run, "--cells", "gpt-a", "gpt-b")
    assert code == 1
    assert data["cells"] == {"base": "gpt-a", "new": "gpt-b"}
    assert data["base"]["counts"] == {"total": 4, "passed": 3, "failed": 1, "errored": 0}
    assert data["new"]["counts"] == {"total": 4, "passed": 3, "failed": 1, "errored": 0}
    assert data["regressions"] == [{
        "case_id": "c", "base_verdict": "pass", "new_verdict": "fail", "base_score": 1.0, "new_score": 0.4,
        "delta": -0.6, "reason": "fail (score 0.400)",
    }]
    assert [row["case_id"] for row in data["improvements"]] == ["d"]
    assert [row["case_id"] for row in data["score_changes"]] == ["b"]
    assert data["unchanged"] == 1 and data["only_base"] == data["only_new"] == []
    expected = compare_cells("gpt-a", "gpt-b", [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.2], [1.0, 0.9, 0.4, 1.0], repeated=False)
    assert data["statistics"] == [json.loads(json.dumps(expected))]

    table = run_cli("compare", run, "--cells", "gpt-a", "gpt-b")
    assert table.returncode == 1
    assert "qa: run run-1, cell gpt-a (4 cases) → cell gpt-b (4 cases)" in table.stdout
    assert f"paired: {expected['text']}" in table.stdout
    assert "gate: FAILED: 1 case went from pass to not passing" in table.stdout
    markdown = run_cli("compare", run, "--cells", "gpt-a", "gpt-b", "--format", "markdown").stdout
    assert markdown.startswith("## agenteval compare: qa\n\nrun run-1, cell gpt-a (4 cases) → cell gpt-b (4 cases)\n")
    assert "| c | pass → fail | 1.000 → 0.400 | -0.600 |" in markdown


def test_the_gates_apply_to_a_cell_pair(tmp_path):
    run = results_file(tmp_path / "grid.jsonl", grid_rows(prompt="terse"))
    assert cli_json("compare", run, "--cells", "gpt-a/terse", "gpt-b/terse", "--max-regressions", "1")[0] == 0
    code, data, _ = cli_json("compare", run, "--cells", "gpt-a/terse", "gpt-b/terse", "--max-regressions", "1", "--tolerance", "0.05")
    assert code == 1
    assert [row["case_id"] for row in data["score_drops"]] == ["c", "b"]
    assert data["gate"]["reasons"] == ["2 case scores dropped more than 0.05"]
    # the other way round, d regressed and c improved
    code, data, _ = cli_json("compare", run, "--cells", "gpt-b/terse", "gpt-a/terse")
    assert code == 1 and [row["case_id"] for row in data["regressions"]] == ["d"]


def test_repetitions_are_paired_and_compared_as_pass_fractions(tmp_path):
    rows = []
    for repetition, (a_verdict, b_verdict) in enumerate([("pass", "pass"), ("pass", "fail"), ("fail", "fail")]):
        rows += [
            line("x", a_verdict, 1.0 if a_verdict == "pass" else 0.0, "gpt-a", repetition=repetition),
            line("x", b_verdict, 1.0 if b_verdict == "pass" else 0.0, "gpt-b", repetition=repetition),
            line("y", "pass", 1.0, "gpt-a", repetition=repetition),
            line("y", "pass", 1.0, "gpt-b", repetition=repetition),
        ]
    run = results_file(tmp_path / "repeat.jsonl", rows)
    code, data, stderr = cli_json("compare", run, "--cells", "gpt-a", "gpt-b")
    assert "duplicate" not in stderr
    assert code == 1
    assert data["base"]["counts"]["total"] == 6 and data["unchanged"] == 5
    assert data["regressions"] == [{
        "case_id": "x", "repetition": 1, "base_verdict": "pass", "new_verdict": "fail", "base_score": 1.0, "new_score": 0.0,
        "delta": -1.0, "reason": "fail (score 0.000)",
    }]
    expected = compare_cells("gpt-a", "gpt-b", [2 / 3, 1.0], [1 / 3, 1.0], [2 / 3, 1.0], [1 / 3, 1.0], repeated=True)
    assert data["statistics"] == [json.loads(json.dumps(expected))]
    table = run_cli("compare", run, "--cells", "gpt-a", "gpt-b").stdout
    assert "x (repetition 1)" in table


def test_an_unknown_cell_or_a_missing_new_is_a_usage_error(tmp_path):
    run = results_file(tmp_path / "grid.jsonl", grid_rows(prompt="terse"))
    done = run_cli("compare", run, "--cells", "gpt-a", "gpt-b/terse")
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: RUN {run} has no cell 'gpt-a' (its cells: 'gpt-a/terse', 'gpt-b/terse')"
    plain = results_file(tmp_path / "plain.jsonl", [line("a", "pass", 1.0)])
    done = run_cli("compare", plain, "--cells", "gpt-a", "gpt-b")
    assert done.returncode == 2
    assert "has no cell 'gpt-a' (its cells: none: its results name no target or prompt)" in done.stderr
    done = run_cli("compare", run)
    assert done.returncode == 2 and "give NEW.jsonl, or --cells A B to compare two cells of one run" in done.stderr
    done = run_cli("compare", run, "--cells", "gpt-a/terse", "gpt-b/terse", "--update-baseline")
    assert done.returncode == 2 and "--update-baseline" in done.stderr


def test_a_cell_of_base_against_a_cell_of_new(tmp_path):
    base = results_file(tmp_path / "base.jsonl", grid_rows())
    new = results_file(tmp_path / "new.jsonl", grid_rows(run_id="run-2"))
    code, data, _ = cli_json("compare", base, new, "--cells", "gpt-b", "gpt-b")
    assert code == 0 and data["unchanged"] == 4 and data["cells"] == {"base": "gpt-b", "new": "gpt-b"}
    table = run_cli("compare", base, new, "--cells", "gpt-a", "gpt-b").stdout
    assert "qa: base run-1 cell gpt-a (4 cases) → new run-2 cell gpt-b (4 cases)" in table


def test_two_matrix_runs_are_paired_by_case_and_cell(tmp_path):
    base = results_file(tmp_path / "base.jsonl", grid_rows())
    better_b = {"gpt-a": GRID["gpt-a"], "gpt-b": [("a", "pass", 1.0), ("b", "pass", 1.0), ("c", "pass", 1.0), ("d", "pass", 1.0)]}
    worse_a = {"gpt-a": [("a", "fail", 0.0), *GRID["gpt-a"][1:]], "gpt-b": GRID["gpt-b"]}
    new = results_file(tmp_path / "new.jsonl", grid_rows(run_id="run-2", grid=better_b))
    code, data, _ = cli_json("compare", base, new)
    assert code == 0
    assert [(row["case_id"], row["target"], row["prompt"]) for row in data["improvements"]] == [("c", "gpt-b", None)]
    assert [(row["case_id"], row["target"]) for row in data["score_changes"]] == [("b", "gpt-b")]
    assert data["unchanged"] == 6
    assert data["cell_deltas"]["gpt-b"]["pass_rate"] == {"base": 0.75, "new": 1.0, "delta": 0.25}
    assert data["cell_deltas"]["gpt-a"]["pass_rate"] == {"base": 0.75, "new": 0.75, "delta": 0.0}
    assert [row["text"] for row in data["statistics"]] == [
        compare_cells(f"base {target}", f"new {target}", *pairs, repeated=False)["text"]
        for target, pairs in (
            ("gpt-a", ([1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.2], [1.0, 1.0, 1.0, 0.2])),
            ("gpt-b", ([1.0, 1.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 0.9, 0.4, 1.0], [1.0, 1.0, 1.0, 1.0])),
        )
    ]
    worse = results_file(tmp_path / "worse.jsonl", grid_rows(run_id="run-3", grid=worse_a))
    done = run_cli("compare", base, worse)
    assert done.returncode == 1
    assert "a (gpt-a)" in done.stdout and "Cells" in done.stdout
    code, data, _ = cli_json("compare", base, worse)
    assert data["regressions"][0] == {
        "case_id": "a", "target": "gpt-a", "prompt": None, "base_verdict": "pass", "new_verdict": "fail",
        "base_score": 1.0, "new_score": 0.0, "delta": -1.0, "reason": "fail (score 0.000)",
    }


def test_a_matrix_run_against_a_run_of_other_cells_is_refused(tmp_path):
    base = results_file(tmp_path / "base.jsonl", grid_rows())
    plain = results_file(tmp_path / "plain.jsonl", [line(case_id, "pass", 1.0, run_id="run-2") for case_id in "abcd"])
    done = run_cli("compare", base, plain)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: BASE {base} (cells: gpt-a, gpt-b) and NEW {plain} (cells: (unnamed)) have no case in the same cell; "
        "compare runs of the same cells, or two cells with --cells A B"
    )
    # one cell of each: paired by case id whatever the cells are named
    one = results_file(tmp_path / "one.jsonl", [line(case_id, "pass", 1.0, "gpt-b", run_id="run-3") for case_id in "abcd"])
    code, data, _ = cli_json("compare", plain, one)
    assert code == 0 and data["unchanged"] == 4 and "cell_deltas" not in data


def test_differently_named_suites_are_compared_on_the_case_ids_they_share(tmp_path):
    base = results_file(tmp_path / "a.jsonl", [line("x", "pass", 1.0, suite="invoices"), line("y", "pass", 1.0, suite="invoices")])
    new = results_file(tmp_path / "b.jsonl", [
        line(case_id, "pass", 1.0, suite="invoices-v2", run_id="run-2") for case_id in ("x", "y", "z")
    ])
    code, data, stderr = cli_json("compare", base, new)
    assert code == 0
    assert stderr.strip() == (
        "warning: BASE holds suite 'invoices' and NEW holds suite 'invoices-v2'; 2 case ids in both are compared, "
        "the others are listed as only in base or only in new"
    )
    assert data["suite"] == "invoices" and data["new_suite"] == "invoices-v2"
    assert data["unchanged"] == 2 and [row["case_id"] for row in data["only_new"]] == ["z"]
    assert run_cli("compare", base, new).stdout.startswith("invoices → invoices-v2: base run-1 (2 cases) → new run-2 (3 cases)")
    other = results_file(tmp_path / "c.jsonl", [line("q", "pass", 1.0, suite="receipts")])
    done = run_cli("compare", base, other)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: BASE {base} holds suite 'invoices' and NEW {other} holds suite 'receipts', and no case id is in both; "
        "compare runs of the same cases"
    )


def judged(correct, concise):
    details = {"criteria": {
        "correct": {"score": correct, "raw_score": "pass" if correct else "fail", "reasoning": None},
        "concise": {"score": concise, "raw_score": 1 + 4 * concise, "reasoning": None},
    }}
    score = (correct + concise) / 2
    verdict = "pass" if score >= 1 else "fail" if score <= 0 else "partial"
    return [{"name": "quality", "type": "llm_judge", "score": score, "verdict": verdict, "hits": [], "misses": [], "details": details}]


def test_each_criterion_has_a_row_under_its_evaluator(tmp_path):
    rows = [
        line("a", "pass", 1.0, "gpt-a", evaluators=judged(1.0, 1.0)), line("a", "fail", 0.5, "gpt-b", evaluators=judged(1.0, 0.0)),
        line("b", "fail", 0.5, "gpt-a", evaluators=judged(0.0, 1.0)), line("b", "fail", 0.5, "gpt-b", evaluators=judged(0.0, 1.0)),
    ]
    run = results_file(tmp_path / "judged.jsonl", rows)
    _, data, _ = cli_json("compare", run, "--cells", "gpt-a", "gpt-b")
    criteria = data["evaluators"]["quality"]["criteria"]
    assert criteria["correct"] == {"pass_rate": {"base": 0.5, "new": 0.5, "delta": 0.0}, "mean_score": {"base": 0.5, "new": 0.5, "delta": 0.0}}
    assert criteria["concise"] == {"pass_rate": {"base": 1.0, "new": 0.5, "delta": -0.5}, "mean_score": {"base": 1.0, "new": 0.5, "delta": -0.5}}
    markdown = run_cli("compare", run, "--cells", "gpt-a", "gpt-b", "--format", "markdown").stdout
    evaluators = markdown[markdown.index("### Evaluators"):].splitlines()
    assert evaluators[4] == "| quality | 50.0% | 0.0% | -50.0 pts | 0.750 | 0.500 | -0.250 |"
    assert evaluators[5] == "| quality: correct | 50.0% | 50.0% | +0.0 pts | 0.500 | 0.500 | +0.000 |"
    assert evaluators[6] == "| quality: concise | 100.0% | 50.0% | -50.0 pts | 1.000 | 0.500 | -0.500 |"


def test_a_real_matrix_run_compared_cell_against_cell(tmp_path):
    (tmp_path / "agents.py").write_text(
        "def good(x):\n    return 'Paris'\n\n\ndef bad(x):\n    return 'Lyon' if x == 'b' else 'Paris'\n"
    )
    (tmp_path / "suite.yaml").write_text("""
name: capitals
targets:
  good: {type: python, function: "agents:good"}
  bad: {type: python, function: "agents:bad"}
evaluators:
  - {name: exact, type: equals, reference: Paris}
cases:
  - {id: a, input: a}
  - {id: b, input: b}
  - {id: c, input: c}
""")
    done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    code, data, _ = cli_json("compare", tmp_path / "r.jsonl", "--cells", "good", "bad")
    assert code == 1
    assert [(row["case_id"], row["reason"]) for row in data["regressions"]] == [
        ("b", "exact: answer does not equal 'Paris'; base: pass (1.000); new answer: \"Lyon\""),  # the text answer too, on one line
    ]
    assert data["unchanged"] == 2
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    pair = next(row for row in summary["comparisons"] if {row["a"], row["b"]} == {"good", "bad"})
    assert data["statistics"][0]["n"] == pair["n"] == 3


# --- on a narrow terminal ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def matrix_runs(tmp_path_factory):
    """examples/compare-models from its cache, twice: as it is, and with `brief` at 8 words (its
    careful prompt's sentences fail it: regressions in two cells of four)."""
    folder = tmp_path_factory.mktemp("matrix")
    shutil.copytree(EXAMPLES / "compare-models", folder / "examples" / "compare-models", ignore=shutil.ignore_patterns("agenteval-results"))
    env = {key: value for key, value in os.environ.items() if key != "COMPARE_MODELS_BASE_URL"}  # the cache is keyed by the default
    for name, more in (("base", []), ("new", ["--set", "evaluators[1].max=8"])):
        done = subprocess.run([sys.executable, "-m", "agenteval", "run", "examples/compare-models/suite.yaml", "-q", "-o", f"{name}.jsonl", *more],
                              cwd=folder, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stderr
    return folder / "base.jsonl", folder / "new.jsonl"


CELLS = ("small/terse", "small/careful", "large/terse", "large/careful")


@pytest.mark.parametrize("width", [60, 80])
def test_two_matrix_runs_compared_on_a_narrow_terminal_keep_cases_and_cells_whole(matrix_runs, width):
    lines = compare_lines(*matrix_runs, columns=width)
    check_fitted(lines, width, split=["Regressions (11)"] if width == 60 else [])
    if width == 80:  # the verdict left out, the reason wraps beside the case
        header, rows = table(lines, "Regressions (11)")
        assert header == ["case", "score", "delta", "why"]
    else:  # too narrow for a case of a cell beside its reason: the reasons in a table of their own, each by its case
        header, rows = table(lines, "Regressions (11) (1 of 2)")
        assert header == ["case", "score", "delta"]
        reasons = table(lines, "Regressions (11) (2 of 2)")
        assert reasons[0] == ["case", "why"]
        assert [row[0] for row in reasons[1] if row[0]] == [row[0] for row in rows]
        first = [row[1] for row in reasons[1][:next(i for i, row in enumerate(reasons[1]) if i and row[0])]]
        assert " ".join(first) == 'brief: content has 9 words, more than 8; base: pass (1.000); new answer: "The Amazon is the longest river in South America."'
    cases = [row[0] for row in rows if row[0]]
    assert len(cases) == 11 and all(re.fullmatch(r"[a-z-]+ \((small|large)/careful\)", case) for case in cases), cases
    assert [row[1:3] for row in rows if row[0]] == [["1.000 → 0.500", "-0.500"]] * 11
    assert {"amazon (large/careful)", "amazon (small/careful)", "photosynthesis (small/careful)"} <= set(cases)
    header, rows = table(lines, "Cells")
    assert [row[0] for row in rows] == list(CELLS)
    if width == 80:
        assert header == ["cell", "rate base", "rate new", "rate Δ", "score new", "score Δ"]
        assert rows[1] == ["small/careful", "65.0%", "40.0%", "-25.0 pts", "0.675", "-0.125"]
    else:  # its last headers fold between their words, never inside one
        assert header == ["cell", "rate new", "rate Δ", "score new", "score Δ"]
        assert rows[1] == ["small/careful", "40.0%", "-25.0 pts", "0.675", "-0.125"]
    assert notes(lines) == {
        80: ["not shown at 80 columns: verdict", "not shown at 80 columns: mean score base", "not shown at 80 columns: mean score base"],
        60: ["not shown at 60 columns: verdict", "not shown at 60 columns: pass rate base, mean score base",
             "not shown at 60 columns: pass rate base, mean score base"],
    }[width]


def test_two_cells_compared_at_60_columns(matrix_runs):
    base, _ = matrix_runs
    lines = compare_lines(base, "--cells", "small/terse", "large/careful", columns=60, code=0)
    check_fitted(lines, 60)
    assert lines[:2] == [f"compare-models: run {read_jsonl(base)[0]['run_id']},", "cell small/terse (20 cases) → cell large/careful (20 cases)"]
    header, rows = table(lines, "Improvements (7)")
    assert header == ["case", "verdict", "score", "delta"]
    assert rows[0] == ["au-capital", "fail → pass", "0.500 → 1.000", "+0.500"] and len(rows) == 7
    header, rows = table(lines, "Evaluators")
    assert header == ["evaluator", "rate new", "rate Δ", "score new", "score Δ"]
    assert rows == [["correct", "100.0%", "+35.0 pts", "1.000", "+0.350"], ["brief", "100.0%", "+0.0 pts", "1.000", "+0.000"]]
    assert notes(lines) == ["not shown at 60 columns: pass rate base, mean score base"]
