"""Cells: 4 cells x 1,000 cases vs the same 4,000 answers scored as one cell, both from the cache.

    python benchmarks/bench_cells.py                    # 1,000 cases per cell, 5 timed runs of each
    python benchmarks/bench_cells.py --cases 250 --runs 3
    python benchmarks/bench_cells.py --profile          # also cProfile one in-process run of each

The matrix suite has two `openai` targets (two model names) x two prompts and N cases; the
single suite has one `openai` target and 4 x N cases whose inputs carry the same four prompts'
text (with the model's name appended, so that no two requests are the same), so both send
4 x N distinct requests and score 4 x N answers of the same size with the same evaluators
(`contains` and `length`). A local OpenAI-compatible server
(tests/llm_server.py, its own process) answers once to fill each suite's response cache; it is
then stopped, and every timed run (the real CLI in a child process) is answered from the cache
alone (a miss would be an error, and the script checks there is none). Reported: the medians
over the runs of the summary's `duration_s` (running the cases), of the whole command's wall
time and of its CPU time, and their ratios matrix / single (the aim: at most 1.2). A third,
diagnostic run is the matrix with the summary's paired comparisons left out, to show their
share of the time.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"small": "model-small", "large": "model-large"}
PROMPTS = {"terse": "Answer only: {q}", "careful": "Check, then answer in one sentence: {q}"}
EVALUATORS = """
evaluators:
  - {name: correct, type: contains, path: content, reference_path: answer, case_sensitive: false}
  - {name: brief, type: length, path: content, unit: words, max: 40}
