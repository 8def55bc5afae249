"""Score scales: every scale's normalization, its bounds, and `scale` on code_judge."""

import math

import pytest
from pydantic import ValidationError

from agenteval.evaluators.code_judge import CodeJudge
from agenteval.evaluators.scales import RangeScale, describe, normalize, rescale_answer
from agenteval.process import Processes
from agenteval.evaluators import EvalContext

from conftest import write


@pytest.mark.parametrize(
    ("raw", "scale", "score"),
    [
        (0, "unit", 0.0), (0.4, "unit", 0.4), (1, "unit", 1.0),
        (True, "binary", 1.0), (False, "binary", 0.0), (1, "binary", 1.0), (0.0, "binary", 0.0),
        ("true", "binary", 1.0), ("FAIL", "binary", 0.0), (" pass ", "binary", 1.0), ("no", "binary", 0.0),
        (1, "likert5", 0.0), (2, "likert5", 0.25), (3.5, "likert5", 0.625), (5, "likert5", 1.0),
        (0, "percent", 0.0), (85, "percent", 0.85), (100, "percent", 1.0),
    ],
)
def test_named_scales_normalize_to_unit(raw, scale, score):
    assert normalize(raw, scale) == pytest.approx(score)


def test_range_scale_maps_min_to_zero_and_max_to_one():
    scale = RangeScale(range=[1, 10])
    assert [normalize(raw, scale) for raw in (1, 5.5, 10)] == [0.0, 0.5, 1.0]
    assert normalize(-2, RangeScale(range=[-4, 0])) == 0.5


@pytest.mark.parametrize(
    ("raw", "scale", "message"),
    [
        (1.2, "unit", "score 1.2 is outside unit (0 to 1)"),
        (101, "percent", "score 101 is outside percent (0 to 100)"),
        (0, "likert5", "score 0 is outside likert5 (1 to 5)"),
        (2, "binary", "score 2 is not binary (true/false or 0/1)"),
        (0.5, "binary", "score 0.5 is not binary (true/false or 0/1)"),
        ("maybe", "binary", "score 'maybe' is not binary (true/false or 0/1)"),
        ("85", "percent", "score '85' is not a finite number on percent (0 to 100)"),
        (True, "percent", "score True is not a finite number on percent (0 to 100)"),
        (None, "likert5", "score None is not a finite number on likert5 (1 to 5)"),
        (math.nan, "unit", "score nan is not a finite number on unit (0 to 1)"),
        (math.inf, "percent", "score inf is not a finite number on percent (0 to 100)"),
        (11, RangeScale(range=[1, 10]), "score 11 is outside range (1 to 10)"),
    ],
)
def test_a_raw_score_off_the_scale_is_a_message_not_an_exception(raw, scale, message):
    assert normalize(raw, scale) == message


@pytest.mark.parametrize("bounds", [[5, 5], [10, 1], [0, math.inf], [1], [1, 2, 3]])
def test_a_range_needs_two_finite_ordered_bounds(bounds):
    with pytest.raises(ValidationError):
        RangeScale(range=bounds)


def test_describe_names_every_scale():
    assert [describe(s) for s in ("unit", "binary", "likert5", "percent", RangeScale(range=[0, 7.5]))] == [
        "unit (0 to 1)", "binary (true/false or 0/1)", "likert5 (1 to 5)", "percent (0 to 100)", "range (0 to 7.5)",
    ]


def test_rescale_answer_keeps_the_raw_score_in_details():
    answer = {"score": 4, "reasoning": "good", "details": {"judge": "x"}}
    assert rescale_answer(answer, "likert5") == {"score": 0.75, "reasoning": "good", "details": {"judge": "x", "raw_score": 4}}
    assert rescale_answer({"score": True}, "binary") == {"score": 1.0, "details": {"raw_score": True}}
    assert rescale_answer({"score": 7}, "unit") == {"score": 7}  # unit: left to the output's own validation
    assert rescale_answer({"verdict": "pass"}, "percent") == {"verdict": "pass"}
    assert rescale_answer({"score": 50, "details": [1]}, "percent") == {"score": 0.5, "details": [1]}
    assert rescale_answer({"score": 500}, "percent") == "score 500 is outside percent (0 to 100)"


def judge(**config):
    return CodeJudge.model_validate({"type": "code_judge", "command": ["python", "judge.py"], **config})


def test_code_judge_under_percent_scores_85_as_0_85():
    result = judge(scale="percent").from_output(b'{"score": 85, "details": {"why": "mostly"}}')
    assert (result.score, result.verdict, result.error) == (0.85, "partial", None)
    assert result.details == {"why": "mostly", "raw_score": 85}


def test_code_judge_without_scale_still_rejects_85():
    result = judge().from_output(b'{"score": 85}')
    assert (result.verdict, result.error) == ("error", "judge output is invalid: score 85 is outside [0, 1]")


@pytest.mark.parametrize(
    ("scale", "printed", "score", "verdict"),
    [
        ("binary", b'{"score": true}', 1.0, "pass"),
        ("binary", b'{"score": 0}', 0.0, "fail"),
        ("likert5", b'{"score": 3}', 0.5, "partial"),
        ({"range": [0, 10]}, b'{"score": 10}', 1.0, "pass"),
    ],
)
def test_code_judge_normalizes_every_scale(scale, printed, score, verdict):
    result = judge(scale=scale).from_output(printed)
    assert (result.score, result.verdict) == (score, verdict)


def test_code_judge_score_off_its_scale_is_an_error_verdict():
    result = judge(scale="likert5").from_output(b'{"score": 6}')
    assert (result.score, result.verdict) == (0.0, "error")
    assert result.error == "judge output is invalid: score 6 is outside likert5 (1 to 5)"


def test_code_judge_min_score_applies_to_the_normalized_score():
    assert judge(scale="percent", min_score=0.8).from_output(b'{"score": 85}').verdict == "pass"
    assert judge(scale="percent", min_score=0.9).from_output(b'{"score": 85}').verdict == "fail"


@pytest.mark.parametrize("scale", ["likert7", {"range": [3, 1]}, {"range": [0, 1], "step": 1}, 5])
def test_an_unknown_or_malformed_scale_is_a_config_error(scale):
    with pytest.raises(ValidationError):
        judge(scale=scale)


def test_scale_is_not_passed_to_the_judge_as_config():
    assert judge(scale="percent", words=["a"]).judge_config == {"words": ["a"]}


def test_a_real_judge_process_on_a_likert_scale(tmp_path):
    write(tmp_path, "judge.py", 'print(\'{"score": 4, "reasoning": "clear"}\')')
    evaluator = judge(scale="likert5")
    ctx = EvalContext("c1", None, None, "answer", {}, tmp_path, Processes())
    result = evaluator.evaluate(ctx)
    assert (result.score, result.verdict, result.reasoning, result.details) == (0.75, "partial", "clear", {"raw_score": 4})
