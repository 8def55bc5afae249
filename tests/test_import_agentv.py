"""`agenteval import agentv`: AgentV eval files mapped key by key, what is not carried listed with its line,
and AgentV's own public examples imported, validated and run offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agenteval.importers import read_config
from agenteval.importers.agentv import import_agentv

from conftest import read_jsonl, run_cli, write
from importer_proofs import FIXTURES, prove


def imported(tmp_path: Path, text: str):
    config = write(tmp_path, "evals/dataset.eval.yaml", text)
    parsed, source = read_config(config)
    return import_agentv(parsed, source, tmp_path / "evals" / "out")


def listed(result) -> list[str]:
    return [item.render() for item in result.not_carried]


def test_tests_assertions_and_execution_map(tmp_path):
    write(tmp_path, "graders/check.py", "print('{}')\n")
    result = imported(tmp_path, """
        name: demo
        description: A demo
        execution:
          target: llm
          trials: {count: 3, strategy: pass_at_k}
        assertions:
          - {name: has-json, type: is-json}
        tests:
          - id: invoice-1
            criteria: Extracts the header
            input: Extract the invoice
            expected_output:
              - role: assistant
                content: {number: INV-1, total: 10}
            assertions:
              - name: header
                type: field-accuracy
                fields:
                  - {path: number, match: exact, weight: 2}
                  - {path: total, match: numeric_tolerance, tolerance: 0.5}
              - {type: contains, value: INV, negate: true}
              - {type: regex, value: 'INV-\\d+'}
              - name: fuzzy
                type: code-grader
                command: [python, ../graders/check.py]
                threshold: 0.8
              - Mentions the total
              - type: rubrics
                criteria:
                  - {id: complete, outcome: Every field is there, weight: 2, required: true}
                  - Uses the right currency
          - id: agent-1
            input: [{role: user, content: Refund order 7}]
            assertions:
              - name: tools
                type: tool-trajectory
                mode: in_order
                expected:
                  - {tool: lookup, args: {order: 7}}
                  - {tool: refund, args: any}
              - {name: calls, type: tool_trajectory, mode: any_order, minimums: {lookup: 1}}
              - name: gate
                type: composite
                assertions:
                  - {name: a, type: contains, value: refund}
                  - {name: b, type: latency, threshold: 2000}
                aggregator: {type: weighted_average, weights: {a: 3, b: 1}}
    """)
    suite = result.suites["suite.yaml"]
    assert (suite["name"], suite["description"], suite["target"], suite["trust_cases"]) == ("demo", "A demo", {"type": "recorded"}, True)
    assert suite["evaluators"] == [{"name": "has-json", "type": "json_valid"}]
    first, second = result.cases
    assert (first["id"], first["input"], first["expected"], first["metadata"]) == (
        "invoice-1", "Extract the invoice", {"number": "INV-1", "total": 10}, {"criteria": "Extracts the header"})
    evaluators = {e["name"]: e for e in first["evaluators"]}
    assert evaluators["header"] == {"name": "header", "type": "field_accuracy", "fields": [
        {"path": "number", "match": "exact", "weight": 2}, {"path": "total", "match": "numeric_tolerance", "tolerance": 0.5}]}
    assert evaluators["contains"] == {"name": "contains", "type": "not_contains", "reference": "INV"}
    assert evaluators["regex"] == {"name": "regex", "type": "regex", "pattern": "INV-\\d+"}
    assert evaluators["fuzzy"] == {"name": "fuzzy", "type": "code_judge", "command": ["python", "../../graders/check.py"],
                                   "payload": "agentv", "config": {"threshold": 0.8}}
    assert evaluators["rubrics-2"]["criteria"] == [{"name": "rubric_1", "description": "Mentions the total", "scale": "pass_fail"}]
    assert evaluators["rubrics"]["criteria"] == [
        {"name": "complete", "scale": "pass_fail", "description": "Every field is there", "weight": 2},
        {"name": "c2", "description": "Uses the right currency", "scale": "pass_fail"},
    ]
    tools = {e["name"]: e for e in second["evaluators"]}
    assert tools["tools"] == {"name": "tools", "type": "tool_calls", "order": "in_order", "calls": [
        {"name": "lookup", "arguments": {"order": 7}, "extra_arguments": False}, {"name": "refund"}]}
    assert tools["calls"] == {"name": "calls", "type": "tool_calls", "order": "any", "min_calls": {"lookup": 1}, "calls": []}
    assert tools["gate"]["evaluators"] == [
        {"name": "a", "type": "contains", "reference": "refund", "weight": 3}, {"name": "b", "type": "latency", "max_ms": 2000, "weight": 1}]
    assert listed(result) == [
        "dataset.eval.yaml:4: execution.target: targets are defined in .agentv/targets.yaml, which is not read: "
        "answers come from --predictions or recorded outputs",
        "dataset.eval.yaml:5: execution.trials: a suite holds no repeat count: `agenteval run --repeat N` runs each case N times "
        "and reports pass@k, pass^k and the flaky cases",
        "dataset.eval.yaml:30: tests[0].assertions[5].criteria[0].required: a per-criterion `required` is not built in agenteval: "
        "the judge's score is the weighted mean of the criteria",
    ]


def test_negate_carries_as_an_opposite_or_the_negate_key_and_workspaces_are_listed(tmp_path):
    result = imported(tmp_path, """
        workspace: {template: ./ws}
        tests:
          - id: t
            input: hi
            workspace: {isolation: per_test}
            assertions:
              - {type: equals, value: x, negate: true}
              - {type: execution-metrics, max_tool_calls: 3}
              - {type: regex, value: 'a+', negate: true}
    """)
    assert result.cases[0]["evaluators"] == [{"name": "equals", "type": "equals", "reference": "x", "negate": True},
                                             {"name": "regex", "type": "regex", "pattern": "a+", "must_match": False}]
    assert listed(result) == [
        "dataset.eval.yaml:1: workspace: workspaces (a folder, repos and hooks set up per test) are not built in agenteval; "
        "a command target can prepare one",
        "dataset.eval.yaml:5: tests[0].workspace: workspaces (a folder, repos and hooks set up per test) are not built in agenteval; "
        "a command target can prepare one",
        "dataset.eval.yaml:8: tests[0].assertions[1]: `execution-metrics` has no agenteval equivalent",
    ]


def test_a_test_without_assertions_is_graded_on_its_criteria(tmp_path):
    result = imported(tmp_path, "tests: [{id: t, criteria: Answers 42, input: q, expected_output: '42'}]\n")
    assert result.cases[0]["expected"] == "42"
    assert result.cases[0]["evaluators"] == [{"name": "criteria", "type": "llm_judge", "endpoint": "grader",
                                              "criteria": [{"name": "criteria", "description": "Answers 42", "scale": "unit"}]}]
    assert result.suites["suite.yaml"]["models"]["grader"]["api_key_env"] == "OPENAI_API_KEY"


def test_promptfoo_shaped_agentv_file_uses_both_vocabularies(tmp_path):
    result = imported(tmp_path, """
        name: next
        providers: [mock_agent]
        prompts: ['{{ input }}']
        assert:
          - {type: field-accuracy, fields: [{path: a, match: exact}]}
        tests:
          - id: one
            vars: {input: hello, expected_output: {a: 1}}
            assert:
              - {type: contains, value: hi, required: true}
              - Says hello back
              - {type: 'trajectory:tool-used', value: {name: search, min: 2}}
              - {type: not-trajectory:tool-used, value: [delete]}
    """)
    assert result.suites["suite.yaml"]["evaluators"] == [{"name": "field-accuracy", "type": "field_accuracy", "fields": [{"path": "a", "match": "exact"}]}]
    case = result.cases[0]
    assert (case["id"], case["input"], case["expected"]) == ("one", "hello", {"a": 1})
    assert [e["type"] for e in case["evaluators"]] == ["contains", "llm_judge", "tool_calls", "tool_calls"]
    assert case["evaluators"][2]["min_calls"] == {"search": 2} and case["evaluators"][3]["forbidden"] == ["delete"]
    assert listed(result) == ["dataset.eval.yaml:2: providers: targets mock_agent are defined in .agentv/targets.yaml, which is not read: "
                              "answers come from --predictions or recorded outputs"]


def test_cli_writes_and_validates(tmp_path):
    write(tmp_path, "e.eval.yaml", "tests: [{id: a, input: q, expected_output: x, assertions: [{type: equals, value: x}]}]\n")
    done = run_cli("import", "agentv", tmp_path / "e.eval.yaml")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "agenteval" / "suite.yaml").is_file()
    assert "suite.yaml: ok (1 case, 0 suite evaluators)" in done.stdout
    assert "0 keys not carried over, 0 notes" in done.stderr


# -- proof on AgentV's own example eval files (tests/fixtures/importers/agentv, MIT, LICENSE beside them) -----------
# The invoice extractions AgentV's mock extractor returns (fixtures/invoice-00N.json) are the recorded answers of the
# document-extraction file; the others get fixed answers. Its TypeScript graders run with `bun`, absent here: those
# cases are errors (exit 3), as they would be wherever the grader's program is missing.
def invoices() -> dict[str, object]:
    folder = FIXTURES / "agentv" / "document-extraction" / "fixtures"
    return {f"invoice-00{i}": json.loads((folder / f"invoice-00{i}.json").read_text()) for i in range(1, 7)}


TRAJECTORY = [{"name": "knowledgeSearch", "arguments": {"query": "REST"}}, {"name": "knowledgeSearch", "arguments": {"query": "GraphQL"}},
              {"name": "documentRetrieve", "arguments": {"id": "doc-1"}}]
ASSERT_ANSWERS = {"contains-check": "Hello world", "json-response": '{"status": "ok", "code": 200}', "regex-check": "Good morning!",
                  "equals-check": "4"}
ANSWERS = {
    "deterministic-evaluators/evals/dataset.eval.yaml": {
        "contains-basic": "Hello there", "regex-email": "Write to support@example.com", "equals-exact": "4",
        "starts-with-prefix": "Dear User, thanks", "is-json-valid": '{"status": "ok", "code": 200}', "multi-assertion": '{"result": 42}',
        "required-gate": '{"message": "success"}'},
    "assert/evals/dataset.eval.yaml": ASSERT_ANSWERS,
    "next/assert/evals/suite.yaml": ASSERT_ANSWERS,
    "tool-trajectory-simple/evals/dataset.eval.yaml": {"*": TRAJECTORY},
    "next/trajectory-assertions-simple/evals/suite.yaml": {"*": TRAJECTORY},
    "latency-assertions/evals/dataset.eval.yaml": {"*": [{"name": "Read", "arguments": {"path": "config.json"}}]},
}
# (eval file, keys listed, notes, exit of the offline run, cases passed, cases run, cases errored)
PROOFS = [
    ("assert/evals/dataset.eval.yaml", 2, 0, 0, 4, 4, 0),
    ("code-grader-sdk/evals/dataset.eval.yaml", 1, 1, 3, 0, 1, 1),
    ("composite/evals/dataset.eval.yaml", 3, 9, 0, 4, 4, 0),
    ("deterministic-evaluators/evals/dataset.eval.yaml", 1, 0, 0, 7, 7, 0),
    ("document-extraction/evals/field-accuracy.eval.yaml", 3, 6, 3, 0, 6, 2),
    ("latency-assertions/evals/dataset.eval.yaml", 11, 0, 1, 2, 5, 0),
    ("rubric/evals/dataset.eval.yaml", 7, 1, 3, 4, 5, 1),
    ("threshold-evaluator/evals/dataset.eval.yaml", 1, 3, 0, 1, 1, 0),
    ("tool-trajectory-simple/evals/dataset.eval.yaml", 1, 1, 1, 2, 11, 0),
    ("trials/evals/dataset.eval.yaml", 2, 2, 0, 2, 2, 0),
    ("weighted-evaluators/evals/dataset.eval.yaml", 1, 8, 0, 3, 3, 0),
    ("next/assert/evals/suite.yaml", 3, 0, 0, 4, 4, 0),
    ("next/document-extraction/evals/field-accuracy.eval.yaml", 3, 0, 3, 0, 6, 2),
    ("next/trajectory-assertions-simple/evals/suite.yaml", 1, 0, 1, 3, 11, 0),
]


@pytest.mark.parametrize(("config", "listed_keys", "notes", "run_exit", "passed", "cases", "errored"), PROOFS, ids=[p[0] for p in PROOFS])
def test_public_agentv_examples_import_validate_and_run_offline(tmp_path, config, listed_keys, notes, run_exit, passed, cases, errored):
    answers = invoices() if config.endswith("field-accuracy.eval.yaml") else ANSWERS.get(config, {})
    path = FIXTURES / "agentv" / config  # AgentV keeps grader prompts in the project folder, beside evals/: --root reads them there
    proof = prove("agentv", path, tmp_path / "out", answers, root=path.parents[1])
    assert (proof.suites, proof.listed, proof.notes) == (["suite.yaml"], listed_keys, notes), proof.stderr
    assert (proof.run_exit, proof.passed, proof.cases, proof.errored) == (run_exit, passed, cases, errored)


def test_execution_thresholds_become_the_suite_default_and_the_case_threshold(tmp_path):
    result = imported(tmp_path, """
        execution: {threshold: 0.6}
        tests:
          - id: t1
            input: hi
            assertions: [{type: contains, value: hello}]
          - id: t2
            input: hi
            execution: {threshold: 0.9}
            assertions: [{type: contains, value: hello}]
          - id: t3
            input: hi
            execution: {threshold: 9}
            assertions: [{type: contains, value: hello}]
    """)
    assert result.suites["suite.yaml"]["defaults"] == {"threshold": 0.6}
    assert "threshold" not in result.cases[0] and result.cases[1]["threshold"] == 0.9 and "threshold" not in result.cases[2]
    assert listed(result) == ["dataset.eval.yaml:12: tests[2].execution.threshold: a `threshold` is a number from 0 to 1 (a case's pass mark)"]


def test_agentvs_older_evaluator_names_convert_and_script_gets_a_rename_hint(tmp_path):
    write(tmp_path, "evals/quality.md", "Is the answer polite?")
    write(tmp_path, "evals/judge.py", "print('{\"score\": 1}')")
    result = imported(tmp_path, """
        evaluators:
          - {name: fuzzy, type: code_judge, script: [python, judge.py], algorithm: levenshtein}
          - {name: boxes, type: iou_score, path: bbox, format: xywh, threshold: 0.6, colour: red}
          - {name: quality, type: llm_judge, prompt: quality.md}
        tests: [{id: t1, input: hi, expected_output: {bbox: [0, 0, 10, 10]}}]
    """)
    fuzzy, boxes, quality = result.suites["suite.yaml"]["evaluators"]
    assert fuzzy == {"name": "fuzzy", "type": "code_judge", "command": ["python", "../judge.py"], "payload": "agentv",
                     "config": {"algorithm": "levenshtein"}}
    assert boxes == {"name": "boxes", "type": "iou_score", "path": "bbox", "format": "xywh", "threshold": 0.6}
    assert quality["criteria"] == [{"name": "quality", "description": "Is the answer polite?", "scale": "unit"}]
    assert listed(result) == ["dataset.eval.yaml:3: evaluators[1].colour: `colour` of `iou_score` has no agenteval form"]
    assert "evaluators[0].script: `script` is AgentV's older name of `command`" in [item.render() for item in result.notes][0]


# The seeds' structured-data evaluator examples (field_accuracy exact / numeric tolerance / fuzzy /
# optional fields, iou_score), written as AgentV eval YAML, imported and run on the extractions
# their scenarios give: each verdict is the one the scenario states.
SEED_EVAL = """
name: seed-structured-data
tests:
  - id: exact-match
    input: extract
    expected_output: {invoice: {number: INV-001}}
    assertions: [{type: field_accuracy, fields: [{path: invoice.number, match: exact}]}]
  - id: exact-mismatch
    input: extract
    expected_output: {invoice: {number: INV-002}}
    assertions: [{type: field_accuracy, fields: [{path: invoice.number, match: exact}]}]
  - id: absolute-tolerance
    input: extract
    expected_output: {invoice: {total: 100.00}}
    assertions: [{type: field_accuracy, fields: [{path: invoice.total, match: numeric_tolerance, tolerance: 0.05, relative: false}]}]
  - id: relative-tolerance
    input: extract
    expected_output: {invoice: {total: 100.00}}
    assertions: [{type: field_accuracy, fields: [{path: invoice.total, match: numeric_tolerance, tolerance: 0.02, relative: true}]}]
  - id: outside-tolerance
    input: extract
    expected_output: {invoice: {total: 100.00}}
    assertions: [{type: field_accuracy, fields: [{path: invoice.total, match: numeric_tolerance, tolerance: 1.0}]}]
  - id: fuzzy-levenshtein
    input: extract
    expected_output: {vendor: {name: ACME CORP}}
    assertions: [{type: field_accuracy, fields: [{path: vendor.name, match: fuzzy, algorithm: levenshtein, threshold: 0.80}]}]
  - id: fuzzy-jaro-winkler
    input: extract
    expected_output: {vendor: {name: Microsoft Corporation}}
    assertions: [{type: field_accuracy, fields: [{path: vendor.name, match: fuzzy, algorithm: jaro_winkler, threshold: 0.85}]}]
  - id: fuzzy-below
    input: extract
    expected_output: {vendor: {name: Acme Corp}}
    assertions: [{type: field_accuracy, fields: [{path: vendor.name, match: fuzzy, threshold: 0.80}]}]
  - id: optional-missing
    input: extract
    expected_output: {invoice: {number: INV-001, notes: Rush order}}
    assertions: [{type: field_accuracy, fields: [{path: invoice.number, required: true}, {path: invoice.notes, required: false}]}]
  - id: box
    input: detect
    expected_output: {bbox: [0, 0, 10, 10]}
    assertions: [{type: iou_score, path: bbox, format: xyxy, threshold: 0.5}]
