"""The Python API with a pipeline's own objects: a function as the target, pydantic answers, and
the same task side by side with pydantic-evals.

    python benchmarks/bench_python_api.py                 # 2,000 cases, best of 3 rounds
    python benchmarks/bench_python_api.py --cases 500     # quicker

1. A python target: an async task that awaits 5 ms, at max_concurrency 32, over the cases; the
   ideal is ceil(cases / 32) x 5 ms (every slot always busy, scoring free).
2. `evaluate()` with 8 field checks on pydantic models (nested, Decimal amounts, a date) against
   the same checks on the plain dicts they stand for: the cost of converting at the boundary.
3. The task of 1 with the checks of 2 (a 5 ms async extractor returning a pydantic model, 8 field
   comparisons), through agenteval and through pydantic-evals' `Dataset.evaluate` (8 evaluators
   each comparing one field). pydantic-evals is a dev-only dependency of this script
   (`pip install pydantic-evals`); without it that row is skipped.
4. One answer a call, as a service scoring each answer as it comes: `evaluate()` of one case (a
   plain dict) with the checks of 2, read to its summary, `--calls` times; CPU time a call.

Each figure of 1-3 is wall time of the whole run, best of the rounds; every run's verdicts are checked.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from datetime import date
from decimal import Decimal

from pydantic import BaseModel

import agenteval

SLEEP_S = 0.005
CONCURRENCY = 32


class Vendor(BaseModel):
    name: str
    country: str


class Invoice(BaseModel):
    number: str
    issued: date
    currency: str
    vendor: Vendor
    subtotal: Decimal
    tax: Decimal
    total: Decimal
    po_number: str | None = None


FIELDS = [
    {"path": "number"},
    {"path": "issued", "match": "date"},
    {"path": "currency"},
    {"path": "vendor.name"},
    {"path": "vendor.country"},
    {"path": "subtotal", "match": "numeric_tolerance", "tolerance": 0.005},
    {"path": "tax", "match": "numeric_tolerance", "tolerance": 0.005},
    {"path": "total", "match": "numeric_tolerance", "tolerance": 0.005},
]
CHECKS = [{"type": "field_accuracy", "name": "fields", "fields": FIELDS}]


def invoice(i: int) -> Invoice:
    return Invoice(
        number=f"INV-{i:05d}", issued=date(2024, 1 + i % 12, 1 + i % 28), currency="EUR",
        vendor=Vendor(name=f"Vendor {i % 97}", country="DE"),
        subtotal=Decimal(f"{100 + i}.50"), tax=Decimal(f"{19 + i % 7}.10"), total=Decimal(f"{119 + i + i % 7}.60"),
    )


def plain(model: Invoice) -> dict:
    return agenteval.to_plain(model) | {}  # the dict the model stands for (Decimals as numbers)


def best(rounds: int, run) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


# -- 1. a python target ------------------------------------------------------------------------------------------


async def extract(item: dict) -> Invoice:
    await asyncio.sleep(SLEEP_S)
    return invoice(item["n"])


def python_target(count: int, rounds: int) -> tuple[float, float, float]:
    """(the whole evaluate() call, the run alone: cases iterated to the summary, the ideal)."""
    cases = [{"id": f"c{i}", "input": {"n": i}, "expected": invoice(i)} for i in range(count)]
    runs: list[float] = []

    def run() -> None:
        prepared = agenteval.evaluate(cases, CHECKS, task=extract, max_concurrency=CONCURRENCY)  # validates the cases
        started = time.perf_counter()
        summary = prepared.summary
        runs.append(time.perf_counter() - started)
        assert summary["counts"]["passed"] == count, summary["counts"]

    ideal = math.ceil(count / CONCURRENCY) * SLEEP_S
    return best(rounds, run), min(runs), ideal


async def asyncio_floor(count: int) -> float:
    """The same task in bare asyncio (a semaphore, gather, no scoring): what this machine gives."""
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> Invoice:
        async with slots:
            return await extract({"n": i})

    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(count)))
    return time.perf_counter() - started


# -- 2. pydantic models against plain dicts ---------------------------------------------------------------------------


def models_vs_dicts(count: int, rounds: int) -> tuple[float, float]:
    models = [{"id": f"c{i}", "expected": invoice(i), "output": invoice(i)} for i in range(count)]
    dicts = [{"id": case["id"], "expected": plain(case["expected"]), "output": plain(case["output"])} for case in models]

    def run(cases) -> None:
        summary = agenteval.evaluate(cases, CHECKS).summary
        assert summary["counts"]["passed"] == count, summary["counts"]

    return best(rounds, lambda: run(models)), best(rounds, lambda: run(dicts))


# -- 4. one answer a call ------------------------------------------------------------------------------------------------


def per_call(calls: int, rounds: int) -> float:
    """CPU seconds of one `evaluate()` of one case, read to its summary (best of the rounds)."""
    case = [{"id": "c1", "expected": plain(invoice(1)), "output": plain(invoice(1))}]
    assert agenteval.evaluate(case, CHECKS).summary["counts"]["passed"] == 1  # (first-use imports, outside the timing)
    times = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(calls):
            agenteval.evaluate(case, CHECKS).summary
        times.append((time.process_time() - started) / calls)
    return min(times)


# -- 3. side by side with pydantic-evals ---------------------------------------------------------------------------------


def pydantic_evals_run(count: int, rounds: int) -> float | None:
    try:
        from pydantic_evals import Case, Dataset
        from pydantic_evals.evaluators import Evaluator, EvaluatorContext
    except ImportError:
        return None

    from dataclasses import dataclass

    def getter(path: str):
        parts = path.split(".")

        def get(value):
            for part in parts:
                value = getattr(value, part)
            return value

        return get

    @dataclass
    class FieldEquals(Evaluator):
        path: str

        def evaluate(self, ctx: EvaluatorContext) -> bool:
            get = getter(self.path)
            return get(ctx.output) == get(ctx.expected_output)

        def get_default_evaluation_name(self) -> str:
            return self.path

    dataset = Dataset(
        name="bench",
        cases=[Case(name=f"c{i}", inputs={"n": i}, expected_output=invoice(i)) for i in range(count)],
        evaluators=[FieldEquals(field["path"]) for field in FIELDS],
    )

    def run() -> None:
        report = dataset.evaluate_sync(extract, max_concurrency=CONCURRENCY, progress=False)
        assert len(report.cases) == count
        assert all(all(result.value for result in case.assertions.values()) for case in report.cases)

    return best(rounds, run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000, help="4: evaluate() calls of one case a round")
    options = parser.parse_args()
    count, rounds = options.cases, options.rounds

    wall, running, ideal = python_target(count, rounds)
    floor = min(asyncio.run(asyncio_floor(count)) for _ in range(rounds))
    print(f"python target, async {SLEEP_S * 1000:g} ms task, max_concurrency {CONCURRENCY}, {count} cases + 8 field checks")
    print(f"  run {running:.3f} s (evaluate() with validating the cases: {wall:.3f} s); ideal {ideal:.3f} s; "
          f"bare asyncio {floor:.3f} s")
    print(f"  run / ideal {running / ideal:.2f}x; run / bare asyncio {running / floor:.2f}x; evaluate() / ideal {wall / ideal:.2f}x")

    models, dicts = models_vs_dicts(count, rounds)
    print(f"evaluate(), 8 field checks, {count} cases")
    print(f"  pydantic models {models:.3f} s, plain dicts {dicts:.3f} s: {models / dicts:.2f}x")
    print(f"  per case: {models / count * 1e6:.0f} µs and {dicts / count * 1e6:.0f} µs")

    theirs = pydantic_evals_run(count, rounds)
    if theirs is None:
        print("pydantic-evals: not installed (pip install pydantic-evals), skipped")
    else:
        print(f"the task of 1 with 8 field checks, {count} cases, max_concurrency {CONCURRENCY}")
        print(f"  agenteval.evaluate {wall:.3f} s, pydantic-evals Dataset.evaluate {theirs:.3f} s: pydantic-evals takes {theirs / wall:.2f}x agenteval's time")

    print(f"evaluate() of one case, 8 field checks, read to its summary: {per_call(options.calls, rounds) * 1e6:.0f} µs of CPU a call")


if __name__ == "__main__":
    main()
