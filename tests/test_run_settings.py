"""A run's options are declared once (agenteval.runs.RunSettings): the command line fills them,
`run_suite` takes them as keywords or as the object, and a Ray run ships them to its workers."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from pydantic import ValidationError

import agenteval
from agenteval.runs import RunSettings
from conftest import EXAMPLES, read_jsonl

CASES = [
    {"id": f"c{i}", "expected": {"total": i}, "output": {"total": i if i % 2 else i + 1}, "tags": ["even" if i % 2 == 0 else "odd"]}
    for i in range(6)
]
SUITE = {"name": "settings", "evaluators": [{"type": "field_accuracy", "fields": [{"path": "total"}]}], "cases": CASES}


def test_a_settings_object_and_the_keywords_run_the_same_cases(tmp_path):
    settings = agenteval.RunSettings(tags=["odd"], workers=2, min_pass_rate=0.5)
    by_object = agenteval.run_suite(SUITE, settings, output=tmp_path / "a.jsonl")
    by_keywords = agenteval.run_suite(SUITE, tags=["odd"], workers=2, min_pass_rate=0.5, output=tmp_path / "b.jsonl")
    assert by_object.summary["counts"] == by_keywords.summary["counts"] == {"total": 3, "passed": 3, "failed": 0, "errored": 0}
    assert sorted(row["case_id"] for row in read_jsonl(tmp_path / "a.jsonl")) == ["c1", "c3", "c5"]
    assert by_object.settings.tags == ("odd",) and by_object.settings.output == tmp_path / "a.jsonl"
    assert by_object.workers == 2 and settings.output is None  # the caller's object is left as it was


def test_keywords_change_the_settings_objects_values(tmp_path):
    settings = RunSettings(tags=["odd"], filters=["c1"])
    run = agenteval.run_suite(SUITE, settings, filters=["c*"])
    assert [result.case_id for result in run] == ["c1", "c3", "c5"]
    assert run.exit_code() == 0


def test_an_unknown_option_is_a_type_error_with_its_likely_name():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'worker' \(did you mean 'workers'\?\)"):
        agenteval.run_suite(SUITE, worker=2)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        RunSettings(worker=2)  # extra="forbid"


def test_a_value_of_the_wrong_type_is_a_run_error_naming_the_option():
    with pytest.raises(agenteval.RunError, match=r"^workers: Input should be a valid integer.*\(got 'many'\)"):
        agenteval.run_suite(SUITE, workers="many")
    with pytest.raises(agenteval.RunError, match=r"--shard takes I/N"):
        RunSettings(shard="3/2")
    assert RunSettings(shard="2/4").shard == (2, 4) and RunSettings(filters="c1").filters == ("c1",)


def test_combinations_are_checked_when_the_settings_are_made():
    for options, message in [
        ({"resume": True, "overwrite": True}, "give one"),
        ({"store": "sqlite:///x.db", "output": "x.jsonl"}, "two destinations"),
        ({"cache": False, "refresh_cache": True}, "--no-cache goes with neither"),
        ({"ray_address": "auto"}, "--ray-address goes with --executor ray"),
        ({"min_pass_rate": float("nan")}, "--min-pass-rate must be between 0 and 1"),
    ]:
        with pytest.raises(agenteval.RunError, match=message):
            RunSettings(**options)


def test_every_option_of_the_run_command_is_a_settings_field():
    """The typer parameters of `agenteval run` fill RunOptions, which is RunSettings plus the
    command's own options: a new run option is one field and one parameter."""
    import typer.main

    from agenteval.cli import app
    from agenteval.execute import RunOptions

    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    names = {param.name for param in command.params}
    assert issubclass(RunOptions, RunSettings)
    assert names - {"no_cache"} <= set(RunOptions.model_fields)  # --no-cache fills `cache`
    assert set(RunSettings.model_fields) - names - {"cache"} == {"base_dir", "task", "max_concurrency", "task_timeout"}  # Python's own


def test_what_a_ray_worker_is_sent_holds_no_destination_and_pickles():
    settings = RunSettings(output="results.jsonl", predictions="p.jsonl", repeat=3, overrides=["target.model=x"], workers=4)
    shipped = settings.shipped(cache_dir=Path("/cache"))
    assert (shipped.output, shipped.store, shipped.predictions, shipped.task) == (None, None, None, None)
    assert (shipped.repeat, shipped.overrides, shipped.workers, shipped.cache_dir) == (3, ("target.model=x",), 4, Path("/cache"))
    assert pickle.loads(pickle.dumps(shipped)) == shipped


def test_the_command_line_run_matches_the_api_given_the_same_settings(tmp_path):
    from agenteval.execute import RunOptions, execute

    suite = EXAMPLES / "invoices" / "suite.yaml"
    code = execute(RunOptions(suite=suite, output=str(tmp_path / "cli.jsonl"), filters=["inv-00*"], quiet=True))
    run = agenteval.run_suite(suite, RunSettings(filters=["inv-00*"], output=tmp_path / "api.jsonl"))
    assert code == run.exit_code() == 1
    assert sorted(row["case_id"] for row in read_jsonl(tmp_path / "cli.jsonl")) == sorted(row["case_id"] for row in read_jsonl(tmp_path / "api.jsonl"))
