"""Local vs `--executor ray`: the speed-up on a slow judge, and what Ray adds per case.

    python benchmarks/bench_ray.py            # needs the ray extra: pip install -e ".[ray]"

Part 1: a `protocol: jsonl` judge that sleeps 20 ms per case, 2,000 cases: locally with one
worker, then on a local Ray instance with this machine's cores (one thread per task, then the
automatic workers per task). Part 2: 20,000 recorded cases of a microsecond-scale field check,
locally and on Ray at several batch sizes: the difference per case is Ray's overhead (start-up
of the local instance included, and reported apart).
Every run is the real CLI in a child process, timed from outside.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JUDGE = """
import time
from agenteval.judge import run_judge

def judge(payload):
    time.sleep(0.02)
    return 1.0 if payload["candidate_answer"] == payload["reference_answer"] else 0.0

if __name__ == "__main__":
    run_judge(judge)
"""


def _run(folder: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", "suite.yaml", "-o", "r.jsonl", "-q", *args],
                          cwd=folder, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    (folder / "r.jsonl").unlink()
    (folder / "r.summary.json").unlink()
    return elapsed


def _cases(folder: Path, count: int) -> None:
    with (folder / "cases.jsonl").open("w") as handle:
        for i in range(count):
            handle.write(json.dumps({"id": f"c{i}", "expected": {"a": i, "b": f"name {i}"}, "output": {"a": i, "b": f"name {i}"}}) + "\n")


def _ray_start_up() -> float:
    code = ("import os, time; os.environ['RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER'] = '0'; import ray; s = time.perf_counter(); "
            "ray.init(include_dashboard=False, log_to_driver=False, logging_level='ERROR'); "
            "ray.get(ray.remote(lambda: 1).remote()); print(time.perf_counter() - s); ray.shutdown()")
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "judge.py").write_text(JUDGE)
        (folder / "suite.yaml").write_text(
            "name: slow-judge\nevaluators:\n  - {type: code_judge, command: [python, judge.py], protocol: jsonl}\ncases: cases.jsonl\n"
        )
        _cases(folder, 2000)
        start_up = _ray_start_up()
        local = _run(folder, "--workers", "1")
        ray_one = _run(folder, "--executor", "ray", "--workers", "1", "--batch-size", "50")
        ray_auto = _run(folder, "--executor", "ray", "--batch-size", "50")
        print("## 2,000 cases, judge sleeping 20 ms per case")
        print(f"Ray local instance start-up + first task: {start_up:.2f} s")
        print("| run | wall s | speed-up |\n|---|---:|---:|")
        print(f"| local, --workers 1 | {local:.1f} | 1.0x |")
        print(f"| ray, 1 thread per task | {ray_one:.1f} | {local / ray_one:.1f}x |")
        print(f"| ray, automatic workers per task | {ray_auto:.1f} | {local / ray_auto:.1f}x |")

        (folder / "suite.yaml").write_text(
            "name: fast\nevaluators:\n  - {type: field_accuracy, fields: [{path: a}, {path: b, match: fuzzy}]}\ncases: cases.jsonl\n"
        )
        count = 20000
        _cases(folder, count)
        local = _run(folder)
        print(f"\n## {count:,} cases, two field checks (microseconds each)")
        print("| run | wall s | overhead per case vs local, ms (after start-up) |\n|---|---:|---:|")
        print(f"| local | {local:.2f} | |")
        for batch in (16, 256, 4096):
            wall = _run(folder, "--executor", "ray", "--batch-size", str(batch))
            print(f"| ray, batch {batch} | {wall:.2f} | {(wall - local - start_up) / count * 1000:.3f} |")


if __name__ == "__main__":
    main()
