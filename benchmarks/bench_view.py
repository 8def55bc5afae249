"""How fast `agenteval view` opens and pages a big run: the real command in a child process, real
HTTP on 127.0.0.1, a synthetic results file of N cases (one evaluator, three tags).

For each size: the first open of the run page (the index is read in the background; the page
shows what is read so far), the time until the whole file is indexed, a page deep in the run, a
filtered and sorted page, a text search, a case page, and the server's peak memory.

    python benchmarks/bench_view.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson


def write_run(path: Path, cases: int) -> None:
    with path.open("wb") as handle:
        for i in range(cases):
            verdict = "pass" if i % 4 else "fail"
            handle.write(orjson.dumps({
                "run_id": "big", "suite": "big", "case_id": f"case-{i:07d}", "score": 1.0 if verdict == "pass" else 0.0,
                "verdict": verdict, "output": {"answer": f"answer number {i}"}, "expected": {"answer": f"answer number {i}"},
                "input": {"question": f"question number {i}"},
                "evaluator_results": [{"name": "same", "type": "equals", "score": 1.0 if verdict == "pass" else 0.0, "verdict": verdict,
                                       "hits": [], "misses": [] if verdict == "pass" else ["answer"]}],
                "tags": [f"t{i % 3}"], "duration_ms": float(i % 1000), "repetition": 0,
            }) + b"\n")


def timed(client: httpx.Client, path: str) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    reply = client.get(path)
    assert reply.status_code == 200, (path, reply.status_code, reply.text[:300])
    return time.perf_counter() - start, reply


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(cases: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        results = Path(folder) / "big.jsonl"
        write_run(results, cases)
        size_mb = results.stat().st_size / 1e6
        process = subprocess.Popen([sys.executable, "-m", "agenteval", "view", str(results), "--no-open"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", process.stdout.readline())
            with httpx.Client(base_url=found.group(1), timeout=120) as client:
                client.get("/", params={"token": found.group(2)})
                started = time.perf_counter()
                first, _ = timed(client, "/runs/big")
                while client.get("/runs/big/count.json").json()["reading"]:
                    time.sleep(0.02)
                indexed = time.perf_counter() - started
                deep, reply = timed(client, f"/runs/big?page={cases // 100}")
                assert f"{cases} cases" in reply.text
                filtered, reply = timed(client, "/runs/big?verdict=fail&tag=t1&sort=-latency&page=3")
                searched, _ = timed(client, f"/runs/big?q=number+{cases - 7}")
                case, _ = timed(client, f"/runs/big/cases/case-{cases // 2:07d}")
                return {"cases": cases, "file_mb": size_mb, "first_open_s": first, "indexed_s": indexed, "deep_page_s": deep,
                        "filtered_s": filtered, "search_s": searched, "case_s": case, "peak_rss_mb": peak_rss_mb(process.pid)}
        finally:
            process.terminate()
            process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    print("| cases | file MB | first open s | indexed s | deep page s | filter+sort s | text search s | case page s | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cases in args.sizes:
        row = measure(cases)
        print(f"| {row['cases']:,} | {row['file_mb']:.0f} | {row['first_open_s']:.3f} | {row['indexed_s']:.2f} | {row['deep_page_s']:.3f} | "
              f"{row['filtered_s']:.3f} | {row['search_s']:.2f} | {row['case_s']:.3f} | {row['peak_rss_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
