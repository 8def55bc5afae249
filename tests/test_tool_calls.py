"""tool_calls: reading trajectories, per-argument checks, 1:1 alignment, order, rules, malformed input."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from agenteval.evaluators import EvalContext
from agenteval.evaluators.tools import ToolCalls
from agenteval.evaluators.tools.trajectory import parse_arguments, read_trajectory
from agenteval.suite.loader import load_suite

from conftest import write


def tool_calls(**config):
    return ToolCalls.model_validate({"type": "tool_calls", **config})


def run(evaluator, output, expected=None):
    return evaluator.evaluate(EvalContext("case", None, expected, output, {}, Path(".")))


def openai(name, arguments, call_id="c1"):
    """An assistant message with one OpenAI-style call; arguments as given (a JSON string or an object)."""
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}


def plain(name, **arguments):
    return {"name": name, "arguments": arguments}


LOOKUP_THEN_REFUND = [
    {"name": "lookup_order", "arguments": {"order_id": "A-1001"}},
    {"name": "issue_refund", "arguments": {"order_id": "A-1001", "amount": 25.0}},
]


# --- reading trajectories -------------------------------------------------------------------


def test_openai_messages_with_string_and_object_arguments():
    messages = [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Refund order A-1001"},
        openai("lookup_order", '{"order_id": "A-1001"}'),
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "delivered"}'},
        openai("issue_refund", {"order_id": "A-1001", "amount": 25.0}, "c2"),
        {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        {"role": "assistant", "content": "Done."},
    ]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND), {"messages": messages})
    assert (result.score, result.verdict, result.hits, result.misses) == (1.0, "pass", ["lookup_order", "issue_refund"], [])
    assert [row["index"] for row in result.details["calls"]] == [0, 1]
    assert result.details["called"] == ["lookup_order", "issue_refund"]


def test_anthropic_tool_use_blocks():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Refund A-1001"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking it up."},
            {"type": "tool_use", "id": "t1", "name": "lookup_order", "input": {"order_id": "A-1001"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "delivered"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "issue_refund", "input": {"order_id": "A-1001", "amount": 25}},
        ]},
    ]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND), {"messages": messages})
    assert (result.score, result.hits) == (1.0, ["lookup_order", "issue_refund"])


def test_plain_list_as_the_whole_answer_and_mixed_shapes():
    answer = [
        plain("lookup_order", order_id="A-1001"),
        {"type": "tool_use", "name": "issue_refund", "input": {"order_id": "A-1001", "amount": 25.0}},
    ]
    assert run(tool_calls(calls=LOOKUP_THEN_REFUND), answer).score == 1.0
    legacy = [{"role": "assistant", "function_call": {"name": "lookup_order", "arguments": '{"order_id": "A-1001"}'}}]
    assert run(tool_calls(calls=LOOKUP_THEN_REFUND[:1]), legacy).score == 1.0
    bare_openai_calls = [{"id": "x", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id": "A-1001"}'}}]
    assert run(tool_calls(calls=LOOKUP_THEN_REFUND[:1]), bare_openai_calls).score == 1.0


def test_path_points_at_the_trajectory():
    answer = {"trace": {"steps": [plain("lookup_order", order_id="A-1001")]}, "messages": []}
    assert run(tool_calls(path="trace.steps", calls=LOOKUP_THEN_REFUND[:1]), answer).score == 1.0
    assert run(tool_calls(calls=LOOKUP_THEN_REFUND[:1]), answer).score == 0.0  # default: `messages`


@pytest.mark.parametrize(
    ("answer", "config", "found"),
    [
        ({"text": "hello"}, {}, "no tool-call trajectory: found nothing at `messages` or the answer itself"),
        ("just text", {}, "no tool-call trajectory: found a str at `messages` or the answer itself"),
        ({"messages": {"a": 1}}, {}, "no tool-call trajectory: found a dict at `messages` or the answer itself"),
        ({"trace": []}, {"path": "trace..x"}, "no tool-call trajectory: found nothing at `trace..x`"),
        (None, {}, "no tool-call trajectory: found a NoneType at `messages` or the answer itself"),
    ],
)
def test_no_trajectory_fails_with_where_it_looked(answer, config, found):
    result = run(tool_calls(calls=[], **config), answer)
    assert (result.score, result.verdict, result.misses) == (0.0, "fail", [found])


def test_messages_without_calls_are_an_empty_trajectory():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}, {"type": "text", "text": "x"}]
    assert read_trajectory(messages).calls == []
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND[:1]), messages)
    assert (result.score, result.misses) == (0.0, ["lookup_order (not called)"])


# --- malformed trajectories -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "arguments", "problem"),
    [
        ('{"a": 1}', {"a": 1}, None),
        ({"a": 1}, {"a": 1}, None),
        (None, {}, None),
        ("  ", {}, None),
        ('{"a": 1', None, "arguments are not valid JSON"),
        ("[1, 2]", None, "arguments are not a JSON object"),
        ('"text"', None, "arguments are not a JSON object"),
        (42, None, "arguments are not an object"),
        (["a"], None, "arguments are not an object"),
    ],
)
def test_parse_arguments(raw, arguments, problem):
    assert parse_arguments(raw) == (arguments, problem)


def test_invalid_json_arguments_are_a_miss_that_says_so():
    messages = [openai("lookup_order", '{"order_id": "A-1001"'), openai("issue_refund", '{"order_id": "A-1001", "amount": 25.0}')]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND), messages)
    assert result.score == 0.5
    assert result.misses == ["lookup_order (call 0 (lookup_order): arguments are not valid JSON)"]
    assert result.details["calls"][0] == {
        "name": "lookup_order", "required": True, "status": "miss", "index": 0,
        "reason": "call 0 (lookup_order): arguments are not valid JSON",
    }


def test_calls_without_a_name_and_unreadable_items_are_misses():
    trajectory = [
        "not a message",
        {"arguments": {"order_id": "A-1001"}},
        {"role": "assistant", "tool_calls": "lookup_order"},
        {"role": "assistant", "tool_calls": [7, {"function": "lookup_order"}, {"function": {"name": "", "arguments": "{}"}}]},
        plain("lookup_order", order_id="A-1001"),
    ]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND[:1]), trajectory)
    assert result.score == 1.0 and result.verdict == "partial"  # the expected call is made, but the trajectory is broken
    assert result.misses == [
        "call 0: no name",
        "call 1: function is not an object",
        "call 2: no name",
        "item 0 is not an object",
        "item 2: tool_calls is not a list",
        "item 3: a tool call is not an object",
    ]
    assert result.details["metrics"]["(no name)"] == {"tp": 0, "fp": 3, "fn": 0}


# --- arguments --------------------------------------------------------------------------------


def check_one(arguments, actual):
    """The row of a single expected call `f` against a single actual call `f(**actual)`."""
    result = run(tool_calls(calls=[{"name": "f", "arguments": arguments}]), [{"name": "f", "arguments": actual}])
    return result.details["calls"][0]


def test_a_bare_value_is_exact_and_types_are_strict():
    assert check_one({"n": 3}, {"n": 3.0})["status"] == "hit"
    row = check_one({"n": 3}, {"n": "3"})
    assert (row["status"], row["arguments"]) == ("miss", {"n": "type mismatch: expected 3, got '3'"})
    assert check_one({"filters": {"status": "open"}}, {"filters": {"status": "open"}})["status"] == "hit"
    assert check_one({"filters": {"status": "open"}}, {"filters": {"status": "closed"}})["status"] == "miss"


def test_fuzzy_numeric_and_date_reuse_the_field_matchers():
    arguments = {
        "reason": {"match": "fuzzy", "value": "item arrived damaged", "threshold": 0.8},
        "amount": {"match": "numeric_tolerance", "value": 25.0, "tolerance": 0.01},
        "since": {"match": "date", "value": "2024-01-15"},
    }
    assert check_one(arguments, {"reason": "Item arrived  damaged", "amount": 25.004, "since": "Jan 15, 2024"})["status"] == "hit"
    row = check_one(arguments, {"reason": "wrong size", "amount": 26, "since": "2024-01-16"})
    assert row["arguments"]["amount"] == "expected 25.0, got 26"
    assert row["arguments"]["since"] == "expected '2024-01-15', got '2024-01-16'"
    assert row["arguments"]["reason"].startswith("expected 'item arrived damaged', got 'wrong size' (similarity 0.")
    assert row["reason"].startswith("reason: expected 'item arrived damaged'")


def test_regex_matches_the_whole_value_and_numbers_as_written():
    pattern = {"order_id": {"match": "regex", "pattern": r"A-\d{4}"}}
    assert check_one(pattern, {"order_id": "A-1001"})["status"] == "hit"
    assert check_one(pattern, {"order_id": "XA-1001"})["arguments"] == {"order_id": "'XA-1001' does not match 'A-\\\\d{4}'"}
    assert check_one({"n": {"match": "regex", "pattern": r"\d+"}}, {"n": 42})["status"] == "hit"
    assert check_one(pattern, {"order_id": ["A-1001"]})["arguments"] == {"order_id": "type mismatch"}


def test_any_of_accepts_a_listed_value_and_an_empty_string_allows_leaving_it_out():
    channel = {"channel": {"match": "any_of", "values": ["email", "sms", ""]}}
    assert check_one(channel, {"channel": "sms"})["status"] == "hit"
    assert check_one(channel, {})["status"] == "hit"
    assert check_one(channel, {"channel": "fax"})["arguments"] == {"channel": "'fax' is not one of ['email', 'sms', '']"}
    must = {"channel": {"match": "any_of", "values": ["email", "sms"]}}
    assert check_one(must, {})["arguments"] == {"channel": "missing"}
    optional = {"channel": {"match": "any_of", "values": ["email"], "required": False}}
    assert (check_one(optional, {})["status"], "arguments" in check_one(optional, {})) == ("hit", False)


def test_any_of_compares_like_exact():
    values = {"v": {"match": "any_of", "values": [1, "a", {"k": [1]}, [2]]}}
    assert [check_one(values, {"v": got})["status"] for got in (1, 1.0, "a", {"k": [1]}, [2])] == ["hit"] * 5
    assert [check_one(values, {"v": got})["status"] for got in (True, "1", "A", {"k": [2]}, [2, 2], None)] == ["miss"] * 6


def test_missing_null_and_optional_arguments():
    assert check_one({"order_id": "A-1"}, {})["arguments"] == {"order_id": "missing"}
    assert check_one({"order_id": "A-1"}, {"order_id": None})["arguments"] == {"order_id": "null value"}
    optional = {"order_id": "A-1", "note": {"match": "exact", "value": "x", "required": False}}
    assert check_one(optional, {"order_id": "A-1"})["status"] == "hit"
    row = check_one(optional, {"order_id": "A-1", "note": "y"})  # optional means checked when present
    assert (row["status"], row["arguments"]) == ("miss", {"note": "expected 'x', got 'y'"})
    assert check_one(optional, {"order_id": "A-1", "note": None})["status"] == "hit"  # null: left out
    expects_null = {"coupon": {"match": "exact", "value": None}}
    assert check_one(expects_null, {})["status"] == "hit"
    assert check_one(expects_null, {"coupon": None})["status"] == "hit"
    assert check_one(expects_null, {"coupon": "X"})["arguments"] == {"coupon": "expected null, got 'X'"}


def test_extra_arguments_do_not_matter():
    assert check_one({"order_id": "A-1"}, {"order_id": "A-1", "verbose": True})["status"] == "hit"


# --- alignment, duplicates and order ------------------------------------------------------------


def test_two_expected_calls_to_one_tool_need_two_distinct_calls():
    expected = [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}, {"name": "lookup_order", "arguments": {"order_id": "A-1"}}]
    once = run(tool_calls(calls=expected), [plain("lookup_order", order_id="A-1")])
    assert (once.score, once.hits) == (0.5, ["lookup_order#1"])
    assert once.misses == ["lookup_order#2 (its 1 call(s) matched other expected calls)"]
    twice = run(tool_calls(calls=expected), [plain("lookup_order", order_id="A-1")] * 2)
    assert twice.score == 1.0 and [row["index"] for row in twice.details["calls"]] == [0, 1]


def test_assignment_is_maximal_where_first_come_first_served_is_not():
    # The first expected call accepts either order; the second only A-1. Taking call 0 for the
    # first would strand the second: a 1:1 maximum assignment satisfies both.
    expected = [
        {"name": "lookup_order", "arguments": {"order_id": {"match": "any_of", "values": ["A-1", "A-2"]}}},
        {"name": "lookup_order", "arguments": {"order_id": "A-1"}},
    ]
    result = run(tool_calls(calls=expected), [plain("lookup_order", order_id="A-1"), plain("lookup_order", order_id="A-2")])
    assert result.score == 1.0
    assert [row["index"] for row in result.details["calls"]] == [1, 0]


def test_a_duplicate_actual_call_is_an_extra():
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND), [plain("lookup_order", order_id="A-1001")] * 2 + [plain("issue_refund", order_id="A-1001", amount=25.0)])
    assert (result.score, result.details["extra"]) == (1.0, [1])
    strict = run(tool_calls(calls=LOOKUP_THEN_REFUND, allow_extra=False), [plain("lookup_order", order_id="A-1001")] * 2 + [plain("issue_refund", order_id="A-1001", amount=25.0)])
    assert (strict.score, strict.verdict, strict.misses) == (0.0, "fail", ["unexpected call 1 (lookup_order)"])


REVERSED = [plain("issue_refund", order_id="A-1001", amount=25.0), plain("lookup_order", order_id="A-1001")]


def test_order_any_accepts_a_reordered_trajectory():
    assert run(tool_calls(calls=LOOKUP_THEN_REFUND), REVERSED).score == 1.0


def test_in_order_needs_a_subsequence():
    interleaved = [plain("search_faq", q="refund"), plain("lookup_order", order_id="A-1001"), plain("get_policy"), plain("issue_refund", order_id="A-1001", amount=25.0)]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND, order="in_order"), interleaved)
    assert (result.score, [row["index"] for row in result.details["calls"]], result.details["extra"]) == (1.0, [1, 3], [0, 2])
    reversed_result = run(tool_calls(calls=LOOKUP_THEN_REFUND, order="in_order"), REVERSED)
    assert (reversed_result.score, reversed_result.verdict) == (0.5, "partial")
    assert reversed_result.hits == ["lookup_order"]
    assert reversed_result.misses == ["issue_refund (out of order (call 0 (issue_refund)))"]
    assert reversed_result.details["extra"] == []  # the out-of-order call is accounted for, not an extra


def test_in_order_prefers_required_calls_over_optional_ones():
    expected = [{"name": "greet", "required": False}, {"name": "lookup_order"}, {"name": "issue_refund"}]
    result = run(tool_calls(calls=expected, order="in_order"), [plain("lookup_order"), plain("issue_refund"), plain("greet")])
    assert (result.score, result.hits) == (1.0, ["lookup_order", "issue_refund"])


def test_exact_order_allows_nothing_else():
    evaluator = tool_calls(calls=LOOKUP_THEN_REFUND, order="exact")
    assert run(evaluator, [plain("lookup_order", order_id="A-1001"), plain("issue_refund", order_id="A-1001", amount=25.0)]).score == 1.0
    assert run(evaluator, REVERSED).score == 0.5
    extra = run(evaluator, [plain("lookup_order", order_id="A-1001"), plain("get_policy"), plain("issue_refund", order_id="A-1001", amount=25.0)])
    assert (extra.score, extra.verdict, extra.misses) == (0.0, "fail", ["unexpected call 1 (get_policy)"])


def test_optional_calls_do_not_count_in_the_score():
    expected = [{"name": "lookup_order"}, {"name": "send_survey", "required": False}]
    result = run(tool_calls(calls=expected), [plain("lookup_order")])
    assert (result.score, result.verdict, result.misses) == (1.0, "pass", [])
    assert result.details["calls"][1] == {"name": "send_survey", "required": False, "status": "miss", "index": None, "reason": "not called"}
    assert run(tool_calls(calls=expected), [plain("lookup_order"), plain("send_survey")]).hits == ["lookup_order", "send_survey"]


def test_no_expected_calls_passes_when_no_rule_is_broken():
    assert run(tool_calls(calls=[], forbidden=["issue_refund"]), [plain("lookup_order")]).score == 1.0
    result = run(tool_calls(calls=[], forbidden=["issue_refund"]), [plain("issue_refund")])
    assert (result.score, result.misses) == (0.0, ["forbidden tool issue_refund called (call 0 (issue_refund))"])


# --- rules --------------------------------------------------------------------------------------


def test_a_forbidden_tool_scores_zero_even_when_every_call_is_right():
    answer = [plain("lookup_order", order_id="A-1001"), plain("delete_account", user="u1"), plain("issue_refund", order_id="A-1001", amount=25.0)]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND, forbidden=["delete_account"]), answer)
    assert (result.score, result.verdict) == (0.0, "fail")
    assert result.hits == ["lookup_order", "issue_refund"]
    assert result.misses == ["forbidden tool delete_account called (call 1 (delete_account))"]
    assert result.details["violations"] == result.misses
    assert result.reasoning == "2/2 expected calls satisfied; 1 rule(s) broken"


def test_min_and_max_calls_per_tool():
    evaluator = tool_calls(calls=[], min_calls={"lookup_order": 1}, max_calls={"issue_refund": 1})
    assert run(evaluator, [plain("lookup_order"), plain("issue_refund")]).score == 1.0
    result = run(evaluator, [plain("issue_refund"), plain("issue_refund")])
    assert result.score == 0.0
    assert result.misses == ["lookup_order called 0 time(s) (min 1)", "issue_refund called 2 time(s) (max 1)"]


def test_a_wrong_call_is_an_attempt_not_an_extra():
    answer = [plain("lookup_order", order_id="A-1001"), plain("issue_refund", order_id="A-1001", amount=30.0)]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND, allow_extra=False), answer)
    assert (result.score, result.misses) == (0.5, ["issue_refund (amount: expected 25.0, got 30.0)"])
    assert result.details["calls"][1]["index"] == 1 and result.details["extra"] == []
    assert result.details["metrics"] == {"lookup_order": {"tp": 1, "fp": 0, "fn": 0}, "issue_refund": {"tp": 0, "fp": 1, "fn": 1}}


def test_allowed_extra_calls_are_not_false_positives_but_rule_breaking_ones_are():
    answer = [plain("search_faq", q="refunds"), plain("lookup_order", order_id="A-1001"), plain("issue_refund", order_id="A-1001", amount=25.0)]
    allowed = run(tool_calls(calls=LOOKUP_THEN_REFUND), answer)
    assert "search_faq" not in allowed.details["metrics"] and allowed.details["extra"] == [0]
    strict = run(tool_calls(calls=LOOKUP_THEN_REFUND, allow_extra=False), answer)
    assert strict.details["metrics"]["search_faq"] == {"tp": 0, "fp": 1, "fn": 0}
    twice = answer + [plain("issue_refund", order_id="A-1001", amount=25.0)]
    capped = run(tool_calls(calls=LOOKUP_THEN_REFUND, max_calls={"issue_refund": 1}), twice)
    assert capped.details["metrics"]["issue_refund"] == {"tp": 1, "fp": 1, "fn": 0}
    assert "search_faq" not in capped.details["metrics"]


def test_the_closest_call_explains_the_miss():
    answer = [plain("issue_refund", order_id="B-2", amount=1.0), plain("issue_refund", order_id="A-1001", amount=30.0)]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND[1:]), answer)
    assert result.details["calls"][0]["index"] == 1  # one argument right beats none
    assert result.details["calls"][0]["arguments"] == {"amount": "expected 25.0, got 30.0"}


def test_min_score_overrides_the_verdict():
    answer = [plain("lookup_order", order_id="A-1001")]
    assert run(tool_calls(calls=LOOKUP_THEN_REFUND, min_score=0.5), answer).verdict == "pass"
    assert run(tool_calls(calls=LOOKUP_THEN_REFUND), answer).verdict == "partial"


# --- expected calls from the expected answer ------------------------------------------------------


def test_expected_calls_from_the_expected_answer():
    expected = {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": {"match": "regex", "pattern": "A-\\d+"}}}]}
    result = run(tool_calls(), [plain("lookup_order", order_id="A-77")], expected)
    assert (result.score, result.hits) == (1.0, ["lookup_order"])
    other = run(tool_calls(expected_path="reference.calls"), [plain("x")], {"reference": {"calls": [{"name": "x"}]}})
    assert other.score == 1.0
    whole = run(tool_calls(expected_path=""), [plain("x")], [{"name": "x"}])
    assert whole.score == 1.0


def test_a_recorded_reference_trajectory_is_expected_with_exact_arguments():
    reference = {"messages": [{"role": "user", "content": "hi"}, openai("lookup_order", '{"order_id": "A-1001"}'), openai("issue_refund", '{"order_id": "A-1001", "amount": 25.0}')]}
    evaluator = tool_calls(expected_path="messages", order="in_order")
    assert run(evaluator, [plain("lookup_order", order_id="A-1001"), plain("issue_refund", order_id="A-1001", amount=25.0)], reference).score == 1.0
    assert run(evaluator, [plain("lookup_order", order_id="A-1001"), plain("issue_refund", order_id="A-1001", amount=25.5)], reference).score == 0.5


@pytest.mark.parametrize(
    ("expected", "error"),
    [
        ({}, "no expected calls: `calls` is not set and the expected answer has nothing at `tool_calls`"),
        ({"tool_calls": "lookup_order"}, "the expected calls at `tool_calls` are not a list"),
        ({"tool_calls": [{"name": "x", "arguments": {"a": {"match": "regex"}}}]},
         "the expected calls at `tool_calls` are invalid: 0.arguments.a: Value error, match: regex needs `pattern`"),
        ({"tool_calls": [{"arguments": {}}]}, "the expected calls at `tool_calls` are invalid: 0.name: Field required"),
    ],
)
def test_broken_expected_calls_are_an_error_verdict(expected, error):
    result = run(tool_calls(), [plain("x")], expected)
    assert (result.score, result.verdict, result.error) == (0.0, "error", error)


# --- config -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"calls": [], "expected_path": "x"}, "give the expected calls in `calls` or at `expected_path`, not both"),
        ({"order": "exact", "allow_extra": True}, "order: exact allows no extra calls"),
        ({"min_calls": {"a": 2}, "max_calls": {"a": 1}}, "a: min_calls 2 is more than max_calls 1"),
        ({"max_calls": {"a": -1}}, "call counts must be >= 0, got -1 for a"),
        ({"calls": [{"name": "a"}], "forbidden": ["a"]}, "a is both expected and forbidden"),
        ({"calls": [{"name": "a", "arguments": {"x": {"match": "regex", "pattern": "("}}}]}, "invalid regex '('"),
        ({"calls": [{"name": "a", "arguments": {"x": {"match": "regex", "pattern": "a", "value": "a"}}}]}, "`value` does not apply to match: regex"),
        ({"calls": [{"name": "a", "arguments": {"x": {"match": "any_of"}}}]}, "match: any_of needs `values`"),
        ({"calls": [{"name": "a", "arguments": {"x": {"match": "any_of", "values": []}}}]}, "at least 1 item"),
        ({"calls": [{"name": "a", "arguments": {"x": {"match": "exact", "value": 1, "pattern": "1"}}}]}, "`pattern` (match: regex) does not apply to match: exact"),
        ({"calls": [{"name": "a", "arguments": {"x": {"match": "exact", "value": 1, "threshold": 0.5}}}]}, "`threshold` (match: fuzzy) does not apply to match: exact"),
        ({"calls": [{"name": "a", "arguments": {"x": {"match": "fuzzy"}}}]}, "match: fuzzy needs `value`"),
        ({"calls": [{"name": "a", "arguments": {"x": {"match": "fuzy", "value": "v"}}}]}, "Input should be 'exact'"),
        ({"calls": [{"name": ""}]}, "at least 1 character"),
        ({"order": "sorted"}, "Input should be 'any', 'in_order' or 'exact'"),
    ],
)
def test_config_errors(config, message):
    with pytest.raises(ValidationError) as caught:
        tool_calls(**config)
    assert message in str(caught.value)


def test_config_problems_point_at_the_suite_line(tmp_path, cli):
    suite = write(tmp_path, "suite.yaml", """
        name: tools
        evaluators:
          - type: tool_calls
            path: messages..x
            calls:
              - name: issue_refund
                arguments:
                  amount: {match: numeric_tolerance, value: 25, tolerence: 0.01}
        cases:
          - {id: a, expected: null, output: []}
    """)
    done = cli("validate", suite)
    assert done.returncode == 2
    assert "suite.yaml:8: evaluators[0].calls[0].arguments.amount.tolerence: unknown key 'tolerence'" in done.stderr
    fixed = suite.read_text().replace("tolerence", "tolerance")
    suite.write_text(fixed)
    loaded = load_suite(suite)
    assert [w.render() for w in loaded.warnings] == [f"{suite}:4: warning: evaluators[0].path: malformed path 'messages..x': it will resolve to missing"]


def test_result_details_are_plain_json():
    answer = [openai("lookup_order", '{"order_id": "A-1001"}'), openai("issue_refund", "{oops")]
    result = run(tool_calls(calls=LOOKUP_THEN_REFUND, forbidden=["delete_account"]), answer)
    assert json.loads(json.dumps(result.details)) == result.details


def test_assignment_shifts_a_long_chain_of_earlier_pairs_without_recursion():
    from agenteval.evaluators.tools.alignment import align_any_order

    count = 5000  # expected i takes call i or i+1; the last one only call 0: every pair must shift by one
    satisfying = [[i, i + 1] for i in range(count)] + [[0]]
    pairs = align_any_order(satisfying, [True] * (count + 1))
    assert len(pairs) == count + 1
    assert pairs[count] == 0 and all(pairs[i] == i + 1 for i in range(count))
