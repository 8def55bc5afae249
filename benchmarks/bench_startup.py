"""Start-up: how long the commands take before (and including) a one-case run.

    python benchmarks/bench_startup.py            # best of 7 per row
    python benchmarks/bench_startup.py --before <checkout>/   # also agenteval from another checkout, in turns

Each row is a fresh process timed from outside, best of N after one warm-up, with the bytecode
cache an installed package has: the best wall time, and the median CPU time (user + system, from
`wait4`: a machine shared with other work disturbs it far less). With `--before DIR` the agenteval
rows run again with DIR first on PYTHONPATH (a folder holding another version's `agenteval/`),
taking turns with this one. `python -X importtime -m agenteval run ...` shows where the time of a
row goes.
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of `argv`."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", type=Path, help="also run agenteval from this folder (PYTHONPATH), in turns")
    args = parser.parse_args()
    python = sys.executable
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}  # (as installed: bytecode cached)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "s.yaml").write_text(SUITE)
        rows = [
            ("bare interpreter (`python -c pass`)", [python, "-c", "pass"], False),
            ("`import pydantic`", [python, "-c", "import pydantic"], False),
            ("`import typer._adapters`", [python, "-c", "import typer._adapters"], False),
            ("`agenteval --help`", [python, "-m", "agenteval", "--help"], True),
            ("one-case field_accuracy run (`agenteval run s.yaml -o /dev/null -q`)",
             [python, "-m", "agenteval", "run", "s.yaml", "-o", "/dev/null", "-q"], True),
        ]
        sides = {"": env}
        if args.before is not None:
            sides["before: "] = {**env, "PYTHONPATH": str(args.before.resolve())}
        print(f"| what | best of {args.runs}, wall s | median CPU s |\n|---|---:|---:|")
        for name, argv, ours in rows:
            versions = sides if ours else {"": env}
            found: dict[str, list[tuple[float, float]]] = {label: [] for label in versions}
            for turn in range(args.runs + 1):  # (the first of each: a warm-up, bytecode and file caches)
                order = list(versions.items()) if turn % 2 == 0 else list(reversed(versions.items()))
                for label, side_env in order:
                    measured = timed(argv, folder, side_env)
                    if turn:
                        found[label].append(measured)
            for label, times in found.items():
                wall, cpu = min(t for t, _ in times), statistics.median(c for _, c in times)
                print(f"| {label}{name} | {wall:.3f} | {cpu:.3f} |")


if __name__ == "__main__":
    main()
