"""The pytest plugin against its floor: a suite of N recorded cases collected as tests
(`pytest --agenteval suite.yaml`) against N plain pytest tests making the same check (the floor:
what pytest itself costs per test), each in one process and under pytest-xdist (`-n 2`). One in
seven cases fails, so both sides also pay for reporting failures.

    python benchmarks/bench_pytest.py [--sizes 1000 4000] [--rounds 3] [--before CHECKOUT]

`--before` also runs the plugin sides with another checkout's agenteval (PYTHONPATH) in the same rounds.

Each round runs the four commands in turn; the figures are medians of the rounds' wall times
(pytest's own work is single-threaded per process, so CPU and wall move together).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAIN = '''import json
import pytest

CASES = [json.loads(line) for line in open("cases.jsonl")]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_case(case):
    assert case["output"] == case["expected"]
'''


def write(folder: Path, size: int) -> None:
    with (folder / "cases.jsonl").open("w") as cases:
        for n in range(size):
            cases.write(json.dumps({"id": f"c{n}", "expected": "yes", "output": "no" if n % 7 == 0 else "yes"}) + "\n")
    (folder / "suite.yaml").write_text("name: many\ncases: cases.jsonl\nevaluators: [{name: same, type: equals}]\n")
    (folder / "test_plain.py").write_text(PLAIN)
    (folder / "pytest.ini").write_text("[pytest]\n")


def timed(folder: Path, *args: str, code: Path | None = None) -> float:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
                          cwd=folder, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    assert done.returncode == 1 and " failed, " in done.stdout, done.stdout[-2000:]
    return elapsed


def measure(size: int, rounds: int, before: Path | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        write(folder, size)
        sides = {
            "plugin": ("--agenteval", "suite.yaml"), "floor": ("test_plain.py",),
            "plugin_n2": ("--agenteval", "suite.yaml", "-n", "2"), "floor_n2": ("test_plain.py", "-n", "2"),
        }
        if before is not None:
            sides |= {"before": sides["plugin"], "before_n2": sides["plugin_n2"]}
        times: dict[str, list[float]] = {side: [] for side in sides}
        for turn in range(rounds):
            order = list(sides) if turn % 2 == 0 else list(sides)[::-1]
            for side in order:
                times[side].append(timed(folder, *sides[side], code=before if side.startswith("before") else None))
        found = {side: statistics.median(values) for side, values in times.items()}
        return {"cases": size, **found, "ratio": found["plugin"] / found["floor"], "ratio_n2": found["plugin_n2"] / found["floor_n2"],
                **({"ratio_before": found["before"] / found["floor"], "ratio_before_n2": found["before_n2"] / found["floor_n2"]} if before else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="also run the plugin from this checkout (PYTHONPATH) in the same rounds")
    args = parser.parse_args()
    extra = " before: s / ratio | before, -n 2: s / ratio |" if args.before else ""
    print("| cases | plugin s | plain tests s | ratio | plugin, -n 2 s | plain tests, -n 2 s | ratio |" + extra)
    print("|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.before else ""))
    for size in args.sizes:
        found = measure(size, args.rounds, args.before)
        before = (f" {found['before']:.2f} / {found['ratio_before']:.2f} | {found['before_n2']:.2f} / {found['ratio_before_n2']:.2f} |"
                  if args.before else "")
        print(f"| {size:,} | {found['plugin']:.2f} | {found['floor']:.2f} | {found['ratio']:.2f} "
              f"| {found['plugin_n2']:.2f} | {found['floor_n2']:.2f} | {found['ratio_n2']:.2f} |" + before, flush=True)


if __name__ == "__main__":
    main()
