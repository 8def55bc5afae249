"""agenteval.monitor: a sampled share of a live function's calls evaluated in the background and
stored as runs; the application's calls are unaffected whatever the store or evaluators do."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from decimal import Decimal

import pytest

import agenteval
from conftest import run_cli


def positive_total(ctx):
    return ctx.output["total"] > 0


def _url(path) -> str:
    return f"sqlite:///{path}"


def test_sampled_calls_are_evaluated_and_stored_as_a_run_that_history_and_report_read(tmp_path):
    db = tmp_path / "monitoring.db"

    @agenteval.monitor([positive_total], sample=1.0, store=_url(db), name="extractor")
    def extract(document: str) -> dict:
        return {"total": Decimal(document)}

    answers = [extract(text) for text in ["1.50", "-2", "3", "4"]]
    assert answers[0] == {"total": Decimal("1.50")}  # the caller gets its own answer, untouched
    assert extract.monitor.flush(10)
    assert extract.monitor.close()
    stats = extract.monitor.stats
    assert {key: stats[key] for key in ("calls", "sampled", "dropped", "evaluated", "passed", "failed", "errored", "unsaved", "runs")} == {
        "calls": 4, "sampled": 4, "dropped": 0, "evaluated": 4, "passed": 3, "failed": 1, "errored": 0, "unsaved": 0, "runs": 1,
    }
    history = run_cli("history", "--store", _url(db), "--format", "json")
    assert history.returncode == 0, history.stderr
    runs = json.loads(history.stdout)
    runs = runs["runs"] if isinstance(runs, dict) else runs
    assert [(run["suite"], run["total"], run["passed"]) for run in runs] == [("extractor", 4, 3)]
    report = run_cli("report", "--store", _url(db), "latest", "--json")
    figures = json.loads(report.stdout)
    assert (figures["counts"], figures["pass_rate"]) == ({"total": 4, "passed": 3, "failed": 1, "errored": 0}, 0.75)


def test_only_a_sampled_share_is_evaluated(tmp_path):
    @agenteval.monitor([positive_total], sample=0.25, seed=7, name="share")
    def extract(value):
        return {"total": value}

    for value in range(1, 401):
        extract(value)
    extract.monitor.flush(10)
    stats = extract.monitor.stats
    assert stats["calls"] == 400
    assert 60 <= stats["sampled"] <= 140 and stats["evaluated"] == stats["sampled"] == stats["passed"]
    extract.monitor.close()

    @agenteval.monitor([positive_total], sample=0, name="none")
    def never(value):
        return {"total": value}

    never(1)
    assert never.monitor.stats["sampled"] == 0 and never.monitor.close()


def test_an_async_function_keeps_its_value_and_exceptions(tmp_path):
    @agenteval.monitor([positive_total], sample=1.0, name="async")
    async def extract(value):
        await asyncio.sleep(0)
        if value == 0:
            raise ValueError("empty document")
        return {"total": value}

    async def main():
        assert await extract(5) == {"total": 5}
        with pytest.raises(ValueError, match="empty document"):
            await extract(0)

    asyncio.run(main())
    assert asyncio.iscoroutinefunction(extract) and extract.__name__ == "extract"
    extract.monitor.flush(10)
    assert {k: extract.monitor.stats[k] for k in ("calls", "sampled", "evaluated", "passed")} == {"calls": 1, "sampled": 1, "evaluated": 1, "passed": 1}
    extract.monitor.close()


def test_a_reference_from_expected_is_scored(tmp_path):
    golden = {"a": {"total": 10.0}, "b": {"total": 5.0}}
    db = tmp_path / "m.db"

    @agenteval.monitor(
        [{"type": "field_accuracy", "fields": [{"path": "total", "match": "numeric_tolerance", "tolerance": 0.01}]}],
        sample=1.0, store=_url(db), expected=lambda document, **_: golden[document],
    )
    def extract(document, *, scale=1):
        return {"total": Decimal("10.00") * scale}

    extract("a")
    extract("b")
    extract("b", scale=Decimal("0.5"))
    extract.monitor.close()
    stats = extract.monitor.stats
    assert (stats["passed"], stats["failed"]) == (2, 1)
    figures = json.loads(run_cli("report", "--store", _url(db), "latest", "--json").stdout)
    assert figures["counts"]["total"] == 3 and figures["fields"]["field_accuracy"]["total"]["accuracy"] == pytest.approx(2 / 3)


def test_a_full_queue_drops_calls_and_counts_them_and_a_hanging_evaluator_never_holds_the_caller():
    release = threading.Event()

    def hangs(ctx):
        release.wait(20)
        return True

    @agenteval.monitor([agenteval.evaluator(hangs, timeout=30)], sample=1.0, queue_size=3, name="busy")
    def extract(value):
        return {"total": value}

    slowest = 0.0
    for value in range(50):
        started = time.perf_counter()
        assert extract(value) == {"total": value}
        slowest = max(slowest, time.perf_counter() - started)
    assert slowest < 0.05  # the hand-over only
    stats = extract.monitor.stats
    assert stats["calls"] == stats["sampled"] == 50
    assert 46 <= stats["dropped"] <= 47  # one being evaluated (once the worker took it), three queued
    release.set()
    assert extract.monitor.flush(10)
    assert extract.monitor.stats["evaluated"] == 50 - extract.monitor.stats["dropped"]
    extract.monitor.close()


def test_an_evaluator_past_its_timeout_or_raising_is_an_errored_case_not_the_callers(tmp_path):
    def hangs(ctx):
        time.sleep(30)

    def raises(ctx):
        raise RuntimeError("evaluator bug")

    @agenteval.monitor([agenteval.evaluator(hangs, timeout=0.3), raises], sample=1.0, name="faulty")
    def extract(value):
        return {"total": value}

    assert [extract(v) for v in (1, 2)] == [{"total": 1}, {"total": 2}]
    assert extract.monitor.flush(10)
    stats = extract.monitor.stats
    assert (stats["evaluated"], stats["errored"]) == (2, 2)
    extract.monitor.close()


def test_a_store_that_is_down_costs_the_caller_nothing_but_a_counter(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the database folder should be")

    @agenteval.monitor([positive_total], sample=1.0, store=_url(blocker / "m.db"), name="down")
    def extract(value):
        return {"total": value}

    assert [extract(v) for v in (1, 2, 3)] == [{"total": 1}, {"total": 2}, {"total": 3}]
    assert extract.monitor.flush(10)
    stats = extract.monitor.stats
    assert (stats["evaluated"], stats["passed"], stats["unsaved"]) == (3, 3, 3)
    assert stats["store_failures"] >= 1 and stats["last_problem"].startswith("cannot open the store")
    assert extract.monitor.close()


def test_an_unconvertible_answer_is_an_errored_case(tmp_path):
    class Opaque:
        pass

    @agenteval.monitor([positive_total], sample=1.0, name="opaque")
    def extract(value):
        return {"total": Opaque()}

    assert isinstance(extract(1)["total"], Opaque)
    extract.monitor.flush(10)
    stats = extract.monitor.stats
    assert stats["errored"] == 1 and "output.total: a " in stats["last_problem"]
    extract.monitor.close()


def test_a_new_run_each_period(tmp_path):
    db = tmp_path / "periods.db"

    @agenteval.monitor([positive_total], sample=1.0, store=_url(db), period=0.3, name="periodic")
    def extract(value):
        return {"total": value}

    extract(1)
    extract.monitor.flush(10)
    time.sleep(0.8)
    extract(2)
    extract(3)
    extract.monitor.close()
    runs = json.loads(run_cli("history", "--store", _url(db), "--format", "json").stdout)
    runs = runs["runs"] if isinstance(runs, dict) else runs
    totals = [run["total"] for run in runs]
    assert totals[0] == 1 and sum(totals) == 3 and len(totals) >= 2  # the first period's run holds the first call
    assert extract.monitor.stats["runs"] == len(totals)


def test_bad_options_are_refused_when_applied_not_when_called():
    with pytest.raises(ValueError, match="sample is the share of calls evaluated, from 0 to 1"):
        agenteval.monitor([positive_total], sample=1.5)(lambda x: x)
    with pytest.raises(ValueError, match="store is a URL"):
        agenteval.monitor([positive_total], store="results.jsonl")(lambda x: x)
    with pytest.raises(agenteval.SuiteInvalid):
        agenteval.monitor([{"type": "no_such_type"}])(lambda x: x)


def test_the_cli_never_imports_the_monitor():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import sys, agenteval.cli, agenteval.api; print('agenteval.monitoring' in sys.modules)"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.stdout.strip() == "False", done.stderr
