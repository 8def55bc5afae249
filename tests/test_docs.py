"""The README stays true: its commands, flags, evaluator types and YAML snippets are checked."""

import re

import jsonschema
import yaml
from pydantic import TypeAdapter

from agenteval.evaluators import REGISTRY, EvaluatorSpec

from conftest import ROOT, SCHEMAS, run_cli

README = (ROOT / "README.md").read_text()
YAML_BLOCKS = re.findall(r"```yaml\n(.*?)```", README, re.S)


def test_every_command_in_the_readme_exists():
    commands = set(re.findall(r"^agenteval (\w+)", README, re.M))
    assert commands >= {"run", "validate", "schema", "report", "compare", "init"}
    for command in commands:
        assert run_cli(command, "--help").returncode == 0, command


def test_every_run_flag_in_the_readme_is_in_run_help():
    usage = README[README.index("agenteval run SUITE.yaml [-o"):]
    flags = set(re.findall(r"(--[a-z-]+)", usage[: usage.index("```")]))
    help_text = run_cli("run", "--help").stdout
    assert flags and all(flag in help_text for flag in flags), flags - {f for f in flags if f in help_text}


def test_every_evaluator_type_is_documented():
    for name in REGISTRY:
        assert re.search(rf"^### .*\b{name}\b", README, re.M), f"README has no section for {name}"


def test_yaml_snippets_are_valid():
    suite_schema = __import__("json").loads((SCHEMAS / "suite.schema.json").read_text())
    evaluators = TypeAdapter(list[EvaluatorSpec])
    checked = 0
    for block in YAML_BLOCKS:
        data = yaml.safe_load(block)
        if isinstance(data, dict) and "name" in data:
            jsonschema.validate(data, suite_schema)
        elif isinstance(data, list):
            evaluators.validate_python(data)
        else:
            continue
        checked += 1
    assert checked == len(YAML_BLOCKS) > 0  # every yaml block is a suite or a list of evaluators
