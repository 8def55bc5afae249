"""field_accuracy speed and memory: per-field scoring, and whole `agenteval run`s.

    python benchmarks/bench_fields.py                 # N = 1,000 / 10,000 / 100,000 / 1,000,000
    python benchmarks/bench_fields.py --sizes 1000    # quicker

Part 1 times each match type on one field (microseconds). Part 2 writes N recorded cases of
eight fields (2 exact, 2 fuzzy, 2 numeric, 2 date) to a temp dir and runs the real CLI on them
in a child process, reporting cases/s and the child's peak resident memory (from wait4); the
1,000,000-case file is about 470 MB, so that row needs the disk space and a few minutes.
Part 3 is the floor to compare with: a bare Python loop making the same eight comparisons.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import orjson

FIELDS = [
    {"path": "invoice.number", "match": "exact"},
    {"path": "invoice.currency", "match": "exact"},
    {"path": "vendor.name", "match": "fuzzy", "algorithm": "levenshtein", "threshold": 0.85},
    {"path": "buyer.name", "match": "fuzzy", "algorithm": "jaro_winkler", "threshold": 0.85},
    {"path": "invoice.total", "match": "numeric_tolerance", "tolerance": 0.01},
    {"path": "invoice.tax", "match": "numeric_tolerance", "tolerance": 0.02, "relative": True},
    {"path": "invoice.date", "match": "date"},
    {"path": "invoice.due_date", "match": "date"},
]
NAMES = ["Acme Corp", "Globex Corporation", "Initech LLC", "Umbrella Ltd", "Stark Industries", "Wayne Enterprises"]


def make_case(i: int, rng: random.Random) -> dict:
    expected = {
        "invoice": {
            "number": f"INV-{i:06d}", "currency": rng.choice(["EUR", "USD", "GBP"]),
            "total": round(rng.uniform(10, 10000), 2), "tax": round(rng.uniform(1, 900), 2),
            "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "due_date": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        },
        "vendor": {"name": rng.choice(NAMES)},
        "buyer": {"name": rng.choice(NAMES)},
    }
    output = json.loads(json.dumps(expected))
    if rng.random() < 0.3:
        output["vendor"]["name"] = output["vendor"]["name"].upper() + "."
    if rng.random() < 0.2:
        output["invoice"]["total"] += 1.0
    if rng.random() < 0.2:
        y, m, d = output["invoice"]["date"].split("-")
        output["invoice"]["date"] = f"{m}/{d}/{y}"
    return {"id": f"case-{i}", "expected": expected, "output": output}


def micro() -> None:
    from agenteval.evaluators.fields import FieldSpec, score_field

    rng = random.Random(1)
    case = make_case(1, rng)
    print("| match type | µs per field |")
    print("|---|---:|")
    for field in FIELDS:
        spec = FieldSpec.model_validate(field).compile()
        number = 50_000
        seconds = timeit.timeit(lambda: score_field(spec, case["output"], case["expected"]), number=number)
        print(f"| {field['match']} ({field.get('algorithm', field['path'])}) | {seconds / number * 1e6:.2f} |")


def bare_loop(cases: list[dict]) -> float:
    """The floor: the same eight comparisons with no framework around them."""
    from rapidfuzz.distance import JaroWinkler, Levenshtein

    started = time.perf_counter()
    for case in cases:
        out, exp = case["output"], case["expected"]
        oi, ei = out["invoice"], exp["invoice"]
        _ = oi["number"] == ei["number"], oi["currency"] == ei["currency"]
        _ = Levenshtein.normalized_similarity(out["vendor"]["name"].lower(), exp["vendor"]["name"].lower()) >= 0.85
        _ = JaroWinkler.normalized_similarity(out["buyer"]["name"].lower(), exp["buyer"]["name"].lower()) >= 0.85
        _ = abs(oi["total"] - ei["total"]) <= 0.01, abs(oi["tax"] - ei["tax"]) / abs(ei["tax"]) <= 0.02
        _ = oi["date"] == ei["date"], oi["due_date"] == ei["due_date"]
    return time.perf_counter() - started


def end_to_end(size: int, folder: Path) -> tuple[float, float, float]:
    """(seconds, cases per second, peak RSS in MB) of `agenteval run` on `size` cases."""
    rng = random.Random(size)
    cases = folder / f"cases-{size}.jsonl"
    with cases.open("wb") as handle:
        for i in range(size):
            handle.write(orjson.dumps(make_case(i, rng)) + b"\n")
    suite = folder / f"suite-{size}.yaml"
    suite.write_text(json.dumps({
        "name": f"bench-{size}",
        "evaluators": [{"name": "header", "type": "field_accuracy", "fields": FIELDS}],
        "cases": cases.name,
    }))
    out = folder / f"results-{size}.jsonl"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(out), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"run failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    lines = sum(1 for _ in out.open("rb"))
    assert lines == size, (lines, size)
    for leftover in (cases, out, out.with_name(out.stem + ".summary.json")):
        leftover.unlink(missing_ok=True)
    return seconds, size / seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    args = parser.parse_args()
    print("## Per-field scoring\n")
    micro()
    print("\n## `agenteval run`, recorded cases x 8 fields\n")
    print("| cases | wall s | cases/s | ms per case | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            seconds, rate, rss = end_to_end(size, Path(tmp))
            print(f"| {size:,} | {seconds:.2f} | {rate:,.0f} | {1000 / rate:.3f} | {rss:.0f} |")
    rng = random.Random(7)
    cases = [make_case(i, rng) for i in range(10_000)]
    floor = bare_loop(cases)
    print(f"\nFloor: a bare loop making the same 8 comparisons: {floor / len(cases) * 1000:.4f} ms per case.")


if __name__ == "__main__":
    main()
