"""Validation at load time: every problem at once, each with file:line, key path and a fix."""

import json
import time
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
    cases = list(loaded.iter_cases())
    assert [case.id for case in cases] == ["1", "two"] and loaded.case_count == 2
    assert cases[0].tags == ["t"]
    spec = loaded.suite.evaluators[0].fields[0]
    assert spec.match == "fuzzy" and spec.threshold is None
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
    write(tmp_path, "cases.jsonl", '{"id": "a", "expected": 1}\n{"id": "b", "tags": "t"}\n{"id": "c", "expected": 1, "ouput": 2}\n[1]\n{not json\n')
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.jsonl\n")
    cases = tmp_path / "cases.jsonl"
    found = problems_of(suite)
    assert found[:3] == [
        f"{cases}:2: tags: expected a list, got 't'",
        f"{cases}:3: ouput: unknown key 'ouput'; did you mean 'output'?",
        f"{cases}:4: a case must be an object with an `id`",
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
        f"{suite}:4: warning: evaluators[0].fields[0].path: malformed path 'invoice..total': it will resolve to missing",
        f"{suite}:5: warning: cases[0]: case 'a' has no `output`, which the recorded target answers with: the run fails it "
        "unless --predictions gives its answer",
    ]


def test_code_judge_passes_unknown_keys_as_config_and_warns_on_near_misses(tmp_path):
    write(tmp_path, "judge.py", "")
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
        f"{suite}:7: warning: evaluators[0].timout: `timout` is passed to the judge as config; did you mean `timeout`?",
        f"{suite}:8: warning: cases[0]: case 'a' has no `output`, which the recorded target answers with: the run fails it "
        "unless --predictions gives its answer",
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


def test_target_and_model_entry_problems_name_the_keys_their_type_has(tmp_path):
    """A target's or a `models:` entry's keys are checked by the class its `type` names: a typo gets the
    did-you-mean of that type's keys, and a missing `type` lists the types there are."""
    suite = write(tmp_path, "s.yaml", """
        name: demo
        models:
          claude: {type: anthropic, modle: c, api_key_env: K}
          local: {base_url: "http://127.0.0.1:1/v1", modle: m}
        targets:
          extractor: {type: command, comand: [python, x.py]}
          chat: {type: openai, modle: m}
          bare: {command: [python, x.py]}
        evaluators:
          - {name: x}
        cases: [{id: a, expected: 1}]
    """)
    from agenteval.evaluators import BUILT_IN
    from agenteval.targets import TYPES

    assert problems_of(suite) == [
        f"{suite}:3: models.claude.modle: unknown key 'modle'; did you mean 'model'?",
        f"{suite}:4: models.local.modle: unknown key 'modle'; did you mean 'model'?",
        f"{suite}:6: targets.extractor.command: required key is missing",
        f"{suite}:6: targets.extractor.comand: unknown key 'comand'; did you mean 'command'?",
        f"{suite}:7: targets.chat.modle: unknown key 'modle'; did you mean 'model'?",
        f"{suite}:8: targets.bare: missing `type` (one of: {', '.join(TYPES)})",
        f"{suite}:10: evaluators[0]: missing `type` (one of: {', '.join(BUILT_IN)})",
    ]
    assert list(TYPES)[:3] == ["recorded", "command", "openai"]


def test_a_type_that_is_no_name_is_one_problem_each(tmp_path):
    """A list, a mapping or null as `type` (or no mapping at all) under models:, targets: and evaluators:
    is a message at its line, never a crash of the lookup by type name."""
    suite = write(tmp_path, "s.yaml", """
        name: demo
        models: {m: null, n: {type: [1, 2]}, o: {type: {x: 1}}}
        targets: {a: {type: [1, 2]}, b: {type: null}, c: [1]}
        evaluators: [{type: [1]}, 7]
        cases: [{id: a, expected: 1}]
    """)
    from agenteval.evaluators import BUILT_IN
    from agenteval.targets import TYPES

    models, targets, evaluators = "openai, anthropic, bedrock, azure_openai, gemini", ", ".join(TYPES), ", ".join(BUILT_IN)
    assert problems_of(suite) == [
        f"{suite}:2: models.m: expected a mapping, got None",
        f"{suite}:2: models.n.type: unknown model type '[1, 2]' (known: {models})",
        f"{suite}:2: models.o.type: unknown model type \"{{'x': 1}}\" (known: {models})",
        f"{suite}:3: targets.a.type: unknown target type '[1, 2]' (known: {targets})",
        f"{suite}:3: targets.b.type: unknown target type 'None' (known: {targets})",
        f"{suite}:3: targets.c: expected a mapping, got [1]",
        f"{suite}:4: evaluators[0].type: unknown evaluator type '[1]' (known: {evaluators})",
        f"{suite}:4: evaluators[1]: expected a mapping, got 7",
    ]


