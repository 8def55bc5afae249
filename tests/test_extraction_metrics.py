"""field_confusion, line_items, dataset-level P/R/F1, and the example judges agreeing with them."""

import json
from pathlib import Path

import pytest

from agenteval.evaluators import EvalContext
from agenteval.evaluators.confusion import FieldConfusion, classify
from agenteval.evaluators.line_items import LineItems, item_similarity
from agenteval.pairing import greedy_pairs, optimal_pairs
from agenteval.metrics import metrics_row, prf

from conftest import EXAMPLES, read_jsonl, run_cli


def ctx(output, expected):
    return EvalContext("c", None, expected, output, {}, Path("."))


# --- confusion rules ---------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("expected", "candidate", "outcome"),
    [
        ("INV-1", "INV-1", "tp"),
        (None, None, "tn"),
        ("", "   ", "tn"),
        ("INV-1", "INV-2", "fp+fn"),
        (None, "INV-2", "fp"),
        ("  ", "INV-2", "fp"),
        ("INV-1", None, "fn"),
        ("INV-1", "", "fn"),
        (100, 100.0, "tp"),
        (100, "100", "fp+fn"),
        (True, 1, "fp+fn"),
        ({"a": [1, 2]}, {"a": [1, 2]}, "tp"),
    ],
)
def test_header_confusion_rules(expected, candidate, outcome):
    assert classify(expected, candidate) == outcome


def test_precision_recall_f1_are_undefined_only_when_their_denominator_is_zero():
    assert prf(3, 1, 1) == (0.75, 0.75, 0.75)
    assert prf(0, 0, 0) == (None, None, None)
    assert prf(0, 0, 2) == (None, 0.0, 0.0)  # nothing predicted: precision undefined, F1 is 0
    assert prf(0, 1, 1) == (0.0, 0.0, 0.0)
    assert metrics_row({"tn": 4}) == {"tp": 0, "fp": 0, "fn": 0, "tn": 4, "precision": None, "recall": None, "f1": None}


def test_field_confusion_scores_macro_f1_per_case():
    evaluator = FieldConfusion.model_validate({"type": "field_confusion", "fields": ["n", "d", "v", "t", "po"]})
    result = evaluator.evaluate(ctx(
        {"n": "B-200", "d": "", "v": "Fabrikam Incorporated", "t": 150.0, "po": "PO-99"},
        {"n": "B-200", "d": "2024-03-05", "v": "Fabrikam Inc", "t": 150.0, "po": None},
    ))
    assert result.score == pytest.approx(2 / 5)
    assert result.verdict == "partial"
    assert result.hits == ["n", "t"]
    assert result.misses == ["d (missing value)", "v (wrong value)", "po (unexpected value)"]
    metrics = result.details["metrics"]
    assert {k: (m["tp"], m["fp"], m["fn"], m["tn"]) for k, m in metrics.items()} == {
        "n": (1, 0, 0, 0), "d": (0, 0, 1, 0), "v": (0, 1, 1, 0), "t": (1, 0, 0, 0), "po": (0, 1, 0, 0),
    }
    assert result.details["mismatches"][1] == {"field": "v", "outcome": "fp+fn", "expected": "Fabrikam Inc", "actual": "Fabrikam Incorporated"}


def test_field_confusion_all_rightly_empty_scores_one_and_caps_examples():
    evaluator = FieldConfusion.model_validate({"type": "field_confusion", "fields": ["a", "b"]})
    assert evaluator.evaluate(ctx({}, {"a": None})).score == 1.0
    capped = FieldConfusion.model_validate({"type": "field_confusion", "fields": ["a", "b", "c"], "max_examples": 1})
    result = capped.evaluate(ctx({"a": 1, "b": 1, "c": 1}, {"a": 2, "b": 2, "c": 2}))
    assert len(result.details["mismatches"]) == 1 and result.details["mismatches_cut"] == 2
    assert result.verdict == "fail" and result.score == 0.0


# --- line items --------------------------------------------------------------------------------

