"""How far a one-pass run could go: the least a run of field_accuracy cases must do, without a run's objects.

    python benchmarks/bench_one_pass.py                 # 200,000 tiny cases and 20,000 invoices
    python benchmarks/bench_one_pass.py --sizes 50000

For each line of the JSONL it reads the record, checks that it is a plain case (its keys and id),
scores it with the suite's own field rows (`FieldAccuracy`'s row functions: the same values and
rows a run writes), writes the same ~850-byte line a run writes (the rows with both values, the
answer, the reference, the time it finished) and counts passes and per-field hits. No id index,
no second read, no case, evaluator or result objects, no summary beyond those counts: what a run
redesigned as one pass would still have to do. Printed beside `floor_loop.py` on the same file, in
CPU time per case.

A run that keeps its promise to check every line before the first case runs (each problem with
its line, a duplicate id with the line of its first use) reads the file once more before that
pass. "Validated first" adds agenteval's own validation pass (`load_suite`, what `agenteval
validate` does: read and parse each line, check it, index its id) to the one pass: the least a
run that keeps the promise would cost.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_floor import write_cases  # noqa: E402

PLAIN_KEYS = frozenset(("id", "input", "expected", "output", "tags", "metadata"))


def one_pass(suite: Path, cases: Path, results: Path) -> tuple[float, float]:
    """CPU seconds of agenteval's validation pass over `cases`, and of the one pass over them, writing `results`."""
    from agenteval.runner import now
    from agenteval.suite.loader import load_suite

    load_suite(suite)  # (first-use imports and the evaluators' set-up, outside the timing)
    started = time.process_time()
    loaded = load_suite(suite)
    validated = time.process_time() - started
    rows_of = loaded.suite.evaluators[0].__pydantic_private__["_rows"]
    limits = loaded.suite.limits
    fields: dict[str, list[float]] = {}
    total = passed = 0
    started = time.process_time()
    with cases.open("rb") as source, results.open("wb") as sink:
        batch: list[bytes] = []
        for raw in source:
            record = orjson.loads(raw)
            case_id = record.get("id")
            if type(case_id) is not str or not PLAIN_KEYS.issuperset(record):
                raise SystemExit(f"not a plain case: {raw[:80]!r}")
            output, expected = record.get("output"), record.get("expected")
            begun = time.perf_counter()
            rows, hits, misses, weighted, weights = [], [], [], 0.0, 0.0
            for row_of, path, weight in rows_of:
                row = row_of(output, expected, limits)
                rows.append(row)
                hit = row["status"] == "hit"
                weighted += row["score"] * weight
                weights += weight
                (hits if hit else misses).append(path)
                counts = fields.get(path)
                if counts is None:
                    counts = fields[path] = [0, 0, 0.0]
                counts[0] += 1
                counts[1] += hit
                counts[2] += row["score"]
            score = weighted / weights
            verdict = "pass" if not misses else "fail" if not hits else "partial"
            took = (time.perf_counter() - begun) * 1000
            batch.append(orjson.dumps({
                "run_id": "r", "suite": "s", "case_id": case_id, "score": score, "verdict": verdict, "output": output,
                "evaluator_results": [{
                    "name": "fields", "type": "field_accuracy", "score": score, "verdict": verdict, "hits": hits, "misses": misses,
                    "reasoning": f"{len(hits)}/{len(rows)} fields matched", "details": {"fields": rows}, "error": None,
                    "duration_ms": took, "criterion": None,
                }],
                "error": None, "duration_ms": took, "tags": [], "metadata": {}, "usage": None, "repetition": 0,
                "timestamp": now(), "input": None, "agent_id": None, "session_id": None,
                "expected": expected, "target": None, "prompt": None, "trace_id": None,
            }, option=orjson.OPT_APPEND_NEWLINE))
            if len(batch) >= 64:
                sink.write(b"".join(batch))
                batch.clear()
            total += 1
            passed += verdict == "pass"
        sink.write(b"".join(batch))
    assert total and passed <= total
    return validated, time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs=2, metavar=("TINY", "INVOICES"), default=[200_000, 20_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    random.seed(0)
    print("| cases | one pass, µs a case | validated first | floor, µs a case | ratio: one pass | validated first |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind, size in zip(("tiny", "invoices"), args.sizes):
            cases = write_cases(folder, kind, size)
            ours, first, floor = [], [], []
            for _ in range(args.rounds):
                validated, scored = one_pass(cases.with_suffix(".yaml"), cases, folder / "one.jsonl")
                ours.append(scored)
                first.append(validated + scored)
                done = subprocess.run([sys.executable, str(HERE / "floor_loop.py"), kind, str(cases), str(folder / "floor.jsonl")],
                                      capture_output=True, text=True, check=True)
                floor.append(json.loads(done.stdout)["loop_cpu"])
            best, both, least = (min(times) / size * 1e6 for times in (ours, first, floor))
            print(f"| {kind} x {size:,} | {best:.2f} | {both:.2f} | {least:.2f} | {best / least:.2f} | {both / least:.2f} |", flush=True)


if __name__ == "__main__":
    main()
