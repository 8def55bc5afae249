"""Paired statistics between cells: the bootstrap at 1,000 and 100,000 cases, against its floor.

    python benchmarks/bench_statistics.py                    # n = 1,000 and 100,000
    python benchmarks/bench_statistics.py --sizes 1000       # quicker

Each row times, on fixed data (two cells: pass/fail and real-valued scores in [0, 1] per case),
the best of --rounds calls (one fewer above 10,000 cases):
- `paired_bootstrap(a, b)`: 10,000 resamples, the interval of one figure: of the scores (every
  difference distinct: cases drawn by index), and of pass/fail (three distinct differences:
  resamples drawn as counts of each);
- `compare_cells(...)`: a whole comparison (both intervals, McNemar, the sentence), what the
  summary computes for each pair of cells;
- the floor: a bare numpy loop, one `rng.integers(0, n, size=n)` draw and one mean per resample,
  then `np.percentile`: the same arithmetic with nothing around it.
Peak memory is numpy's allocations during one call, as tracemalloc sees them. Prints Markdown.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from agenteval.statistics import RESAMPLES, SEED, compare_cells, mcnemar_exact, paired_bootstrap
from agenteval.tries import pass_at_k


def floor(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The percentile bootstrap as one would write it in a notebook."""
    differences = np.sort(b - a)  # sorted, as agenteval resamples them: the same resamples, the same interval
    n = len(differences)
    rng = np.random.default_rng(SEED)
    means = np.empty(RESAMPLES)
    for r in range(RESAMPLES):
        means[r] = differences[rng.integers(0, n, size=n)].mean()
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def timed(call, rounds: int, memory: bool = True) -> tuple[float, float, float]:
    """Best wall and CPU seconds over `rounds` (CPU time is steadier on a shared machine), and the
    peak MB numpy allocated in one call."""
    wall = cpu = float("inf")
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, time.process_time() - start_cpu)
    if not memory:
        return wall, cpu, 0.0
    tracemalloc.start()
    call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return wall, cpu, peak / 1e6


def data(n: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(42)
    passed_a = (rng.random(n) < 0.7).astype(float)
    passed_b = (rng.random(n) < 0.75).astype(float)
    scores_a = np.clip(passed_a * 0.6 + rng.random(n) * 0.4, 0, 1)
    scores_b = np.clip(passed_b * 0.6 + rng.random(n) * 0.4, 0, 1)
    return passed_a, passed_b, scores_a, scores_b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("| cases | what | wall ms | CPU ms | peak MB (numpy) |\n|---:|---|---:|---:|---:|")
    for n in args.sizes:
        passed_a, passed_b, scores_a, scores_b = data(n)
        rounds = args.rounds if n <= 10_000 else max(1, args.rounds - 1)
        ours = paired_bootstrap(scores_a, scores_b)
        expected = floor(scores_a, scores_b)  # the same resamples, so the same interval (to rounding)
        assert abs(expected[0] - ours.low) < 1e-12 and abs(expected[1] - ours.high) < 1e-12, (expected, ours)
        rows = [
            ("paired_bootstrap, scores (by index)", lambda: paired_bootstrap(scores_a, scores_b)),
            ("paired_bootstrap, pass/fail (by counts)", lambda: paired_bootstrap(passed_a, passed_b)),
            ("compare_cells (both, McNemar, the sentence)", lambda: compare_cells("a", "b", passed_a, passed_b, scores_a, scores_b, repeated=False)),
            ("floor: bare numpy loop, scores", lambda: floor(scores_a, scores_b)),
        ]
        for label, call in rows:
            wall, cpu, peak = timed(call, rounds)
            print(f"| {n:,} | {label} | {wall * 1000:,.0f} | {cpu * 1000:,.0f} | {peak:.1f} |")
    for a_only, b_only in ((40, 60), (4_990, 5_010), (400_000, 401_000)):
        wall, cpu, _ = timed(lambda: mcnemar_exact(a_only, b_only), 5, memory=False)
        print(f"| {a_only + b_only:,} discordant | mcnemar_exact | {wall * 1000:.3f} | {cpu * 1000:.3f} | - |")
    wall, cpu, _ = timed(lambda: [pass_at_k(10, c, k) for c in range(11) for k in range(1, 11)], 5, memory=False)
    print(f"| 10 tries | pass_at_k, all 110 (c, k) | {wall * 1000:.3f} | {cpu * 1000:.3f} | - |")


if __name__ == "__main__":
    main()
