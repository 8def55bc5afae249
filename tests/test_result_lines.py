"""The result line and the summary on their fast paths equal what the plain implementations gave.

`dump_line` writes the usual result from a dict of its fields and `Summary.add` counts with fewer
calls; the implementations they replaced are kept here, verbatim, as the reference: for any
result (NaN and infinities in answers and scores, keys that are not strings, a Decimal's digits,
nesting at orjson's and the store's limits, lone surrogates, huge integers, numpy values, odd
types, subclasses) the line is the same bytes, and for any sequence of results the summary is the
same.
"""

from __future__ import annotations

import heapq
import json
import math
from collections import Counter
from dataclasses import dataclass, replace
from datetime import date
from decimal import Decimal
from typing import Any

import numpy as np
import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agenteval.cells import cell_label
from agenteval.evaluators.base import EvaluatorResult
from agenteval.results import (
    DUMP_OPTIONS, SLOWEST_KEPT, CaseResult, Summary, _dump_any, _EvaluatorStats, _exact_digits, _FieldStats,
    _InCell, _score, _shown_score, case_from_dict, dump_line,
)
from agenteval.values import ExactNumber

_STRING_KEYS = orjson.OPT_SERIALIZE_NUMPY
_INF = float("inf")


# --- the reference: the implementations the fast paths replaced ---------------------------------

def reference_settled(result: CaseResult) -> CaseResult:
    if _score(result.score):
        for evaluator in result.evaluator_results:
            if not _score(evaluator.score):
                break
        else:
            return result
    evaluators = [
        evaluator if _score(evaluator.score) else replace(
            evaluator, score=0.0, verdict="error",
            error=f"the evaluator gave a score that is not a finite number ({_shown_score(evaluator.score)})",
        )
        for evaluator in result.evaluator_results
    ]
    error = result.error
    if error is None and all(_score(evaluator.score) for evaluator in result.evaluator_results):
        error = f"the case score is not a finite number ({_shown_score(result.score)})"
    return replace(result, score=0.0, verdict="error", evaluator_results=evaluators, error=error)


def reference_has_non_finite(value: Any) -> bool:
    if type(value) is float:
        return value != value or value in (_INF, -_INF)
    if type(value) is dict:
        return any(reference_has_non_finite(item) for item in value.values())
    if type(value) is list:
        return any(reference_has_non_finite(item) for item in value)
    return False


def reference_dump_line(result: CaseResult) -> bytes:
    result = reference_settled(result)
    try:
        line = orjson.dumps(result, option=_STRING_KEYS, default=_exact_digits) + b"\n"
    except orjson.JSONEncodeError:
        try:
            line = orjson.dumps(result, option=DUMP_OPTIONS, default=_exact_digits) + b"\n"
        except orjson.JSONEncodeError:
            return _dump_any(result)
    if b"null" in line and reference_has_non_finite(result.output):
        placeholder = "\x00output\x00"
        slim = orjson.dumps(replace(result, output=placeholder), option=DUMP_OPTIONS, default=_exact_digits).decode()
        answer = json.dumps(result.output, allow_nan=True, ensure_ascii=False)
        line = slim.replace(orjson.dumps(placeholder).decode(), answer, 1).encode() + b"\n"
    return line


