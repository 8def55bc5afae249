"""tool_calls argument checks as strict as the function-calling leaderboards: unexpected arguments,
optional arguments, text normalization, strict numeric types, nested objects and arrays, BFCL's
answer format, tool results, where the trajectory is, and custom Python checks."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from agenteval.evaluators import EvalContext
from agenteval.evaluators.tools import ToolCalls
from agenteval.suite.loader import SuiteInvalid, load_suite

from conftest import write


def tool_calls(**config):
    return ToolCalls.model_validate({"type": "tool_calls", **config})


def run(evaluator, output, expected=None, base_dir=Path("."), input=None, metadata=None):
    return evaluator.evaluate(EvalContext("case", input, expected, output, metadata or {}, base_dir))


def plain(name, **arguments):
    return {"name": name, "arguments": arguments}


def check_one(arguments, actual, **options):
    """The details row of one expected call `f` against one actual call `f`."""
    result = run(tool_calls(calls=[{"name": "f", "arguments": arguments}], **options), [{"name": "f", "arguments": actual}])
    return result.details["calls"][0]


# --- 1. unexpected arguments ----------------------------------------------------------------------


def test_extra_arguments_false_names_the_unexpected_argument():
    evaluator = tool_calls(calls=[{"name": "lookup_order", "arguments": {"order_id": "A-1"}}], extra_arguments=False)
    result = run(evaluator, [plain("lookup_order", order_id="A-1", verbose=True)])
    assert (result.score, result.verdict) == (0.0, "fail")
    assert result.misses == ["lookup_order (verbose: unexpected argument)"]
    assert result.details["calls"][0]["arguments"] == {"verbose": "unexpected argument"}
    assert run(evaluator, [plain("lookup_order", order_id="A-1")]).score == 1.0


def test_extra_arguments_per_call_overrides_the_evaluator_default():
    calls = [
        {"name": "a", "arguments": {"x": 1}, "extra_arguments": False},
        {"name": "b", "arguments": {"x": 1}},
    ]
    result = run(tool_calls(calls=calls), [plain("a", x=1, y=2), plain("b", x=1, y=2)])
    assert (result.score, result.misses) == (0.5, ["a (y: unexpected argument)"])
    lenient = [{"name": "a", "arguments": {"x": 1}, "extra_arguments": True}]
    assert run(tool_calls(calls=lenient, extra_arguments=False), [plain("a", x=1, y=2)]).score == 1.0


def test_extra_arguments_default_stays_lenient():
    assert check_one({"x": 1}, {"x": 1, "y": 2})["status"] == "hit"


# --- 2. optional means checked when present -----------------------------------------------------------


def test_optional_argument_may_be_left_out_but_is_checked_when_given():
    arguments = {"city": "Paris", "unit": {"match": "any_of", "values": ["celsius", "fahrenheit"], "required": False}}
    assert check_one(arguments, {"city": "Paris"})["status"] == "hit"
    assert check_one(arguments, {"city": "Paris", "unit": None})["status"] == "hit"
    row = check_one(arguments, {"city": "Paris", "unit": "kelvin"})
    assert (row["status"], row["reason"]) == ("miss", "unit: 'kelvin' is not one of ['celsius', 'fahrenheit']")


# --- 3. text normalization ----------------------------------------------------------------------------


def test_text_options_per_argument():
    folded = {"city": {"match": "exact", "value": "New York", "case_sensitive": False, "normalize_whitespace": True}}
    assert check_one(folded, {"city": "  new   YORK "})["status"] == "hit"
    assert check_one(folded, {"city": "Newark"})["arguments"] == {"city": "expected 'New York', got 'Newark'"}
    ignoring = {"date": {"match": "exact", "value": "2024-03-05", "ignore_characters": "-/"}}
    assert check_one(ignoring, {"date": "2024/03/05"})["status"] == "hit"
    assert check_one({"date": "2024-03-05"}, {"date": "2024/03/05"})["status"] == "miss"  # the default: as written


def test_text_options_as_evaluator_defaults_reach_any_of_nested_values_and_regex():
    options = {"case_sensitive": False, "ignore_characters": " ,./-_*^"}
    assert check_one({"city": "San Francisco"}, {"city": "san-francisco"}, **options)["status"] == "hit"
    assert check_one({"city": {"match": "any_of", "values": ["NYC", "New York"]}}, {"city": "new york"}, **options)["status"] == "hit"
    assert check_one({"tags": ["Hot Dog"]}, {"tags": ["hotdog"]}, **options)["status"] == "hit"
    # a pattern sees the value as written unless its own options say otherwise
    assert check_one({"code": {"match": "regex", "pattern": "AB-\\d+"}}, {"code": "AB-12"}, **options)["status"] == "hit"
    folded = {"match": "regex", "pattern": "ab\\d+", "case_sensitive": False, "ignore_characters": "-"}
    assert check_one({"code": folded}, {"code": "AB-12"})["status"] == "hit"
    assert check_one({"city": {"match": "exact", "value": "Paris", "case_sensitive": True}}, {"city": "paris"}, **options)["status"] == "miss"


# --- 4. strict numeric types -------------------------------------------------------------------------


def test_strict_types_integer_needs_integer_float_takes_either_bool_is_no_number():
    strict = {"strict_types": True}
    assert check_one({"n": 3}, {"n": 3.0})["status"] == "hit"  # default: 3 and 3.0 are equal
    row = check_one({"n": 3}, {"n": 3.0}, **strict)
    assert row["arguments"] == {"n": "expected an integer, got a float: expected 3, got 3.0"}
    assert check_one({"x": 2.0}, {"x": 2}, **strict)["status"] == "hit"
    assert check_one({"x": 2.5}, {"x": 2.5}, **strict)["status"] == "hit"
    assert check_one({"n": 1}, {"n": True}, **strict)["arguments"] == {"n": "expected an integer, got a boolean: expected 1, got True"}
    assert check_one({"n": {"match": "any_of", "values": [1, 2]}}, {"n": 2.0}, **strict)["status"] == "miss"
    assert check_one({"n": {"match": "any_of", "values": [1.0, 2.5]}}, {"n": 1}, **strict)["status"] == "hit"
    assert check_one({"v": [1, 2]}, {"v": [1, 2.0]}, **strict)["status"] == "miss"
    assert check_one({"n": {"match": "numeric_tolerance", "value": 10, "tolerance": 1}}, {"n": 10.5}, **strict)["status"] == "miss"
    assert check_one({"n": {"match": "exact", "value": 3, "strict_types": True}}, {"n": 3.0})["status"] == "miss"


def test_nested_booleans_never_equal_integers():  # F8: argument checks compare strictly all the way down
    assert check_one({"v": [1, 0]}, {"v": [True, False]})["status"] == "miss"
    assert check_one({"v": {"match": "any_of", "values": [[1, 0]]}}, {"v": [True, False]})["status"] == "miss"
    assert check_one({"v": {"k": 1}}, {"v": {"k": True}})["status"] == "miss"
    assert check_one({"v": [1, 0]}, {"v": [1.0, 0]})["status"] == "hit"


# --- 5. inside objects and arrays -------------------------------------------------------------------


def test_an_object_whose_values_are_checks_is_checked_key_by_key():
    arguments = {"address": {"city": {"match": "fuzzy", "value": "San Francisco", "threshold": 0.8}, "zip": "94103"}}
    assert check_one(arguments, {"address": {"city": "San Fransisco", "zip": "94103", "country": "US"}})["status"] == "hit"
    row = check_one(arguments, {"address": {"city": "Oakland"}})
    assert row["arguments"]["address"].startswith("city: expected 'San Francisco', got 'Oakland' (similarity ")
    assert row["arguments"]["address"].endswith("; zip: missing")
    strict = check_one(arguments, {"address": {"city": "San Francisco", "zip": "94103", "country": "US"}}, extra_arguments=False)
    assert strict["arguments"] == {"address": "unexpected key 'country'"}


def test_object_check_written_out_with_its_own_extra_arguments():
    arguments = {"filters": {"match": "object", "properties": {"status": "open"}, "extra_arguments": False}}
    assert check_one(arguments, {"filters": {"status": "open"}})["status"] == "hit"
    assert check_one(arguments, {"filters": {"status": "open", "limit": 5}})["arguments"] == {"filters": "unexpected key 'limit'"}
    assert check_one(arguments, {"filters": "open"})["arguments"] == {"filters": "expected an object, got a string"}


def test_array_checks_in_order_any_order_and_each():
    in_order = {"stops": {"match": "array", "items": ["Paris", {"match": "regex", "pattern": "Ly.*"}]}}
    assert check_one(in_order, {"stops": ["Paris", "Lyon"]})["status"] == "hit"
    assert check_one(in_order, {"stops": ["Lyon", "Paris"]})["arguments"] == {"stops": "[0]: expected 'Paris', got 'Lyon'"}
    assert check_one(in_order, {"stops": ["Paris"]})["arguments"] == {"stops": "1 element(s), expected 2"}
    any_order = {"stops": {"match": "array", "items": ["Paris", {"match": "regex", "pattern": "Ly.*"}], "order": "any"}}
    assert check_one(any_order, {"stops": ["Lyon", "Paris"]})["status"] == "hit"
    assert check_one(any_order, {"stops": ["Lyon", "Lyon"]})["arguments"] == {"stops": "no element matches item(s) 0 (any order)"}
    each = {"ids": {"match": "array", "each": {"match": "regex", "pattern": "A-\\d+"}}}
    assert check_one(each, {"ids": ["A-1", "A-22"]})["status"] == "hit"
    assert check_one(each, {"ids": ["A-1", "B-2"]})["arguments"] == {"ids": "[1]: 'B-2' does not match 'A-\\\\d+'"}
    shorthand = {"stops": ["Paris", {"match": "fuzzy", "value": "Lyon"}]}  # a list with checks inside: in order
    assert check_one(shorthand, {"stops": ["Paris", "lyon"]})["status"] == "hit"


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ({"match": "array"}, "match: array needs `items` (one check per element) or `each`"),
        ({"match": "object"}, "match: object needs `properties`"),
        ({"match": "exact", "value": 1, "order": "any"}, "`order` (match: array) does not apply to match: exact"),
        ({"match": "date", "value": "2024-01-01", "ignore_characters": "-"}, "`ignore_characters` does not apply to match: date"),
        ({"match": "python"}, "match: python needs `function`"),
        ({"match": "python", "function": "not a reference"}, "String should match pattern"),
        ({"match": "regex", "pattern": "(a"}, "invalid regex '(a'"),
    ],
)
def test_check_config_errors(check, message):
    with pytest.raises(ValidationError) as caught:
        tool_calls(calls=[{"name": "f", "arguments": {"x": check}}])
    assert message in str(caught.value)


# --- 6. BFCL's answer format ---------------------------------------------------------------------------

BFCL_ANSWER = [{"calculate_triangle_area": {"base": [10], "height": [5], "unit": ["units", "cm", ""]}}]


def bfcl(**options):
    return tool_calls(expected_path="ground_truth", expected_format="bfcl", **options)


def test_bfcl_answers_read_as_they_are():
    expected = {"ground_truth": BFCL_ANSWER}
    assert run(bfcl(), [plain("calculate_triangle_area", base=10, height=5)], expected).score == 1.0
    assert run(bfcl(), [plain("calculate_triangle_area", base=10, height=5, unit="CM")], expected).score == 1.0
    wrong = run(bfcl(), [plain("calculate_triangle_area", base=10, height=5, unit="inch")], expected)
    assert wrong.misses == ["calculate_triangle_area (unit: 'inch' is not one of ['units', 'cm'])"]


def test_bfcl_defaults_are_bfcls_strict_ones():
    expected = {"ground_truth": BFCL_ANSWER}
    float_for_int = run(bfcl(), [plain("calculate_triangle_area", base=10.0, height=5)], expected)
    assert float_for_int.misses == ["calculate_triangle_area (base: expected an integer, got a float: expected 10, got 10.0)"]
    extra = run(bfcl(), [plain("calculate_triangle_area", base=10, height=5, color="red")], expected)
    assert extra.misses == ["calculate_triangle_area (color: unexpected argument)"]
    two = run(bfcl(), [plain("calculate_triangle_area", base=10, height=5)] * 2, expected)
    assert (two.score, two.misses) == (0.0, ["unexpected call 1 (calculate_triangle_area)"])
    lenient = bfcl(strict_types=False, extra_arguments=False, allow_extra=True)
    assert run(lenient, [plain("calculate_triangle_area", base=10.0, height=5)] * 2, expected).score == 1.0


def test_bfcl_text_is_compared_as_bfcl_standardizes_it():
    expected = {"ground_truth": [{"search_restaurants": {"location": ["San Francisco, CA"], "cuisine": ["Italian"]}}]}
    assert run(bfcl(), [plain("search_restaurants", location="san francisco ca", cuisine="ITALIAN")], expected).score == 1.0
    assert run(bfcl(), [plain("search_restaurants", location="San Jose, CA", cuisine="Italian")], expected).score == 0.0


def test_bfcl_nested_objects_lists_and_alternatives():
    expected = {"ground_truth": [
        {"book_flight": {
            "route": [{"from": ["SFO"], "to": ["JFK", "EWR"], "stops": [0, ""]}],
            "passengers": [[{"name": ["Ann"]}, {"name": ["Bob"]}]],
            "seats": [["12A", "12B"], ["12B", "12A"]],
        }},
        {"send_email": {"to": ["ann@example.com"]}},
    ]}
    right = [
        plain("send_email", to="ann@example.com"),
        plain("book_flight", route={"from": "SFO", "to": "EWR"}, passengers=[{"name": "Ann"}, {"name": "Bob"}], seats=["12B", "12A"]),
    ]
    result = run(bfcl(), right, expected)
    assert (result.score, result.misses) == (1.0, [])
    wrong = [
        plain("send_email", to="ann@example.com"),
        plain("book_flight", route={"from": "SFO", "to": "LGA", "meal": "veg"}, passengers=[{"name": "Bob"}, {"name": "Ann"}], seats=["12A"]),
    ]
    reasons = run(bfcl(), wrong, expected).details["calls"][0]["arguments"]
    assert reasons["route"] == "to: 'LGA' is not one of ['JFK', 'EWR']; unexpected key 'meal'"
    assert reasons["passengers"] == "[0]: name: expected 'Ann', got 'Bob'"
    assert reasons["seats"].startswith("['12A'] is not one of")


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"ground_truth": "f"}, "the expected calls at `ground_truth` are not a list of BFCL calls"),
        ({"ground_truth": [{"f": {"x": 1}}]}, "0.f.x: the accepted values must be a non-empty list (BFCL format)"),
        ({"ground_truth": [{"f": ["x"]}]}, "0.f: the parameters are not an object"),
        ({"ground_truth": [[]]}, "0: a BFCL call is an object"),
    ],
)
def test_bfcl_answers_that_are_not_in_its_format_are_an_error(answer, error):
    result = run(bfcl(), [plain("f", x=1)], answer)
    assert result.verdict == "error" and error in result.error


def test_bfcl_format_does_not_apply_to_calls():
    with pytest.raises(ValidationError, match="expected_format: bfcl reads the expected answer"):
        tool_calls(calls=[{"name": "f"}], expected_format="bfcl")


# --- tool results, where the trajectory is ---------------------------------------------------------


def test_result_checks_read_the_matching_tool_message():
    messages = [
        {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}},
        ]},
        {"role": "tool", "tool_call_id": "c2", "content": '{"temp": -3}'},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 21}'},
    ]
    calls = [
        {"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"match": "object", "properties": {"temp": 21}}},
        {"name": "get_weather", "arguments": {"city": "Oslo"}, "result": {"match": "regex", "pattern": ".*-3.*"}},
    ]
    assert run(tool_calls(calls=calls), {"messages": messages}).score == 1.0
    calls[0]["result"] = {"match": "object", "properties": {"temp": 25}}
    result = run(tool_calls(calls=calls), {"messages": messages})
    assert result.misses == ["get_weather#1 ((result): temp: expected 25, got 21)"]
    unanswered = run(tool_calls(calls=calls[1:]), [plain("get_weather", city="Oslo")])
    assert unanswered.misses == ["get_weather ((result): no result recorded)"]


def test_path_may_point_into_the_input_or_the_metadata():
    calls = [{"name": "lookup_order", "arguments": {"order_id": "A-1"}}]
    trajectory = [plain("lookup_order", order_id="A-1")]
    assert run(tool_calls(calls=calls, path="input.trace"), None, input={"trace": trajectory}).score == 1.0
    assert run(tool_calls(calls=calls, path="metadata.recorded[0].calls"), None, metadata={"recorded": [{"calls": trajectory}]}).score == 1.0
    assert run(tool_calls(calls=calls, path="output.calls"), {"output": {"calls": trajectory}}).score == 1.0  # the answer's own key
    missing = run(tool_calls(calls=calls, path="metadata.trace"), trajectory)
    assert missing.misses == ["no tool-call trajectory: found nothing at `metadata.trace`"]


# --- custom Python checks ------------------------------------------------------------------------------

CHECKS_MODULE = """
def same_order(actual, expected):
    if not isinstance(actual, str):
        return "not a string"
    return actual.upper().replace(" ", "") == expected