def test_a_target_built_in_python_is_taken_as_it_is(tmp_path):
    from agenteval.suite.loader import load_suite_data

    target = CommandTarget(type="command", command=["python", "x.py"])
    loaded = load_suite_data({"name": "demo", "target": target, "evaluators": [{"type": "equals"}], "cases": [{"id": "a"}]}, tmp_path)
    assert loaded.suite.target is target
    with pytest.raises(SuiteInvalid) as caught:
        load_suite_data({"name": "demo", "target": FieldAccuracy(type="field_accuracy", fields=[{"path": "a"}]),
                         "evaluators": [{"type": "equals"}], "cases": [{"id": "a"}]}, tmp_path)
    assert [(problem.key, problem.message[:47]) for problem in caught.value.problems] == [
        (("target",), "expected a mapping, got FieldAccuracy(type='fie"),  # (an evaluator is no target)
    ]


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


# --- every stage at once -------------------------------------------------------------------------

def test_an_invalid_evaluator_does_not_hide_case_problems(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - type: field_accuracy
            fields: [{path: a, match: fuzy}]
        cases:
          - {id: a, expected: 1}
          - {id: a, expected: 2}
          - {id: b, tags: t}
    """)
    assert problems_of(suite) == [
        f"{suite}:4: evaluators[0].fields[0].match: Invalid match type: fuzy (valid: exact, fuzzy, numeric_tolerance, date); did you mean 'fuzzy'?",
        f"{suite}:7: cases[1].id: duplicate case id 'a' (first at line 6)",
        f"{suite}:8: cases[2].tags: expected a list, got 't'",
    ]


def test_an_invalid_suite_key_does_not_hide_problems_in_the_cases_file(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "expected": 1}\n{"id": "a", "expected": 2}\n{"id": "b", "expected": 1, "evaluators": [{"type": "nope"}]}\n')
    suite = write(tmp_path, "s.yaml", "name: demo\ntarget: {type: command}\n" + GOOD_EVALUATORS + "cases: cases.jsonl\n")
    found = problems_of(suite)
    cases = tmp_path / "cases.jsonl"
    assert found[0] == f"{cases}:2: id: duplicate case id 'a' (first at line 1)"
    assert found[1].startswith(f"{cases}:3: evaluators[0].type: unknown evaluator type 'nope' (known: ")
    assert found[2] == f"{suite}:2: target.command: required key is missing"
    assert len(found) == 3


def test_cases_without_evaluators_are_not_blamed_when_the_suite_evaluators_are_invalid(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators: [{type: field_acuracy}]
        cases: [{id: a, expected: 1}]
    """)
    [problem] = problems_of(suite)
    assert problem.startswith(f"{suite}:2: evaluators[0].type: unknown evaluator type 'field_acuracy'; did you mean 'field_accuracy'?")


# --- did-you-mean only when really close ----------------------------------------------------------

@pytest.mark.parametrize(("written", "suggested"), [
    ("field_acuracy", "field_accuracy"),
    ("iou", "iou_score"),
    ("line_item", "line_items"),
    ("Field_Accuracy", "field_accuracy"),
    ("regexp", "regex"),
])
def test_an_unknown_type_close_to_a_known_one_gets_a_suggestion(tmp_path, written, suggested):
    suite = write(tmp_path, "s.yaml", f"name: demo\nevaluators: [{{type: {written}}}]\ncases: [{{id: a, expected: 1}}]\n")
    [problem] = problems_of(suite)
    assert f"unknown evaluator type {written!r}; did you mean {suggested!r}? (known: " in problem


@pytest.mark.parametrize("written", ["gpt_judge", "sql_judge", "rouge_score", "bleu", "field", "judge", "json"])
def test_an_unknown_type_far_from_every_known_one_gets_no_suggestion(tmp_path, written):
    suite = write(tmp_path, "s.yaml", f"name: demo\nevaluators: [{{type: {written}}}]\ncases: [{{id: a, expected: 1}}]\n")
    [problem] = problems_of(suite)
    assert f"unknown evaluator type {written!r} (known: " in problem
    assert "did you mean" not in problem


