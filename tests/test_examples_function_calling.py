"""examples/function-calling run through the CLI: BFCL-format answers, calls recorded in five
vendors' shapes, and the verdicts a strict checker gives, pinned."""

import json

import pytest

from conftest import EXAMPLES, read_jsonl, run_cli

SUITE = EXAMPLES / "function-calling" / "suite.yaml"

PASSING = {
    "simple-ok", "simple-optional-left-out", "simple-case-and-punctuation", "weather-ok", "parallel-ok", "nested-ok",
}

MISSES = {
    "simple-string-for-number": ["calculate_triangle_area (base: expected an integer, got a string: expected 10, got '10')"],
    "simple-float-for-integer": ["calculate_triangle_area (base: expected an integer, got a float: expected 10, got 10.0)"],
    "simple-unexpected-parameter": ["calculate_triangle_area (color: unexpected argument)"],
    "simple-missing-parameter": ["calculate_triangle_area (height: missing)"],
    "simple-unreadable-arguments": ["calculate_triangle_area (call 0 (calculate_triangle_area): arguments are not valid JSON)"],
    "weather-wrong-value": ["get_weather (unit: 'kelvin' is not one of ['celsius', 'fahrenheit'])"],
    "weather-wrong-function": ["get_weather (not called)", "unexpected call 0 (get_forecast)"],
    "weather-no-call": ["get_weather (not called)"],
    "parallel-one-missing": ["spotify.play#2 (its 1 call(s) matched other expected calls)"],
    "parallel-one-too-many": ["unexpected call 2 (spotify.play)"],
    "nested-unexpected-key": ["book_flight (route: unexpected key 'class')"],
    "nested-wrong-order": ["book_flight (passengers: [0]: name: expected 'Ann Lee', got 'Bob Lee')"],
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("function-calling") / "results.jsonl"
    done = run_cli("run", SUITE, "-o", out)
    lines = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(out)}
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    return done, lines, summary


def test_counts_and_exit_code(run):
    done, lines, summary = run
    assert done.returncode == 1, done.stderr  # twelve cases fail on purpose
    assert summary["counts"] == {"total": 18, "passed": 6, "failed": 12, "errored": 0}
    assert {case for case, result in lines.items() if result["verdict"] == "pass"} == PASSING
    assert summary["evaluators"]["calls"]["mean_score"] == pytest.approx(6.5 / 18)
    assert summary["evaluators"]["calls"]["verdicts"] == {"pass": 6, "fail": 11, "partial": 1}


def test_every_mistake_is_named_as_a_strict_checker_names_it(run):
    _, lines, _ = run
    for case, result in lines.items():
        if case in PASSING:
            assert (result["score"], result["misses"]) == (1.0, []), case
        else:
            assert result["misses"] == MISSES[case], case
    assert lines["parallel-one-missing"]["score"] == 0.5


def test_per_function_counts_over_the_dataset(run):
    _, _, summary = run
    attributes = summary["dataset_metrics"]["calls"]["attributes"]
    assert {tool: (row["tp"], row["fp"], row["fn"]) for tool, row in attributes.items()} == {
        "calculate_triangle_area": (3, 5, 5), "get_weather": (1, 1, 3), "get_forecast": (0, 1, 0),
        "spotify.play": (5, 1, 1), "book_flight": (1, 2, 2),
    }