def test_item_similarity_uses_levenshtein_for_text_and_equality_otherwise():
    assert item_similarity({"description": "Cable USB-C"}, {"description": "cable usb c"}, ["description"]) == pytest.approx(10 / 11)
    assert item_similarity({"sku": 12}, {"sku": 12.0}, ["sku"]) == 1.0
    assert item_similarity({"sku": 12, "d": "x"}, {"sku": 13, "d": "x"}, ["sku", "d"]) == 0.5
    assert item_similarity("not an item", {"d": "x"}, ["d"]) == 0.0


def test_dates_pair_by_calendar_date_not_by_text_similarity():
    assert item_similarity({"date": "2024-01-15"}, {"date": "2024-01-16"}, ["date"]) == 0.0
    assert item_similarity({"date": "2024-01-15"}, {"date": "Jan 15, 2024"}, ["date"]) == 1.0
    assert item_similarity({"date": "15.01.2024"}, {"date": "2024-01-15"}, ["date"]) == 1.0
    # text that merely contains digits is still text
    assert item_similarity({"d": "Cable 2m"}, {"d": "Cable 3m"}, ["d"]) == pytest.approx(7 / 8)


def test_line_items_never_pair_items_of_different_dates():
    expected = {"line_items": [{"date": "2024-01-15", "amount": 10}, {"date": "2024-02-01", "amount": 20}]}
    output = {"line_items": [{"date": "2024-01-16", "amount": 10}, {"date": "Feb 1, 2024", "amount": 20}]}
    result = LineItems.model_validate({"type": "line_items", "match_fields": ["date"]}).evaluate(ctx(output, expected))
    assert result.details["alignment"] == [{"expected": 1, "candidate": 1, "similarity": 1.0}]
    assert result.details["unmatched_expected"] == [0] and result.details["unmatched_candidate"] == [0]


def test_greedy_takes_the_best_pair_first_and_optimal_maximizes_the_total():
    matrix = [[0.9, 0.85], [0.85, 0.0]]
    assert greedy_pairs(matrix, 0.8) == [(0, 0, 0.9)]
    assert optimal_pairs(matrix, 0.8) == [(0, 1, 0.85), (1, 0, 0.85)]


def test_pairs_below_threshold_never_match():
    assert greedy_pairs([[0.79]], 0.8) == []
    assert optimal_pairs([[0.79]], 0.8) == []
    assert optimal_pairs([], 0.8) == []


