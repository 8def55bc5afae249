"""Live agents: conversations with tool loops against a slow local model server, vs the ideal.

    python benchmarks/bench_agents.py                        # 200 conversations x 5 turns x 2 tool calls, 50 ms, concurrency 16
    python benchmarks/bench_agents.py --conversations 50 --runs 1

A local OpenAI-compatible server (tests/llm_server.py's LLMServer, in its own process) plays a
model that, in every turn, calls `get_order`, then `refund_order` (one call per model step, each
answered by a `mock:` tool), then answers; every request is answered after `--delay` seconds.
The real CLI runs N scripted conversations of T turns (`turns:`) with an `openai` target whose
endpoint has `concurrency: C` and `cache: false` (every request is sent), in a child process.
Requests = N x T x (calls + 1); the ideal wall time is requests x delay / C. Each figure is the
median of `--runs` runs; the server's count of requests is checked against the expected number.

Beside the times it prints the CPU seconds of the CLI (its child's rusage) and of the server
per request: what the two cores spend beyond the server's delay. `--profile` runs the CLI once
more under py-spy (`pip install py-spy`; `--gil`: samples of the thread holding the GIL) and prints the
functions and the agenteval modules that hold the most samples.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ("get_order", "refund_order")


def chat(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted agent: after the last user message, one call per tool in TOOLS, then a reply."""
    messages = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    done = sum(1 for m in messages[last_user:] if m["role"] == "tool")
    calls = int(os.environ.get("BENCH_AGENT_CALLS", "2"))
    if done < calls:
        name = TOOLS[done % len(TOOLS)]
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{last_user}_{done}", "type": "function",
            "function": {"name": name, "arguments": json.dumps({"order_id": f"A-{last_user}"})}}]}
    return {"role": "assistant", "content": f"Done with turn {(last_user + 1) // 2}: order A-{last_user} refunded."}


def serve(delay: float) -> None:
    """Child-process mode: serve the scripted agent until killed; the first line is the base URL,
    and a line `count` on stdin is answered with the number of chat requests received so far."""
    sys.path.insert(0, str(ROOT / "tests"))
    from llm_server import LLMServer

    with LLMServer(delay=delay, chat=chat) as server:
        print(server.base_url, flush=True)
        for line in sys.stdin:
            if line.strip() == "count":
                times = os.times()
                print(server.count("/chat/completions"), times.user + times.system, flush=True)


def write_suite(folder: Path, base_url: str, conversations: int, turns: int, concurrency: int) -> Path:
    with (folder / "cases.jsonl").open("w") as handle:
        for i in range(conversations):
            case = {"id": f"c{i}", "input": {"customer": f"customer {i}"},
                    "turns": [f"customer {i}, request {t}: please refund my order" for t in range(1, turns + 1)]}
            handle.write(json.dumps(case) + "\n")
    suite = folder / "suite.yaml"
    suite.write_text(f"""
name: bench-agents
models:
  agent: {{base_url: "{base_url}", model: bench, temperature: 0, concurrency: {concurrency}, cache: false}}
target:
  type: openai
  endpoint: agent
  messages: [{{role: system, content: "You are a refund agent for {{{{ input.customer }}}}."}}]
  tools:
    - {{name: get_order, parameters: {{type: object, properties: {{order_id: {{type: string}}}}}}, mock: [{{result: {{status: delivered, total: 25.0}}}}]}}
    - {{name: refund_order, parameters: {{type: object, properties: {{order_id: {{type: string}}}}}}, mock: [{{result: {{status: issued}}}}]}}
  loop: {{max_steps: 10}}
evaluators:
  - {{type: tool_calls, scope: conversation, calls: [{{name: get_order}}, {{name: refund_order}}]}}
  - {{type: contains, scope: turn, path: content, reference: refunded}}
  - {{type: conversation, max_turns: {turns}}}
cases: cases.jsonl
""")
    return suite


def run(suite: Path) -> tuple[float, float, float, int, dict[str, int]]:
    """(wall seconds, seconds running cases, CPU seconds, exit code, counts) of one `agenteval run` in a child."""
    results = suite.parent / f"r{time.time_ns()}.jsonl"
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(results), "-q"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    summary = json.loads(results.with_name(results.stem + ".summary.json").read_text())
    print("  " + breakdown(results, summary["duration_s"], concurrency_of(suite)))
    return wall, summary["duration_s"], usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), summary["counts"]


def concurrency_of(suite: Path) -> int:
    return int(suite.read_text().split("concurrency: ", 1)[1].split(",", 1)[0])