"""
SEED_ANSWERS = {
    "exact-match": {"invoice": {"number": "INV-001"}}, "exact-mismatch": {"invoice": {"number": "INV-001"}},
    "absolute-tolerance": {"invoice": {"total": 100.02}}, "relative-tolerance": {"invoice": {"total": 101.00}},
    "outside-tolerance": {"invoice": {"total": 105.00}}, "fuzzy-levenshtein": {"vendor": {"name": "Acme Corp"}},
    "fuzzy-jaro-winkler": {"vendor": {"name": "Microsoft Corp"}}, "fuzzy-below": {"vendor": {"name": "XYZ Inc"}},
    "optional-missing": {"invoice": {"number": "INV-001"}}, "box": {"bbox": [1, 1, 10, 10]},
}


def test_the_seeds_structured_data_examples_import_and_run_with_the_verdicts_they_state(tmp_path):
    eval_file = write(tmp_path, "evals/seed.eval.yaml", SEED_EVAL)
    done = run_cli("import", "agentv", eval_file, "-o", tmp_path / "out")
    assert done.returncode == 0 and "0 keys not carried over" in done.stderr, done.stderr
    with (tmp_path / "preds.jsonl").open("w") as handle:
        for case_id, answer in SEED_ANSWERS.items():
            handle.write(json.dumps({"id": case_id, "output": answer}) + "\n")
    run = run_cli("run", tmp_path / "out" / "suite.yaml", "--predictions", tmp_path / "preds.jsonl", "-o", tmp_path / "r.jsonl")
    verdicts = {row["case_id"]: row["verdict"] for row in read_jsonl(tmp_path / "r.jsonl")}
    assert (run.returncode, verdicts) == (1, {
        "exact-match": "pass", "exact-mismatch": "fail", "absolute-tolerance": "pass", "relative-tolerance": "pass",
        "outside-tolerance": "fail", "fuzzy-levenshtein": "pass", "fuzzy-jaro-winkler": "pass", "fuzzy-below": "fail",
        "optional-missing": "pass", "box": "pass",
    }), run.stdout + run.stderr


def test_the_background_documents_own_yaml_examples_import_and_run_with_the_verdicts_they_state(tmp_path):
    """tests/fixtures/importers/agentv-seeds: the documents' YAML blocks as written (README.md names each scenario)."""
    shutil.copytree(FIXTURES / "agentv-seeds", tmp_path / "seeds")
    folder = tmp_path / "seeds"
    done = run_cli("import", "agentv", "evals/structured-data.eval.yaml", "-o", "out", cwd=folder)
    assert done.returncode == 0 and "0 keys not carried over, 1 note" in done.stderr, done.stderr
    assert "tests[10].evaluators[0].script: `script` is AgentV's older name of `command`" in done.stderr
    run = run_cli("run", "out/suite.yaml", "--predictions", "answers.jsonl", "-o", "r.jsonl", cwd=folder)
    rows = {row["case_id"]: row for row in read_jsonl(folder / "r.jsonl")}
    assert (run.returncode, {case: row["verdict"] for case, row in rows.items()}) == (1, {
        "exact-match": "pass", "exact-mismatch": "fail", "missing-field": "fail", "absolute-tolerance": "pass",
        "relative-tolerance": "pass", "fuzzy-levenshtein": "pass", "fuzzy-jaro-winkler": "pass", "fuzzy-default-threshold": "fail",
        "optional-missing": "pass", "script-to-built-in": "pass", "config-pass-through": "fail",
    }), run.stdout + run.stderr
    assert rows["missing-field"]["evaluator_results"][0]["misses"] == ["invoice.number (required, missing)"]
    judge = rows["config-pass-through"]["evaluator_results"][0]
    assert (judge["type"], judge["score"], judge["misses"]) == ("code_judge", 0.5, ["importer.name: 0.61 (levenshtein)"])
