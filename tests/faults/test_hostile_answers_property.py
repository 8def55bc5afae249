"""Property: no answer, however hostile, makes a run raise or write a score that is not a number.

Arbitrary JSON-like answers, strings with lone surrogates and control characters, integers beyond
the float range, subnormal and huge floats, NaN and infinities, and nesting from 150 to 400
levels go through the public API (`agenteval.evaluate`, the path every run takes: the answer is
admitted where it enters, scored by the evaluators, summarized) to every built-in evaluator type.
Each case ends with a verdict, a finite score in [0, 1], and a results line that reads back.
"""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import agenteval
from agenteval.evaluators import REGISTRY
from agenteval.process import decode_json
from agenteval.results import case_from_dict, dump_line
from agenteval.suite.loader import SuiteInvalid
from test_properties import CONFIGS, EXCLUDED, KEYS, json_values

# Few examples per type keep the whole file near 30 s: 23 types, each example a run of up to 4 cases.
HOSTILE_SETTINGS = settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
SECONDS_PER_CASE = 5.0  # far above what any case here takes; a case past it is unbounded work

# Characters that break naive text handling: lone surrogates (half an emoji), controls, NUL, BOM,
# combining marks, right-to-left marks, and an emoji as a surrogate pair (two halves, each alone not text).
odd_characters = (
    st.integers(0xD800, 0xDFFF).map(chr) | st.integers(0, 0x1F).map(chr)
    | st.sampled_from(["\x7f", "\ufeff", "\u0301", "\u202e", "\U0001f600", "a", " ", "\\", '"'])
)
hostile_strings = st.text(alphabet=odd_characters, max_size=12) | st.sampled_from(["hello \ud83d", "\udc00", "\x00", "\ud83d\ude00"])
hostile_numbers = (
    st.integers(10**308, 10**400) | st.integers(-(10**400), -(10**308))  # beyond the float range (or at its edge)
    | st.sampled_from([5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, 1.7976931348623157e308, -1e308, -0.0])
    | st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
    | st.sampled_from([float("nan"), float("inf"), float("-inf"), 2**63, 2**64, -(2**63) - 1])
)
boxes = st.lists(hostile_numbers | st.integers(-3, 3), min_size=4, max_size=4)  # shaped to reach iou_score/distance
hostile_scalars = hostile_strings | hostile_numbers
hostile_trees = st.recursive(
    hostile_scalars | boxes,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | hostile_strings, children, max_size=4),
    max_leaves=12,
)


@st.composite
def deeply_nested(draw) -> object:
    """A value nested 150 to 400 levels (lists and objects), a hostile leaf at the bottom."""
    value = draw(hostile_scalars)
    for _ in range(draw(st.integers(150, 400))):
        value = [value] if draw(st.booleans()) else {draw(st.sampled_from(KEYS)): value}
    return value


hostile_answers = hostile_trees | deeply_nested() | json_values
placed = st.tuples(st.sampled_from([None, *KEYS[:4], "box"]), hostile_answers).map(
    lambda where_value: where_value[1] if where_value[0] is None else {where_value[0]: where_value[1]}
)


@pytest.mark.parametrize("type_name", sorted(REGISTRY))
def test_hostile_answers_never_make_a_run_raise_or_write_a_score_that_is_not_a_number(type_name):
    if type_name in EXCLUDED:  # they start a process or call a server per case (see tests/test_properties.py)
        pytest.skip(f"{type_name}: {EXCLUDED[type_name]}")

    @HOSTILE_SETTINGS
    @given(
        variant=st.sampled_from(CONFIGS[type_name]), path=st.sampled_from(["a", "a.b", "box", "a[0]"]),
        answers=st.lists(placed, min_size=1, max_size=4), expected=json_values,
    )
    def check(variant, path, answers, expected):
        cases = [{"id": f"c{i}", "input": {"q": i}, "expected": expected, "output": answer} for i, answer in enumerate(answers)]
        started = time.perf_counter()
        try:
            run = agenteval.evaluate(cases, [{"type": type_name, **variant(path)}])
        except SuiteInvalid as refused:  # the API refuses in-memory values it cannot convert: one clean problem per answer
            assert all(problem.key[0::2] == ("cases", "output") and problem.message for problem in refused.problems), refused.problems
            return
        results = list(run)
        assert time.perf_counter() - started < SECONDS_PER_CASE * len(cases)
        assert sorted(result.case_id for result in results) == [case["id"] for case in cases]
        for result in results:
            assert result.verdict in ("pass", "fail", "error"), result
            assert _unit(result.score), result
            assert result.duration_ms < SECONDS_PER_CASE * 1000, result
            if result.verdict == "error" and not result.evaluator_results:
                assert result.error and "\n" not in result.error, result  # one line saying why
            for evaluator in result.evaluator_results:
                assert evaluator.verdict in ("pass", "partial", "fail", "error"), evaluator
                assert _unit(evaluator.score), evaluator
            again = case_from_dict(decode_json(dump_line(result)))  # the line `run` writes, as `report` reads it
            assert (again.case_id, again.verdict, again.score) == (result.case_id, result.verdict, result.score)
        summary = run.summary
        assert _unit(summary["mean_score"]), summary
        assert all(_unit(stats["mean_score"]) for stats in summary["evaluators"].values()), summary

    check()


