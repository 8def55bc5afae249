"""Validation at load time: every problem at once, each with file:line, key path and a fix."""

import json
from pathlib import Path

import pytest

from agenteval.evaluators.code_judge import CodeJudge
from agenteval.evaluators.fields import FieldAccuracy
from agenteval.suite.loader import SuiteInvalid, load_suite
from agenteval.targets import CommandTarget

from conftest import write

GOOD_EVALUATORS = """
evaluators:
  - type: field_accuracy
    fields: [{path: a}]
"""


def problems_of(path: Path) -> list[str]:
    with pytest.raises(SuiteInvalid) as caught:
        load_suite(path)
    return [problem.render() for problem in caught.value.problems]


def test_valid_suite_with_inline_cases(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - type: field_accuracy
            fields: [{path: a, match: fuzzy}]
        cases:
          - {id: 1, expected: {a: x}, output: {a: x}, tags: [t]}
          - {id: two, expected: {a: y}}
    """)
    loaded = load_suite(suite)
    assert [e.id for e in loaded.entries] == ["1", "two"]
    assert loaded.entries[0].tags == ("t",)
    spec = loaded.suite.evaluators[0].fields[0]
    assert spec.match == "fuzzy" and spec.threshold is None
    cases = list(loaded.iter_cases())
    assert cases[0].has_output and not cases[1].has_output


def test_every_problem_is_reported_at_once_with_lines(tmp_path):
    suite = write(tmp_path, "bad.yaml", """
        name: demo
        descripton: typo
        evaluators:
          - name: header
            type: field_accuracy
            fields:
              - {path: invoice.number, match: exact}
              - {path: vendor.name, match: fuzzy, thresold: 0.85}
              - {path: invoice.total, match: numeric_tolerance, tolerance: "not a number"}
              - {path: invoice.date, match: invalid_type}
          - type: field_acuracy
            fields: [{path: a}]
        cases: missing.jsonl
    """)
    found = problems_of(suite)
    assert found == [
        f"{suite}:2: descripton: unknown key 'descripton'; did you mean 'description'?",
        f"{suite}:8: evaluators[0].fields[1].thresold: unknown key 'thresold'; did you mean 'threshold'?",
        f"{suite}:9: evaluators[0].fields[2].tolerance: expected a number, got 'not a number'",
        f"{suite}:10: evaluators[0].fields[3].match: Invalid match type: invalid_type (valid: exact, fuzzy, numeric_tolerance, date)",
        f"{suite}:11: evaluators[1].type: unknown evaluator type 'field_acuracy'; did you mean 'field_accuracy'? (known: "
        + ", ".join(__import__("agenteval.evaluators", fromlist=["REGISTRY"]).REGISTRY) + ")",
        f"{suite}:13: cases: cases file not found: missing.jsonl (looked for {tmp_path / 'missing.jsonl'})",
    ]


def test_duplicate_yaml_keys_are_errors(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - type: field_accuracy
            fields: [{path: a}]
            fields: [{path: b}]
        name: again
        cases: [{id: a, expected: 1}]
    """)
    assert problems_of(suite) == [
        f"{suite}:5: evaluators[0].fields: duplicate key 'fields' (first at line 4)",
        f"{suite}:6: name: duplicate key 'name' (first at line 1)",
    ]


def test_duplicate_case_ids_are_errors(tmp_path):
    write(tmp_path, "cases.jsonl", '{"id": "a", "expected": 1}\n{"id": "b", "expected": 1}\n\n{"id": "a", "expected": 2}\n')
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.jsonl\n")
    assert problems_of(suite) == [f"{tmp_path / 'cases.jsonl'}:4: id: duplicate case id 'a' (first at line 1)"]


def test_case_file_problems_name_the_jsonl_line(tmp_path):
    write(tmp_path, "cases.jsonl", '{"id": "a", "expected": 1}\n{"id": "b"}\n{"id": "c", "expected": 1, "ouput": 2}\n[1]\n{not json\n')
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.jsonl\n")
    cases = tmp_path / "cases.jsonl"
    found = problems_of(suite)
    assert found[:3] == [
        f"{cases}:2: expected: required key is missing",
        f"{cases}:3: ouput: unknown key 'ouput'; did you mean 'output'?",
        f"{cases}:4: a case must be an object with `id` and `expected`",
    ]
    assert found[3].startswith(f"{cases}:5: invalid JSON")


def test_cases_from_json_and_yaml_files(tmp_path):
    (tmp_path / "cases.json").write_text(json.dumps([{"id": "a", "expected": {"a": 1}, "output": {"a": 1}}]))
    write(tmp_path, "cases.yaml", """
        - id: y1
          expected: {a: 1}
          input: {when: 2024-01-15}
    """)
    for name, ids in (("cases.json", ["a"]), ("cases.yaml", ["y1"])):
        suite = write(tmp_path, f"{name}.suite.yaml", "name: demo\n" + GOOD_EVALUATORS + f"cases: {name}\n")
        loaded = load_suite(suite)
        assert [case.id for case in loaded.iter_cases()] == ids
    yaml_case = next(load_suite(tmp_path / "cases.yaml.suite.yaml").iter_cases())
    assert yaml_case.input == {"when": "2024-01-15"}  # YAML dates stay JSON-shaped


def test_yaml_cases_file_problems_have_lines(tmp_path):
    write(tmp_path, "cases.yaml", """
        - id: ok
          expected: 1
        - id: bad
          expected: 1
          tags: not-a-list
    """)
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.yaml\n")
    assert problems_of(suite) == [f"{tmp_path / 'cases.yaml'}:5: [1].tags: expected a list, got 'not-a-list'"]


