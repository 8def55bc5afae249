"""A Python function as the target (`task=`, `target: {type: python}`), Python objects as
evaluators, and the async API: hostile functions are each case's error, never the run's."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time

import pytest

import agenteval
from agenteval.evaluators.base import EvaluatorResult
from conftest import read_jsonl, run_cli, write

FIELD = [{"type": "field_accuracy", "name": "fields", "fields": [{"path": "n"}]}]


def _cases(count: int) -> list[dict]:
    return [{"id": f"c{i}", "input": {"n": i}, "expected": {"n": i}} for i in range(count)]


def echo(item):
    return {"n": item["n"]}


async def echo_later(item):
    await asyncio.sleep(0.01)
    return {"n": item["n"]}


# -- how the input meets the function's parameters ---------------------------------------------------------


def test_one_parameter_gets_the_input_whole_several_get_keywords_none_gets_nothing():
    def whole(doc):
        return {"n": doc["n"]}

    def keywords(n, scale=1):
        return {"n": n * scale}

    def nothing():
        return {"n": 0}

    assert [r.verdict for r in agenteval.evaluate(_cases(3), FIELD, task=whole)] == ["pass"] * 3
    assert [r.verdict for r in agenteval.evaluate(_cases(3), FIELD, task=keywords)] == ["pass"] * 3
    assert [(r.case_id, r.verdict) for r in agenteval.evaluate(_cases(2), FIELD, task=nothing, workers=1)] == [("c0", "pass"), ("c1", "fail")]


def test_the_task_gets_the_callers_own_input_objects():
    from decimal import Decimal

    from pydantic import BaseModel

    class Query(BaseModel):
        amount: Decimal

    seen = []

    def task(query):
        seen.append(type(query).__name__)
        return {"n": query.amount * 2}

    cases = [{"id": "a", "input": Query(amount=Decimal("1.25")), "expected": {"n": 2.5}}]
    results = list(agenteval.evaluate(cases, [{"type": "field_accuracy", "fields": [{"path": "n", "match": "numeric_tolerance"}]}], task=task))
    assert seen == ["Query"]
    assert (results[0].verdict, results[0].output, results[0].input) == ("pass", {"n": 2.5}, {"amount": 1.25})


# -- concurrency, latency ------------------------------------------------------------------------------------


def test_async_calls_overlap_up_to_max_concurrency():
    running, peak = [0], [0]

    async def task(item):
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        await asyncio.sleep(0.05)
        running[0] -= 1
        return {"n": item["n"]}

    started = time.perf_counter()
    run = agenteval.evaluate(_cases(40), FIELD, task=task, max_concurrency=8)
    verdicts = [result.verdict for result in run]
    elapsed = time.perf_counter() - started
    assert verdicts == ["pass"] * 40
    assert peak[0] == 8
    assert elapsed < 40 * 0.05 / 2  # overlapped (serial would take 2 s; 8 at a time about 0.25 s)
    assert run.summary["workers"] == 8


def test_sync_calls_overlap_up_to_max_concurrency():
    lock, running, peak = threading.Lock(), [0], [0]

    def task(item):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return {"n": item["n"]}

    assert [r.verdict for r in agenteval.evaluate(_cases(16), FIELD, task=task, max_concurrency=4)] == ["pass"] * 16
    assert peak[0] == 4


def test_latency_is_recorded_as_for_command_targets():
    async def task(item):
        await asyncio.sleep(0.03)
        return {"n": item["n"]}

    run = agenteval.evaluate(_cases(4), [*FIELD, {"type": "latency", "max_ms": 1000}], task=task)
    latencies = [result.usage["latency_ms"] for result in run]
    assert all(28 <= latency < 1000 for latency in latencies), latencies
    usage = run.summary["usage"]
    assert usage["target"]["requests"] == 4 and usage["latency_ms"]["max"] == max(latencies)


# -- hostile tasks: each is that case's error -------------------------------------------------------------------


def _by_case(run):
    return {result.case_id: result for result in run}


def test_a_task_that_hangs_is_that_cases_timeout_and_the_run_goes_on():
    def sync_task(item):
        if item["n"] == 1:
            time.sleep(30)
        return {"n": item["n"]}

    async def async_task(item):
        if item["n"] == 1:
            await asyncio.sleep(30)
        return {"n": item["n"]}

    for task, late in ((sync_task, "abandoned"), (async_task, "cancelled")):
        started = time.perf_counter()
        results = _by_case(agenteval.evaluate(_cases(3), FIELD, task=task, task_timeout=0.5))
        assert time.perf_counter() - started < 5
        assert [results[c].verdict for c in ("c0", "c1", "c2")] == ["pass", "error", "pass"]
        assert results["c1"].error.startswith(f"{__name__}:test_a_task_that_hangs_is_that_cases_timeout_and_the_run_goes_on.<locals>.")
        assert f"took longer than its timeout of 0.5 s; the call was {late}" in results["c1"].error
        assert results["c1"].usage is None  # no answer, no latency of one


def test_an_async_task_that_blocks_the_loop_is_given_up():
    async def blocking(item):
        time.sleep(3)  # a blocking call inside an async function holds the loop
        return {"n": item["n"]}

    started = time.perf_counter()
    results = list(agenteval.evaluate(_cases(1), FIELD, task=blocking, task_timeout=0.2, workers=1))
    assert time.perf_counter() - started < 2.5  # given up at the timeout, not when the blocked loop frees up
    assert results[0].verdict == "error"
    assert results[0].error.endswith(
        "blocking did not finish within its timeout of 0.2 s and the event loop did not answer "
        "(a blocking call inside an async function holds the loop)"
    )
    time.sleep(3)  # the loop is free again: later tests find it answering


def test_a_task_that_raises_is_that_cases_error_with_the_exception_and_its_last_frame():
    def task(item):
        if item["n"] == 1:
            raise ValueError(f"cannot read document {item['n']}")
        return {"n": item["n"]}

    async def atask(item):
        if item["n"] == 1:
            raise KeyError("vendor")
        return {"n": item["n"]}

    results = _by_case(agenteval.evaluate(_cases(3), FIELD, task=task))
    assert [results[c].verdict for c in ("c0", "c1", "c2")] == ["pass", "error", "pass"]
    error = results["c1"].error
    assert "raised ValueError: cannot read document 1" in error
    assert 'raise ValueError(f"cannot read document {item[\'n\']}")' in error and "in task" in error
    results = _by_case(agenteval.evaluate(_cases(3), FIELD, task=atask))
    assert "raised KeyError: 'vendor'" in results["c1"].error and "in atask" in results["c1"].error
    assert results["c2"].verdict == "pass"


def test_a_task_that_calls_sys_exit_is_that_cases_error():
    def task(item):
        sys.exit(3)

    async def atask(item):
        raise SystemExit("bye")

    for function in (task, atask):
        results = list(agenteval.evaluate(_cases(2), FIELD, task=function))
        assert [r.verdict for r in results] == ["error", "error"]
        assert all("called sys.exit(" in r.error for r in results)
    assert [r.verdict for r in agenteval.evaluate(_cases(2), FIELD, task=echo_later)] == ["pass", "pass"]  # the loop lives on


def test_a_task_returning_an_unconvertible_object_or_nan():
    class Opaque:
        pass

    def task(item):
        return {"n": [1, Opaque()]} if item["n"] == 0 else {"n": float("nan")}

    checks = [{"type": "field_accuracy", "fields": [{"path": "n", "match": "numeric_tolerance"}]}]
    results = _by_case(agenteval.evaluate(_cases(2), checks, task=task))
    assert results["c0"].verdict == "error"
    assert "returned an answer with no plain form: answer.n[1]: a " in results["c0"].error
    assert "Opaque has no plain form" in results["c0"].error
    assert results["c1"].verdict == "fail"  # NaN is an answer, scored as JSON NaN is: a miss
    assert results["c1"].evaluator_results[0].misses == ["n (not a finite number)"]


def test_task_options_are_checked():
    with pytest.raises(agenteval.RunError, match="max_concurrency must be a whole number of at least 1"):
        agenteval.evaluate(_cases(1), FIELD, task=echo, max_concurrency=0)
    with pytest.raises(agenteval.RunError, match="timeout must be a positive number of seconds"):
        agenteval.evaluate(_cases(1), FIELD, task=echo, task_timeout=float("nan"))
    with pytest.raises(agenteval.RunError, match="task must be a function"):
        agenteval.evaluate(_cases(1), FIELD, task="mod:fn")
    with pytest.raises(agenteval.RunError, match="go with task="):
        agenteval.evaluate(_cases(1), FIELD, max_concurrency=4)
    with pytest.raises(agenteval.RunError, match="a Python task runs in this process: it goes with executor='local'"):
        agenteval.run_suite({"name": "s", "evaluators": FIELD, "cases": _cases(1)}, task=echo, executor="ray")
    with pytest.raises(agenteval.RunError, match="task= and predictions= are two sources of answers"):
        agenteval.run_suite({"name": "s", "evaluators": FIELD, "cases": _cases(1)}, task=echo, predictions="p.jsonl")


def test_a_suite_given_as_data_takes_python_evaluators_and_a_task(tmp_path):
    def close_enough(ctx):
        return abs(ctx.output["n"] - ctx.expected["n"]) <= 1

    suite = {"name": "data", "evaluators": [close_enough], "cases": [{"id": "a", "input": {"n": 1}, "expected": {"n": 2}}]}
    run = agenteval.run_suite(suite, task=echo, output=tmp_path / "r.jsonl")
    assert [(r.verdict, r.evaluator_results[0].name) for r in run] == [("pass", "close_enough")]
    resolved = run.summary["resolved_suite"]
    assert resolved["evaluators"][0]["type"] == "callable"
    assert resolved["evaluators"][0]["function"].endswith("close_enough")
    assert resolved["target"]["function"] == f"{__name__}:echo"


# -- a python target named in a suite file ---------------------------------------------------------------------


def test_a_suite_file_names_a_python_target(tmp_path):
    write(tmp_path, "extractor.py", """
        import asyncio

        async def extract(document):
            await asyncio.sleep(0.001)
            if document == "broken":
                raise RuntimeError("unreadable scan")
            return {"n": len(document)}
    """)
    write(tmp_path, "suite.yaml", """
        name: py-target
        target: {type: python, function: "extractor:extract", max_concurrency: 3, timeout: 5}
        evaluators: [{type: field_accuracy, fields: [{path: n}]}]
        cases:
          - {id: a, input: abc, expected: {n: 3}}
          - {id: b, input: abcd, expected: {n: 3}}
          - {id: c, input: broken, expected: {n: 6}}
    """)
    done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl")
    assert done.returncode == 3, done.stderr
    rows = {row["case_id"]: row for row in read_jsonl(tmp_path / "r.jsonl")}
    assert [rows[c]["verdict"] for c in "abc"] == ["pass", "fail", "error"]
    assert "extractor:extract raised RuntimeError: unreadable scan" in rows["c"]["error"]
    assert rows["a"]["usage"]["latency_ms"] > 0
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["workers"] == 3
    assert summary["resolved_suite"]["target"] == {"type": "python", "function": "extractor:extract", "max_concurrency": 3, "timeout": 5.0}


def test_a_python_target_that_cannot_be_imported_errors_every_case(tmp_path):
    write(tmp_path, "suite.yaml", """
        name: py-missing
        target: {type: python, function: "nowhere_module:extract"}
        evaluators: [{type: field_accuracy, fields: [{path: n}]}]
        cases: [{id: a, input: x, expected: {n: 1}}, {id: b, input: y, expected: {n: 1}}]
    """)
    results = list(agenteval.run_suite(tmp_path / "suite.yaml"))
    assert [r.verdict for r in results] == ["error", "error"]
    assert results[0].error.startswith("python target: cannot import 'nowhere_module': no nowhere_module.py next to the suite")


def test_a_bad_python_target_config_is_a_suite_problem(tmp_path):
    write(tmp_path, "suite.yaml", """
        name: py-bad
        target: {type: python, function: "not a reference", max_concurrency: 0}
        evaluators: [{type: field_accuracy, fields: [{path: n}]}]
        cases: [{id: a, input: x, expected: {n: 1}}]
    """)
    with pytest.raises(agenteval.SuiteInvalid) as caught:
        agenteval.run_suite(tmp_path / "suite.yaml")
    keys = sorted(problem.key for problem in caught.value.problems)
    assert keys == [("target", "function"), ("target", "max_concurrency")]


# -- evaluators as Python objects ----------------------------------------------------------------------------------


def test_callable_and_object_evaluators_see_the_callers_own_objects():
    from decimal import Decimal

    from pydantic import BaseModel

    class Invoice(BaseModel):
        total: Decimal

    seen = {}

    def totals_match(ctx):
        seen["types"] = (type(ctx.input).__name__, type(ctx.expected).__name__, type(ctx.output).__name__, ctx.metadata["source"])
        return ctx.output.total == ctx.expected.total

    class Ratio:
        name = "ratio"

        async def evaluate(self, ctx):
            await asyncio.sleep(0)
            return {"score": float(min(ctx.output.total, ctx.expected.total) / max(ctx.output.total, ctx.expected.total)),
                    "details": {"difference": ctx.output.total - ctx.expected.total}}

    def full(ctx):
        return EvaluatorResult("whatever", "x", 0.5, "partial", hits=["a"], reasoning="half")

    cases = [{"id": "a", "input": Invoice(total=Decimal("1")), "expected": Invoice(total=Decimal("10.00")),
              "output": Invoice(total=Decimal("8.00")), "metadata": {"source": Decimal("2")}}]
    results = list(agenteval.evaluate(cases, [totals_match, Ratio(), agenteval.evaluator(full, name="full", weight=2)]))
    assert seen["types"] == ("Invoice", "Invoice", "Invoice", Decimal("2"))
    by_name = {e.name: e for e in results[0].evaluator_results}
    assert (by_name["totals_match"].score, by_name["totals_match"].verdict, by_name["totals_match"].type) == (0.0, "fail", "callable")
    assert (by_name["ratio"].score, by_name["ratio"].details) == (0.8, {"difference": -2.0})
    assert (by_name["full"].name, by_name["full"].score, by_name["full"].hits, by_name["full"].reasoning) == ("full", 0.5, ["a"], "half")
    assert results[0].score == pytest.approx((0 + 0.8 + 2 * 0.5) / 4)


def test_a_callable_evaluator_sees_a_python_targets_own_answer():
    from datetime import date

    def task(item):
        return {"when": date(2024, 1, item["n"] + 1)}

    def is_a_date(ctx):
        return isinstance(ctx.output["when"], date) and isinstance(ctx.input, dict)

    results = list(agenteval.evaluate(_cases(3), [is_a_date], task=task))
    assert sorted((r.case_id, r.verdict, r.output["when"]) for r in results) == [(f"c{i}", "pass", f"2024-01-0{i + 1}") for i in range(3)]


def test_hostile_evaluators_are_that_cases_error():
    def raises(ctx):
        raise RuntimeError("boom")

    def exits(ctx):
        sys.exit(2)

    def nan(ctx):
        return float("nan")

    def none(ctx):
        return None

    def too_big(ctx):
        return 1.5

    def hangs(ctx):
        time.sleep(30)

    def bad_dict(ctx):
        return {"score": 0.5, "verdict": "great"}

    checks = [raises, exits, nan, none, too_big, agenteval.evaluator(hangs, timeout=0.3), bad_dict, lambda ctx: True]
    started = time.perf_counter()
    results = list(agenteval.evaluate([{"id": "a", "expected": 1, "output": 1}], checks))
    assert time.perf_counter() - started < 5
    errors = {e.name: e.error for e in results[0].evaluator_results}
    assert results[0].verdict == "error"
    assert errors["raises"].startswith(f"{__name__}:test_hostile_evaluators_are_that_cases_error.<locals>.raises raised RuntimeError: boom")
    assert "sys.exit(2)" in errors["exits"]
    assert errors["nan"].endswith("nan result is invalid: score nan is outside [0, 1]")
    assert errors["none"].endswith("returned NoneType; expected a number, a bool or a dict with `score`")
    assert errors["too_big"].endswith("too_big result is invalid: score 1.5 is outside [0, 1]")
    assert "took longer than its timeout of 0.3 s" in errors["hangs"]
    assert errors["bad_dict"].endswith("bad_dict result is invalid: verdict: Input should be 'pass', 'partial', 'fail' or 'error'")
    assert errors["<lambda>"] is None


def test_something_that_is_not_an_evaluator_is_a_suite_problem():
    with pytest.raises(agenteval.SuiteInvalid):
        agenteval.evaluate([{"id": "a", "expected": 1, "output": 1}], [42])


# -- async -------------------------------------------------------------------------------------------------------


def test_aevaluate_does_not_block_the_event_loop():
    checked: list[float] = []

    def slow_check(ctx):
        checked.append(time.perf_counter())
        time.sleep(0.03)  # a blocking check: it runs on the run's thread, not the loop
        return True

    async def main():
        ticks = []

        async def ticker():
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.005)

        running = asyncio.create_task(ticker())
        run = await agenteval.aevaluate(_cases(10), [slow_check], task=echo_later, max_concurrency=2)
        running.cancel()
        return run, ticks

    run, ticks = asyncio.run(main())
    assert run.summary["counts"] == {"total": 10, "passed": 10, "failed": 0, "errored": 0}
    assert len(checked) == 10
    during = [tick for tick in ticks if checked[0] < tick < checked[-1]]
    assert len(during) >= 3  # the loop kept turning while the cases were scored


def test_async_for_yields_every_result_as_it_finishes(tmp_path):
    async def main():
        run = agenteval.evaluate(_cases(12), FIELD, task=echo_later, output=tmp_path / "r.jsonl")
        seen = [result.case_id async for result in run]
        return run, seen, await run.asummary()

    run, seen, summary = asyncio.run(main())
    assert sorted(seen) == sorted(f"c{i}" for i in range(12))
    assert summary["counts"]["passed"] == 12 and not run.interrupted
    assert len(read_jsonl(tmp_path / "r.jsonl")) == 12


def test_cancelling_the_awaiting_task_stops_the_run_and_keeps_every_finished_case(tmp_path):
    calls = []

    async def task(item):
        calls.append(item["n"])
        await asyncio.sleep(0.02 if item["n"] < 4 else 30)
        return {"n": item["n"]}

    async def main():
        run = agenteval.evaluate(_cases(30), FIELD, task=task, max_concurrency=4, output=tmp_path / "r.jsonl")
        seen = []

        async def consume():
            async for result in run:
                seen.append(result.case_id)

        consuming = asyncio.create_task(consume())
        await asyncio.sleep(0.6)
        started = time.perf_counter()
        consuming.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consuming
        return run, seen, time.perf_counter() - started

    run, seen, stopping = asyncio.run(main())
    assert stopping < 2
    assert run.interrupted
    rows = read_jsonl(tmp_path / "r.jsonl")
    assert sorted(row["case_id"] for row in rows) == sorted(seen) == ["c0", "c1", "c2", "c3"]
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert (summary["interrupted"], summary["counts"]["total"]) == (True, 4)
    assert len(calls) < 30  # the run stopped: the remaining cases never started


def test_a_python_evaluator_may_return_numpy_numbers_and_pipeline_types():
    import numpy as np
    from decimal import Decimal

    def numpy_score(ctx):
        return np.float64(0.25)

    def numpy_bool(ctx):
        return np.bool_(True)

    def rich_details(ctx):
        return {"score": Decimal("0.5"), "details": {"when": __import__("datetime").date(2024, 1, 2), "ids": {3, 1}}}

    results = list(agenteval.evaluate([{"id": "a", "expected": 1, "output": 1}], [numpy_score, numpy_bool, rich_details]))
    by_name = {e.name: e for e in results[0].evaluator_results}
    assert (by_name["numpy_score"].score, by_name["numpy_score"].verdict) == (0.25, "partial")
    assert (by_name["numpy_bool"].score, by_name["numpy_bool"].verdict) == (1.0, "pass")
    assert (by_name["rich_details"].score, by_name["rich_details"].details) == (0.5, {"when": "2024-01-02", "ids": [1, 3]})
    assert type(by_name["rich_details"].score) is float


def test_an_async_task_with_repeats_and_python_evaluators_seeing_its_own_answers():
    from datetime import date

    async def task(item):
        await asyncio.sleep(0.001)
        return {"when": date(2024, 1, item["n"] + 1)}

    def is_a_date(ctx):
        return isinstance(ctx.output["when"], date)

    for repeat in (1, 2):  # one run hands the cases to the loop ahead; with repeats, each case's worker does
        run = agenteval.run_suite({"name": "dates", "evaluators": [is_a_date], "cases": _cases(4)}, task=task, repeat=repeat)
        results = list(run)
        assert sorted((r.case_id, r.repetition, r.verdict) for r in results) == [
            (f"c{i}", rep, "pass") for i in range(4) for rep in range(repeat)
        ]
        assert all(r.usage["latency_ms"] >= 1 for r in results)
