"""composite evaluators (aggregations, nesting, errors, close, warnings) and `criterion` on every evaluator."""

import json
import os
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from agenteval.evaluators import EvalContext, EvaluatorSpec
from agenteval.evaluators.base import run_evaluator
from agenteval.evaluators.composite import aggregate
from agenteval.process import Processes
from agenteval.suite.loader import load_suite

from conftest import read_jsonl, write

SPEC = TypeAdapter(EvaluatorSpec)


def evaluator(config):
    return SPEC.validate_python(config)


def field(path, **extra):
    """A field_accuracy child on one field: scores 1 or 0 on the answer below."""
    return {"type": "field_accuracy", "name": path, "fields": [{"path": path}], **extra}


EXPECTED = {"a": 1, "b": 2, "c": 3}
ANSWER = {"a": 1, "b": 2, "c": 0}  # a and b right, c wrong


def run(config, output=ANSWER, expected=EXPECTED, processes=None):
    return run_evaluator(evaluator(config), EvalContext("case", None, expected, output, {}, Path("."), processes))


@pytest.mark.parametrize(
    ("aggregation", "score", "verdict"),
    [("weighted_average", 0.25, "partial"), ("all_or_nothing", 0.0, "fail"), ("min", 0.0, "partial"), ("any", 1.0, "pass")],
)
def test_aggregations(aggregation, score, verdict):
    config = {"type": "composite", "aggregation": aggregation, "evaluators": [field("a"), field("c", weight=3), field("b", weight=0)]}
    result = run(config)
    assert (result.score, result.verdict) == (score, verdict)
    assert result.hits == ["a", "b"] and result.misses == ["c: c"]
    assert result.reasoning == f"2/3 children passed ({aggregation})"


def test_weighted_average_uses_the_children_weights():
    assert run({"type": "composite", "evaluators": [field("a", weight=3), field("c")]}).score == 0.75
    assert run({"type": "composite", "evaluators": [field("a", weight=0), field("c", weight=0)]}).score == 0.5


@pytest.mark.parametrize(
    ("aggregation", "scores", "weights", "passed", "expected"),
    [
        ("weighted_average", [1.0, 0.2], [1, 4], [True, False], 0.36),
        ("all_or_nothing", [1.0, 0.9], [1, 1], [True, True], 1.0),
        ("all_or_nothing", [1.0, 0.9], [1, 1], [True, False], 0.0),
        ("min", [0.7, 0.4, 0.9], [1, 1, 1], [False] * 3, 0.4),
        ("any", [0.3, 0.6], [1, 1], [False, False], 0.6),
        ("any", [0.3, 0.6], [1, 1], [True, False], 1.0),
    ],
)
def test_aggregate(aggregation, scores, weights, passed, expected):
    assert aggregate(aggregation, scores, weights, passed) == pytest.approx(expected)


def test_every_child_passing_passes_and_none_passing_fails():
    assert run({"type": "composite", "evaluators": [field("a"), field("b")]}).verdict == "pass"
    result = run({"type": "composite", "aggregation": "min", "evaluators": [field("c")]})
    assert (result.score, result.verdict) == (0.0, "fail")


def test_a_child_min_score_decides_its_pass_and_the_composite_min_score_its_own():
    config = {"type": "composite", "aggregation": "all_or_nothing",
              "evaluators": [{"type": "field_accuracy", "fields": [{"path": "a"}, {"path": "c"}], "min_score": 0.5}]}
    assert run(config).score == 1.0
    assert run({"type": "composite", "evaluators": [field("a"), field("c")], "min_score": 0.5}).verdict == "pass"


def test_nested_composites_keep_every_childs_result():
    config = {
        "type": "composite", "name": "rubric",
        "evaluators": [
            field("a"),
            {"type": "composite", "name": "inner", "aggregation": "min", "evaluators": [field("b"), field("c")]},
        ],
    }
    result = run(config)
    assert result.score == 0.5
    assert result.misses == ["inner: c: c"]
    outer = result.details
    assert outer["aggregation"] == "weighted_average"
    assert [child["name"] for child in outer["children"]] == ["a", "inner"]
    inner = outer["children"][1]
    assert (inner["type"], inner["score"], inner["verdict"]) == ("composite", 0.0, "partial")
    assert [(child["name"], child["score"]) for child in inner["details"]["children"]] == [("b", 1.0), ("c", 0.0)]
    assert json.loads(json.dumps(result.details)) == result.details


def test_a_child_error_makes_the_composite_an_error_and_the_others_still_run():
    config = {"type": "composite", "evaluators": [field("a"), {"type": "code_judge", "name": "judge", "command": ["python", "j.py"]}]}
    result = run(config)  # no run context: the judge cannot start processes
    assert (result.verdict, result.score) == ("error", 0.5)
    assert result.error == "judge: code_judge needs a run context to start processes"
    assert result.misses == ["judge: code_judge needs a run context to start processes"]
    assert result.details["children"][0]["verdict"] == "pass"