@pytest.mark.parametrize(("written", "hint"), [
    ("fuzy", "; did you mean 'fuzzy'?"),
    ("numeric", "; did you mean 'numeric_tolerance'?"),
    ("dates", "; did you mean 'date'?"),
    ("regex", ""),
    ("semantic", ""),
    ("e", ""),
])
def test_match_types_are_suggested_only_when_close(tmp_path, written, hint):
    suite = write(tmp_path, "s.yaml", f"name: demo\nevaluators: [{{type: field_accuracy, fields: [{{path: a, match: {written}}}]}}]\ncases: [{{id: a, expected: 1}}]\n")
    assert problems_of(suite) == [
        f"{suite}:2: evaluators[0].fields[0].match: Invalid match type: {written} (valid: exact, fuzzy, numeric_tolerance, date){hint}"
    ]


def test_unknown_keys_are_suggested_only_when_close(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - {type: field_accuracy, fields: [{path: a, wieght: 2, colour: red}]}
        cases: [{id: a, expected: 1}]
    """)
    assert problems_of(suite) == [
        f"{suite}:3: evaluators[0].fields[0].wieght: unknown key 'wieght'; did you mean 'weight'?",
        f"{suite}:3: evaluators[0].fields[0].colour: unknown key 'colour'",
    ]


# --- weights that add up to nothing ---------------------------------------------------------------

def test_zero_total_weights_are_load_time_warnings(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - {name: f, type: field_accuracy, weight: 0, fields: [{path: a, weight: 0}, {path: b, weight: 0}]}
        cases: [{id: a, expected: {a: 1}}]
    """)
    assert [w.render() for w in load_suite(suite).warnings] == [
        f"{suite}:2: warning: evaluators: every evaluator has weight 0: case scores are always 0",
        f"{suite}:3: warning: evaluators[0].fields: every field has weight 0: the score is always 0",
        f"{suite}:3: warning: evaluators[0].fields[1].path: 'b' is in no case's `expected` (of the 1 that have one), so every "
        "case skips it; did you mean 'a'?",
        f"{suite}:4: warning: cases[0]: case 'a' has no `output`, which the recorded target answers with: the run fails it "
        "unless --predictions gives its answer",
    ]


def test_a_case_whose_own_evaluators_weigh_nothing_is_warned_about(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators: [{name: f, type: field_accuracy, fields: [{path: a}]}]
        cases:
          - {id: a, expected: {a: 1}, evaluators: [{name: f, type: field_accuracy, weight: 0, fields: [{path: a}]}]}
          - {id: b, expected: {a: 1}, evaluators: [{name: g, type: field_accuracy, weight: 0, fields: [{path: a}]}]}
    """)
    assert [w.render() for w in load_suite(suite).warnings] == [
        f"{suite}:4: warning: cases[0].evaluators: case 'a': its evaluators all have weight 0, so its score is always 0",
        f"{suite}:4: warning: cases[0]: case 'a' and 1 other case have no `output`, which the recorded target answers with: "
        "the run fails them unless --predictions gives their answers",
    ]


# --- a cases file is data: it may not run programs unless the suite says so -----------------------

JUDGE_CASE = {"id": "c1", "expected": {"a": 1}, "output": {"a": 1},
              "evaluators": [{"name": "x", "type": "code_judge", "command": ["sh", "-c", "touch PWNED"]}]}


def test_a_program_in_a_cases_file_is_refused_without_trust(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c0", "expected": {"a": 1}}) + "\n" + json.dumps(JUDGE_CASE) + "\n")
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.jsonl\n")
    assert problems_of(suite) == [
        f"{tmp_path / 'cases.jsonl'}:2: evaluators[0].type: case 'c1': a `code_judge` evaluator in a cases file runs a "
        "program or code; cases files are data, so this needs `trust_cases: true` in the suite (only for a file you "
        "trust like your own code), or move the evaluator into the suite"
    ]


def test_a_program_nested_in_a_composite_in_a_cases_file_is_refused_too(tmp_path):
    nested = dict(JUDGE_CASE, evaluators=[{"name": "all", "type": "composite", "evaluators": JUDGE_CASE["evaluators"]}])
    (tmp_path / "cases.json").write_text(json.dumps([nested]))
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.json\n")
    [problem] = problems_of(suite)
    assert problem.startswith(f"{tmp_path / 'cases.json'}: [0].evaluators[0].evaluators[0].type: case 'c1': a `code_judge` evaluator")


def test_trust_case_commands_allows_programs_in_a_cases_file(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps(JUDGE_CASE) + "\n")
    suite = write(tmp_path, "s.yaml", "name: demo\ntrust_case_commands: true\n" + GOOD_EVALUATORS + "cases: cases.jsonl\n")
    [case] = load_suite(suite).iter_cases()
    assert isinstance(case.evaluators[0], CodeJudge)


def test_inline_cases_are_the_suite_authors_own_and_may_run_programs(tmp_path):
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases:\n  - " + json.dumps(JUDGE_CASE) + "\n")
    [case] = load_suite(suite).iter_cases()
    assert case.evaluators[0].command == ["sh", "-c", "touch PWNED"]


# --- YAML that is hostile or unusual --------------------------------------------------------------

def _alias_bomb() -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{name}: &{name} [" + ",".join(f"*{previous}" for _ in range(9)) + "]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_quickly_with_a_bounded_error(tmp_path):
    suite = write(tmp_path, "s.yaml", "name: bomb\n" + _alias_bomb() + "evaluators: []\ncases: []\n")
    started = time.perf_counter()
    [problem] = problems_of(suite)
    assert time.perf_counter() - started < 5
    assert problem.startswith(f"{suite}:")
    assert problem.endswith("values; write the values out or use fewer nested aliases")
    assert ": YAML aliases expand to more than 100," in problem


def test_an_alias_bomb_in_a_yaml_cases_file_is_refused(tmp_path):
    (tmp_path / "cases.yaml").write_text("- id: c0\n  expected: 1\n  metadata:\n" + "".join("    " + line + "\n" for line in _alias_bomb().splitlines()))
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.yaml\n")
    [problem] = problems_of(suite)
    assert problem.startswith(f"{tmp_path / 'cases.yaml'}:") and "YAML aliases expand to more than" in problem


def test_aliases_within_the_budget_expand_normally(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases:
          - {id: a, expected: &shared {a: [1, 2, 3]}, output: *shared}
          - {id: b, expected: *shared, output: *shared}
    """)
    assert [case.output for case in load_suite(suite).iter_cases()] == [{"a": [1, 2, 3]}] * 2


