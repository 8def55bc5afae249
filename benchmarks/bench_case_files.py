"""Cases files of every streamed format: `python benchmarks/bench_case_files.py [--sizes N ...]`.

The same N recorded cases written as JSONL and as CSV; for each, `agenteval validate` and
`agenteval run` in a child process, timed from outside, with the child's peak resident memory
(from wait4). A CSV file is read row by row like JSONL, so both should stay flat in memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _write(folder: Path, size: int) -> None:
    with (folder / "cases.csv").open("w") as csv_file, (folder / "cases.jsonl").open("w") as jsonl_file:
        csv_file.write("id,input.q,output\n")
        for i in range(size):
            csv_file.write(f"c{i},q{i},x\n")
            jsonl_file.write(json.dumps({"id": f"c{i}", "input": {"q": f"q{i}"}, "output": "x"}) + "\n")
    for kind in ("csv", "jsonl"):
        (folder / f"{kind}.yaml").write_text(f"name: big\nevaluators: [{{type: contains, reference: x}}]\ncases: cases.{kind}\n")


def _measure(folder: Path, *args: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one `agenteval ARGS` in a child process."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "agenteval", *args], cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"agenteval {' '.join(args)} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    sizes = parser.parse_args().sizes
    print("| cases | format | validate s | validate peak RSS MB | run s | run peak RSS MB |")
    print("|---:|---|---:|---:|---:|---:|")
    for size in sizes:
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            _write(folder, size)
            for kind in ("jsonl", "csv"):
                validate = _measure(folder, "validate", f"{kind}.yaml")
                run = _measure(folder, "run", f"{kind}.yaml", "-q", "-o", str(folder / "r.jsonl"))
                (folder / "r.jsonl").unlink()
                print(f"| {size:,} | {kind} | {validate[0]:.1f} | {validate[1]:.0f} | {run[0]:.1f} | {run[1]:.0f} |", flush=True)


if __name__ == "__main__":
    main()