def test_duplicates_pair_one_to_one():
    matrix = [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    assert greedy_pairs(matrix, 0.8) == [(0, 0, 1.0), (1, 1, 1.0)]


def items(*rows):
    return [dict(zip(("description", "quantity", "amount"), row)) for row in rows]


def test_reordered_items_score_perfectly():
    evaluator = LineItems.model_validate({"type": "line_items"})
    expected = {"line_items": items(("Widget large", 2, 100.0), ("Gadget small", 1, 200.0))}
    output = {"line_items": list(reversed(expected["line_items"]))}
    result = evaluator.evaluate(ctx(output, expected))
    assert (result.score, result.verdict) == (1.0, "pass")
    assert result.details["alignment"] == [{"expected": 0, "candidate": 1, "similarity": 1.0}, {"expected": 1, "candidate": 0, "similarity": 1.0}]


def test_merged_and_extra_items_count_as_fn_and_fp():
    evaluator = LineItems.model_validate({"type": "line_items"})
    expected = {"line_items": items(("Paper A4 box", 5, 100.0), ("Paper A3 box", 2, 80.0), ("Toner black", 1, 320.0))}
    output = {"line_items": items(("Paper A4 and A3 boxes", 7, 180.0), ("Toner black", 1, 320.0), ("Shipping", 1, 15.0))}
    result = evaluator.evaluate(ctx(output, expected))
    metrics = result.details["metrics"]
    for attribute in ("description", "quantity", "amount", "(items)"):
        assert (metrics[attribute]["tp"], metrics[attribute]["fp"], metrics[attribute]["fn"]) == (1, 2, 2), attribute
    assert result.score == pytest.approx(1 / 3)
    assert result.details["unmatched_expected"] == [0, 1] and result.details["unmatched_candidate"] == [0, 2]
    assert result.misses[:2] == ["2 expected item(s) unmatched", "2 extra candidate item(s)"]


def test_optimal_matching_recovers_pairs_greedy_misses():
    expected = {"line_items": [{"description": "Bolt M8 zinc"}, {"description": "Bolt M6 zinc"}]}
    output = {"line_items": [{"description": "Bolt M8 zin"}, {"description": "Bolt M8 zinc plated"}]}
    greedy = LineItems.model_validate({"type": "line_items", "threshold": 0.6}).evaluate(ctx(output, expected))
    optimal = LineItems.model_validate({"type": "line_items", "threshold": 0.6, "matching": "optimal"}).evaluate(ctx(output, expected))
    assert len(greedy.details["alignment"]) == 1
    assert len(optimal.details["alignment"]) == 2


def test_candidate_without_a_list_scores_zero_and_says_why():
    evaluator = LineItems.model_validate({"type": "line_items", "path": "invoice.items"})
    expected = {"invoice": {"items": items(("A", 1, 1.0))}}
    for output, why in (({}, "missing"), ({"invoice": {"items": "A x1"}}, "not a list")):
        result = evaluator.evaluate(ctx(output, expected))
        assert result.score == 0.0 and result.verdict == "fail"
        assert result.misses[0] == f"invoice.items ({why})"
    nothing = evaluator.evaluate(ctx({}, {}))
    assert nothing.misses == ["invoice.items (no expected list)"] and nothing.verdict == "fail"


def test_details_stay_bounded_and_say_what_was_cut():
    evaluator = LineItems.model_validate({"type": "line_items", "max_rows": 3})
    expected = {"line_items": [{"description": f"item number {i:03d}", "amount": i} for i in range(20)]}
    output = {"line_items": [{"description": f"item number {i:03d}", "amount": -1} for i in range(20)]}
    result = evaluator.evaluate(ctx(output, expected))
    assert len(result.details["alignment"]) == 3 and len(result.details["mismatches"]) == 3
    assert result.details["cut"] == {"alignment": 17, "mismatches": 17}


# --- the example suite: dataset-level numbers computed by hand ----------------------------------

@pytest.fixture(scope="module")
def lineitems_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r.jsonl"
    done = run_cli("run", EXAMPLES / "invoices-lineitems" / "suite.yaml", "-o", out)
    assert done.returncode == 1, done.stderr
    return read_jsonl(out), json.loads(out.with_name("r.summary.json").read_text())


def test_example_header_metrics_match_hand_computed_values(lineitems_run):
    _, summary = lineitems_run
    header = summary["dataset_metrics"]["header"]
    counts = {k: (v["tp"], v["fp"], v["fn"], v["tn"]) for k, v in header["attributes"].items()}
    assert counts == {
        "invoice.number": (4, 0, 0, 0), "invoice.date": (3, 0, 1, 0), "vendor.name": (3, 1, 1, 0),
        "invoice.total": (4, 0, 0, 0), "invoice.po_number": (1, 1, 1, 1),
    }
    date = header["attributes"]["invoice.date"]
    assert (date["precision"], date["recall"], date["f1"]) == (1.0, 0.75, pytest.approx(6 / 7))
    assert header["macro_f1"] == pytest.approx((1 + 6 / 7 + 0.75 + 1 + 0.5) / 5)


def test_example_line_item_metrics_match_hand_computed_values(lineitems_run):
    _, summary = lineitems_run
    items = summary["dataset_metrics"]["items"]
    counts = {k: (v["tp"], v["fp"], v["fn"]) for k, v in items["attributes"].items()}
    assert counts == {"description": (5, 3, 4), "quantity": (6, 2, 3), "amount": (5, 3, 4), "(items)": (6, 2, 3)}
    assert items["attributes"]["description"]["f1"] == pytest.approx(10 / 17)
    assert items["macro_f1"] == pytest.approx((10 / 17 + 12 / 17 + 10 / 17 + 12 / 17) / 4)


def test_example_per_case_scores(lineitems_run):
    lines, _ = lineitems_run
    scores = {line["case_id"]: {e["name"]: e["score"] for e in line["evaluator_results"]} for line in lines}
    assert {case: round(s["header"], 4) for case, s in scores.items()} == {"A": 1.0, "B": 0.4, "C": 0.8, "D": 1.0}
    assert {case: round(s["items"], 4) for case, s in scores.items()} == {"A": 1.0, "B": 0.6667, "C": 0.3333, "D": 0.75}


def test_example_judges_give_the_same_numbers_as_the_built_ins(lineitems_run):
    lines, summary = lineitems_run
    for line in lines:
        results = {e["name"]: e for e in line["evaluator_results"]}
        for builtin, judge in (("header", "header_judge"), ("items", "items_judge")):
            assert results[judge]["error"] is None, results[judge]["error"]
            assert results[judge]["score"] == pytest.approx(results[builtin]["score"]), (line["case_id"], builtin)
            assert results[judge]["details"]["metrics"] == results[builtin]["details"]["metrics"]
        assert results["items_judge"]["details"]["alignment"] == results["items"]["details"]["alignment"]
    metrics = summary["dataset_metrics"]
    assert metrics["header_judge"] == metrics["header"]
    assert metrics["items_judge"] == metrics["items"]


def test_report_shows_dataset_metrics_from_the_results_file(lineitems_run, tmp_path):
    lines, summary = lineitems_run
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = run_cli("report", path, "--json")
    assert json.loads(done.stdout)["dataset_metrics"] == summary["dataset_metrics"]
    table = run_cli("report", path).stdout
    assert "Dataset metrics: header" in table and "invoice.po_number" in table and "macro-F1 0.821" in table


@pytest.mark.parametrize("judge", ["fuzzy_match.py", "multi_field_fuzzy.py", "header_confusion.py", "line_items.py"])
def test_example_judges_run_on_their_own(judge):
    import subprocess
    import sys

    payload = {
        "protocol": 1, "case_id": "x", "input": None, "metadata": {},
        "candidate_answer": {"vendor": {"name": "Acme Corp."}, "line_items": [{"description": "A"}]},
        "reference_answer": {"vendor": {"name": "ACME CORP"}, "line_items": [{"description": "A"}]},
        "config": {"path": "vendor.name", "fields": (["vendor.name"] if judge == "header_confusion.py" else [{"path": "vendor.name"}])},
    }
    if judge == "line_items.py":
        payload["config"] = {}
    done = subprocess.run([sys.executable, str(EXAMPLES / "judges" / judge)], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert 0.0 <= answer["score"] <= 1.0
    expected_scores = {"fuzzy_match.py": 0.9, "multi_field_fuzzy.py": 0.9, "header_confusion.py": 0.0, "line_items.py": 1.0}
    assert answer["score"] == pytest.approx(expected_scores[judge])


def test_similarity_matrix_equals_item_similarity_of_every_pair():
    from agenteval.evaluators.line_items import similarity_matrix

    values = ["Cable USB-C", "cable usb c", "2024-01-15", "Jan 15, 2024", "2024-01-16", 12, 12.0, True, 1, None, "  ",
              [1, 2], [True, 2], {"a": 1}, "Cafe\u0301", "Café", float("nan"), "Widget 12 mm"]
    items = [{"d": value, "e": values[-1 - i]} for i, value in enumerate(values)] + ["not an item"]
    for form in ("nfc", "raw"):
        matrix = similarity_matrix(items, items[::-1], ["d", "e"], form)
        expected = [[item_similarity(a, b, ["d", "e"], form) for b in items[::-1]] for a in items]
        assert [value for row in matrix.tolist() for value in row] == pytest.approx([v for row in expected for v in row], abs=1e-12)
