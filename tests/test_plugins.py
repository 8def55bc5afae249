"""Evaluator plugins: a package declaring an `agenteval.evaluators` entry point adds a type.

The plugin in tests/plugin_pkg is registered the way pip registers an installed package: a
`.dist-info` folder with its `entry_points.txt` on the path of a real `agenteval` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Literal

import pytest
from conftest import ROOT, read_jsonl, write

from agenteval.evaluators import (
    BUILT_IN_TYPES,
    REGISTRY,
    EvalContext,
    EvaluatorConfig,
    EvaluatorResult,
)
from agenteval.plugins import GROUP, describe, evaluator_problem

PLUGIN_PKG = ROOT / "tests" / "plugin_pkg"
PROJECT = tomllib.loads((PLUGIN_PKG / "pyproject.toml").read_text())["project"]


def installed(site: Path, entry_points: dict[str, str], name: str = PROJECT["name"], version: str = PROJECT["version"]) -> Path:
    """Register a distribution with these entry points in `site` (what `pip install` writes)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}")
    return site


def agenteval(site: Path, *args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(PLUGIN_PKG)])}
    return subprocess.run(
        [sys.executable, "-m", "agenteval", *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def site(tmp_path):
    return installed(tmp_path / "site", PROJECT["entry-points"][GROUP])


def word_suite(folder: Path, max_words: str = "max_words: 3") -> Path:
    return write(folder, "suite.yaml", f"""
        name: short-answers
        evaluators:
          - {{type: word_count, {max_words}}}
        cases:
          - {{id: short, expected: null, output: "yes it is"}}
          - {{id: long, expected: null, output: "well it depends on many things"}}
    """)


def test_a_suite_runs_an_installed_plugin_evaluator(tmp_path, site):
    done = agenteval(site, "run", word_suite(tmp_path), "-o", tmp_path / "out.jsonl", "-q")
    assert done.returncode == 1, done.stderr
    results = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(tmp_path / "out.jsonl")}
    assert results["short"] | {"duration_ms": 0} == {
        "name": "word_count", "type": "word_count", "score": 1.0, "verdict": "pass", "hits": ["3 words"], "misses": [],
        "reasoning": None, "details": None, "error": None, "duration_ms": 0, "criterion": None,
    }
    assert (results["long"]["score"], results["long"]["verdict"]) == (0.5, "fail")


def test_a_plugin_option_is_validated_at_load_time_like_a_built_in(tmp_path, site):
    suite = word_suite(tmp_path, "max_word: 3")
    done = agenteval(site, "validate", suite)
    assert done.returncode == 2
    assert f"{suite}:3: evaluators[0].max_word: unknown key 'max_word'; did you mean 'max_words'?" in done.stderr.splitlines()


def test_the_plugin_type_is_in_the_suite_schema_and_the_evaluator_list(tmp_path, site):
    schema = json.loads(agenteval(site, "schema", "suite").stdout)
    assert schema["$defs"]["WordCount"]["properties"]["max_words"] == {
        "description": "The word budget.", "exclusiveMinimum": 0, "title": "Max Words", "type": "integer",
    }
    assert "word_count" in schema["$defs"]["WordCount"]["properties"]["type"]["const"]
    listing = agenteval(site, "evaluators").stdout.splitlines()
    width = max(len(name) for name in [*BUILT_IN_TYPES, "word_count"])
    assert listing[-1] == (
        f"{'word_count':<{width}}  Answers of at most `max_words` words pass.  (plugin from agenteval-wordcount 0.1.0)"
    )
    assert [line.split()[0] for line in listing] == [*BUILT_IN_TYPES, "word_count"]


def test_a_plugin_that_fails_to_import_is_one_clear_error_and_spares_other_commands(tmp_path):
    site = installed(tmp_path / "site", {"word_count": "agenteval_wordcount.missing_module:WordCount"})
    done = agenteval(site, "validate", word_suite(tmp_path))
    assert done.returncode == 2
    assert done.stderr == (
        "error: evaluator plugin 'word_count' (agenteval_wordcount.missing_module:WordCount, from agenteval-wordcount "
        "0.1.0) failed to load: ModuleNotFoundError: No module named 'agenteval_wordcount.missing_module'\n"
    )
    results = write(tmp_path, "r.jsonl", '{"run_id": "r", "suite": "s", "case_id": "a", "score": 1.0, "verdict": "pass"}\n')
    assert agenteval(site, "report", results, "--format", "json").returncode == 0  # reading results needs no types
    assert agenteval(site, "--help").returncode == 0


def test_a_suite_of_built_in_types_reads_no_plugin(tmp_path):
    site = installed(tmp_path / "site", {"word_count": "agenteval_wordcount.missing_module:WordCount"})
    suite = write(tmp_path, "suite.yaml", """
        name: built-in-only
        evaluators:
          - {type: equals}
        cases:
          - {id: a, expected: "yes", output: "yes"}
    """)
    done = agenteval(site, "run", suite, "-o", tmp_path / "out.jsonl", "-q")
    assert done.returncode == 0, done.stderr
    assert [line["verdict"] for line in read_jsonl(tmp_path / "out.jsonl")] == ["pass"]
    typo = write(tmp_path, "typo.yaml", suite.read_text().replace("type: equals", "type: equal"))
    done = agenteval(site, "validate", typo)  # a type that is not built in may be a plugin's: they are read
    assert done.returncode == 2
    assert done.stderr.startswith("error: evaluator plugin 'word_count' (agenteval_wordcount.missing_module:WordCount, ")


def test_a_plugin_may_not_take_a_built_in_name(tmp_path):
    site = installed(tmp_path / "site", {"code_judge": "agenteval_wordcount:WordCount"})
    done = agenteval(site, "evaluators")
    assert done.returncode == 2
    assert done.stderr == (
        "error: evaluator plugin 'code_judge' (agenteval_wordcount:WordCount, from agenteval-wordcount 0.1.0): "
        "'code_judge' is a built-in evaluator type; the plugin must use another name\n"
    )


def test_two_packages_declaring_one_type_is_an_error(tmp_path, site):
    installed(site, {"word_count": "agenteval_wordcount:WordCount"}, name="other-plugin", version="2.0")
    done = agenteval(site, "schema", "suite")
    assert done.returncode == 2
    assert "the type 'word_count' is also declared by" in done.stderr


def test_an_entry_point_that_is_not_an_evaluator_class_is_refused(tmp_path):
    site = installed(tmp_path / "site", {"word_count": "agenteval_wordcount:__doc__"})
    done = agenteval(site, "validate", word_suite(tmp_path))
    assert done.returncode == 2
    assert done.stderr.startswith("error: evaluator plugin 'word_count' (agenteval_wordcount:__doc__, from agenteval-wordcount 0.1.0): ")
    assert done.stderr.rstrip().endswith("is not a subclass of agenteval.evaluators.EvaluatorConfig")


class _Good(EvaluatorConfig):
    """Good plugin. Second sentence."""

    type: Literal["good"]
    type_name = "good"

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        return self.result(1.0, "pass")


class _NoEvaluate(EvaluatorConfig):
    type: Literal["lazy"]
    type_name = "lazy"


def test_evaluator_problem_names_what_a_plugin_class_lacks():
    assert evaluator_problem(_Good, "good") is None
    assert evaluator_problem(_Good, "other") == "its `type` field must be `Literal['other']` (the entry point's name)"
    assert evaluator_problem(_NoEvaluate, "lazy") == "it does not implement `evaluate(self, ctx) -> EvaluatorResult`"
    assert evaluator_problem(dict, "good") == "<class 'dict'> is not a subclass of agenteval.evaluators.EvaluatorConfig"
    assert describe(_Good) == "Good plugin."


def test_without_plugins_the_registry_is_the_built_in_types():
    assert REGISTRY == BUILT_IN_TYPES
