"""Start-up: how long the commands take before (and including) a one-case run.

    python benchmarks/bench_startup.py            # best of 7 per row

Each row is a fresh process timed from outside, best of N after one warm-up, with the bytecode
cache an installed package has. `python -X importtime -m agenteval run ...` shows where the
time of a row goes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = """
name: tiny
evaluators:
  - {type: field_accuracy, fields: [{path: a}]}
cases:
  - {id: "1", expected: {a: 1}, output: {a: 1}}
"""


def best(argv: list[str], runs: int, cwd: Path) -> float:
    subprocess.run(argv, cwd=cwd, capture_output=True)  # warm-up: bytecode cache, file cache
    fastest = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, cwd=cwd, capture_output=True)
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "s.yaml").write_text(SUITE)
        rows = [
            ("bare interpreter (`python -c pass`)", [python, "-c", "pass"]),
            ("`import pydantic`", [python, "-c", "import pydantic"]),
            ("`import typer._adapters`", [python, "-c", "import typer._adapters"]),
            ("`agenteval --help`", [python, "-m", "agenteval", "--help"]),
            ("one-case field_accuracy run (`agenteval run s.yaml -o /dev/null -q`)",
             [python, "-m", "agenteval", "run", "s.yaml", "-o", "/dev/null", "-q"]),
        ]
        print(f"| what | best of {args.runs}, s |\n|---|---:|")
        for name, argv in rows:
            print(f"| {name} | {best(argv, args.runs, folder):.3f} |")


if __name__ == "__main__":
    main()
