"""Hostile values in answers, inputs and details: never a crash, always that case's error or a miss.

Lone surrogates, integers beyond the float range, nesting past the interpreter's limits, NaN from
arithmetic and subnormal numbers, from a command target, from --predictions, from recorded
answers and from the Python API. Every run here goes to the end, writes every case, and its
results file is read back by `report`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import orjson
import pytest

from agenteval.evaluators.base import EvaluatorResult
from agenteval.matching import numeric
from agenteval.process import decode_json
from agenteval.reports.failures import show_value
from agenteval.results import CaseResult, Summary, dump_line, read_results
from conftest import read_jsonl, run_cli, write
from fault_suites import assert_no_traceback, summary_of

SURROGATE = "\\ud83d"  # half an emoji, as Python's json.dumps writes it: JSON text that is not Unicode
HUGE = "1" + "0" * 400  # an integer beyond the float range


def _nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def _run(folder: Path, suite: str, *args: str, code: int) -> dict[str, dict]:
    """`agenteval run` to the end: exit `code`, no traceback, every line read back by `report` too."""
    write(folder, "suite.yaml", suite)
    done = run_cli("run", "suite.yaml", "-o", "out.jsonl", "-q", *args, cwd=folder)
    assert_no_traceback(done)
    assert done.returncode == code, done.stderr
    report = run_cli("report", "out.jsonl", cwd=folder)
    assert_no_traceback(report)
    assert report.returncode in (0, 1, 3), report.stderr  # read, whatever the verdicts
    rows = {row["case_id"]: row for row in read_jsonl(folder / "out.jsonl")}
    summary = summary_of(folder / "out.jsonl")
    assert summary["counts"]["total"] == len(rows)
    assert isinstance(summary["mean_score"], float) and math.isfinite(summary["mean_score"])
    return rows


def _target(folder: Path, answers: dict[str, str]) -> str:
    """A command target printing the raw JSON text `answers[case id]` (as a model's wrapper would)."""
    write(folder, "t.py", f"""
        import json, sys
        case = json.load(sys.stdin)
        sys.stdout.write({answers!r}[case["q"]])
    """)
    return "target: {type: command, command: [python, t.py]}\n"


# --- E30: lone surrogates -----------------------------------------------------------------------


def test_a_lone_surrogate_from_a_command_target_is_that_cases_error_and_the_run_goes_on(tmp_path):
    target = _target(tmp_path, {"cut": f'"hello {SURROGATE}"', "fine": '"hello there"'})
    (tmp_path / "cases.jsonl").write_text('{"id": "cut", "input": {"q": "cut"}, "expected": {}}\n{"id": "fine", "input": {"q": "fine"}, "expected": {}}\n')
    rows = _run(tmp_path, f"name: g2\n{target}evaluators: [{{type: contains, reference: hello}}]\ncases: cases.jsonl\n", code=3)
    assert rows["cut"]["verdict"] == "error" and rows["cut"]["output"] is None
    assert rows["cut"]["error"] == (
        "answer holds a lone surrogate at `answer` (U+D83D: half of a UTF-16 pair, e.g. an emoji cut off mid-token), "
        "which is not Unicode text"
    )
    assert rows["fine"]["verdict"] == "pass"


def test_a_lone_surrogate_in_predictions_is_that_cases_error_naming_its_path(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": {}, "expected": {"t": "x"}}\n{"id": "b", "input": {}, "expected": {"t": "x"}}\n')
    (tmp_path / "preds.jsonl").write_text(
        '{"id": "a", "output": {"t": "x", "notes": [{"' + SURROGATE + '": 1}]}}\n{"id": "b", "output": {"t": "x"}}\n'
    )
    suite = "name: p\nevaluators: [{type: field_accuracy, fields: [{path: t}]}]\ncases: cases.jsonl\n"
    rows = _run(tmp_path, suite, "--predictions", "preds.jsonl", code=3)
    assert rows["a"]["verdict"] == "error"
    assert rows["a"]["error"].startswith("answer holds a lone surrogate in a key at `answer.notes[0][\"\\ud83d\"]` (U+D83D")
    assert rows["b"]["verdict"] == "pass"


def test_lone_surrogates_in_a_yaml_cases_input_expected_value_and_metadata_are_written_and_read_back(tmp_path):
    # YAML's "\ud83d" escape makes a lone surrogate: the writer stores it as JSON's own escape
    write(tmp_path, "cases.yaml", r"""
        - {id: a, metadata: {m: "m\ud83d"}, input: {q: "x\ud83d"}, expected: {a: "y\ud83d"}, output: {a: 1}}
        - {id: b, input: {}, expected: {a: 1}, output: {a: 1}}
    """)
    rows = _run(tmp_path, "name: y\nevaluators: [{type: field_accuracy, fields: [{path: a}]}]\ncases: cases.yaml\n", code=1)
    cut = rows["a"]
    assert (cut["verdict"], cut["input"], cut["metadata"]) == ("fail", {"q": "x\ud83d"}, {"m": "m\ud83d"})
    assert cut["evaluator_results"][0]["details"]["fields"][0]["expected"] == "y\ud83d"
    assert b"\\ud83d" in (tmp_path / "out.jsonl").read_bytes()  # the escape, never invalid UTF-8
    assert [result.verdict for result in read_results(tmp_path / "out.jsonl")] == ["fail", "pass"]


# --- E31: integers beyond the float range ---------------------------------------------------------


def test_an_integer_beyond_float_range_in_predictions_or_from_a_target_is_that_cases_error(tmp_path):
    suite = "name: g3\nevaluators: [{type: field_accuracy, fields: [{path: n, match: numeric_tolerance, tolerance: 1}]}]\ncases: cases.jsonl\n"
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": {"q": "huge"}, "expected": {"n": 5}}\n{"id": "b", "input": {"q": "fine"}, "expected": {"n": 5}}\n')
    (tmp_path / "preds.jsonl").write_text(f'{{"id": "a", "output": {{"n": {HUGE}}}}}\n{{"id": "b", "output": {{"n": 5.5}}}}\n')
    message = "answer holds an integer beyond the float range at `answer.n` (about 401 digits; numbers must stay within ±1.8e308)"
    rows = _run(tmp_path, suite, "--predictions", "preds.jsonl", code=3)
    assert (rows["a"]["verdict"], rows["a"]["error"], rows["b"]["verdict"]) == ("error", message, "pass")

    target = _target(tmp_path, {"huge": f'{{"n": -{HUGE}}}', "fine": '{"n": 5}'})
    rows = _run(tmp_path, suite.replace("evaluators", target + "evaluators"), "--overwrite", code=3)
    assert (rows["a"]["verdict"], rows["a"]["error"], rows["b"]["verdict"]) == ("error", message, "pass")


def test_decode_json_keeps_an_integer_beyond_float_range_exact_and_refuses_one_too_long_to_read():
    assert decode_json(f'{{"n": {HUGE}, "f": NaN}}'.encode())["n"] == 10**400
    assert decode_json(b"[18446744073709551616]") == [1.8446744073709552e19]  # beyond 64 bits: a float, as orjson reads it
    with pytest.raises(ValueError, match="an integer of 5001 digits is too long to read"):
        decode_json(b"[1" + b"0" * 5000 + b", NaN]")


# --- E32: nesting past the interpreter's limits ---------------------------------------------------


@pytest.mark.parametrize("source", ["recorded", "command", "predictions"])
def test_an_answer_nested_deeper_than_answer_depth_is_that_cases_error_from_every_source(tmp_path, source):
    deep, shallow = '{"a": ' + _nested(300) + "}", '{"a": 1}'
    suite = "name: g4\nevaluators: [{type: field_accuracy, fields: [{path: a}]}]\ncases: cases.jsonl\n"
    args: tuple[str, ...] = ()
    outputs = {"deep": deep, "later": shallow}
    lines = [f'{{"id": "{case}", "input": {{"q": "{case}"}}, "expected": {{"a": 1}}' for case in outputs]
    if source == "recorded":
        lines = [line + f', "output": {outputs[case]}' for line, case in zip(lines, outputs)]
    elif source == "command":
        suite = suite.replace("evaluators", _target(tmp_path, outputs) + "evaluators")
    else:
        (tmp_path / "preds.jsonl").write_text("".join(f'{{"id": "{case}", "output": {text}}}\n' for case, text in outputs.items()))
        args = ("--predictions", "preds.jsonl")
    (tmp_path / "cases.jsonl").write_text("".join(line + "}\n" for line in lines))
    rows = _run(tmp_path, suite, *args, code=3)
    assert rows["deep"]["verdict"] == "error" and rows["later"]["verdict"] == "pass"
    assert "nested deeper than 200 levels" in rows["deep"]["error"]
    if source != "command":  # the command target's own parser says it first, in its words
        assert rows["deep"]["error"] == (
            "answer nested deeper than 200 levels (at `answer.a[0][0][0][0][0]… (200 levels)`) "
            "(limit `limits.answer_depth: 200`; raise it in the suite's `limits:` if this is expected)"
        )


@pytest.mark.parametrize("source", ["recorded", "command", "predictions"])
def test_raising_answer_depth_lets_a_deep_answer_through_from_every_source(tmp_path, source):
    deep = '{"a": ' + _nested(300) + "}"
    suite = "name: g4\nlimits: {answer_depth: 400}\nevaluators: [{type: field_accuracy, fields: [{path: a}]}]\ncases: cases.jsonl\n"
    args: tuple[str, ...] = ()
    line = '{"id": "deep", "input": {"q": "deep"}, "expected": {"a": 1}'
    if source == "recorded":
        line += f', "output": {deep}'
    elif source == "command":
        suite = suite.replace("evaluators", _target(tmp_path, {"deep": deep}) + "evaluators")
    else:
        (tmp_path / "preds.jsonl").write_text(f'{{"id": "deep", "output": {deep}}}\n')
        args = ("--predictions", "preds.jsonl")
    (tmp_path / "cases.jsonl").write_text(line + "}\n")
    rows = _run(tmp_path, suite, *args, code=1)
    assert rows["deep"]["verdict"] == "fail" and rows["deep"]["error"] is None  # scored: a list is not 1


def test_deep_inputs_and_deep_values_in_details_are_written_and_the_failures_printed(tmp_path):
    lines = [
        {"id": "deep_input", "input": "INPUT", "expected": {"a": 1}, "output": {"a": 1}},
        {"id": "deep_expected", "input": {}, "expected": {"a": "EXPECTED"}, "output": {"a": [1]}},
        {"id": "later", "input": {}, "expected": {"a": 1}, "output": {"a": 1}},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    (tmp_path / "cases.jsonl").write_text(text.replace('"INPUT"', _nested(900)).replace('"EXPECTED"', _nested(600)))
    suite = (
        "name: g4\nevaluators:\n  - {type: field_accuracy, fields: [{path: a}]}\n"
        "  - {type: composite, evaluators: [{type: field_accuracy, fields: [{path: a}]}]}\ncases: cases.jsonl\n"
    )
    write(tmp_path, "suite.yaml", suite)
    done = run_cli("run", "suite.yaml", "-o", "out.jsonl", cwd=tmp_path)  # not -q: the failures section prints the values
    assert_no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert "a: expected [[[[[[" in done.stdout + done.stderr
    rows = _run(tmp_path, suite, "--overwrite", code=1)
    assert [rows[case]["verdict"] for case in ("deep_input", "deep_expected", "later")] == ["pass", "fail", "pass"]
    node, depth = rows["deep_input"]["input"], 0
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert node == "<value nested deeper than 500 levels: not stored>" and depth == 499  # the line's own level is one
    node, depth = rows["deep_expected"]["evaluator_results"][0]["details"]["fields"][0]["expected"], 0
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert node == "<value nested deeper than 500 levels: not stored>" and depth == 494  # 6 levels down the line


def test_show_value_never_raises_on_deep_values_surrogates_or_long_integers():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert show_value(deep) == "[" * 59 + "…"
    assert show_value({"a": "x\ud83d", "n": 10**400}, 200) == '{"a": "x\\ud83d", "n": <integer of about 401 digits>}'
    assert show_value([10**5000, float("nan")]) == "[<integer of about 5001 digits>, NaN]"


# --- E33: NaN from arithmetic: a score is never written as null --------------------------------------


def test_huge_coordinates_score_zero_with_a_miss_and_the_results_read_back(tmp_path):
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "a", "input": {}, "expected": {"box": [0, 0, 1e308, 1e308]}, "output": {"box": [-1e308, -1e308, 1e308, 1e308]}}\n'
        '{"id": "b", "input": {}, "expected": {"box": [0, 0, 1, 1]}, "output": {"box": [-1e308, -1e308, 1e308, 1e308]}}\n'
        '{"id": "c", "input": {}, "expected": {"box": [0, 0, 1e154, 1e154]}, "output": {"box": [0, 0, 1.3e154, 1.3e154]}}\n'
        '{"id": "d", "input": {}, "expected": {"box": [[0, 0, 1e200, 1e100], [0, 0, 1, 1]]}, "output": {"box": [[0, 0, 1.3e200, 1.3e100], [-1e308, 0, 1e308, 1]]}}\n'
    )
    rows = _run(tmp_path, "name: g5\nevaluators: [{type: iou_score, path: box}]\ncases: cases.jsonl\n", code=1)
    assert rows["a"]["evaluator_results"][0]["misses"] == ["box (expected: coordinates overflow)"]
    assert rows["b"]["evaluator_results"][0]["misses"] == ["box (coordinates overflow)"]
    assert [rows[case]["score"] for case in "ab"] == [0.0, 0.0]
    assert rows["c"]["evaluator_results"][0]["details"]["iou"] == pytest.approx(1 / 1.69)  # areas near 1e308: no overflow
    listed = rows["d"]["evaluator_results"][0]
    assert listed["misses"][0] == "candidate[1] (coordinates overflow)"
    assert listed["details"]["pairs"] == [{"expected": 0, "candidate": 0, "iou": round(1 / 1.69, 6)}]


def test_a_score_that_is_not_a_finite_number_is_written_as_an_error_never_as_null(tmp_path):
    result = CaseResult(
        "r", "s", "c", float("nan"), "pass", output={"a": 1},
        evaluator_results=[EvaluatorResult("e", "t", float("nan"), "pass"), EvaluatorResult("f", "t", 1.0, "pass")],
    )
    line = orjson.loads(dump_line(result))
    assert (line["score"], line["verdict"]) == (0.0, "error")
    assert [(item["score"], item["verdict"], item["error"]) for item in line["evaluator_results"]] == [
        (0.0, "error", "the evaluator gave a score that is not a finite number (nan)"), (1.0, "pass", None),
    ]
    summary = Summary()
    summary.add(result)
    assert summary.to_dict()["mean_score"] == 0.0 and summary.to_dict()["counts"]["errored"] == 1
    assert summary.to_dict()["evaluators"]["e"]["mean_score"] == 0.0
    (tmp_path / "r.jsonl").write_bytes(dump_line(result))
    assert [case.verdict for case in read_results(tmp_path / "r.jsonl")] == ["error"]


# --- E40: odd numbers reach the evaluators as misses, never raw exceptions ----------------------------


def test_huge_integers_under_numeric_tolerance_and_subnormal_boxes_and_vectors_are_misses(tmp_path):
    write(tmp_path, "cases.yaml", f"""
        - {{id: big-int, input: {{}}, expected: {{n: {HUGE}}}, output: {{n: 5}}}}
        - {{id: subnormal, input: {{}}, expected: {{box: [0, 0, 1, 1], v: [1, 0]}}, output: {{box: [0, 0, 5.0e-324, 5.0e-324], v: [5.0e-324, 5.0e-324]}}}}
        - {{id: vectors, input: {{}}, expected: {{box: [0, 0, 1, 1], v: [1.0e-320, 0]}}, output: {{box: [0, 0, 1, 1], v: [1.0e+300, 0]}}}}
    """)
    suite = """
        name: g13
        evaluators:
          - {type: field_accuracy, fields: [{path: n, match: numeric_tolerance, required: false}]}
          - {type: iou_score, path: box}
          - {type: distance, path: v, metric: cosine}
        cases: cases.yaml
    """
    rows = _run(tmp_path, suite, code=1)
    assert not any(row["error"] or any(item["error"] for item in row["evaluator_results"]) for row in rows.values())
    fields, box, vector = rows["big-int"]["evaluator_results"]
    assert (fields["verdict"], fields["details"]["fields"][0]["status"]) == ("fail", "miss")
    fields, box, vector = rows["subnormal"]["evaluator_results"]
    assert box["misses"] == ["box (zero area)"]
    assert vector["details"]["distance"] == pytest.approx(1 - math.sqrt(0.5))  # the angle of the tiny vector, 45 degrees
    fields, box, vector = rows["vectors"]["evaluator_results"]
    assert (box["verdict"], vector["verdict"], vector["details"]["distance"]) == ("pass", "pass", 0.0)


def test_numeric_tolerance_compares_integers_beyond_float_range_exactly():
    big = 10**400
    assert numeric(big, big).hit and numeric(big + 1, big, tolerance=1).hit
    assert not numeric(big + 2, big, tolerance=1).hit
    assert numeric(big + big // 20, big, tolerance=0.05, relative=True).hit
    assert not numeric(big + big // 19, big, tolerance=0.05, relative=True).hit
    assert not numeric(5.0, big, tolerance=1e300).hit
    assert numeric(float("inf"), big).reason == "not a finite number"


# --- G2: an answer's own `turns` of any shape -----------------------------------------------------


@pytest.mark.parametrize("scope", ["", ", scope: turn", ", scope: last"])
def test_turns_that_are_no_objects_in_a_command_targets_answer_are_that_cases_error(tmp_path, scope):
    """A service answering `{"turns": ["see attached"]}` (under the default scope too): that case is
    an `error` naming the turn, every other case runs and is written."""
    target = _target(tmp_path, {
        "odd": '{"turns": ["see attached"], "content": "x"}',
        "junk": '{"turns": [{"user": "u", "reply": "x"}, 7], "content": "x"}',
        "fine": '{"turns": [{"user": "u", "reply": "x"}], "content": "x"}',
    })
    (tmp_path / "cases.jsonl").write_text("".join(f'{{"id": "{q}", "input": {{"q": "{q}"}}}}\n' for q in ("odd", "junk", "fine")))
    rows = _run(tmp_path, f"name: g2\n{target}evaluators: [{{type: contains, path: content, reference: x{scope}}}]\ncases: cases.jsonl\n", code=3)
    assert rows["odd"]["verdict"] == "error"
    assert rows["odd"]["evaluator_results"][0]["error"] == ("turn 1: " if "turn" in scope else "") + (
        "the answer's `turns[0]` is a string, not an object with `user` and `reply`: no reply to score"
    )
    assert rows["junk"]["verdict"] == "error"
    assert "`turns[1]` is a number" in rows["junk"]["evaluator_results"][0]["error"]
    assert rows["fine"]["verdict"] == "pass"
