"""One judge function three ways, per case: `type: python`, code_judge (one process per case) and
code_judge `protocol: jsonl` (one long-lived process).

    python benchmarks/bench_python_evaluator.py             # 200 / 2,000 / 20,000 cases
    python benchmarks/bench_python_evaluator.py --scale 0.1 # quicker

The same word-overlap judge (the README's example) scores the same cases through each evaluator's
`evaluate`, as the runner calls it with one worker; the script asserts that all three give the
same scores, so it times right answers. Wall time per case, best of three rounds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from pydantic import TypeAdapter

from agenteval.evaluators import EvalContext, EvaluatorSpec
from agenteval.process import Processes

JUDGE = textwrap.dedent("""
    from agenteval.judge import run_judge

    def judge(payload):
        words = payload["config"].get("words", [])
        text = str(payload["candidate_answer"]).lower()
        found = [w for w in words if w.lower() in text]
        return {"score": len(found) / len(words) if words else 1.0,
                "hits": found, "misses": [w for w in words if w not in found]}

    if __name__ == "__main__":
        run_judge(judge)
""")
WORDS = ["total", "due", "vendor", "iban"]


def contexts(count: int, folder: Path, processes: Processes) -> list[EvalContext]:
    return [
        EvalContext(
            f"case-{i}", {"doc": f"invoice {i}"}, None,
            f"Vendor ACME, total {i}.00 EUR" + (", due 2025-01-31" if i % 2 else ""), {}, folder, processes,
        )
        for i in range(count)
    ]


def per_case_us(config: dict, cases: list[EvalContext], rounds: int = 3) -> tuple[float, list[float]]:
    evaluator = TypeAdapter(EvaluatorSpec).validate_python(config)
    best = float("inf")
    scores: list[float] = []
    try:
        evaluator.evaluate(cases[0])  # import the module / start the long-lived judge outside the timing
        for _ in range(rounds):
            started = time.perf_counter()
            results = [evaluator.evaluate(ctx) for ctx in cases]
            best = min(best, time.perf_counter() - started)
            scores = [result.score for result in results]
            assert all(result.error is None for result in results), results[0].error
    finally:
        evaluator.close()
    return best / len(cases) * 1e6, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="Multiply the case counts (e.g. 0.1).")
    scale = parser.parse_args().scale
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "judges.py").write_text(JUDGE)
        processes = Processes()
        rows = [
            ("code_judge, one process per case", {"type": "code_judge", "command": "judges.py"}, 200),
            ("code_judge, protocol: jsonl", {"type": "code_judge", "command": "judges.py", "protocol": "jsonl"}, 2_000),
            ("python", {"type": "python", "function": "judges:judge"}, 20_000),
        ]
        figures = []
        reference: list[float] | None = None
        for label, config, count in rows:
            cases = contexts(max(10, int(count * scale)), folder, processes)
            micros, scores = per_case_us({**config, "words": WORDS}, cases)
            shared = min(len(scores), len(reference)) if reference else 0
            assert reference is None or scores[:shared] == reference[:shared], label
            reference = scores if reference is None or len(scores) > len(reference) else reference
            figures.append((label, len(cases), micros))
        processes.stop_all()
    fastest = figures[-1][2]
    print(f"Python {sys.version.split()[0]}")
    print("| evaluator | cases | µs per case | x python |")
    print("|---|---:|---:|---:|")
    for label, count, micros in figures:
        print(f"| {label} | {count:,} | {micros:,.1f} | {micros / fastest:,.0f} |")


if __name__ == "__main__":
    main()