def test_close_closes_the_childrens_judge_processes(tmp_path):
    write(tmp_path, "judge.py", """
        import os, pathlib
        from agenteval.judge import run_judge
        pathlib.Path("judge.pid").write_text(str(os.getpid()))
        run_judge(lambda payload: {"score": 1.0})
    """)
    composite = evaluator({"type": "composite", "evaluators": [
        {"type": "composite", "evaluators": [{"type": "code_judge", "command": ["python", "judge.py"], "protocol": "jsonl"}]},
    ]})
    ctx = EvalContext("case", None, None, "x", {}, tmp_path, Processes())
    assert composite.evaluate(ctx).score == 1.0
    pid = int((tmp_path / "judge.pid").read_text())
    assert alive(pid)
    composite.close()
    assert not alive(pid)


def alive(pid):
    """Whether the process runs (a process closed and reaped by its parent is gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_children_with_the_same_name_are_a_config_error():
    with pytest.raises(ValidationError, match="two children are named 'field_accuracy'"):
        evaluator({"type": "composite", "evaluators": [{"type": "field_accuracy", "fields": [{"path": "a"}]}] * 2})
    with pytest.raises(ValidationError, match="at least 1 item"):
        evaluator({"type": "composite", "evaluators": []})


def test_problems_and_warnings_inside_children_carry_their_key_path(tmp_path, cli):
    suite = write(tmp_path, "suite.yaml", """
        name: nested
        evaluators:
          - type: composite
            evaluators:
              - type: composite
                evaluators:
                  - {type: field_accuracy, fields: [{path: a..b}]}
                  - {type: tool_calls, calls: [{name: x, arguments: {n: {match: fuzy, value: 1}}}]}
        cases:
          - {id: one, expected: {a: 1}, output: []}
    """)
    done = cli("validate", suite)
    assert done.returncode == 2
    assert "suite.yaml:8: evaluators[0].evaluators[0].evaluators[1].calls[0].arguments.n.match: Invalid match type: fuzy" in done.stderr
    suite.write_text(suite.read_text().replace("fuzy", "fuzzy"))
    warnings = [w.render() for w in load_suite(suite).warnings]
    assert warnings == [
        f"{suite}:7: warning: evaluators[0].evaluators[0].evaluators[0].fields[0].path: malformed path 'a..b': it will resolve to missing"
    ]


# --- criterion -----------------------------------------------------------------------------------


def test_criterion_is_kept_in_the_result():
    config = field("a", criterion={"name": "accuracy", "description": "The order id is right."})
    assert run(config).criterion == {"name": "accuracy", "description": "The order id is right."}
    assert run(field("a", criterion={"name": "accuracy"})).criterion == {"name": "accuracy"}
    assert run(field("a")).criterion is None


def test_criterion_is_kept_when_the_evaluator_errors():
    config = {"type": "code_judge", "command": ["python", "j.py"], "criterion": {"name": "tone"}}
    result = run(config)
    assert (result.verdict, result.criterion) == ("error", {"name": "tone"})


def test_childrens_criteria_are_kept_in_the_composite_details():
    config = {"type": "composite", "criterion": {"name": "refund handled"},
              "evaluators": [field("a", criterion={"name": "right order"}), field("b")]}
    result = run(config)
    assert result.criterion == {"name": "refund handled"}
    assert [child["criterion"] for child in result.details["children"]] == [{"name": "right order"}, None]


@pytest.mark.parametrize("criterion", [{"description": "no name"}, {"name": ""}, {"name": "x", "scale": "binary"}, "tone"])
def test_a_malformed_criterion_is_a_config_error(criterion):
    with pytest.raises(ValidationError):
        evaluator(field("a", criterion=criterion))


def test_criteria_reach_the_results_file_the_summary_and_the_report(tmp_path, cli):
    suite = write(tmp_path, "suite.yaml", """
        name: rubric
        evaluators:
          - name: ids
            type: field_accuracy
            fields: [{path: a}]
            criterion: {name: correctness, description: The order id matches the record.}
          - name: plain
            type: field_accuracy
            fields: [{path: b}]
        cases:
          - {id: one, expected: {a: 1, b: 2}, output: {a: 1, b: 2}}
    """)
    out = tmp_path / "r.jsonl"
    done = cli("run", suite, "-o", out)
    assert done.returncode == 0, done.stderr
    (line,) = read_jsonl(out)
    assert [r["criterion"] for r in line["evaluator_results"]] == [
        {"name": "correctness", "description": "The order id matches the record."}, None,
    ]
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["evaluators"]["ids"]["criterion"] == {"name": "correctness", "description": "The order id matches the record."}
    assert summary["evaluators"]["plain"]["criterion"] is None
    report = cli("report", out)
    assert report.returncode == 0
    assert "Criteria" in report.stdout and "correctness" in report.stdout and "The order id matches the record." in report.stdout
