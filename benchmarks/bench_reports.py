"""Reports at scale: a run of N cases with every report, then the HTML page in a real browser.

    python benchmarks/bench_reports.py                  # N = 100,000
    python benchmarks/bench_reports.py --cases 10000    # quicker

Writes N recorded invoice-like cases (eight fields, about one case in five failing) to a temp
dir, runs the real CLI with and without --junit/--markdown/--html, reports the extra time, the
child's peak memory and each file's size, then opens the HTML in headless Chromium (one on PATH,
else Playwright's own; without either that part is skipped, saying why) and times: the page until
the cases table is ready, a filter, a search, and opening a case.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = """name: bench-reports
evaluators:
  - name: header
    type: field_accuracy
    fields:
      - {path: invoice.number}
      - {path: invoice.currency}
      - {path: vendor.name, match: fuzzy}
      - {path: buyer.name, match: fuzzy, algorithm: jaro_winkler}
      - {path: invoice.total, match: numeric_tolerance, tolerance: 0.01}
      - {path: invoice.tax, match: numeric_tolerance, tolerance: 0.01}
      - {path: invoice.date, match: date}
      - {path: invoice.due_date, match: date}
cases: cases.jsonl
"""
NAMES = ["Acme Corp", "Globex Corporation", "Initech LLC", "Umbrella Ltd", "Stark Industries", "Wayne Enterprises"]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def make_case(i: int, rng: random.Random) -> dict:
    expected = {
        "invoice": {"number": f"INV-{i:07d}", "currency": rng.choice(["EUR", "USD", "GBP"]), "total": round(rng.uniform(10, 9000), 2),
                    "tax": round(rng.uniform(1, 900), 2), "date": "2024-03-01", "due_date": "2024-03-31"},
        "vendor": {"name": rng.choice(NAMES)}, "buyer": {"name": rng.choice(NAMES)},
    }
    output = json.loads(json.dumps(expected))
    if rng.random() < 0.2:
        output["invoice"]["total"] = round(expected["invoice"]["total"] * 1.1, 2)
    if rng.random() < 0.05:
        del output["invoice"]["number"]
    return {"id": f"case-{i:06d}", "expected": expected, "output": output, "tags": [rng.choice(["eu", "us", "uk"])]}


def run_child(args: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS MB of `agenteval ARGS` in a child process.

    CPU time is the steadier figure on a shared machine: wall time grows with everyone's load."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "agenteval", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"agenteval {' '.join(args)} failed: {proc.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def find_chromium() -> str | None:
    """chromium, chromium-browser or google-chrome on PATH, else the browser Playwright installed for itself."""
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            own = playwright.chromium.executable_path
    except Exception:  # noqa: BLE001 (no driver or no browser: none here)
        return None
    return own if Path(own).exists() else None


def browse(html: Path, chromium: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    timings = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        started = time.perf_counter()
        page.goto(html.as_uri())
        page.wait_for_selector("body[data-ready=true]", timeout=120_000)
        timings["load until the table is ready"] = time.perf_counter() - started
        for label, control, value in (
            ("filter: verdict fail", "verdict", "fail"),
            ("search: a miss text", "search", "invoice.total"),
            ("sort: lowest score", "sort", "low"),
        ):
            # apply() runs synchronously on `change`, so the page itself times filter + render
            timings[label] = page.evaluate(
                """([control, value]) => {
                    const started = performance.now();
                    const element = document.getElementById(control);
                    element.value = value;
                    element.dispatchEvent(new Event("change"));
                    document.getElementById("sort").dispatchEvent(new Event("change"));
                    return (performance.now() - started) / 1000;
                }""",
                [control, value],
            )
        started = time.perf_counter()
        page.click("#case-table tbody tr.case")
        page.wait_for_selector("td.detail pre.candidate")
        timings["open a case"] = time.perf_counter() - started
        browser.close()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    count = parser.parse_args().cases
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "suite.yaml").write_text(SUITE)
        with (root / "cases.jsonl").open("w") as handle:
            for i in range(count):
                handle.write(json.dumps(make_case(i, rng)) + "\n")
        plain, plain_cpu, plain_rss = run_child(["run", str(root / "suite.yaml"), "-o", str(root / "plain.jsonl"), "-q"])
        full, full_cpu, full_rss = run_child([
            "run", str(root / "suite.yaml"), "-o", str(root / "r.jsonl"), "-q",
            "--junit", str(root / "r.xml"), "--markdown", str(root / "r.md"), "--html", str(root / "r.html"),
        ])
        report, report_cpu, report_rss = run_child(["report", str(root / "r.jsonl"), "--format", "html", "-o", str(root / "again.html")])
        print(f"{count:,} cases")
        print(f"run without reports: {plain:.2f} s wall, {plain_cpu:.2f} s CPU, peak RSS {plain_rss:.0f} MB")
        print(f"run with --junit --markdown --html: {full:.2f} s wall, {full_cpu:.2f} s CPU, peak RSS {full_rss:.0f} MB")
        print(f"report --format html from the results file: {report:.2f} s wall, {report_cpu:.2f} s CPU, peak RSS {report_rss:.0f} MB")
        for name in ("r.jsonl", "r.xml", "r.md", "r.html"):
            print(f"{name}: {(root / name).stat().st_size / 1e6:.2f} MB")
        chromium = find_chromium()
        if chromium is None:
            print("browser timings skipped: no chromium, chromium-browser or google-chrome on PATH, and Playwright has "
                  "no browser of its own (apt-get install chromium, or playwright install chromium)")
            return
        for label, seconds in browse(root / "r.html", chromium).items():
            print(f"browser, {label}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