"""


def write_suites(folder: Path, base_url: str, cases: int) -> tuple[Path, Path]:
    """(matrix suite, single suite) in their own folders, each with its own cache."""
    endpoint = f'models:\n  local: {{base_url: "{base_url}", temperature: 0, concurrency: 8}}\n'
    matrix, single = folder / "matrix", folder / "single"
    matrix.mkdir()
    single.mkdir()
    with (matrix / "cases.jsonl").open("w") as handle:
        for i in range(cases):
            handle.write(json.dumps({"id": f"q{i}", "input": {"q": f"question {i}"}, "expected": {"answer": f"question {i}"}}) + "\n")
    prompts = "".join(f'  {name}: "{text.format(q="{{ input.q }}")}"\n' for name, text in PROMPTS.items())
    targets = "".join(f"  {name}: {{type: openai, endpoint: local, model: {model}}}\n" for name, model in TARGETS.items())
    (matrix / "suite.yaml").write_text(
        f"name: bench-cells\n{endpoint}targets:\n{targets}prompts:\n{prompts}{EVALUATORS}cases: cases.jsonl\n"
    )
    with (single / "cases.jsonl").open("w") as handle:
        for target in TARGETS:
            for prompt, text in PROMPTS.items():
                for i in range(cases):
                    handle.write(json.dumps({
                        "id": f"q{i}-{target}-{prompt}", "input": {"text": text.format(q=f"question {i}") + f" ({TARGETS[target]})"},
                        "expected": {"answer": f"question {i}"},
                    }) + "\n")
    (single / "suite.yaml").write_text(
        f"name: bench-cells\n{endpoint}target:\n  type: openai\n  endpoint: local\n  model: model-one\n"
        f'  messages: [{{role: user, content: "{{{{ input.text }}}}"}}]\n{EVALUATORS}cases: cases.jsonl\n'
    )
    return matrix / "suite.yaml", single / "suite.yaml"


# The diagnostic variant: the same CLI with the summary's paired comparisons left out (so neither
# the bootstrap nor numpy's import runs), to show how much of a matrix run's time they take.
WITHOUT_COMPARISONS = (
    "import sys; import agenteval.results; agenteval.results.Summary.comparisons = lambda self: []; "
    "sys.argv[0] = 'agenteval'; from agenteval.cli import main; main()"
)


def run(suite: Path, expect_cached: bool, comparisons: bool = True) -> tuple[float, float, float]:
    """(seconds running cases, wall seconds, CPU seconds) of one `agenteval run`; checks every answer passed."""
    results = suite.parent / f"r{time.time_ns()}.jsonl"
    started = time.perf_counter()
    program = ["-m", "agenteval"] if comparisons else ["-c", WITHOUT_COMPARISONS]
    child = subprocess.Popen(
        [sys.executable, *program, "run", str(suite), "-o", str(results), "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, rusage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    summary = json.loads(results.with_name(results.stem + ".summary.json").read_text())
    assert child.returncode == 0, stderr[-2000:]
    usage = summary["usage"]["target"]
    assert summary["counts"]["passed"] == summary["counts"]["total"], summary["counts"]
    assert usage["cached"] == (usage["requests"] if expect_cached else 0), usage
    assert len(summary.get("comparisons", [])) == (4 if comparisons and "cells" in summary else 0)
    results.unlink()
    results.with_name(results.stem + ".summary.json").unlink()
    return summary["duration_s"], wall, rusage.ru_utime + rusage.ru_stime


def profile(suite: Path, top: int) -> None:
    """One in-process run_suite under cProfile, in every thread (the runner scores on worker
    threads): the functions taking the most time, self and cumulative. A first unprofiled run
    leaves imports out of the figures."""
    import threading

    from agenteval.api import run_suite

    run_suite(suite, output=suite.parent / "warm-up.jsonl").summary
    threads: list[cProfile.Profile] = []
    unprofiled = threading.Thread.run

    def profiled(self: threading.Thread) -> None:
        own = cProfile.Profile()
        threads.append(own)
        own.enable()
        try:
            unprofiled(self)
        finally:
            own.disable()

    threading.Thread.run = profiled  # type: ignore[method-assign]
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    run = run_suite(suite, output=suite.parent / "profiled.jsonl")
    count = sum(1 for _ in run)
    scored = time.perf_counter()
    summary = run.summary  # the summary, with the cells' figures and comparisons
    profiler.disable()
    ended = time.perf_counter()
    threading.Thread.run = unprofiled  # type: ignore[method-assign]
    assert summary["counts"]["passed"] == count, summary["counts"]
    print(f"\n### cProfile of {suite.parent.name} ({count} results): running the cases {scored - started:.2f} s, "
          f"then the summary {ended - scored:.2f} s (times under the profiler)")
    stats = pstats.Stats(profiler)
    for own in threads:
        own.disable()
        stats.add(own)
    stats.strip_dirs()
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000, help="cases per cell (the single suite has 4x as many)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each suite (alternating); medians are reported")
    parser.add_argument("--profile", action="store_true", help="also profile one in-process run of each suite")
    parser.add_argument("--top", type=int, default=25, help="functions shown per profile table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "llm_server.py")], stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            base_url = server.stdout.readline().strip()
            matrix, single = write_suites(Path(tmp), base_url, args.cases)
            run(matrix, expect_cached=False)  # fills each cache: every request is sent once
            run(single, expect_cached=False)
        finally:
            server.terminate()
            server.wait()
        variants = {
            "single": (single, True, f"1 cell x {4 * args.cases:,} cases"),
            "matrix": (matrix, True, f"4 cells x {args.cases:,} cases"),
            "diagnostic": (matrix, False, f"4 cells x {args.cases:,} cases, summary without comparisons (diagnostic)"),
        }
        times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in variants}
        for _ in range(args.runs):  # in turn, so load on the machine falls on each alike
            for name, (suite, comparisons, _) in variants.items():
                times[name].append(run(suite, expect_cached=True, comparisons=comparisons))
        medians = {name: [statistics.median(t[i] for t in runs) for i in range(3)] for name, runs in times.items()}
        total = 4 * args.cases
        print(f"{total:,} cached answers each; median of {args.runs} runs; cases s = the summary's duration_s "
              "(running the cases), wall s = the whole command, CPU s = its user + system time")
        print("| run | cases s | wall s | CPU s | ms per answer (wall) |")
        print("|---|---:|---:|---:|---:|")
        for name, (_, _, label) in variants.items():
            running, wall, cpu = medians[name]
            print(f"| {label} | {running:.2f} | {wall:.2f} | {cpu:.2f} | {wall / total * 1000:.3f} |")
        for name in ("matrix", "diagnostic"):
            ratios = [m / s for m, s in zip(medians[name], medians["single"])]
            print(f"| ratio {name} / single | {ratios[0]:.2f} | {ratios[1]:.2f} | {ratios[2]:.2f} | |")
        print("every run (cases s, wall s, CPU s):",
              json.dumps({name: [[round(x, 2) for x in t] for t in runs] for name, runs in times.items()}))
        if args.profile:
            profile(matrix, args.top)
            profile(single, args.top)


if __name__ == "__main__":
    main()