def breakdown(results: Path, duration: float, concurrency: int) -> str:
    """Where a run's time went, from its result lines: each model request's latency as the client
    measured it, the time a conversation spent between its steps (tools, evaluators, its line),
    how late the first wave started its first request, and how busy the C slots were."""
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    model = [step["latency_ms"] for line in lines for step in line["output"]["steps"] if step["kind"] == "model"]
    gaps = [line["duration_ms"] - line["usage"]["latency_ms"] for line in lines]
    first = sorted(gaps, reverse=True)[:concurrency]
    busy = sum(line["duration_ms"] for line in lines) / 1000 / (concurrency * duration)
    return (f"model request {statistics.mean(model):.1f} ms mean (p50 {statistics.median(model):.1f}); between steps "
            f"{statistics.median(gaps):.1f} ms per conversation (p50); first wave started {statistics.median(first):.0f} ms late; "
            f"slots busy {busy:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2, help="tool calls per turn (one per model step)")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ["BENCH_AGENT_CALLS"] = str(args.calls)
    if args.serve:
        serve(args.delay)
        return

    server = subprocess.Popen([sys.executable, __file__, "--serve", "--delay", str(args.delay), "--calls", str(args.calls)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base_url = server.stdout.readline().strip()

        def count() -> tuple[int, float]:
            """(chat requests so far, the server's CPU seconds so far)."""
            server.stdin.write("count\n")
            server.stdin.flush()
            received, cpu = server.stdout.readline().split()
            return int(received), float(cpu)

        requests = args.conversations * args.turns * (args.calls + 1)
        ideal = requests * args.delay / args.concurrency
        print(f"{args.conversations} conversations x {args.turns} turns x ({args.calls} tool calls + 1 answer) = "
              f"{requests} requests of {args.delay * 1000:.0f} ms at concurrency {args.concurrency}: ideal {ideal:.2f} s")
        walls, durations = [], []
        with tempfile.TemporaryDirectory() as tmp:
            suite = write_suite(Path(tmp), base_url, args.conversations, args.turns, args.concurrency)
            for number in range(1, args.runs + 1):
                before, server_before = count()
                wall, duration, cpu, code, counts = run(suite)
                after, server_after = count()
                sent = after - before
                assert sent == requests, f"the server received {sent} requests, expected {requests}"
                assert code == 0 and counts["passed"] == args.conversations, (code, counts)
                walls.append(wall)
                durations.append(duration)
                print(f"run {number}: running cases {duration:.2f} s ({duration / ideal:.2f}x the ideal), wall {wall:.2f} s "
                      f"({wall / ideal:.2f}x), {sent} requests; CPU: CLI {cpu:.2f} s ({cpu / sent * 1000:.2f} ms per request), "
                      f"server {server_after - server_before:.2f} s ({(server_after - server_before) / sent * 1000:.2f} ms)")
            print(f"median: running cases {statistics.median(durations):.2f} s ({statistics.median(durations) / ideal:.2f}x), "
                  f"wall {statistics.median(walls):.2f} s ({statistics.median(walls) / ideal:.2f}x)")
            if args.profile:
                profile(suite)
    finally:
        server.kill()
        server.wait()


def profile(suite: Path) -> None:
    """One more run under py-spy: the share of CPU samples by function (self) and by agenteval module (inclusive)."""
    import shutil
    from collections import Counter

    if shutil.which("py-spy") is None:
        print("--profile needs py-spy (pip install py-spy)")
        return
    stacks = suite.parent / "stacks.txt"
    subprocess.run(["py-spy", "record", "--gil", "--format", "raw", "--rate", "250", "-o", str(stacks), "--",
                    sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(suite.parent / "profiled.jsonl"), "-q"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    own: Counter[str] = Counter()
    modules: Counter[str] = Counter()
    total = 0
    for line in stacks.read_text().splitlines():
        frames, _, samples = line.rpartition(" ")
        count = int(samples)
        total += count
        names = frames.split(";")
        own[names[-1]] += count
        for module in {frame.split("(")[1].split(":")[0] for frame in names if "(" in frame and "agenteval/" in frame}:
            modules[module[module.index("agenteval/"):]] += count
    print(f"\n{total} CPU samples; self time by function:")
    for name, count in own.most_common(15):
        print(f"  {count / total:6.1%}  {name}")
    print("inclusive, by agenteval module:")
    for name, count in modules.most_common(15):
        print(f"  {count / total:6.1%}  {name}")


if __name__ == "__main__":
    main()