def _unit(score: object) -> bool:
    return type(score) in (int, float) and math.isfinite(score) and 0.0 <= score <= 1.0


# An answer that says it is a conversation (`turns`) and holds anything: turns that are no object,
# replies and tool calls of any shape, steps whose usage is junk, messages that are no list.
_USAGE_KEYS = ["latency_ms", "input_tokens", "output_tokens", "total_tokens", "cost_usd", "cached"]
hostile_turn = st.fixed_dictionaries(
    {}, optional={key: hostile_answers for key in ("user", "reply", "tool_calls", "output")},
) | hostile_scalars | hostile_trees | st.none()
hostile_step = st.fixed_dictionaries(
    {"turn": st.integers(0, 4)},
    optional={"kind": st.sampled_from(["agent", "user"]) | hostile_scalars,
              "usage": st.dictionaries(st.sampled_from(_USAGE_KEYS), hostile_numbers | hostile_strings | st.booleans()) | hostile_trees},
)
hostile_conversation = st.fixed_dictionaries(
    {"turns": st.lists(hostile_turn, min_size=1, max_size=4)},
    optional={"content": hostile_answers, "steps": st.lists(hostile_step, max_size=4) | hostile_scalars,
              "messages": st.lists(hostile_trees, max_size=3) | hostile_scalars, "tool_calls": hostile_answers},
)
_SCOPED_TYPES = sorted(set(REGISTRY) & set(CONFIGS) - set(EXCLUDED))  # the types with a config to try
_JUNK_CONVERSATION = {
    "turns": [{"user": "u", "reply": "x", "tool_calls": 7}, "see attached"], "messages": 5,
    "steps": [{"turn": 1, "usage": {"input_tokens": "many"}}, {"turn": 1, "usage": {"input_tokens": 2}}, {"turn": 2, "usage": [1]}],
}


@pytest.mark.parametrize("scope", ["turn", "last", "conversation"])
def test_hostile_turns_in_an_answer_are_that_cases_error_never_the_runs(scope):
    """Any shape of `turns` in an answer, scored under each scope by every built-in type: the run
    goes on, each case has its verdict, and a turn that is no object is the case's error naming it."""

    @HOSTILE_SETTINGS
    @given(type_name=st.sampled_from(_SCOPED_TYPES), answers=st.lists(hostile_conversation, min_size=1, max_size=3), expected=json_values)
    @example(type_name="token_usage", answers=[_JUNK_CONVERSATION], expected=None)  # every scope meets each kind of junk
    def check(type_name, answers, expected):
        config = {"type": type_name, **CONFIGS[type_name][0]("content"), "scope": scope}
        cases = [{"id": f"c{i}", "input": {"q": i}, "expected": expected, "output": answer} for i, answer in enumerate(answers)]
        try:
            run = agenteval.evaluate(cases, [config])
        except SuiteInvalid as refused:
            assert all(problem.key[0::2] == ("cases", "output") and problem.message for problem in refused.problems), refused.problems
            return
        results = {result.case_id: result for result in run}
        assert sorted(results) == [case["id"] for case in cases]
        for case, answer in zip(cases, answers):
            result = results[case["id"]]
            assert result.verdict in ("pass", "fail", "error") and _unit(result.score), result
            turns = answer["turns"]
            odd = [index for index, turn in enumerate(turns) if not isinstance(turn, dict)]
            read = {"turn": odd, "last": [i for i in odd if i == len(turns) - 1], "conversation": []}[scope]
            if read:
                assert result.verdict == "error", result
                if result.evaluator_results:  # else the answer was refused whole where it entered (too deep)
                    assert f"`turns[{read[0]}]` is" in result.evaluator_results[0].error, result.evaluator_results[0]

    check()
