"""Live-model runs: throughput against a slow local server, memory, and the cached re-run.

    python benchmarks/bench_endpoints.py                     # 250 and 1,000 cases, 50 ms per answer, concurrency 32 and 128
    python benchmarks/bench_endpoints.py --cases 1000 10000 --concurrency 32 128
    python benchmarks/bench_endpoints.py --cases 250 --delay 0.02
    python benchmarks/bench_endpoints.py --guard             # the figures tests/test_speed_guard.py checks (JSON)

A local OpenAI-compatible server (tests/llm_server.py, its own process) answers every chat
request after `--delay` seconds. The real CLI runs N cases with an `openai` target at
temperature 0 (so answers are cached) and `concurrency: C`, in a child process:

1. recorded: a fresh cache, every answer fetched; wall time vs the ideal N x delay / C
2. cached: the same suite again; every answer comes from the response cache
3. baseline: the same cases and evaluators with the answers recorded in the cases (no target)
4. bare loop: the same N requests from C threads, each with one kept-alive http.client connection
   and nothing else (its own process): what this machine and server allow, next to the ideal

plus peak resident memory and CPU time (user + system) of each child (wait4), at each N to show
memory stays flat; CPU per request is the figure a machine shared with other work disturbs least.
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

ROOT = Path(__file__).resolve().parent.parent


def write_suite(folder: Path, base_url: str, cases: int, concurrency: int, recorded: bool) -> Path:
    with (folder / "cases.jsonl").open("w") as handle:
        for i in range(cases):
            case = {"id": f"q{i}", "input": {"question": f"question {i}"}, "expected": f"question {i}"}
            if recorded:
                case["output"] = {"content": f"echo: Q: question {i}"}
            handle.write(json.dumps(case) + "\n")
    target = "" if recorded else f"""
target:
  type: openai
  base_url: "{base_url}"
  model: bench
  temperature: 0
  concurrency: {concurrency}
  messages: [{{role: user, content: "Q: {{{{ input.question }}}}"}}]
"""
    suite = folder / "suite.yaml"
    suite.write_text(f"""
name: bench-endpoints
{target}
evaluators:
  - {{type: contains, path: content, reference_path: ""}}