class ReferenceSummary(Summary):
    """Summary with the counting it had before (the figures are still given by `to_dict`)."""

    def _cell(self) -> Summary:
        cell = ReferenceSummary(self._repeat)
        cell._in_cell = True
        return cell

    def add(self, result: CaseResult) -> None:
        result = reference_settled(result)
        self.total += 1
        self.verdicts[result.verdict] += 1
        self.score_sum += result.score
        self.duration_sum += result.duration_ms
        entry = (result.duration_ms, result.case_id if result.target is None and result.prompt is None else (
            f"{result.case_id} [{cell_label(result.target, result.prompt)}]"
        ))
        if len(self._slowest) < SLOWEST_KEPT:
            heapq.heappush(self._slowest, entry)
        elif entry > self._slowest[0]:
            heapq.heapreplace(self._slowest, entry)
        for tag in result.tags:
            self.tags.setdefault(tag, Counter())[result.verdict] += 1
        for evaluator in result.evaluator_results:
            self._add_evaluator(evaluator)
        self.usage.add(result)
        names = (result.target, result.prompt)
        if self._in_cell or (names == (None, None) and not self.cells):
            self.repeats.add(result)
            return
        self.repeats.add(_InCell(result, f"{result.case_id} [{cell_label(*names)}]"))
        cell = self.cells.get(names) or self._keep(names)
        if cell is None:
            self._not_kept += 1
            return
        cell.add(result)
        if self._pairs is not None:
            self._pair(result, list(self.cells).index(names))

    def _add_evaluator(self, evaluator: EvaluatorResult) -> None:
        stats = self.evaluators.get(evaluator.name)
        if stats is None:
            stats = self.evaluators[evaluator.name] = _EvaluatorStats(evaluator.type)
        stats.count += 1
        stats.score_sum += evaluator.score
        stats.duration_sum += evaluator.duration_ms
        stats.verdicts[evaluator.verdict] += 1
        if evaluator.criterion and stats.criterion is None:
            stats.criterion = evaluator.criterion
        details = evaluator.details
        if not details:
            return
        if "criteria" in details or "children" in details:
            stats.add_criteria(details)
        rows = details.get("fields")
        if isinstance(rows, list):
            self._add_fields(evaluator.name, rows)
        metrics = details.get("metrics")
        if isinstance(metrics, dict):
            self._add_confusion(evaluator.name, metrics)

    def _add_fields(self, evaluator: str, rows: list[Any]) -> None:
        per_path = self.fields.get(evaluator)
        if per_path is None:
            per_path = self.fields[evaluator] = {}
        for row in rows:
            if not isinstance(row, dict):
                continue
            path = row.get("path")
            if not isinstance(path, str) or "status" not in row:
                continue
            status = row["status"]
            stats = per_path.get(path)
            if stats is None:
                stats = per_path[path] = _FieldStats()
            if status == "skipped":
                stats.skipped += 1
                continue
            stats.scored += 1
            if status == "hit":
                stats.hits += 1
            score = row.get("score")
            if _score(score):
                stats.score_sum += score


# --- values results hold -------------------------------------------------------------------------

@dataclass
class Point:  # a pipeline's own dataclass in an answer
    x: float
    y: Any


class Odd:  # an object orjson cannot write
    def __str__(self) -> str:
        return "odd"


class Ratio(float):  # a float subclass
    pass


@dataclass(slots=True)
class LongResult(CaseResult):  # a subclass adding a field: written as the dataclass it is
    extra: int = 7


@dataclass(slots=True)
class WiderEvaluatorResult(EvaluatorResult):  # an evaluator's own result type, with a field of its own
    extra: str = "x"


def nested(depth: int, leaf: Any = 1.5) -> Any:
    value: Any = leaf
    for level in range(depth - 1):
        value = [value] if level % 2 else {"k": value}
    return value


