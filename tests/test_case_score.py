"""The case score: the weighted mean of its evaluators' scores, and 0 when they weigh nothing."""

import pytest

from agenteval.evaluators.base import EvaluatorResult
from agenteval.evaluators.fields import FieldAccuracy
from agenteval.runner import combine


def evaluator(name, weight):
    return FieldAccuracy.model_validate({"type": "field_accuracy", "name": name, "weight": weight, "fields": [{"path": "a"}]})


def result(name, score, verdict="pass"):
    return EvaluatorResult(name, "field_accuracy", score, verdict)


def test_case_score_is_the_weighted_mean():
    score, verdict = combine([evaluator("a", 1), evaluator("b", 3)], [result("a", 1.0), result("b", 0.5, "partial")])
    assert (score, verdict) == (pytest.approx(0.625), "fail")


def test_case_score_is_zero_when_every_evaluator_weighs_nothing():
    score, verdict = combine([evaluator("a", 0), evaluator("b", 0)], [result("a", 1.0), result("b", 0.5)])
    assert (score, verdict) == (0.0, "pass")


def test_an_evaluator_of_weight_zero_does_not_move_the_score():
    score, _ = combine([evaluator("a", 0), evaluator("b", 2)], [result("a", 0.0, "fail"), result("b", 0.8)])
    assert score == pytest.approx(0.8)
