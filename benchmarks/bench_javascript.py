"""The `javascript` evaluator: what one inline check costs per case, and what it adds to a run.

    python benchmarks/bench_javascript.py              # 20,000 calls; two runs of 20,000 cases
    python benchmarks/bench_javascript.py --scale 0.1  # quicker

1. Per call: the same promptfoo-style check (`output.includes(...) && context.vars.n > 0`) through
   the evaluator's `evaluate`, as the runner calls it, after a warm-up; best of three rounds.
2. Per run: `agenteval run` of a suite with a `contains` check alone, then with the javascript
   check beside it, same cases, each in its own process, best of three; the ratio is the cost of
   adding the check to a run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import TypeAdapter

from agenteval.evaluators import EvalContext, EvaluatorSpec

CODE = "output.includes('refund') && context.vars.n >= 0"


def per_call(calls: int) -> float:
    evaluator = TypeAdapter(EvaluatorSpec).validate_python({"type": "javascript", "code": CODE})
    contexts = [EvalContext(f"c{i}", {"n": i}, None, f"your refund {i} is on its way", {}, Path.cwd()) for i in range(calls)]
    for ctx in contexts[:500]:
        assert evaluator.evaluate(ctx).verdict == "pass"
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for ctx in contexts:
            evaluator.evaluate(ctx)
        best = min(best, time.perf_counter() - started)
    return best / calls * 1e6


def run_seconds(suite: Path, output: Path) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(output), "-q"], capture_output=True)
        best = min(best, time.perf_counter() - started)
        assert done.returncode == 0, done.stderr
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    calls = max(1000, int(20_000 * args.scale))
    print(f"per call, after warm-up: {per_call(calls):.1f} µs ({calls:,} calls, best of 3)")
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "cases.jsonl").write_text("".join(
            json.dumps({"id": f"c{i}", "input": {"n": i}, "output": f"your refund {i} is on its way"}) + "\n" for i in range(calls)))
        plain = {"name": "bench", "evaluators": [{"type": "contains", "reference": "refund"}], "cases": "cases.jsonl"}
        with_js = {**plain, "evaluators": [*plain["evaluators"], {"type": "javascript", "code": CODE}]}
        (base / "plain.yaml").write_text(json.dumps(plain))
        (base / "js.yaml").write_text(json.dumps(with_js))
        without = run_seconds(base / "plain.yaml", base / "a.jsonl")
        with_check = run_seconds(base / "js.yaml", base / "b.jsonl")
    print(f"agenteval run, {calls:,} cases: contains alone {without:.2f} s, with the javascript check {with_check:.2f} s "
          f"({with_check / without:.2f}x)")


if __name__ == "__main__":
    main()
