"""What reading a JSONL cases file costs a run, per line: `python benchmarks/bench_loading.py`.

    python benchmarks/bench_loading.py                    # tiny 200,000 and invoices 100,000, 5 rounds
    python benchmarks/bench_loading.py --before ../main   # also an older checkout, in the same rounds

- validate: `agenteval validate` in a child process on N cases minus the same on one case (start-up),
  over N, in CPU time (user + system from `wait4`).
- re-read: the run's second read of the validated file (`LoadedSuite.iter_cases()`: each line checked
  against its fingerprint, parsed, its case built), timed in a child with `time.process_time()`.
- floor: a bare loop reading the same file line by line with orjson, in the same rounds.

The same files as benchmarks/bench_floor.py (tiny: 2 fields; invoices: 8). Medians of the rounds,
each side taking its turn in each round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_floor import timed, write_cases  # noqa: E402

REREAD = """
import sys, time
from agenteval.suite.loader import load_suite
loaded = load_suite(sys.argv[1])
started = time.process_time()
count = sum(1 for _ in loaded.iter_cases())
print((time.process_time() - started) / count * 1e6)
"""
FLOOR = """
import sys, time, orjson
started = time.process_time()
with open(sys.argv[1], "rb") as handle:
    count = sum(1 for line in handle if orjson.loads(line) is not None)
print((time.process_time() - started) / count * 1e6)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", type=int, default=200_000)
    parser.add_argument("--invoices", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, help="also run agenteval from this checkout (PYTHONPATH) in the same rounds")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-loading-"))
    files = {"tiny": (args.tiny, write_cases(folder, "tiny", args.tiny)), "invoices": (args.invoices, write_cases(folder, "invoices", args.invoices))}
    one = write_cases(folder, "tiny", 1).with_suffix(".yaml")
    trees = {"agenteval": None} | ({"before": {**os.environ, "PYTHONPATH": str(args.before.resolve())}} if args.before else {})
    found: dict[tuple[str, str, str], list[float]] = {}
    for turn in range(args.rounds):
        names = list(trees)
        for tree in names[turn % len(names):] + names[: turn % len(names)]:
            env = trees[tree]
            start = timed([sys.executable, "-m", "agenteval", "validate", str(one)], env)[1]
            for kind, (size, cases) in files.items():
                validate = timed([sys.executable, "-m", "agenteval", "validate", str(cases.with_suffix(".yaml"))], env)[1]
                found.setdefault((tree, kind, "validate"), []).append((validate - start) / size * 1e6)
                reread = timed([sys.executable, "-c", REREAD, str(cases.with_suffix(".yaml"))], env)[3]
                found.setdefault((tree, kind, "re-read"), []).append(float(reread))
        for kind, (_, cases) in files.items():
            found.setdefault(("floor", kind, "read"), []).append(float(timed([sys.executable, "-c", FLOOR, str(cases)])[3]))
    print(f"load average {os.getloadavg()[0]:.1f}; CPU µs per line, medians of {args.rounds} rounds\n")
    print("| file | lines | floor: read + orjson.loads | " + " | ".join(f"{tree}: validate | {tree}: re-read" for tree in trees) + " |")
    print("|---|---:|---:|" + "---:|---:|" * len(trees))
    for kind, (size, _) in files.items():
        cells = [f"{statistics.median(found[tree, kind, what]):.2f}" for tree in trees for what in ("validate", "re-read")]
        print(f"| {kind} | {size:,} | {statistics.median(found['floor', kind, 'read']):.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