@pytest.mark.parametrize("nesting", ["[" * 100_000 + "]" * 100_000, "{a: " * 20_000 + "1" + "}" * 20_000])
def test_deep_nesting_is_a_clear_error(tmp_path, nesting):
    suite = write(tmp_path, "s.yaml", "name: deep\nx: " + nesting + "\nevaluators: []\ncases: []\n")
    assert problems_of(suite) == [f"{suite}:2: YAML nested deeper than 100 levels"]


def test_nesting_up_to_the_limit_is_fine(tmp_path):
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: [{id: a, expected: 1, metadata: {x: " + "[" * 96 + "]" * 96 + "}}]\n")
    [case] = load_suite(suite).iter_cases()
    depth, value = 0, case.metadata["x"]
    while value != []:
        depth, value = depth + 1, value[0]
    assert depth == 95


def test_merge_keys_merge_with_the_keys_beside_them_winning(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        x-base: &base {type: field_accuracy, weight: 2, fields: [{path: a}]}
        x-strict: &strict {aggregation: all_or_nothing, weight: 5}
        evaluators:
          - <<: *base
            name: first
          - <<: [*strict, *base]
            name: second
            weight: 3
        cases: [{id: a, expected: {a: 1}}]
    """)
    first, second = load_suite(suite).suite.evaluators
    assert (first.label, first.weight, first.aggregation, [f.path for f in first.fields]) == ("first", 2, "weighted_average", ["a"])
    assert (second.label, second.weight, second.aggregation) == ("second", 3, "all_or_nothing")


def test_a_problem_inside_merged_keys_points_at_the_merge(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - &base {type: field_accuracy, fields: [{path: a, match: fuzy}]}
          - <<: *base
            name: again
        cases: [{id: a, expected: 1}]
    """)
    assert [p.split(": ", 2)[:2] for p in problems_of(suite)] == [
        [f"{suite}:3", "evaluators[0].fields[0].match"],
        [f"{suite}:4", "evaluators[1].fields[0].match"],
    ]


def test_a_merge_key_needs_mappings(tmp_path):
    suite = write(tmp_path, "s.yaml", "name: demo\nevaluators:\n  - <<: [1, 2]\n    type: field_accuracy\n    fields: [{path: a}]\ncases: [{id: a, expected: 1}]\n")
    assert problems_of(suite) == [f"{suite}:3: evaluators[0]: a merge key `<<` takes a mapping or a list of mappings"]


def test_top_level_x_keys_are_ignored(tmp_path):
    suite = write(tmp_path, "s.yaml", "name: demo\nx-notes: anything at all\n" + GOOD_EVALUATORS + "cases: [{id: a, expected: 1}]\n")
    assert load_suite(suite).suite.name == "demo"


