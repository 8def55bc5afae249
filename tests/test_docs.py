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


def test_every_flag_in_the_readme_command_list_is_in_that_commands_help():
    usage = README[README.index("agenteval run SUITE.yaml [-o"):]
    flags_of: dict[str, set[str]] = {}
    command = ""
    for line in usage[: usage.index("```")].splitlines():
        words = line.split()
        if words and words[0] == "agenteval":
            command = words[1]
        flags_of.setdefault(command, set()).update(re.findall(r"(--[a-z-]+)", line.split("#")[0]))
    assert len(flags_of["run"]) > 20
    for command, flags in flags_of.items():
        help_text = run_cli(*command.split(), "--help").stdout
        assert all(flag in help_text for flag in flags), (command, flags - {f for f in flags if f in help_text})


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