def broken(actual, expected):
    raise KeyError("boom")


def vague(actual, expected):
    return 1
"""


def test_python_checks_call_a_function_next_to_the_suite(tmp_path):
    (tmp_path / "checks.py").write_text(CHECKS_MODULE)
    evaluator = tool_calls(calls=[{"name": "f", "arguments": {"id": {"match": "python", "function": "checks:same_order", "value": "A-1"}}}])
    assert evaluator.runs_programs and evaluator.runs_code()
    assert run(evaluator, [plain("f", id="a-1 ")], base_dir=tmp_path).score == 1.0
    assert run(evaluator, [plain("f", id="b-1")], base_dir=tmp_path).misses == ["f (id: 'b-1' rejected by checks:same_order)"]
    assert run(evaluator, [plain("f", id=7)], base_dir=tmp_path).misses == ["f (id: not a string)"]


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("checks:broken", "checks:broken raised KeyError: 'boom'"),
        ("checks:vague", "checks:vague returned 1; expected true, false or a reason (a non-empty string)"),
        ("checks:absent", "match: python: checks ("),
    ],
)
def test_a_failing_python_check_is_an_error(tmp_path, function, error):
    (tmp_path / "checks.py").write_text(CHECKS_MODULE)
    evaluator = tool_calls(calls=[{"name": "f", "arguments": {"id": {"match": "python", "function": function}}}])
    result = run(evaluator, [plain("f", id="x")], base_dir=tmp_path)
    assert result.verdict == "error" and result.error.startswith(error), result.error


def test_python_checks_in_an_expected_answer_do_not_run():
    expected = {"tool_calls": [{"name": "f", "arguments": {"id": {"match": "python", "function": "os:system"}}}]}
    result = run(tool_calls(), [plain("f", id="x")], expected)
    assert result.verdict == "error"
    assert "hold a `match: python` check: an expected answer is data and does not run code" in result.error
    assert not tool_calls().runs_programs


def test_a_python_check_in_a_cases_file_needs_trust(tmp_path):
    write(tmp_path, "cases.yaml", """
        - id: a
          expected: null
          output: []
          evaluators:
            - type: tool_calls
              calls: [{name: f, arguments: {x: {match: python, function: "checks:same_order"}}}]
    """)
    suite = write(tmp_path, "suite.yaml", "name: t\ncases: cases.yaml\n")
    with pytest.raises(SuiteInvalid) as caught:
        load_suite(suite)
    [problem] = [p.render() for p in caught.value.problems]
    assert "case 'a': a `tool_calls` evaluator in a cases file runs a program" in problem
    suite.write_text("name: t\ncases: cases.yaml\ntrust_cases: true\n")
    assert len(load_suite(suite).cases) == 1