# --- encodings ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "content"), [
    ("cases.json", b'\xef\xbb\xbf[{"id": "a", "expected": 1}]'),
    ("cases.yaml", b"\xef\xbb\xbf- {id: a, expected: 1}\n"),
    ("cases.jsonl", b'\xef\xbb\xbf{"id": "a", "expected": 1}\n'),
])
def test_a_byte_order_mark_is_accepted_in_every_cases_format(tmp_path, name, content):
    (tmp_path / name).write_bytes(content)
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + f"cases: {name}\n")
    assert [case.id for case in load_suite(suite).iter_cases()] == ["a"]


@pytest.mark.parametrize(("name", "content", "line", "column"), [
    ("cases.jsonl", b'{"id": "a", "expected": 1}\n{"id": "b", "expected": "caf\xe9"}\n', 2, 29),
    ("cases.json", b'[{"id": "a", "expected": 1},\n {"id": "b", "expected": "caf\xe9"}]', 2, 30),
    ("cases.yaml", b"- {id: a, expected: 1}\n- {id: b, expected: caf\xe9}\n", 2, 24),
])
def test_invalid_utf8_in_a_cases_file_is_named_plainly_with_its_line(tmp_path, name, content, line, column):
    (tmp_path / name).write_bytes(content)
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + f"cases: {name}\n")
    assert problems_of(suite) == [
        f"{tmp_path / name}:{line}: not valid UTF-8 (byte 0xe9 at column {column}); save the file as UTF-8"
    ]


def test_invalid_utf8_in_the_suite_is_named_plainly_with_its_line(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_bytes(b"name: demo\ndescription: caf\xe9\n")
    assert problems_of(suite) == [f"{suite}:2: not valid UTF-8 (byte 0xe9 at column 17); save the file as UTF-8"]


def test_invalid_json_in_a_json_cases_file_names_its_line(tmp_path):
    (tmp_path / "cases.json").write_text('[{"id": "a", "expected": 1},\n {"id": "b", "expected": }]')
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.json\n")
    [problem] = problems_of(suite)
    assert problem.startswith(f"{tmp_path / 'cases.json'}:2: invalid JSON: ")


def test_every_duplicate_key_of_a_yaml_cases_file_is_reported(tmp_path):
    write(tmp_path, "cases.yaml", """
        - {id: a, expected: 1, expected: 2}
        - {id: b, expected: 1, tags: [], tags: []}
    """)
    suite = write(tmp_path, "s.yaml", "name: demo\n" + GOOD_EVALUATORS + "cases: cases.yaml\n")
    assert problems_of(suite) == [
        f"{tmp_path / 'cases.yaml'}:1: [0].expected: duplicate key 'expected' (first at line 1)",
        f"{tmp_path / 'cases.yaml'}:2: [1].tags: duplicate key 'tags' (first at line 2)",
    ]


def test_a_far_fetched_name_gets_no_suggestion():
    from agenteval.suite.problems import did_you_mean

    assert did_you_mean("llm_judge", ["code_judge", "field_accuracy"]) == ""
    assert did_you_mean("optimum", ["index", "greedy", "optimal"]) == ""
    assert did_you_mean("thresold", ["threshold", "tolerance"]) == "; did you mean 'threshold'?"


def test_a_control_character_in_yaml_is_a_clear_error_with_its_line(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_bytes(b"name: demo\ndescription: a\x1fb\n")
    assert problems_of(suite) == [f"{suite}:2: invalid YAML: character #x001f is not allowed (a control character)"]


def test_an_unknown_top_level_key_hints_at_x_keys_for_anchors(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        base: &base {type: field_accuracy, fields: [{path: a}]}
        evaluators:
          - <<: *base
            name: f
        cases: [{id: a, expected: 1}]
    """)
    assert problems_of(suite) == [
        f"{suite}:2: base: unknown key 'base' (top-level keys starting with `x-` are ignored: a place for YAML anchors)"
    ]


def test_a_key_that_would_break_the_line_or_read_ambiguously_is_quoted(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text('name: demo\n"bad\\nkey": 1\nevaluators: [{type: field_accuracy, fields: [{path: a}], "x.y": 2}]\ncases: [{id: a, expected: 1}]\n')
    hint = " (top-level keys starting with `x-` are ignored: a place for YAML anchors)"
    assert problems_of(suite) == [
        f"""{suite}:2: ["bad\\nkey"]: unknown key 'bad\\nkey'""" + hint,
        f"""{suite}:3: evaluators[0]["x.y"]: unknown key 'x.y'""",
    ]
