"""A run in a notebook: short reprs, results read again (live or from disk), plain dicts and a
pandas DataFrame, Decimal digits kept for `expected`, numpy 0-d arrays as numbers, and a task's
error without caret lines."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pytest

import agenteval
from agenteval.stores import StoreError
from conftest import ROOT, read_jsonl

FIELDS = [{"type": "field_accuracy", "name": "totals", "fields": [{"path": "total"}]}]
CASES = [
    {"id": "a", "expected": {"total": Decimal("12.50")}, "output": {"total": Decimal("12.50")}},
    {"id": "b", "expected": {"total": Decimal("10.00")}, "output": {"total": Decimal("11.00")}},
    {"id": "c", "expected": {"total": 3}, "output": {"total": 3}},
]


def divide(value):
    return value / 0


def test_a_run_and_its_results_have_short_reprs():
    run = agenteval.evaluate(CASES, FIELDS)
    assert repr(run) == f"<SuiteRun {run.run_id} of 'evaluate': 3 cases to run (not started)>"
    results = list(run)
    assert repr(run) == f"<SuiteRun {run.run_id} of 'evaluate': 3 cases, 2 passed, 1 failed, 0 errored, pass rate 66.7% (finished)>"
    run.close()
    assert repr(run).endswith("3 cases, 2 passed, 1 failed, 0 errored, pass rate 66.7% (finished)>")
    assert [repr(result) for result in results] == [
        "CaseResult(case_id='a', verdict='pass', score=1.0)",
        "CaseResult(case_id='b', verdict='fail', score=0.0)",
        "CaseResult(case_id='c', verdict='pass', score=1.0)",
    ]
    errored = agenteval.evaluate([{"id": "x", "input": 1, "expected": 1}], [lambda ctx: True], task=divide)
    (result,) = list(errored)
    assert repr(result) == "CaseResult(case_id='x', verdict='error', score=0.0, error='test_notebook:divide raised ZeroDivisionError: division by zero...')"


def test_a_finished_run_is_read_again_from_memory_and_from_its_file(tmp_path):
    in_memory = agenteval.evaluate(CASES, FIELDS)
    assert in_memory.summary["pass_rate"] == pytest.approx(2 / 3)  # no iterating by hand
    assert [result.case_id for result in in_memory.results()] == ["a", "b", "c"]
    assert [result.verdict for result in in_memory.results()] == ["pass", "fail", "pass"]  # again, as often as asked

    saved = agenteval.evaluate(CASES, FIELDS, output=tmp_path / "r.jsonl")
    assert [result.score for result in saved.results()] == [1.0, 0.0, 1.0]  # ran first, then read from the file
    loaded = agenteval.load_run(tmp_path / "r.jsonl")
    assert loaded.run_id == saved.run_id and loaded.summary == json.loads((tmp_path / "r.summary.json").read_text())
    assert repr(loaded) == f"<FinishedRun {saved.run_id} of 'evaluate': 3 cases, 2 passed, 1 failed, 0 errored, pass rate 66.7% (read)>"
    assert [result.to_dict() for result in loaded.results()] == loaded.to_dicts()
    (tmp_path / "r.summary.json").unlink()  # a run killed before its summary: counted from its results
    counted = agenteval.load_run(tmp_path / "r.jsonl")
    assert counted.summary["counts"] == {"total": 3, "passed": 2, "failed": 1, "errored": 0}
    with pytest.raises(StoreError, match="missing.jsonl: no such results file"):
        agenteval.load_run(tmp_path / "missing.jsonl")


def test_a_run_in_a_sql_store_is_read_again(tmp_path):
    pytest.importorskip("sqlalchemy")
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run = agenteval.evaluate(CASES, FIELDS, store=url)
    run.summary
    loaded = agenteval.load_run(url)  # the newest run
    try:
        assert loaded.run_id == run.run_id and loaded.summary["counts"]["passed"] == 2
        assert sorted(result.case_id for result in loaded.results()) == ["a", "b", "c"]
    finally:
        loaded.close()


def test_plain_dicts_are_each_results_to_dict_and_share_nothing(tmp_path):
    """`to_dicts()` of a run kept in memory or in a results file is `to_dict()` of each result, key
    for key (evaluator results as dicts), and each call gives objects of its own."""
    def details(ctx):
        return {"score": 0.5, "details": {"seen": ctx.output, "list": [1, [2, {"x": None}]]}}

    cases = [
        {"id": "a", "input": {"q": [1, 2]}, "expected": {"total": Decimal("12.50")}, "output": {"total": Decimal("12.50")},
         "metadata": {"m": {"k": [1]}}, "tags": ["t"]},
        {"id": "b", "expected": {"total": 2}, "output": {"total": float("nan"), "more": {"n": None}}},
    ]
    checks = [*FIELDS, details]
    for run in (agenteval.evaluate(cases, checks), agenteval.evaluate(cases, checks, output=tmp_path / "r.jsonl")):
        rows = run.to_dicts()
        expected = [result.to_dict() for result in run.results()]
        assert json.dumps(rows, default=repr) == json.dumps(expected, default=repr)  # (NaN == NaN is False for ==)
        assert [list(row) for row in rows] == [list(row) for row in expected]
        assert [list(item) for item in rows[0]["evaluator_results"]] == [list(item) for item in expected[0]["evaluator_results"]]
        assert rows[0]["expected"] == {"total": 12.5} and rows[0]["metadata"] == {"m": {"k": [1]}}
        rows[0]["input"]["q"].append(3)
        rows[0]["evaluator_results"][1]["details"]["list"][1].append(9)
        again = run.to_dicts()
        assert again[0]["input"] == {"q": [1, 2]} and again[0]["evaluator_results"][1]["details"]["list"] == [1, [2, {"x": None}]]


def test_results_as_plain_dicts_and_a_dataframe():
    pandas = pytest.importorskip("pandas")
    run = agenteval.evaluate(CASES, FIELDS)
    rows = run.to_dicts()
    assert [row["case_id"] for row in rows] == ["a", "b", "c"]
    assert rows[1]["evaluator_results"][0]["name"] == "totals" and rows[1]["evaluator_results"][0]["misses"] == ["total"]
    assert json.loads(json.dumps(rows, default=str))[0]["verdict"] == "pass"  # plain data
    frame = run.to_dataframe()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == [
        "case_id", "target", "prompt", "repetition", "verdict", "score", "error", "duration_ms", "input", "expected", "output",
        "score.totals",
    ]
    assert frame["verdict"].tolist() == ["pass", "fail", "pass"] and frame["score.totals"].tolist() == [1.0, 0.0, 1.0]


def test_without_pandas_the_dataframe_names_the_extra():
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "import agenteval\n"
        "run = agenteval.evaluate([{'id': 'a', 'expected': 1, 'output': 1}], [{'type': 'equals'}])\n"
        "try:\n    run.to_dataframe()\nexcept ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.stdout == "to_dataframe() needs pandas: pip install 'agenteval[pandas]'\n", done.stderr


def test_expected_keeps_its_decimal_digits_as_output_does(tmp_path):
    agenteval.evaluate(CASES, FIELDS, output=tmp_path / "r.jsonl").summary
    text = (tmp_path / "r.jsonl").read_text()
    assert '"expected":{"total":12.50}' in text and '"output":{"total":12.50}' in text
    assert '"expected":{"total":10.00}' in text and '"output":{"total":11.00}' in text
    assert [row["expected"]["total"] for row in read_jsonl(tmp_path / "r.jsonl")] == [12.5, 10.0, 3]


def test_a_numpy_0d_array_is_a_number_like_a_numpy_scalar():
    cases = [
        {"id": "array", "expected": {"total": 1.0}, "output": {"total": np.array(1.0)}},
        {"id": "int", "expected": {"total": np.array(2)}, "output": {"total": np.int64(2)}},
        {"id": "miss", "expected": {"total": 3.0}, "output": {"total": np.array(4.5)}},
        {"id": "nested", "expected": {"total": [1, 2]}, "output": {"total": np.array([np.array(1), 2])}},
    ]
    verdicts = {result.case_id: result.verdict for result in agenteval.evaluate(cases, FIELDS)}
    assert verdicts == {"array": "pass", "int": "pass", "miss": "fail", "nested": "pass"}
    assert agenteval.to_plain({"v": np.array(1.5), "o": np.array({"k": 1}, dtype=object)}) == {"v": 1.5, "o": {"k": 1}}


def test_a_task_error_has_no_caret_lines():
    def extract(value):
        table = {"a": 1}
        return table["missing"] + value

    (result,) = list(agenteval.evaluate([{"id": "x", "input": 1, "expected": 1}], [lambda ctx: True], task=extract))
    lines = result.error.splitlines()
    assert lines[0] == "test_notebook:test_a_task_error_has_no_caret_lines.<locals>.extract raised KeyError: 'missing'"
    assert lines[1].startswith('  File "') and lines[1].endswith(", in extract")
    assert lines[2:] == ['    return table["missing"] + value', "KeyError: 'missing'"]


def test_a_run_read_to_its_end_says_finished_before_its_summary_is_asked():
    run = agenteval.evaluate(CASES, FIELDS)
    assert repr(run) == f"<SuiteRun {run.run_id} of 'evaluate': 3 cases to run (not started)>"
    iterator = iter(run)
    next(iterator)
    assert repr(run) == f"<SuiteRun {run.run_id} of 'evaluate': 1 case, 1 passed, 0 failed, 0 errored, pass rate 100.0% (running)>"
    list(iterator)
    assert repr(run) == f"<SuiteRun {run.run_id} of 'evaluate': 3 cases, 2 passed, 1 failed, 0 errored, pass rate 66.7% (finished)>"