cases: cases.jsonl
""")
    return suite


NO_PROXIES = {name: value for name, value in os.environ.items() if not name.lower().endswith("_proxy")}
"""The runs' environment: the server is on 127.0.0.1, and a machine's proxy settings would put a proxy between."""


def run(suite: Path, *args: str) -> tuple[float, float, float, int, float]:
    """(wall seconds, seconds running cases, peak RSS MB, exit code, CPU seconds) of one `agenteval run`."""
    results = suite.parent / f"r{time.time_ns()}.jsonl"
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(results), "-q", *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=NO_PROXIES,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    running = json.loads(results.with_name(results.stem + ".summary.json").read_text())["duration_s"]
    return wall, running, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def bare_loop(base_url: str, cases: int, concurrency: int) -> float:
    """Seconds for `cases` chat requests from `concurrency` threads with http.client and nothing else."""
    import http.client
    import threading
    from urllib.parse import urlsplit

    where = urlsplit(base_url + "/chat/completions")
    numbers = iter(range(cases))
    lock = threading.Lock()

    def worker() -> None:
        conn = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
        while True:
            with lock:
                i = next(numbers, None)
            if i is None:
                return
            body = {"model": "bench", "messages": [{"role": "user", "content": f"Q: question {i}"}], "temperature": 0}
            conn.request("POST", where.path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
            reply = json.loads(conn.getresponse().read())
            assert reply["choices"][0]["message"]["content"] == f"echo: Q: question {i}"

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def run_bare_loop(base_url: str, cases: int, concurrency: int) -> float:
    done = subprocess.run(
        [sys.executable, __file__, "--bare-loop", base_url, "--cases", str(cases), "--concurrency", str(concurrency)],
        capture_output=True, text=True, check=True,
    )
    return float(done.stdout)


def measure(base_url: str, cases: int, concurrency: int, delay: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        live = Path(tmp) / "live"
        live.mkdir()
        suite = write_suite(live, base_url, cases, concurrency, recorded=False)
        recorded = run(suite)
        cached = run(suite)
        offline = Path(tmp) / "offline"
        offline.mkdir()
        baseline = run(write_suite(offline, base_url, cases, concurrency, recorded=True))
    bare = run_bare_loop(base_url, cases, concurrency)
    assert recorded[3] == cached[3] == baseline[3] == 0, "a run did not pass every case"
    ideal = cases * delay / concurrency
    cells = [str(concurrency), f"{cases:,}", f"{ideal:.2f}", f"{recorded[1]:.2f}", f"{recorded[1] / ideal:.2f}", f"{recorded[0]:.2f}", f"{recorded[2]:.0f}"]
    cells += [f"{cached[1]:.2f}", f"{cached[0]:.2f}", f"{cached[2]:.0f}", f"{baseline[1]:.2f}", f"{baseline[0]:.2f}", f"{baseline[2]:.0f}"]
    per_request = (recorded[4] - baseline[4]) / cases * 1000  # the client's CPU beyond the same run without a target
    cells += [f"{recorded[4]:.2f}", f"{cached[4]:.2f}", f"{baseline[4]:.2f}", f"{per_request:.2f}"]
    cells += [f"{bare:.2f}", f"{bare / ideal:.2f}", f"{os.getloadavg()[0]:.1f}"]
    print("| " + " | ".join(cells) + " |", flush=True)


GUARD = {"cases": 1000, "concurrency": 32, "delay": 0.02}
"""The short run the CI guard measures (tests/test_speed_guard.py): about 0.6 s of answers a round."""


def guard(base_url: str, cases: int, concurrency: int, delay: float, rounds: int) -> dict:
    """The guard's figures over `rounds` in which the run and the bare loop take turns: `ratio_live`,
    the seconds a run spends fetching every answer over the bare loop's seconds for the same
    requests; `ratio_cached`, the seconds a re-run spends on the same cases with every answer in the
    response cache over a run of them with the answers recorded in the cases (no target). Each is
    the lowest of the rounds' ratios: other work on the machine only ever adds to a round, and a
    slower agenteval is slower in every round. The seconds are medians, for the record."""
    rows = []
    for turn in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            live, offline = Path(tmp) / "live", Path(tmp) / "offline"
            live.mkdir()
            offline.mkdir()
            suite = write_suite(live, base_url, cases, concurrency, recorded=False)
            if turn % 2:
                bare = run_bare_loop(base_url, cases, concurrency)
                fetched = run(suite)
            else:
                fetched = run(suite)
                bare = run_bare_loop(base_url, cases, concurrency)
            offline_suite = write_suite(offline, base_url, cases, concurrency, recorded=True)
            cached = [run(suite), run(suite)]  # (the quicker of two: a tenth of a second is easily disturbed)
            baseline = [run(offline_suite), run(offline_suite)]
        assert fetched[3] == 0 and all(done[3] == 0 for done in cached + baseline), "a run did not pass every case"
        rows.append({"fetched": fetched[1], "bare": bare, "cached": min(done[1] for done in cached),
                     "no_target": min(done[1] for done in baseline)})
    return {
        "aim": "live", "cases": cases, "concurrency": concurrency, "delay_s": delay, "rounds": rounds,
        "ideal_s": cases * delay / concurrency, **{f"{side}_s": statistics.median(row[side] for row in rows) for side in rows[0]},
        "ratio_live": min(row["fetched"] / row["bare"] for row in rows),
        "ratio_cached": min(row["cached"] / row["no_target"] for row in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[250, 1000])
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the server takes per answer")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--guard", action="store_true", help="the CI guard's figures, as one JSON object (see `guard`)")
    parser.add_argument("--rounds", type=int, default=3, help="with --guard: rounds of the run and the bare loop in turns")
    parser.add_argument("--bare-loop", metavar="BASE_URL", help=argparse.SUPPRESS)  # (the child that times the bare loop)
    args = parser.parse_args()
    if args.bare_loop:
        print(bare_loop(args.bare_loop, args.cases[0], args.concurrency[0]))
        return
    delay = GUARD["delay"] if args.guard else args.delay
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "llm_server.py"), "--delay", str(delay)], stdout=subprocess.PIPE, text=True
    )
    try:
        base_url = server.stdout.readline().strip()
        if args.guard:
            print(json.dumps(guard(base_url, int(GUARD["cases"]), int(GUARD["concurrency"]), delay, args.rounds)), flush=True)
            return
        print(f"server: {args.delay * 1000:.0f} ms per answer; s = seconds running cases "
              "(the summary's duration_s), wall = the whole command")
        print("| concurrency | cases | ideal s | fetched s | ratio to ideal | wall | peak MB | cached s | wall | peak MB "
              "| no target s | wall | peak MB | CPU s: fetched | cached | no target | CPU ms per request | bare loop s | its ratio | load |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for concurrency in args.concurrency:
            for cases in args.cases:
                measure(base_url, cases, concurrency, args.delay)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
