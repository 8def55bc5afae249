"""promptfoo's JavaScript assertions imported and run by agenteval give promptfoo's own verdicts:
tests/fixtures/importers/promptfoo-javascript holds a config and the results promptfoo wrote for it."""

from __future__ import annotations

import json
import shutil

from conftest import read_jsonl, run_cli

from importer_proofs import FIXTURES

FOLDER = FIXTURES / "promptfoo-javascript"


def test_every_case_and_assertion_gets_promptfoos_verdict_and_score(tmp_path):
    shutil.copytree(FOLDER, tmp_path / "config")
    config = tmp_path / "config"
    promptfoo = sorted(json.loads((config / "results.json").read_text())["results"]["results"], key=lambda row: row["testIdx"])
    (config / "outputs.json").write_text(json.dumps([row["response"]["output"] for row in promptfoo]))
    done = run_cli("import", "promptfoo", "promptfooconfig.yaml", "--model-outputs", "outputs.json", "-o", "out", cwd=config)
    assert done.returncode == 0, done.stderr
    assert (config / "out" / "checks.js").read_text() == (config / "checks.js").read_text()  # copied beside the suite
    done = run_cli("run", "out/suite.yaml", "--predictions", "out/predictions.jsonl", "-o", "r.jsonl", "-q", cwd=config)
    assert done.returncode == 1, done.stderr  # two of promptfoo's six tests fail
    ours = {row["case_id"]: row for row in read_jsonl(config / "r.jsonl")}
    assert len(ours) == len(promptfoo) == 6
    for row in promptfoo:
        mine = ours[row["testCase"]["description"]]
        assert (mine["verdict"] == "pass") == row["success"], mine["case_id"]
        theirs = [(part["pass"], part["score"]) for part in row["gradingResult"]["componentResults"]]
        assert [(e["verdict"] == "pass", round(e["score"], 6)) for e in mine["evaluator_results"]] == \
            [(passed, round(score, 6)) for passed, score in theirs], mine["case_id"]
    assert {e["type"] for row in ours.values() for e in row["evaluator_results"]} == {"javascript", "contains"}


def test_a_javascript_file_outside_the_folder_or_loading_its_neighbours_is_listed(tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (tmp_path / "outside.js").write_text("module.exports = () => true;\n")
    (config / "uses_helper.js").write_text("const helper = require('./helper');\nmodule.exports = (o) => helper(o);\n")
    (config / "promptfooconfig.yaml").write_text(
        "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n"
        "  - vars: {q: a}\n    assert:\n      - {type: javascript, value: 'file://../outside.js'}\n"
        "      - {type: javascript, value: 'file://uses_helper.js'}\n      - {type: javascript, value: 'output.length > 0'}\n"
    )
    done = run_cli("import", "promptfoo", "promptfooconfig.yaml", "-o", "out", cwd=config)
    assert done.returncode == 0, done.stderr
    assert "promptfooconfig.yaml:6:" in done.stderr and "../outside.js is outside the config's folder" in done.stderr
    assert "promptfooconfig.yaml:7:" in done.stderr and "uses_helper.js loads other files of its folder" in done.stderr
    [case] = read_jsonl(config / "out" / "cases.jsonl")
    assert case["evaluators"] == [{"name": "javascript", "type": "javascript", "code": "output.length > 0"}]
    assert sorted(path.name for path in (config / "out").iterdir()) == ["cases.jsonl", "suite.yaml"]


def test_transforms_transform_vars_and_generated_tests_get_promptfoos_verdicts(tmp_path):
    """tests/fixtures/importers/promptfoo-transforms: promptfoo 0.121.20's results on the same config."""
    shutil.copytree(FIXTURES / "promptfoo-transforms", tmp_path / "config")
    config = tmp_path / "config"
    promptfoo = sorted(json.loads((config / "results.json").read_text())["results"]["results"], key=lambda row: row["testIdx"])
    answers = [row["response"]["raw"] if row.get("response") else row["vars"]["text"] for row in promptfoo]  # echo: the prompt
    (config / "outputs.json").write_text(json.dumps(answers))
    done = run_cli("import", "promptfoo", "promptfooconfig.yaml", "--model-outputs", "outputs.json", "--run-generators", "-o", "out", cwd=config)
    assert done.returncode == 0, done.stderr
    assert "running the tests generator generate.py:make_tests" in done.stderr and "running the tests generator generate.js" in done.stderr
    cases = {case["id"]: case for case in read_jsonl(config / "out" / "cases.jsonl")}
    assert cases["default-transform"]["input"] == {"text": "  Hello Ada  ", "name": "Ada", "greeting": "Hello Ada"}  # transformVars ran
    done = run_cli("run", "out/suite.yaml", "--predictions", "out/predictions.jsonl", "-o", "r.jsonl", "-q", cwd=config)
    assert done.returncode == 3, done.stdout + done.stderr  # two tests error, one fails, as in promptfoo
    ours = {row["case_id"]: row for row in read_jsonl(config / "r.jsonl")}
    assert len(ours) == len(promptfoo) == 8
    for row in promptfoo:
        mine = ours[row["testCase"]["description"]]
        expected = "pass" if row["success"] else "error" if row["failureReason"] == 2 else "fail"
        assert mine["verdict"] == expected, (mine["case_id"], mine)
        if expected != "error":
            theirs = [(part["pass"], part["score"]) for part in row["gradingResult"]["componentResults"]]
            assert [(e["verdict"] == "pass", round(e["score"], 6)) for e in mine["evaluator_results"]] == \
                [(passed, round(score, 6)) for passed, score in theirs], mine["case_id"]
    assert "transform (javascript) threw SyntaxError" in ours["test-transform-throws"]["evaluator_results"][0]["error"]