def test_broken_yaml_is_reported_with_its_line(tmp_path):
    suite = write(tmp_path, "s.yaml", "name: demo\nevaluators:\n  - type: [unclosed\ncases: []\n")
    [problem] = problems_of(suite)
    assert problem.startswith(f"{suite}:4: invalid YAML")


def test_missing_suite_file(tmp_path):
    assert problems_of(tmp_path / "nope.yaml") == [f"{tmp_path / 'nope.yaml'}: file not found"]


def test_suite_that_is_not_a_mapping(tmp_path):
    suite = write(tmp_path, "s.yaml", "- just\n- a list\n")
    assert problems_of(suite) == [f"{suite}:1: a suite is a mapping with `name`, `evaluators` and `cases`"]


def test_required_keys_and_wrong_types(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        evaluators:
          - type: field_accuracy
            fields: [{path: a, weight: heavy, required: "yes"}]
            aggregation: mean
          - type: code_judge
        cases: [{id: a, expected: 1}]
    """)
    assert problems_of(suite) == [
        f"{suite}:1: name: required key is missing",
        f"{suite}:3: evaluators[0].fields[0].required: expected true or false, got 'yes'",
        f"{suite}:3: evaluators[0].fields[0].weight: expected a number, got 'heavy'",
        f"{suite}:4: evaluators[0].aggregation: invalid value 'mean' (valid: weighted_average, all_or_nothing)",
        f"{suite}:5: evaluators[1].command: required key is missing",
    ]


def test_option_for_another_match_type_is_an_error(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - type: field_accuracy
            fields: [{path: a, match: exact, tolerance: 0.1}]
        cases: [{id: a, expected: 1}]
    """)
    assert problems_of(suite) == [f"{suite}:4: evaluators[0].fields[0]: `tolerance` (match: numeric_tolerance) does not apply to match: exact"]


def test_duplicate_evaluator_names_and_cases_without_evaluators(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - {type: field_accuracy, fields: [{path: a}]}
          - {type: field_accuracy, fields: [{path: b}]}
        cases: [{id: a, expected: 1}]
    """)
    assert problems_of(suite) == [f"{suite}:4: evaluators[1].name: two evaluators are named 'field_accuracy'; give each a unique `name`"]
    lonely = write(tmp_path, "t.yaml", "name: demo\ncases: [{id: a, expected: 1}]\n")
    assert problems_of(lonely) == [f"{lonely}:2: cases[0]: case 'a' has no evaluators and the suite defines none"]


def test_malformed_path_is_a_load_time_warning(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - type: field_accuracy
            fields: [{path: invoice..total}]
        cases: [{id: a, expected: 1}]
    """)
    loaded = load_suite(suite)
    assert [w.render() for w in loaded.warnings] == [
        f"{suite}:4: warning: evaluators[0].fields[0].path: malformed path 'invoice..total': it will resolve to missing"
    ]


def test_code_judge_passes_unknown_keys_as_config_and_warns_on_near_misses(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - type: code_judge
            command: python judge.py --strict
            fields: [{path: supplier.name, threshold: 0.85}]
            algorithm: levenshtein
            timout: 5
        cases: [{id: a, expected: 1}]
    """)
    loaded = load_suite(suite)
    judge = loaded.suite.evaluators[0]
    assert isinstance(judge, CodeJudge)
    assert judge.command == ["python", "judge.py", "--strict"]
    assert judge.judge_config == {"fields": [{"path": "supplier.name", "threshold": 0.85}], "algorithm": "levenshtein", "timout": 5}
    assert [w.render() for w in loaded.warnings] == [
        f"{suite}:7: warning: evaluators[0].timout: `timout` is passed to the judge as config; did you mean `timeout`?"
    ]


def test_case_level_evaluators_add_or_replace_by_name(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - {name: main, type: field_accuracy, fields: [{path: a}]}
        cases:
          - id: replaces
            expected: {a: 1, b: 2}
            evaluators: [{name: main, type: field_accuracy, fields: [{path: b}]}]
          - id: adds
            expected: {a: 1, b: 2}
            evaluators: [{name: extra, type: field_accuracy, fields: [{path: b}]}]
    """)
    loaded = load_suite(suite)
    replaces, adds = loaded.iter_cases()
    assert [(e.label, e.fields[0].path) for e in loaded.evaluators_for(replaces)] == [("main", "b")]
    assert [e.label for e in loaded.evaluators_for(adds)] == ["main", "extra"]
    assert all(isinstance(e, FieldAccuracy) for e in loaded.evaluators_for(adds))


def test_command_target_accepts_a_string_or_a_list(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        target: {type: command, command: "python extract.py --fast", timeout: 5}
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases: [{id: a, expected: 1}]
    """)
    target = load_suite(suite).suite.target
    assert isinstance(target, CommandTarget)
    assert (target.command, target.timeout) == (["python", "extract.py", "--fast"], 5)


def test_empty_case_list_is_an_error(tmp_path):
    (tmp_path / "cases.jsonl").write_text("\n")
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.jsonl\n")
    assert problems_of(suite) == [f"{suite}:6: cases: cases.jsonl has no cases"]


def test_yaml_booleans_are_only_true_and_false(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators: [{type: field_accuracy, fields: [{path: country}]}]
        cases:
          - {id: a, expected: {country: NO, answer: yes, switch: off, ok: true, bad: False}}
    """)
    case = next(load_suite(suite).iter_cases())
    assert case.expected == {"country": "NO", "answer": "yes", "switch": "off", "ok": True, "bad": False}


def test_jsonl_cases_with_a_byte_order_mark_load(tmp_path):
    (tmp_path / "cases.jsonl").write_bytes(b'\xef\xbb\xbf{"id": "a", "expected": 1}\n')
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.jsonl\n")
    assert [case.id for case in load_suite(suite).iter_cases()] == ["a"]
