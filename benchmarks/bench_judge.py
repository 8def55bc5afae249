"""Judge start-up: what a Python code_judge costs before and around the judge function itself.

    python benchmarks/bench_judge.py               # 40 timed runs per row
    python benchmarks/bench_judge.py --runs 100

Under `protocol: 1` a judge process starts for every case, so its start-up is paid per case.
Each row is a fresh process timed from outside, hyperfine-style: warm-up runs, then the median
and minimum wall time, the rows taking turns, and the median CPU time (user + system) the child
itself spent, which a busy machine disturbs far less than wall time. Rows: a bare interpreter;
the same importing `agenteval.judge`; a one-shot judge built on `run_judge` answering one
payload; and that judge run by agenteval itself, per case, with one process per case
(`protocol: 1`) and with one process for all cases (`protocol: jsonl`). Children get a bytecode
cache (a temporary PYTHONPYCACHEPREFIX), as an installed package has. Last, `-X importtime`
lists what `import agenteval.judge` loads beyond a bare interpreter.
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

JUDGE = """
from agenteval.judge import run_judge

def judge(payload):
    return {"score": float(payload["candidate_answer"] == payload["reference_answer"])}

if __name__ == "__main__":
    run_judge(judge)
"""
PAYLOAD = {"protocol": 1, "case_id": "c1", "input": {"q": 1}, "candidate_answer": 1, "reference_answer": 1, "config": {}, "metadata": {}}


def child_env(cache: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def time_commands(
    commands: list[tuple[list[str], bytes]], env: dict[str, str], cwd: Path, runs: int, warmup: int = 5
) -> list[tuple[list[float], list[float]]]:
    """(wall ms, CPU ms) of `runs` runs of each command, after `warmup` untimed rounds. The commands
    take turns, so a load change on a shared machine hits every row alike; CPU time (user + system,
    from wait4) is what the process itself spent, unaffected by waiting for a core."""
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in commands]
    for index in range(warmup + runs):
        for (argv, stdin), (wall, cpu) in zip(commands, times):
            started = time.perf_counter()
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
            proc.stdin.write(stdin)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                raise SystemExit(f"{argv} failed")
            if index >= warmup:
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((usage.ru_utime + usage.ru_stime) * 1000)
    return times


def time_in_agenteval(folder: Path, protocol: object, cases: int, env: dict[str, str]) -> list[float]:
    """Milliseconds per case of the judge driven by agenteval's CodeJudge (real processes)."""
    script = (
        "import sys, time\n"
        "from agenteval.evaluators import EvalContext\n"
        "from agenteval.evaluators.code_judge import CodeJudge\n"
        "from agenteval.process import Processes\n"
        f"judge = CodeJudge.model_validate({{'type': 'code_judge', 'command': ['python', 'judge.py'], 'protocol': {protocol!r}}})\n"
        "processes, folder, times = Processes(), __import__('pathlib').Path('.').resolve(), []\n"
        f"for i in range({cases}):\n"
        "    started = time.perf_counter()\n"
        "    result = judge.evaluate(EvalContext(f'c{i}', {'q': i}, 1, 1, {}, folder, processes))\n"
        "    times.append((time.perf_counter() - started) * 1000)\n"
        "    assert result.verdict == 'pass', result\n"
        "judge.close()\n"
        "print(' '.join(f'{t:.4f}' for t in times))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=folder, env=env, capture_output=True, text=True, check=True)
    return [float(value) for value in done.stdout.split()][5:]  # the first cases start the judge and warm caches


def import_breakdown(env: dict[str, str], cwd: Path, runs: int = 20) -> list[tuple[str, float, float]]:
    """(module, median, min) cumulative µs of each module `import agenteval.judge` loads (-X importtime)."""
    found: dict[str, list[float]] = {}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import agenteval.judge"], env=env, cwd=cwd, capture_output=True, text=True,
            check=True,
        )
        bare = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "pass"], env=env, cwd=cwd, capture_output=True, text=True, check=True
        )
        preloaded = {line.rsplit("|", 1)[-1].strip() for line in bare.stderr.splitlines() if "|" in line}
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "|" not in line or "cumulative" in line:
                continue
            _, cumulative, name = line.split("|")
            if name.strip() not in preloaded:
                found.setdefault(name.strip(), []).append(float(cumulative))
    return [(name, statistics.median(values), min(values)) for name, values in found.items()]


def row(label: str, wall: list[float], cpu: list[float] | None = None, base: float | None = None) -> str:
    cells = [f"{statistics.median(wall):.2f}", f"{min(wall):.2f}"]
    if cpu is not None:
        cells += [f"{statistics.median(cpu):.2f}", f"{statistics.median(cpu) - base:+.2f}" if base is not None else ""]
    else:
        cells += ["", ""]
    return f"| {label} | " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "judge.py").write_text(JUDGE)
        env = child_env(folder / "pycache")
        payload = json.dumps(PAYLOAD).encode()
        bare, imported, one_shot = time_commands(
            [([sys.executable, "-c", "pass"], b""), ([sys.executable, "-c", "import agenteval.judge"], b""),
             ([sys.executable, "judge.py"], payload)],
            env, folder, args.runs,
        )
        base = statistics.median(bare[1])
        print("| what | wall ms (median) | wall ms (min) | CPU ms (median) | CPU ms over bare |")
        print("|---|---:|---:|---:|---:|")
        print(row("bare interpreter (`python -c pass`)", *bare))
        print(row("`python -c \"import agenteval.judge\"`", *imported, base))
        print(row("one-shot judge with `run_judge`, one payload", *one_shot, base))
        print(row("per case, agenteval running it (`protocol: 1`)", time_in_agenteval(folder, 1, args.runs + 5, env)))
        print(row("per case, agenteval running it (`protocol: jsonl`)", time_in_agenteval(folder, "jsonl", 200, env)))
        print("\nLoaded by `import agenteval.judge` beyond a bare interpreter (cumulative µs, median / min):\n")
        for name, median, least in import_breakdown(env, folder):
            print(f"- {name}: {median:.0f} / {least:.0f}")


if __name__ == "__main__":
    main()
