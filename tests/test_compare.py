"""`agenteval compare BASE NEW`: per-case changes, aggregate deltas, and the CI gate's edge cases."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import EXAMPLES, read_jsonl, run_cli, write


def result(case_id, verdict, score, suite="s", run_id="base-run", evaluators=None):
    return {
        "run_id": run_id, "suite": suite, "case_id": case_id, "score": score, "verdict": verdict,
        "output": {}, "evaluator_results": evaluators or [], "error": "boom" if verdict == "error" else None,
        "duration_ms": 1.0, "tags": [], "metadata": {},
    }


def results_file(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def compare(tmp_path, base_rows, new_rows, *args):
    base = results_file(tmp_path / "base.jsonl", base_rows)
    new = results_file(tmp_path / "new.jsonl", [dict(row, run_id="new-run") for row in new_rows])
    done = run_cli("compare", base, new, "--format", "json", *args)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def ids(rows):
    return [row["case_id"] for row in rows]


def test_a_case_going_from_pass_to_fail_fails_the_gate(tmp_path):
    code, data = compare(tmp_path, [result("a", "pass", 1.0), result("b", "pass", 1.0)], [result("a", "fail", 0.5), result("b", "pass", 1.0)])
    assert code == 1
    assert data["regressions"] == [{
        "case_id": "a", "base_verdict": "pass", "new_verdict": "fail", "base_score": 1.0, "new_score": 0.5, "delta": -0.5,
        "reason": "fail (score 0.500)",  # no evaluator said more
    }]
    assert data["gate"]["passed"] is False
    assert data["gate"]["reasons"] == ["1 case went from pass to not passing (at most 0 allowed)"]
    assert data["unchanged"] == 1


def test_a_better_mean_never_hides_a_regression(tmp_path):
    base = [result("a", "pass", 1.0), result("b", "fail", 0.0), result("c", "fail", 0.0)]
    new = [result("a", "fail", 0.9), result("b", "pass", 1.0), result("c", "pass", 1.0)]
    code, data = compare(tmp_path, base, new)
    assert data["new"]["mean_score"] > data["base"]["mean_score"]
    assert code == 1
    assert ids(data["regressions"]) == ["a"] and ids(data["improvements"]) == ["b", "c"]


def test_max_regressions_allows_that_many(tmp_path):
    base = [result("a", "pass", 1.0), result("b", "pass", 1.0)]
    new = [result("a", "fail", 0.0), result("b", "fail", 0.0)]
    assert compare(tmp_path, base, new, "--max-regressions", "1")[0] == 1
    assert compare(tmp_path, base, new, "--max-regressions", "2")[0] == 0


def test_equal_scores_are_unchanged_and_pass(tmp_path):
    rows = [result("a", "pass", 1.0), result("b", "fail", 0.25), result("c", "error", 0.0)]
    code, data = compare(tmp_path, rows, rows)
    assert code == 0
    assert data["unchanged"] == 3
    assert data["regressions"] == data["improvements"] == data["score_changes"] == []
    assert data["gate"] == {"passed": True, "reasons": [], "max_regressions": 0, "tolerance": None, "regressions": 0, "score_drops": 0}


def test_a_case_removed_from_new_is_a_regression_when_it_passed(tmp_path):
    base = [result("kept", "pass", 1.0), result("gone-passing", "pass", 1.0), result("gone-failing", "fail", 0.0)]
    code, data = compare(tmp_path, base, [result("kept", "pass", 1.0)])
    assert code == 1
    assert ids(data["only_base"]) == ["gone-passing", "gone-failing"]
    assert data["regressions"] == [{
        "case_id": "gone-passing", "base_verdict": "pass", "new_verdict": None, "base_score": 1.0, "new_score": None, "delta": None,
        "reason": "missing from NEW",
    }]


def test_a_removed_case_that_failed_is_listed_but_does_not_gate(tmp_path):
    code, data = compare(tmp_path, [result("a", "pass", 1.0), result("b", "fail", 0.0)], [result("a", "pass", 1.0)])
    assert code == 0
    assert ids(data["only_base"]) == ["b"] and data["regressions"] == []


def test_a_case_added_in_new_is_listed_and_does_not_gate(tmp_path):
    code, data = compare(tmp_path, [result("a", "pass", 1.0)], [result("a", "pass", 1.0), result("new-failing", "fail", 0.0)])
    assert code == 0
    assert data["only_new"] == [{
        "case_id": "new-failing", "base_verdict": None, "new_verdict": "fail", "base_score": None, "new_score": 0.0, "delta": None,
    }]


def test_a_case_errored_in_new_is_a_regression(tmp_path):
    code, data = compare(tmp_path, [result("a", "pass", 1.0)], [result("a", "error", 0.0)])
    assert code == 1
    assert data["regressions"][0]["new_verdict"] == "error"


def test_a_case_errored_in_base_and_passing_now_is_an_improvement(tmp_path):
    code, data = compare(tmp_path, [result("a", "error", 0.0)], [result("a", "pass", 1.0)])
    assert code == 0
    assert ids(data["improvements"]) == ["a"]


def test_fail_to_error_with_a_lower_score_fails_the_default_gate(tmp_path):
    code, data = compare(tmp_path, [result("a", "fail", 0.5)], [result("a", "error", 0.0)])
    assert code == 1
    assert data["regressions"] == []
    assert ids(data["score_drops"]) == ["a"]
    assert data["gate"]["reasons"] == ["1 case score dropped with a worse verdict"]
    same_score = compare(tmp_path, [result("a", "fail", 0.0)], [result("a", "error", 0.0)])
    assert same_score[0] == 0


def test_tolerance_gates_score_drops_within_a_verdict(tmp_path):
    base, new = [result("a", "fail", 0.8)], [result("a", "fail", 0.7)]
    code, data = compare(tmp_path, base, new)
    assert code == 0 and ids(data["score_changes"]) == ["a"]
    assert abs(data["score_changes"][0]["delta"] + 0.1) < 1e-12
    assert compare(tmp_path, base, new, "--tolerance", "0.05")[0] == 1
    assert compare(tmp_path, base, new, "--tolerance", "0.1")[0] == 0  # exactly the tolerance is allowed


def test_a_truncated_new_reports_the_missing_cases_and_gates_on_them(tmp_path):
    rows = [result(f"c{i}", "pass", 1.0) for i in range(10)]
    base = results_file(tmp_path / "base.jsonl", rows)
    data = base.read_bytes()
    cut = data.index(b'"c6"')  # cut in the middle of the seventh line, as `head -c` would
    new = tmp_path / "part.jsonl"
    new.write_bytes(data[:cut])
    done = run_cli("compare", base, new)
    assert done.returncode == 1
    assert "Only in base (4)" in done.stdout
    for case_id in ("c6", "c7", "c8", "c9"):
        assert case_id in done.stdout
    assert "0 regressed" not in done.stdout and "4 regressed" in done.stdout
    assert "gate: FAILED: 4 cases went from pass to not passing" in done.stdout


def test_runs_of_two_different_suites_are_refused(tmp_path):
    # with no case id in common (sharing ids, they are compared: tests/test_compare_cells.py)
    base = results_file(tmp_path / "a.jsonl", [result("x", "pass", 1.0, suite="invoices")])
    new = results_file(tmp_path / "b.jsonl", [result("y", "pass", 1.0, suite="receipts")])
    done = run_cli("compare", base, new)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: BASE {base} holds suite 'invoices' and NEW {new} holds suite 'receipts', and no case id is in both; "
        "compare runs of the same cases"
    )


def test_duplicates_in_an_input_are_counted_once_with_a_warning(tmp_path):
    base = results_file(tmp_path / "base.jsonl", [result("a", "pass", 1.0)])
    new = results_file(tmp_path / "new.jsonl", [result("a", "pass", 1.0), result("a", "fail", 0.0)])
    done = run_cli("compare", base, new, "--format", "json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["new"]["counts"]["total"] == 1
    assert f"warning: NEW: 1 duplicate result skipped (e.g. case 'a' twice in {new})" in done.stderr


def test_update_baseline_copies_new_over_base_only_when_the_gate_passes(tmp_path):
    base = results_file(tmp_path / "base.jsonl", [result("a", "fail", 0.0)])
    better = results_file(tmp_path / "better.jsonl", [result("a", "pass", 1.0, run_id="better-run")])
    (tmp_path / "better.summary.json").write_text('{"run_id": "better-run"}')
    done = run_cli("compare", base, better, "--update-baseline")
    assert done.returncode == 0
    assert base.read_bytes() == better.read_bytes()
    assert json.loads((tmp_path / "base.summary.json").read_text()) == {"run_id": "better-run"}
    assert "baseline updated" in done.stderr

    worse = results_file(tmp_path / "worse.jsonl", [result("a", "fail", 0.0, run_id="worse-run")])
    done = run_cli("compare", base, worse, "--update-baseline")
    assert done.returncode == 1
    assert [row["run_id"] for row in read_jsonl(base)] == ["better-run"]
    assert "baseline kept" in done.stderr


def field_evaluator(hits, misses, metrics):
    rows = [{"path": p, "status": "hit", "score": 1.0} for p in hits] + [{"path": p, "status": "miss", "score": 0.0} for p in misses]
    return {
        "name": "header", "type": "field_accuracy", "score": len(hits) / (len(hits) + len(misses)),
        "verdict": "pass" if not misses else "partial", "hits": hits, "misses": misses,
        "details": {"fields": rows, "metrics": metrics},
    }


def test_evaluator_field_and_dataset_metric_deltas(tmp_path):
    base = [
        result("a", "pass", 1.0, evaluators=[field_evaluator(["x", "y"], [], {"x": {"tp": 1, "fp": 0, "fn": 0}})]),
        result("b", "fail", 0.5, evaluators=[field_evaluator(["x"], ["y"], {"x": {"tp": 1, "fp": 0, "fn": 0}})]),
    ]
    new = [
        result("a", "fail", 0.5, evaluators=[field_evaluator(["y"], ["x"], {"x": {"tp": 0, "fp": 1, "fn": 1}})]),
        result("b", "fail", 0.5, evaluators=[field_evaluator(["x"], ["y"], {"x": {"tp": 1, "fp": 0, "fn": 0}})]),
    ]
    code, data = compare(tmp_path, base, new)
    assert code == 1
    assert data["evaluators"]["header"]["pass_rate"] == {"base": 0.5, "new": 0.0, "delta": -0.5}
    assert data["fields"]["header"]["x"] == {"base": 1.0, "new": 0.5, "delta": -0.5}
    assert data["fields"]["header"]["y"] == {"base": 0.5, "new": 0.5, "delta": 0.0}
    # x: base TP 2 -> precision 1; new TP 1, FP 1, FN 1 -> precision 0.5, recall 0.5, F1 0.5
    assert data["dataset_metrics"]["header"]["attributes"]["x"]["precision"] == {"base": 1.0, "new": 0.5, "delta": -0.5}
    assert data["dataset_metrics"]["header"]["macro_f1"] == {"base": 1.0, "new": 0.5, "delta": -0.5}

    table = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl").stdout
    assert "Fields whose accuracy changed" in table and "-50.0 pts" in table
    markdown = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl", "--format", "markdown").stdout
    assert markdown.startswith("## agenteval compare: s\n")
    assert "| a | pass → fail | 1.000 → 0.500 | -0.500 |" in markdown
    assert "| header | x | 100.0% | 50.0% | -50.0 pts |" in markdown


def test_bad_options_and_inputs_are_usage_errors(tmp_path):
    rows = results_file(tmp_path / "r.jsonl", [result("a", "pass", 1.0)])
    assert run_cli("compare", rows, rows, "--format", "xml").returncode == 2
    assert run_cli("compare", rows, rows, "--tolerance", "-1").returncode == 2
    assert run_cli("compare", rows, rows, "--max-regressions", "-1").returncode == 2
    empty = write(tmp_path, "empty.jsonl", "")
    done = run_cli("compare", rows, empty)
    assert done.returncode == 2 and f"no result lines in {empty}" in done.stderr


def _judged(name, path, expected, actual, score):
    verdict = "pass" if expected == actual else "fail"
    return {
        "name": name, "type": "field_accuracy", "score": score, "verdict": verdict,
        "hits": [path] if verdict == "pass" else [], "misses": [] if verdict == "pass" else [path],
        "details": {"fields": [{"path": path, "status": "hit" if verdict == "pass" else "miss", "expected": expected, "actual": actual}]},
    }


def test_each_regression_says_why_its_first_miss_old_against_new(tmp_path):
    text_pass = {"name": "tone", "type": "equals", "score": 1.0, "verdict": "pass", "hits": [], "misses": []}
    text_fail = dict(text_pass, score=0.0, verdict="fail", misses=["answer does not equal 'short'"])
    base = [
        result("field", "pass", 1.0, evaluators=[_judged("header", "invoice.total", 15600.0, 15600.0, 1.0)]),
        result("text", "pass", 1.0, evaluators=[text_pass]),
        result("crash", "pass", 1.0),
        result("gone", "pass", 1.0),
        result("steady", "pass", 1.0),
    ]
    new = [
        result("field", "fail", 0.0, evaluators=[_judged("header", "invoice.total", 15600.0, 16500.0, 0.0)]),
        result("text", "fail", 0.0, evaluators=[text_fail]),
        dict(result("crash", "error", 0.0), error="target exited with code 1; stderr: boom"),
        result("steady", "pass", 1.0),
    ]
    code, data = compare(tmp_path, base, new)
    assert code == 1
    assert {row["case_id"]: row["reason"] for row in data["regressions"]} == {
        "field": "header: invoice.total: expected 15600.0; base got 15600.0, new got 16500.0",
        "text": "tone: answer does not equal 'short'; base: pass (1.000)",
        "crash": "error: target exited with code 1; stderr: boom",
        "gone": "missing from NEW",
    }
    assert all("reason" not in row for row in data["only_base"] if row["case_id"] != "gone")
    table = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl")
    assert table.returncode == 1
    assert "why: first miss, base against new" in table.stdout
    reasons, case = {}, None
    for line in table.stdout.split("Regressions", 1)[1].split("Only in base", 1)[0].splitlines():
        if line.startswith("│"):
            cells = [cell.strip() for cell in line.split("│")[1:-1]]
            case = cells[0] or case  # a wrapped reason goes on in the next lines, under an empty case cell
            reasons[case] = (reasons.get(case, "") + " " + cells[4]).strip()
    assert reasons["field"] == "header: invoice.total: expected 15600.0; base got 15600.0, new got 16500.0"
    assert reasons["gone"] == "missing from NEW"
    markdown = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl", "--format", "markdown").stdout
    assert "| field | pass → fail | 1.000 → 0.000 | -1.000 | header: invoice.total: expected 15600.0; base got 15600.0, new got 16500.0 |" in markdown
    assert "|---|---|--:|--:|---|" in markdown  # the reason is text, aligned left


# --- on a narrow terminal: every table fits, as `report`'s do (terminal.fitted_table) -------------

def compare_lines(*args, columns=None, code=1, cwd=None):
    """`agenteval compare ARGS` piped, `COLUMNS` set to `columns` (None: unset): its stdout's lines."""
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    done = subprocess.run([sys.executable, "-m", "agenteval", "compare", *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd)
    assert done.returncode == code, done.stderr
    return [line.rstrip() for line in done.stdout.splitlines()]


def table(lines, title):
    """The table titled `title`: (its header, each header cell's lines joined as they read, and its
    rows, each a list of cell texts; a row's wrapped lines stay apart, an empty first cell marks them)."""
    start = lines.index(title)
    end = next(index for index in range(start, len(lines)) if lines[index].startswith("└"))
    header = [[cell.strip() for cell in line.strip("┃").split("┃")] for line in lines[start:end] if line.startswith("┃")]
    rows = [[cell.strip() for cell in line.strip("│").split("│")] for line in lines[start:end] if line.startswith("│")]
    return [" ".join(word for word in column if word) for column in zip(*header)], rows


def check_fitted(lines, width, split=()):
    """Every line at most `width` wide but the paired statistics (one line each, as `report` prints
    its comparisons: a log reader greps for them), and no table split in two but those titled `split`."""
    paired = [line for line in lines if line.startswith(("paired: ", "  "))]
    assert paired
    assert all(len(line) <= width for line in lines if line not in paired), max((line for line in lines if line not in paired), key=len)
    assert [line for line in lines if " of 2)" in line] == [f"{title} ({number} of 2)" for title in split for number in (1, 2)], lines


def notes(lines):
    return [line.strip() for line in lines if line.strip().startswith("not shown at ")]


@pytest.fixture(scope="module")
def invoice_runs(tmp_path_factory):
    """examples/invoices as recorded, then a copy in which inv-001 has the wrong invoice number (a
    regression), inv-006 its total as a number (an improvement) and inv-008 another, longer id."""
    folder = tmp_path_factory.mktemp("invoices")
    for name in ("invoices", "judges"):
        shutil.copytree(EXAMPLES / name, folder / name)
    cases = [json.loads(line) for line in (folder / "invoices" / "cases.jsonl").read_text().splitlines()]
    for case in cases:
        if case["id"] == "inv-001":
            case["output"]["invoice"]["number"] = "INV-2024-0118"
        elif case["id"] == "inv-006":
            case["output"]["invoice"]["total"] = 7200.0
        elif case["id"] == "inv-008":
            case["id"] = "inv-009-credit-note-for-inv-008"
    (folder / "invoices" / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    for name, suite in (("base", EXAMPLES / "invoices" / "suite.yaml"), ("new", folder / "invoices" / "suite.yaml")):
        done = run_cli("run", suite, "-o", folder / f"{name}.jsonl", "-q")
        assert done.returncode == 1, done.stderr
    return folder / "base.jsonl", folder / "new.jsonl"


INVOICE_REASON = 'header: invoice.number: expected "INV-2024-0117"; base got "INV-2024-0117", new got "INV-2024-0118"'


def _check_invoice_compare(lines, width, base, new):
    check_fitted(lines, width)
    ids = [read_jsonl(path)[0]["run_id"] for path in (base, new)]
    what = [f"invoice-extraction: base {ids[0]} (8 cases) → new {ids[1]} (8 cases)"]
    headline = ["pass rate 37.5% → 37.5% (+0.0 pts), mean score 0.925 → 0.938 (+0.013)"]
    counts = ["2 regressed, 1 improved, 5 unchanged, 1 only in base, 1 only in new"]
    gate = ["gate: FAILED: 2 cases went from pass to not passing (at most 0 allowed)"]
    if width < 100:  # broken between its parts, never inside one
        what = [f"invoice-extraction: base {ids[0]} (8 cases)", f"→ new {ids[1]} (8 cases)"]
    if width == 60:
        headline = ["pass rate 37.5% → 37.5% (+0.0 pts),", "mean score 0.925 → 0.938 (+0.013)"]
        counts = ["2 regressed, 1 improved, 5 unchanged, 1 only in base,", "1 only in new"]
        gate = ["gate: FAILED: 2 cases went from pass to not passing (at most", "0 allowed)"]
    assert lines[:len(what) + len(headline)] == what + headline
    assert lines[-len(counts) - len(gate):] == counts + gate

    regressions, rows = table(lines, "Regressions (2)")
    why = {120: "why: first miss, base against new", 80: "why", 60: "why"}[width]
    shown = ["case", "verdict", "score", "delta", why] if width > 60 else ["case", "score", "delta", why]
    assert regressions == shown
    first = ["inv-001", "pass → fail", "1.000 → 0.938", "-0.062"] if width > 60 else ["inv-001", "1.000 → 0.938", "-0.062"]
    assert rows[0][:len(first)] == first
    reason = [row[-1] for row in rows[:next(i for i, row in enumerate(rows) if row[0] == "inv-008")]]
    assert " ".join(reason) == INVOICE_REASON  # free text wraps between words, all of it shown
    assert table(lines, "Improvements (1)") == (["case", "verdict", "score", "delta"], [["inv-006", "fail → pass", "0.815 → 0.982", "+0.167"]])
    only_new = table(lines, "Only in new (1)")
    if width > 60:
        assert only_new == (["case", "verdict", "score", "delta"], [["inv-009-credit-note-for-inv-008", "missing → pass", "n/a → 0.971", "n/a"]])
    else:  # the case id whole, with its scores; the verdict and a delta that is n/a in every row left out
        assert only_new == (["case", "score"], [["inv-009-credit-note-for-inv-008", "n/a → 0.971"]])

    evaluators, rows = table(lines, "Evaluators")
    assert rows[1] == {
        120: ["party_names", "75.0%", "75.0%", "+0.0 pts", "0.948", "0.948", "+0.000"],
        80: ["party_names", "75.0%", "75.0%", "+0.0 pts", "0.948", "+0.000"],
        60: ["party_names", "75.0%", "+0.0 pts", "0.948", "+0.000"],
    }[width]
    assert evaluators == {
        120: ["evaluator", "pass rate base", "new", "delta", "mean score base", "new", "delta"],
        80: ["evaluator", "rate base", "rate new", "rate Δ", "score new", "score Δ"],
        60: ["evaluator", "rate new", "rate Δ", "score new", "score Δ"],
    }[width]
    fields, rows = table(lines, "Fields whose accuracy changed")
    assert fields == (["evaluator", "field", "base", "new", "delta"] if width == 60 else ["evaluator", "field", "accuracy base", "new", "delta"])
    assert rows == [["header", "invoice.number", "87.5%", "75.0%", "-12.5 pts"], ["header", "invoice.total", "75.0%", "87.5%", "+12.5 pts"]]
    assert notes(lines) == {
        120: [],
        80: ["not shown at 80 columns: mean score base"],
        60: ["not shown at 60 columns: verdict", "not shown at 60 columns: verdict, delta",
             "not shown at 60 columns: pass rate base, mean score base"],
    }[width]


@pytest.mark.parametrize("width", [60, 80, 120])
def test_two_invoice_runs_compared_are_whole_and_readable_at_60_80_and_120_columns(invoice_runs, width):
    """As `report`: headers shorten first, then the least useful columns are left out (named under
    the table); the case id, its scores and the change stay, and no cell is cut."""
    base, new = invoice_runs
    lines = compare_lines(base, new, columns=width)
    _check_invoice_compare(lines, width, base, new)
    if width == 120:  # piped without COLUMNS: 120 wide, as `report`
        assert compare_lines(base, new) == lines


def test_on_a_60_column_terminal_compare_fits_it(invoice_runs):
    from test_reports import run_in_terminal

    base, new = invoice_runs
    code, screen = run_in_terminal("compare", base, new, columns=60)
    assert code == 1, screen
    _check_invoice_compare([line.rstrip() for line in screen.splitlines()], 60, base, new)