texts = st.one_of(
    st.text(max_size=8), st.sampled_from(["\ud800", "a\udfffb", "null", "NaN", '"output":', "\x00output\x00", "é✓"]),
)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64), st.sampled_from([0.0, 1.0, -0.0, 0.5, 1e308, 5e-324]),
)
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), floats, texts,
    st.sampled_from([2**14100, -(2**13900), -(10**30)]),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(ExactNumber),
    st.builds(lambda x: np.float64(x), floats), st.builds(lambda x: np.array([x, 1.0]), floats),
    st.just(date(2024, 1, 2)), st.just(Odd()), st.builds(Point, floats, st.integers()), floats.map(Ratio),
    st.sampled_from([nested(250), nested(253), nested(254), nested(255), nested(256), nested(499), nested(501),
                     nested(252, float("nan")), nested(260, float("inf"))]),
)
keys = st.one_of(texts, st.integers(min_value=-5, max_value=2**66), st.booleans(), st.none(), floats, st.just(date(2024, 1, 2)))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=4), st.dictionaries(keys, inner, max_size=3),
        st.tuples(inner, inner),
    ),
    max_leaves=12,
)
scores = st.one_of(
    st.floats(min_value=0, max_value=1), st.sampled_from([0.0, 1.0, float("nan"), _INF, -_INF, 2, True, None, "0.5", 10**400, 2**1100]),
)
verdicts = st.sampled_from(["pass", "partial", "fail", "error"])
field_rows = st.lists(
    st.one_of(
        st.fixed_dictionaries({
            "path": st.sampled_from(["a", "b.c", "items[0]"]), "status": st.sampled_from(["hit", "miss", "skipped", "error", 3]),
        }, optional={"score": scores}),
        st.fixed_dictionaries({"path": st.one_of(st.integers(), st.none(), st.just("a"))}),  # no status, or a path that is not text
        st.just("not a row"), st.just(None),
    ),
    max_size=4,
)
details = st.one_of(
    st.none(), st.just({}),
    st.fixed_dictionaries({}, optional={
        "fields": st.one_of(field_rows, st.just("not rows")),
        "criteria": st.dictionaries(st.sampled_from(["clarity", "tone"]), st.one_of(scores, st.fixed_dictionaries({"score": scores, "verdict": verdicts}))),
        "children": st.lists(st.fixed_dictionaries({"name": st.sampled_from(["x", "y"]), "score": scores, "verdict": verdicts}), max_size=2),
        "metrics": st.one_of(
            st.dictionaries(st.sampled_from(["p", "q"]), st.fixed_dictionaries(
                {"tp": st.integers(0, 5), "fp": st.integers(0, 5), "fn": st.integers(0, 5)}, optional={"tn": st.one_of(st.integers(0, 5), st.booleans())},
            )),
            st.just(["not", "a", "dict"]),
        ),
        "usage": st.fixed_dictionaries({"latency_ms": floats, "input_tokens": st.integers(0, 50), "cost_usd": st.one_of(st.none(), floats)}),
        "extra": values,
    }),
)
evaluators = st.builds(
    EvaluatorResult,
    name=st.sampled_from(["fields", "judge", "exact"]), type=st.sampled_from(["field_accuracy", "llm_judge"]),
    score=scores, verdict=verdicts, hits=st.lists(st.text(max_size=3), max_size=2), misses=st.just([]),
    reasoning=st.one_of(st.none(), texts), details=details, error=st.one_of(st.none(), texts),
    duration_ms=st.floats(min_value=0, max_value=5), criterion=st.one_of(st.none(), st.just({"clarity": "is it clear"})),
)
results = st.builds(
    CaseResult,
    run_id=st.just("r1"), suite=st.just("s"), case_id=st.one_of(st.sampled_from(["c0", "c1", "c2", "c3"]), texts),
    score=scores, verdict=st.sampled_from(["pass", "fail", "error"]), output=values,
    evaluator_results=st.one_of(st.lists(evaluators, max_size=3), st.lists(evaluators, max_size=2).map(tuple)),
    error=st.one_of(st.none(), texts), duration_ms=st.sampled_from([0.0, 1.0, 2.5, 2.5, 7.0, 0.125]),
    tags=st.lists(st.sampled_from(["smoke", "slow"]), max_size=2, unique=True), metadata=st.dictionaries(keys, values, max_size=2),
    usage=st.one_of(st.none(), st.fixed_dictionaries({"latency_ms": st.floats(0, 100), "total_tokens": st.integers(0, 9)}, optional={"cached": st.booleans()})),
    repetition=st.integers(0, 2), timestamp=st.one_of(st.none(), st.just("2026-01-01T00:00:00+00:00")),
    input=values, agent_id=st.one_of(st.none(), texts), session_id=st.none(), expected=values,
    target=st.one_of(st.none(), st.sampled_from(["m1", "m2"])), prompt=st.one_of(st.none(), st.sampled_from(["p1", "p2"])),
    trace_id=st.one_of(st.none(), st.just("0af7651916cd43dd8448eb211c80319c")),
)


def usual(**changes: Any) -> CaseResult:
    base = case_from_dict({
        "run_id": "r1", "suite": "tiny", "case_id": "t0", "score": 1.0, "verdict": "pass",
        "output": {"code": "C000", "name": "Globex Corporation"},
        "evaluator_results": [{
            "name": "fields", "type": "field_accuracy", "score": 1.0, "verdict": "pass", "hits": ["code", "name"],
            "misses": [], "reasoning": "2/2 fields matched", "details": {"fields": [
                {"path": "code", "match": "exact", "status": "hit", "score": 1.0, "expected": "C000", "actual": "C000"},
                {"path": "name", "match": "fuzzy", "status": "hit", "score": 0.97, "expected": "Globex Corporation",
                 "actual": "Globex Corp", "similarity": 0.97},
            ]}, "error": None, "duration_ms": 0.089, "criterion": None,
        }],
        "error": None, "duration_ms": 0.157, "tags": [], "metadata": {}, "usage": None, "repetition": 0,
        "timestamp": "2026-11-28T17:12:54.854571+00:00", "input": None, "expected": {"code": "C000", "name": "Globex Corporation"},
    })
    return replace(base, **changes)


