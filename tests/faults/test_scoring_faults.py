"""Hostile answers against the scoring core: field matchers, paths, pairing and line items.

Each test runs the real `agenteval` command on real files: an answer (or a reference) built to
cost a lot, or to slip through a comparison, is scored in bounded time and memory and gets the
verdict it deserves: an `error` naming the limit it went past, or the miss it is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import MEASURE, read_jsonl, run_cli
from fault_suites import assert_no_traceback


def _run(folder: Path, suite: str, cases: list[dict], *extra: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "suite.yaml").write_text(suite)
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    out = folder / "out.jsonl"
    proc = run_cli("run", "suite.yaml", "-o", out, "--quiet", *extra, cwd=folder, timeout=timeout)
    assert_no_traceback(proc)
    return proc, {row["case_id"]: row for row in read_jsonl(out)}


def _only(row: dict) -> dict:
    (result,) = row["evaluator_results"]
    return result


# --- E34: edit distances on huge texts -----------------------------------------------------------

def test_fuzzy_field_and_line_items_longer_than_the_edit_distance_limit_are_errors_naming_it(tmp_path):
    big = "ab" * 100_000  # 200,000 characters: past the default limits.edit_distance_chars (100,000)
    suite = (
        "name: e34\nevaluators:\n"
        "  - {type: field_accuracy, fields: [{path: name, match: fuzzy}, {path: n}]}\n"
        "  - {type: line_items, path: items}\n"
        "cases: cases.jsonl\n"
    )
    cases = [
        {"id": "small", "expected": {"name": "Acme Corp", "n": 1, "items": [{"description": "cable"}]},
         "output": {"name": "ACME corp", "n": 1, "items": [{"description": "cable"}]}},
        {"id": "huge", "expected": {"name": big, "n": 1, "items": [{"description": "cable"}]},
         "output": {"name": big[::-1], "n": 1, "items": [{"description": big}]}},
    ]
    started = time.monotonic()
    proc, rows = _run(tmp_path, suite, cases)
    assert time.monotonic() - started < 30  # computing them would take minutes, uninterruptibly
    assert proc.returncode == 3
    assert rows["small"]["verdict"] == "pass"
    fields, items = rows["huge"]["evaluator_results"]
    assert fields["verdict"] == items["verdict"] == "error"
    assert fields["error"] == (
        "name: a text of 200,000 characters is too long for an edit distance "
        "(limit `limits.edit_distance_chars: 100000`; raise it in the suite's `limits:` if this is expected)"
    )
    assert items["error"].startswith("items: a text of 200,000 characters in description is too long for an edit distance")
    assert "limits.edit_distance_chars: 100000" in items["error"]


def test_edit_distance_limit_is_raised_in_the_suite(tmp_path):
    text = "x" * 2_000
    suite = (
        "name: e34b\nlimits: {edit_distance_chars: 5000}\n"
        "evaluators: [{type: field_accuracy, fields: [{path: name, match: fuzzy}]}]\ncases: cases.jsonl\n"
    )
    proc, rows = _run(tmp_path, suite, [{"id": "a", "expected": {"name": text}, "output": {"name": text + "y"}}])
    assert proc.returncode == 0
    assert _only(rows["a"])["details"]["fields"][0]["similarity"] == pytest.approx(2000 / 2001, abs=1e-6)


# --- E35: line_items with many digit-bearing descriptions ------------------------------------------

def test_line_items_answer_of_100000_digit_bearing_items_is_scored_in_seconds(tmp_path):
    expected = [{"description": f"item number {i} widget", "amount": i} for i in range(20)]
    candidate = [{"description": f"item number {i} widget", "amount": i} for i in range(100_000)]
    suite = "name: e35\nevaluators: [{type: line_items, path: line_items}]\ncases: cases.jsonl\n"
    started = time.monotonic()
    proc, rows = _run(tmp_path, suite, [{"id": "big", "expected": {"line_items": expected}, "output": {"line_items": candidate}}])
    assert time.monotonic() - started < 30  # was over 120 s
    assert proc.returncode == 1
    result = _only(rows["big"])
    assert result["reasoning"].startswith("20 of 20 expected items matched (greedy), 99980 extra")
    assert result["details"]["alignment"][:3] == [
        {"expected": 0, "candidate": 0, "similarity": 1.0},
        {"expected": 1, "candidate": 1, "similarity": 1.0},
        {"expected": 2, "candidate": 2, "similarity": 1.0},
    ]
    assert result["duration_ms"] < 20_000


# --- E38: dense pairing matrices ---------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "count"), [("distance", 400_000), ("iou_score", 4_001), ("line_items", 4_001)])
def test_pairing_past_the_pairs_limit_is_an_error_before_allocating(tmp_path, kind, count):
    """400,000 points against 1,000 (the 6 MB answer that asked for over 8 GiB); the other types just past the limit."""
    if kind == "line_items":
        evaluator = "{type: line_items, path: pts}"
        expected = [{"description": f"item {i}"} for i in range(1_000)]
        candidate = [{"description": f"item {i % 1000}"} for i in range(count)]
    else:
        evaluator = "{type: distance, path: pts, max_distance: 5}" if kind == "distance" else "{type: iou_score, path: pts}"
        shape = (lambda i: [i, 0]) if kind == "distance" else (lambda i: [i, 0, i + 1, 1])
        expected = [shape(i) for i in range(1_000)]
        candidate = [shape(i % 1000) for i in range(count)]
    (tmp_path / "suite.yaml").write_text(f"name: e38\nevaluators: [{evaluator}]\ncases: cases.jsonl\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "big", "expected": {"pts": expected}, "output": {"pts": candidate}}) + "\n")
    rss = tmp_path / "rss"
    proc = subprocess.run(
        [*MEASURE, str(rss), sys.executable, "-m", "agenteval", "run", "suite.yaml", "-o", "out.jsonl", "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert_no_traceback(proc)
    assert proc.returncode == 3
    result = _only(read_jsonl(tmp_path / "out.jsonl")[0])
    assert result["verdict"] == "error"
    assert result["error"] == (
        f"pts: 1,000 expected x {count:,} candidate items make {1000 * count:,} pairs to weigh "
        "(limit `limits.pairs: 4000000`; raise it in the suite's `limits:` if this is expected)"
    )
    assert float(rss.read_text()) < 1_000  # MB: the answer itself, never the n x m matrices


# --- E42: keys that contain a dot ----------------------------------------------------------------------

def test_quoted_path_addresses_a_key_with_a_dot(tmp_path):
    suite = (
        "name: e42\nevaluators:\n"
        "  - {type: field_accuracy, fields: [{path: \"['a.b']\"}, {path: 'net[\"x.y\"][0]'}]}\n"
        "  - {type: field_confusion, fields: [\"['a.b']\"]}\n"
        "cases: cases.jsonl\n"
    )
    cases = [
        {"id": "right", "expected": {"a.b": "INV-1", "net": {"x.y": [5]}}, "output": {"a.b": "INV-1", "net": {"x.y": [5]}}},
        {"id": "wrong", "expected": {"a.b": "INV-1", "net": {"x.y": [5]}}, "output": {"a.b": "WRONG", "net": {"x.y": [5]}}},
    ]
    proc, rows = _run(tmp_path, suite, cases)
    assert proc.returncode == 1
    assert rows["right"]["verdict"] == "pass"
    fields, confusion = rows["wrong"]["evaluator_results"]
    assert fields["misses"] == ["['a.b']"] and fields["hits"] == ['net["x.y"][0]']
    assert confusion["misses"] == ["['a.b'] (wrong value)"]


def test_dotted_path_on_a_dotted_key_is_a_miss_naming_it_never_a_silent_skip(tmp_path):
    suite = (
        "name: e42b\nevaluators:\n"
        "  - {type: field_accuracy, fields: [{path: a.b}, {path: total}]}\n"
        "  - {type: field_confusion, fields: [a.b]}\n"
        "cases: cases.jsonl\n"
    )
    cases = [{"id": "dotted", "expected": {"a.b": "INV-1", "total": 10}, "output": {"a.b": "WRONG", "total": 10}}]
    proc, rows = _run(tmp_path, suite, cases)
    assert proc.returncode == 1  # was 0: "1/1 fields matched (1 skipped)"
    fields, confusion = rows["dotted"]["evaluator_results"]
    why = "the expected answer has the key 'a.b', but the path a.b reads it as nested keys; quote it: ['a.b']"
    assert fields["verdict"] == "partial" and fields["misses"] == [f"a.b ({why})"]
    assert fields["reasoning"] == "1/2 fields matched"
    assert confusion["verdict"] == "fail" and confusion["misses"] == [f"a.b ({why})"]


def test_dotted_path_on_a_dotted_key_of_an_inline_case_is_refused_at_load(tmp_path):
    (tmp_path / "suite.yaml").write_text(
        "name: e42c\nevaluators:\n  - {type: field_accuracy, fields: [{path: a.b}]}\n"
        "cases:\n  - {id: ok, expected: {a: {b: 1}}, output: {a: {b: 1}}}\n"
        "  - {id: dotted, expected: {a.b: INV-1}, output: {a.b: WRONG}}\n"
    )
    proc = run_cli("validate", "suite.yaml", cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 2
    assert (
        "suite.yaml:6: cases[1].expected: case 'dotted': field_accuracy: the expected answer has the key 'a.b', "
        "but the path a.b reads it as nested keys; quote it: ['a.b']"
    ) in proc.stdout + proc.stderr


# --- E43: Unicode normal forms ----------------------------------------------------------------------------

def test_field_matchers_compare_nfc_text_unless_told_to_keep_it_raw(tmp_path):
    nfc, nfd = "Café Müller GmbH", "Cafe\u0301 Mu\u0308ller GmbH"
    suite = (
        "name: e43\nevaluators:\n"
        "  - {name: nfc, type: field_accuracy, fields: [{path: a, match: fuzzy, threshold: 0.95}, {path: b}]}\n"
        "  - {name: raw, type: field_accuracy, fields: [{path: a, match: fuzzy, threshold: 0.95, unicode: raw}, {path: b, unicode: raw}]}\n"
        "  - {name: nfkc, type: field_accuracy, fields: [{path: c, unicode: nfkc}]}\n"
        "  - {type: field_confusion, fields: [b]}\n"
        "cases: cases.jsonl\n"
    )
    cases = [{"id": "nfd", "expected": {"a": nfc, "b": [nfc], "c": "file 12"}, "output": {"a": nfd, "b": [nfd], "c": "ﬁle １２"}}]
    proc, rows = _run(tmp_path, suite, cases)
    by_name = {result["name"]: result for result in rows["nfd"]["evaluator_results"]}
    assert by_name["nfc"]["verdict"] == "pass" and by_name["nfc"]["details"]["fields"][0]["similarity"] == 1.0
    assert by_name["raw"]["verdict"] == "fail"
    assert by_name["raw"]["details"]["fields"][0]["similarity"] == pytest.approx(0.777778)  # 4 edits over 18 code points
    assert by_name["nfkc"]["verdict"] == "pass"
    assert by_name["field_confusion"]["verdict"] == "pass"


# --- E44: ISO 8601 forms of `match: date` -------------------------------------------------------------------

def test_date_match_reads_ordinal_dates_leap_seconds_and_end_of_day(tmp_path):
    suite = "name: e44\nevaluators: [{type: field_accuracy, fields: [{path: d, match: date}]}]\ncases: cases.jsonl\n"
    cases = [
        {"id": "ordinal", "expected": {"d": "2024-01-15"}, "output": {"d": "2024-015"}},
        {"id": "ordinal-basic", "expected": {"d": "2024-12-31"}, "output": {"d": "2024366"}},
        {"id": "leap-second", "expected": {"d": "2016-12-31"}, "output": {"d": "2016-12-31T23:59:60Z"}},
        {"id": "end-of-day", "expected": {"d": "2024-01-15"}, "output": {"d": "2024-01-15T24:00:00"}},
        {"id": "no-day-366", "expected": {"d": "2023-12-31"}, "output": {"d": "2023-366"}},
        {"id": "not-24-01", "expected": {"d": "2024-01-15"}, "output": {"d": "2024-01-15T24:01:00"}},
    ]
    proc, rows = _run(tmp_path, suite, cases)
    assert {case_id: row["verdict"] for case_id, row in rows.items()} == {
        "ordinal": "pass", "ordinal-basic": "pass", "leap-second": "pass", "end-of-day": "pass",
        "no-day-366": "fail", "not-24-01": "fail",
    }
    assert _only(rows["no-day-366"])["misses"] == ["d (not a date)"]


# --- F8: nested booleans are not integers ---------------------------------------------------------------------

def test_nested_booleans_never_equal_integers_in_any_field_matcher(tmp_path):
    suite = (
        "name: f8\nevaluators:\n"
        "  - {type: field_accuracy, fields: [{path: a}, {path: b}]}\n"
        "  - {type: field_confusion, fields: [a, b]}\n"
        "  - {type: line_items, path: items, match_fields: [flags], fields: [flags]}\n"
        "cases: cases.jsonl\n"
    )
    cases = [
        {"id": "bools", "expected": {"a": [1, 0], "b": {"x": [1]}, "items": [{"flags": [1, 0]}]},
         "output": {"a": [True, False], "b": {"x": [True]}, "items": [{"flags": [True, False]}]}},
        {"id": "numbers", "expected": {"a": [1, 0], "b": {"x": [1]}, "items": [{"flags": [1, 0]}]},
         "output": {"a": [1.0, 0], "b": {"x": [1]}, "items": [{"flags": [1, 0.0]}]}},
    ]
    proc, rows = _run(tmp_path, suite, cases)
    assert [result["verdict"] for result in rows["bools"]["evaluator_results"]] == ["fail", "fail", "fail"]
    assert rows["bools"]["evaluator_results"][0]["misses"] == ["a", "b"]
    assert [result["verdict"] for result in rows["numbers"]["evaluator_results"]] == ["pass", "pass", "pass"]


# --- G21, G23: Python values read as the Python API reads them -------------------------------------

def test_a_python_evaluator_returning_a_decimal_or_a_numpy_number_scores_as_the_python_api_reads_it(tmp_path):
    """`Decimal("0.5")`, `numpy.float32(0.25)` and a dict whose `score` is a Decimal, from a suite's
    `python` evaluator, score as the same values from an `agenteval.evaluator()` callable do."""
    import agenteval

    (tmp_path / "judges.py").write_text(
        "from decimal import Decimal\nimport numpy\n"
        "def half(p):\n    return Decimal('0.5')\n"
        "def quarter(p):\n    return numpy.float32(0.25)\n"
        "def graded(p):\n    return {'score': Decimal('1'), 'details': {'amount': Decimal('12.50')}}\n"
    )
    suite = ("name: decimals\nevaluators:\n" + "".join(
        f"  - {{name: {name}, type: python, function: 'judges:{name}'}}\n" for name in ("half", "quarter", "graded")
    ) + "cases: cases.jsonl\n")
    proc, rows = _run(tmp_path, suite, [{"id": "c", "expected": 1, "output": 1}])
    assert proc.returncode == 1, proc.stderr
    suite_scores = [(e["name"], e["verdict"], e["score"], e["error"]) for e in rows["c"]["evaluator_results"]]
    assert suite_scores == [("half", "partial", 0.5, None), ("quarter", "partial", 0.25, None), ("graded", "pass", 1.0, None)]
    sys.path.insert(0, str(tmp_path))
    try:
        import judges
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("judges", None)  # other tests import their own `judges` module
    checks = [agenteval.evaluator(lambda ctx, f=getattr(judges, name): f({}), name=name) for name in ("half", "quarter", "graded")]
    (api,) = agenteval.evaluate([{"id": "c", "expected": 1, "output": 1}], checks)
    assert [(e.name, e.verdict, e.score, e.error) for e in api.evaluator_results] == suite_scores


def test_a_set_whose_items_neither_compare_nor_repr_is_refused_naming_its_path():
    """`evaluate()` given a set of objects whose `__lt__` and `__repr__` raise: SuiteInvalid naming
    where the set is (never the object's own exception); such objects with a plain form (a
    dataclass) are ordered by it."""
    from dataclasses import dataclass

    import agenteval
    from agenteval.suite.loader import SuiteInvalid

    class Opaque:
        def __repr__(self):
            raise RuntimeError("repr boom")

        def __lt__(self, other):
            raise RuntimeError("lt boom")

        def __hash__(self):
            return id(self) % 7

    @dataclass(frozen=True)
    class Point:
        x: int

        def __repr__(self):
            raise RuntimeError("repr boom")

        def __lt__(self, other):
            raise ValueError("lt boom")

    fields = [{"type": "field_accuracy", "fields": [{"path": "a"}]}]
    with pytest.raises(SuiteInvalid) as refused:
        agenteval.evaluate([{"id": "1", "expected": {"a": 1}, "output": {"a": {Opaque(), Opaque(), 3}}}], fields)
    (problem,) = refused.value.problems
    assert problem.render().endswith("case '1': `output.a`: an item of a set: a " + Opaque.__module__ + "."
                                     + Opaque.__qualname__ + " has no plain form (give a mapping, list, string, number, boolean, pydantic model or dataclass)")
    (result,) = agenteval.evaluate([{"id": "1", "expected": {"a": [{"x": 1}, {"x": 2}, 3]}, "output": {"a": {Point(2), Point(1), 3}}}], fields)
    assert result.output == {"a": [{"x": 1}, {"x": 2}, 3]} and result.verdict == "pass"


# --- G25: a negated check's score says its verdict ----------------------------------------------------

def test_a_negated_check_that_passes_reads_as_a_pass_under_case_pass_min_score(tmp_path):
    """`negate: true` on a similarity check: a near miss of its 0.95 threshold (0.9) is a negated
    pass, scored 1 (mirrored it would be 0.1 and fail `case_pass: {min_score: 0.5}`); a check that
    passes its low bar (0.3 >= 0.2) is a negated fail, scored 0 (mirrored 0.7 would pass the case)."""
    suite = (
        "name: neg\ncase_pass: {min_score: 0.5}\nevaluators:\n"
        "  - {name: sim, type: text_similarity, algorithm: levenshtein, reference_path: ref, threshold: 0.95, negate: true}\n"
        "cases: cases.jsonl\n"
    )
    cases = [{"id": "near", "expected": {"ref": "abcdefghij"}, "output": "abcdefghiX"},
             {"id": "same", "expected": {"ref": "abcdefghij"}, "output": "abcdefghij"}]
    proc, rows = _run(tmp_path, suite, cases)
    near, same = _only(rows["near"]), _only(rows["same"])
    assert (near["verdict"], near["score"], rows["near"]["verdict"]) == ("pass", 1.0, "pass")
    assert abs(near["details"]["score_before_negate"] - 0.9) < 1e-9
    assert (same["verdict"], same["score"], rows["same"]["verdict"]) == ("fail", 0.0, "fail")
    low_bar = suite.replace("threshold: 0.95", "min_score: 0.2")
    proc, rows = _run(tmp_path / "low", low_bar, [{"id": "far", "expected": {"ref": "abcdefghij"}, "output": "abcXXXXXXX"}])
    far = _only(rows["far"])
    assert (far["verdict"], far["score"], rows["far"]["verdict"]) == ("fail", 0.0, "fail")
    assert abs(far["details"]["score_before_negate"] - 0.3) < 1e-9
    assert proc.returncode == 1
