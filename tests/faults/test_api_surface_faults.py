"""Hostile input to the Python API's newer surfaces: run settings, `load_run`, a suite folder for
`agenteval run`, and the run's context: a clear error (RunError, StoreError, exit 2) or a normal
run, never a traceback; nothing half-written."""

from __future__ import annotations

import json
import math

import pytest

import agenteval
from agenteval.runs import RunSettings
from agenteval.stores import StoreError
from conftest import run_cli, write

CASES = [{"id": "a", "expected": 1, "output": 1}]
EQUALS = [{"type": "equals"}]


@pytest.mark.parametrize("options, message", [
    ({"workers": -3}, "--workers must be at least 1, got -3"),
    ({"workers": 10**30}, "--workers must be at most 1024 (a thread each), got 1000000000000000000000000000000"),
    ({"workers": math.nan}, "workers: Input should be a finite number"),
    ({"repeat": 0}, "--repeat must be at least 1, got 0"),
    ({"batch_size": -1}, "--batch-size must be at least 1, got -1"),
    ({"min_pass_rate": math.inf}, "--min-pass-rate must be between 0 and 1, got inf"),
    ({"min_pass_rate": -0.1}, "--min-pass-rate must be between 0 and 1, got -0.1"),
    ({"shard": "0/0"}, "--shard takes I/N with 1 <= I <= N"),
    ({"shard": "1/2/3"}, "--shard takes I/N"),
    ({"shard": "2/-4"}, "--shard takes I/N"),
    ({"filters": 7}, "filters: "),
    ({"executor": "../../etc"}, "--executor takes local or ray, got '../../etc'"),
])
def test_bad_settings_are_one_run_error_naming_the_option(options, message, tmp_path):
    with pytest.raises(agenteval.RunError, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        agenteval.run_suite({"name": "s", "evaluators": EQUALS, "cases": CASES}, output=tmp_path / "r.jsonl", **options)
    assert not (tmp_path / "r.jsonl").exists()  # refused before anything was written


def test_a_nan_task_timeout_is_refused_where_the_task_becomes_the_target():
    with pytest.raises(agenteval.RunError, match="timeout must be a positive number of seconds"):
        agenteval.evaluate(CASES, EQUALS, task=lambda value: value, task_timeout=math.nan)


def test_load_run_of_what_is_not_a_run_is_a_store_error(tmp_path):
    (tmp_path / "garbage.jsonl").write_text("{not json\n{\"also\": \"not a result\"}\n")
    with pytest.raises(StoreError, match="no such results file"):
        agenteval.load_run(tmp_path)  # a folder
    from agenteval.results import ResultsFileError

    with pytest.raises(ResultsFileError, match=r"garbage.jsonl:1: not a result line"):
        agenteval.load_run(tmp_path / "garbage.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    empty = agenteval.load_run(tmp_path / "empty.jsonl")
    assert empty.summary["counts"]["total"] == 0 and empty.to_dicts() == []


def test_load_run_of_a_store_never_shows_its_password(tmp_path):
    with pytest.raises(StoreError) as raised:
        agenteval.load_run("postgresql://evals:hunter2-9f8e7d@127.0.0.1:1/evals")
    assert "hunter2-9f8e7d" not in str(raised.value)


def test_a_suite_folder_with_odd_entries_is_listed_or_refused_cleanly(tmp_path):
    (tmp_path / "suite.yaml").mkdir()  # a folder named like the suite file
    write(tmp_path, "real.yaml", "name: r\nevaluators: [{type: equals}]\ncases: [{id: a, expected: 1, output: 1}]\n")
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00cases:\x00" * 50_000)  # 450 KB of binary: only its head is read
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr == "error: no suite.yaml in the current folder; suite files there: real.yaml (give one: agenteval run real.yaml)\n"


def test_settings_made_once_are_not_changed_by_a_run(tmp_path):
    settings = RunSettings(filters=["a"], workers=2)
    agenteval.run_suite({"name": "s", "evaluators": EQUALS, "cases": CASES}, settings, output=tmp_path / "r.jsonl").summary
    assert settings.output is None and settings.filters == ("a",)
    with pytest.raises(Exception, match="frozen"):
        settings.workers = 3  # type: ignore[misc]
    assert json.loads((tmp_path / "r.summary.json").read_text())["workers"] == 2