# --- the line -------------------------------------------------------------------------------------

def assert_same_line(result: CaseResult) -> None:
    try:
        expected = reference_dump_line(result)
    except (TypeError, ValueError):  # the reference raised (a date beside a NaN in the answer): the line is still written
        line = dump_line(result)
        assert line.endswith(b"\n") and json.loads(line)["case_id"] == result.case_id
        return
    assert dump_line(result) == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(results)
@example(usual())
@example(usual(output={"total": float("nan"), "tax": [1.5, -_INF]}))
@example(usual(output=nested(254)))
@example(usual(output=nested(255)))
@example(usual(output=nested(254, float("nan"))))
@example(usual(metadata={1: "a", None: "b"}))
@example(usual(output={"n": ExactNumber(Decimal("12.50"))}, expected={"n": ExactNumber(Decimal("1E+3"))}))
@example(usual(case_id="c\ud800"))
@example(usual(score=float("nan")))
@example(usual(output={"when": date(2024, 1, 2), "x": float("nan")}))
def test_the_line_is_the_same_bytes_as_the_plain_implementation_wrote(result):
    assert_same_line(result)


def test_a_subclass_and_evaluator_results_that_are_not_evaluator_results_are_written_as_before():
    longer = LongResult(**{name: getattr(usual(), name) for name in CaseResult.__dataclass_fields__})
    assert_same_line(longer)
    assert dump_line(longer).endswith(b',"extra":7}\n')
    wider = WiderEvaluatorResult(**{name: getattr(usual().evaluator_results[0], name) for name in EvaluatorResult.__dataclass_fields__})
    assert_same_line(usual(evaluator_results=[wider]))
    assert b',"criterion":null,"extra":"x"}],"error"' in dump_line(usual(evaluator_results=[wider]))
    assert_same_line(usual(evaluator_results=(usual().evaluator_results[0],)))
    assert_same_line(usual(evaluator_results=iter(usual().evaluator_results)))  # orjson cannot write an iterator


def test_a_nan_in_the_answer_is_written_as_python_writes_it_and_the_rest_as_orjson_does():
    line = dump_line(usual(output={"total": float("nan"), "tax": -_INF, "note": "null"}))
    assert b'"output":{"total": NaN, "tax": -Infinity, "note": "null"},"evaluator_results"' in line
    assert json.loads(line)["evaluator_results"][0]["details"]["fields"][1]["score"] == 0.97


def test_a_date_beside_a_nan_in_the_answer_no_longer_stops_the_line():
    """The plain implementation raised TypeError here (json cannot write a date); the line is written."""
    line = dump_line(usual(output={"when": date(2024, 1, 2), "x": float("nan")}))
    output = json.loads(line)["output"]
    assert output["when"] == "2024-01-02" and math.isnan(output["x"])
    assert json.loads(line)["evaluator_results"][0]["details"]["fields"][0]["status"] == "hit"


# --- the summary ----------------------------------------------------------------------------------

def figures(summary: Summary) -> str:
    return repr(summary.to_dict())  # repr: a NaN equals itself


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(results, max_size=12), st.sampled_from([1, 2, 3]), st.sampled_from([(), [("m1", None), ("m2", None)]]))
def test_the_summary_of_any_results_is_the_same_as_the_plain_counting_gave(sequence, repeat, cells):
    ours, reference = Summary(repeat, cells), ReferenceSummary(repeat, cells)
    for result in sequence:
        ours.add(result)
        reference.add(result)
    assert figures(ours) == figures(reference)


def test_the_slowest_cases_keep_ties_and_cells_as_before():
    ours, reference = Summary(), ReferenceSummary()
    for index, duration in enumerate([3.0, 1.0, 3.0, 2.0, 5.0, 3.0, 0.5, 3.0, 9.0, 3.0, float("nan"), 3.0]):
        result = usual(case_id=f"c{index % 7}", duration_ms=duration, target="m1" if index % 3 == 0 else None)
        ours.add(result)
        reference.add(result)
    assert ours.to_dict()["slowest_cases"] == reference.to_dict()["slowest_cases"]
    assert len(ours.to_dict()["slowest_cases"]) == SLOWEST_KEPT
    assert ours.to_dict()["fields"]["fields"]["name"] == {"scored": 12, "hits": 12, "skipped": 0, "accuracy": 1.0, "mean_score": 0.97}
