"""The Python API (agenteval.run_suite, agenteval.evaluate): same results as the CLI, no side effects."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

import agenteval
from agenteval.evaluators.fields import FieldAccuracy
from conftest import EXAMPLES, read_jsonl, run_cli, write

FIELDS = [{"type": "field_accuracy", "name": "fields", "fields": [{"path": "total", "match": "numeric_tolerance", "tolerance": 0.5}, {"path": "vendor"}]}]


def _cases(count: int, wrong: set[int] = frozenset()) -> list[dict]:
    return [
        {
            "id": f"c{i}",
            "input": {"doc": i},
            "expected": {"total": 10.0 * i, "vendor": "ACME"},
            "output": {"total": 10.0 * i + (5 if i in wrong else 0), "vendor": "ACME"},
        }
        for i in range(count)
    ]


def _without_timings(row: dict) -> dict:
    row = {k: v for k, v in row.items() if k not in ("run_id", "duration_ms", "timestamp")}
    row["evaluator_results"] = [{k: v for k, v in e.items() if k != "duration_ms"} for e in row["evaluator_results"]]
    return row


def _rounded(value):
    if isinstance(value, float):
        return round(value, 12)
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value


def test_run_suite_writes_what_the_cli_writes(tmp_path):
    suite = EXAMPLES / "invoices" / "suite.yaml"
    cli = run_cli("run", suite, "-o", tmp_path / "cli.jsonl", "-q")
    assert cli.returncode == 1

    run = agenteval.run_suite(suite, output=tmp_path / "api.jsonl")
    yielded = [result.case_id for result in run]
    summary = run.summary

    assert yielded == [row["case_id"] for row in read_jsonl(tmp_path / "api.jsonl")]
    assert sorted(map(_without_timings, read_jsonl(tmp_path / "api.jsonl")), key=lambda r: r["case_id"]) == sorted(
        map(_without_timings, read_jsonl(tmp_path / "cli.jsonl")), key=lambda r: r["case_id"]
    )
    on_disk = json.loads((tmp_path / "api.summary.json").read_text())
    assert summary["run_id"] == run.run_id == on_disk["run_id"]
    assert summary["counts"] == on_disk["counts"] == {"total": 8, "passed": 3, "failed": 5, "errored": 0}
    cli_summary = json.loads((tmp_path / "cli.summary.json").read_text())
    for key in ("counts", "pass_rate", "mean_score", "fields", "tags", "evaluators_skipped"):
        assert _rounded(summary[key]) == _rounded(cli_summary[key]), key  # parallel workers sum in another order
    assert run.exit_code() == 1 and run.exit_code(min_pass_rate=0.3) == 0
    assert run.interrupted is False and run.write_failure is None


def test_evaluate_scores_in_memory_cases_without_writing_anything(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = agenteval.evaluate(_cases(4, wrong={2}), FIELDS)
    results = {result.case_id: result for result in run}
    assert {case_id: result.verdict for case_id, result in results.items()} == {"c0": "pass", "c1": "pass", "c2": "fail", "c3": "pass"}
    assert results["c2"].score == pytest.approx(0.5)
    assert results["c2"].evaluator_results[0].misses == ["total"]
    assert results["c1"].input == {"doc": 1}
    assert run.summary["counts"] == {"total": 4, "passed": 3, "failed": 1, "errored": 0}
    assert run.summary["fields"]["fields"]["total"]["accuracy"] == 0.75
    assert run.results_file is None and run.summary["results_file"] is None
    assert list(tmp_path.iterdir()) == []  # no results folder, no cache


def test_evaluate_takes_typed_configs_and_reads_the_summary_without_iterating():
    typed = FieldAccuracy.model_validate({"type": "field_accuracy", "fields": [{"path": "vendor", "match": "fuzzy", "threshold": 0.8}]})
    cases = [{"id": 1, "expected": {"vendor": "Globex Corporation"}, "output": {"vendor": "Globex Corp."}}]
    run = agenteval.evaluate(cases, [typed])
    assert run.summary["counts"]["failed"] == 1  # "Globex Corp." is 0.63 similar: below 0.8
    with pytest.raises(RuntimeError, match="iterated once"):
        iter(run)


def test_invalid_configs_raise_every_problem_at_once():
    bad = [{"type": "field_accuracy", "fields": [{"path": "total", "match": "nearly"}]}, {"type": "llm_jugde"}]
    cases = [{"id": "a", "expected": 1}, {"id": "a", "expected": 2}]
    with pytest.raises(agenteval.SuiteInvalid) as caught:
        agenteval.evaluate(cases, bad)
    rendered = [problem.render() for problem in caught.value.problems]
    assert any("evaluators[0].fields[0].match" in line and "nearly" in line for line in rendered), rendered
    assert any("evaluators[1].type" in line and "llm_judge" in line for line in rendered), rendered
    assert any("duplicate case id 'a'" in line for line in rendered), rendered
    assert all(line.startswith(str(Path.cwd() / "<suite>")) for line in rendered)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shard": "3/2"}, "--shard takes I/N"),
        ({"workers": 0}, "--workers must be at least 1"),
        ({"repeat": 2, "resume": True, "output": "r.jsonl"}, "--repeat cannot continue a run"),
        ({"evaluators": ["feilds"]}, "did you mean 'fields'?"),
        ({"filters": ["nothing-*"]}, "no case selected"),
        ({"predictions": "missing.jsonl"}, "cannot read predictions"),
        ({"resume": True}, "--resume continues a run in a results file or a store"),
        ({"output": "r.jsonl", "store": "sqlite:///runs.db"}, "two destinations"),
    ],
)
def test_bad_options_raise_run_error(tmp_path, monkeypatch, options, message):
    monkeypatch.chdir(tmp_path)
    suite = {"name": "s", "evaluators": FIELDS, "cases": _cases(2)}
    with pytest.raises(agenteval.RunError, match=message.replace("?", r"\?").replace("-", r"\-")):
        agenteval.run_suite(suite, **options)
    assert not (tmp_path / "r.jsonl").exists()


def test_the_api_prints_nothing_and_leaves_the_process_as_it_was(tmp_path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), dict(os.environ), os.getcwd(), sys.stdout, sys.stderr)
    judge = write(tmp_path, "judge.py", "import json, sys\nprint(json.dumps({'score': 1.0}))\n")
    suite = {
        "name": "quiet",
        "evaluators": [*FIELDS, {"type": "code_judge", "name": "judge", "command": [sys.executable, judge.name], "weight": 0}],
        "cases": _cases(3, wrong={1}),
    }
    run = agenteval.run_suite(suite, output="out.jsonl", base_dir=tmp_path)
    assert run.warnings == []
    assert sorted((result.case_id, result.verdict) for result in run) == [("c0", "pass"), ("c1", "fail"), ("c2", "pass")]
    assert run.summary["evaluators"]["judge"]["mean_score"] == 1.0
    after = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), dict(os.environ), os.getcwd(), sys.stdout, sys.stderr)
    assert after == before
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""
    assert len(read_jsonl(tmp_path / "out.jsonl")) == 3


def test_warnings_are_data_not_output(tmp_path, capfd):
    weightless = [{**FIELDS[0], "weight": 0}]
    run = agenteval.evaluate(_cases(1), weightless)
    assert [warning.message for warning in run.warnings] == ["every evaluator has weight 0: case scores are always 0"]
    assert run.summary["mean_score"] == 0.0
    assert capfd.readouterr() == ("", "")


def test_stopping_early_keeps_what_finished_and_resume_finishes_it(tmp_path):
    suite = {"name": "stop-early", "evaluators": FIELDS, "cases": _cases(5, wrong={4})}
    out = tmp_path / "r.jsonl"
    with agenteval.run_suite(suite, output=out) as run:
        for count, _ in enumerate(run, start=1):
            if count == 2:
                break
    assert run.interrupted is True
    assert run.summary["interrupted"] is True and run.summary["counts"]["total"] == 2
    assert [row["case_id"] for row in read_jsonl(out)] == ["c0", "c1"]
    assert run.exit_code() == 130

    resumed = agenteval.run_suite(suite, output=out, resume=True)
    assert resumed.run_id == run.run_id and resumed.todo_count == 3
    assert [result.case_id for result in resumed.previous_results()] == ["c0", "c1"]
    assert [result.case_id for result in resumed] == ["c2", "c3", "c4"]
    assert resumed.summary["counts"] == {"total": 5, "passed": 4, "failed": 1, "errored": 0}
    assert sorted(row["case_id"] for row in read_jsonl(out)) == ["c0", "c1", "c2", "c3", "c4"]


def test_a_results_file_is_locked_while_a_run_writes_it(tmp_path):
    suite = {"name": "locked", "evaluators": FIELDS, "cases": _cases(2)}
    out = tmp_path / "r.jsonl"
    first = agenteval.run_suite(suite, output=out)
    next(iter(first))
    from agenteval.stores import StoreError

    with pytest.raises(StoreError, match="being written by another agenteval run"):
        agenteval.run_suite(suite, output=out, resume=True)
    first.close()
    assert first.summary["counts"]["total"] == 1


def test_run_suite_saves_to_a_sqlite_store(tmp_path):
    pytest.importorskip("sqlalchemy")
    from agenteval.stores import open_store

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run = agenteval.run_suite({"name": "stored", "evaluators": FIELDS, "cases": _cases(3, wrong={0})}, store=url)
    assert run.summary["results_store"] == url and run.summary["counts"]["failed"] == 1
    store = open_store(url)
    try:
        assert sorted(result.case_id for result in store.read_run(run.run_id)) == ["c0", "c1", "c2"]
        assert store.summary(run.run_id)["counts"] == run.summary["counts"]
    finally:
        store.close()


def test_the_package_is_typed():
    package = Path(agenteval.__file__).parent
    assert (package / "py.typed").is_file()
    pyproject = (package.parent / "pyproject.toml").read_text()
    assert '"agenteval" = ["py.typed"]' in pyproject


def test_an_invalid_suite_says_what_is_wrong_when_printed(tmp_path, monkeypatch):
    """A notebook shows `str(exception)`: the problems as `agenteval validate` prints them."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(agenteval.SuiteInvalid) as missing:
        agenteval.run_suite("nope.yaml")
    assert str(missing.value) == "nope.yaml: file not found"
    cases = [{"id": f"c{i}", "expected": 1, "bogus": i} for i in range(23)]
    with pytest.raises(agenteval.SuiteInvalid) as many:
        agenteval.evaluate(cases, [{"type": "equals"}])
    lines = str(many.value).splitlines()
    assert len(lines) == 21 and lines[:20] == [problem.render() for problem in many.value.problems[:20]]
    assert lines[20] == "... and 3 more"
