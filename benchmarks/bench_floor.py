"""agenteval against the floor: the same work done by a bare Python loop, measured side by side.

    python benchmarks/bench_floor.py                      # the full sizes (a few minutes)
    python benchmarks/bench_floor.py --aims invoices --sizes 10000
    python benchmarks/bench_floor.py --guard --json       # the short sizes tests/test_speed_guard.py runs
    python benchmarks/bench_floor.py --before ../main     # also an older checkout, in the same rounds

Aims (issue 37), each measured in rounds that take turns with its floor (medians of the rounds):

- tiny: N cases of one exact and one fuzzy field through `agenteval run` (a child process) against
  `floor_loop.py tiny` (a child process that reads the same JSONL, makes the same calls and writes
  one JSON line per case); peak memory of the run from `wait4`.
- invoices: N invoices x 8 field checks (2 exact, 2 fuzzy, 2 numeric, 2 date), the same way.
- library: `agenteval.evaluate()` on N in-memory invoices (8 field checks, read to the summary)
  against a RapidFuzz loop over the same values, in one child process, taking turns (2 x rounds + 1
  of them: each is short).
- repeat: N/2 tiny cases run with `--repeat 2` against N tiny cases run once (the same number of
  answers scored), each beyond its one-case run: what repeating adds per scored answer beyond its
  own work (the aim: nothing).

For the two CLI aims each round also runs both sides on a one-case file, so start-up can be taken
apart from per-case cost: "wall" and "CPU" are ratios of whole commands (the child's user + system
time from `wait4`, which a machine shared with other work disturbs far less than wall time); "per
case" is agenteval's N-case time minus its one-case time over the floor's loop as the floor times
it itself; "one case" is the ratio of the one-case commands (start-up). Ratios, not times, are
what can be compared across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_fields import FIELDS as INVOICE_FIELDS, make_case as make_invoice  # noqa: E402

TINY_FIELDS = [{"path": "code", "match": "exact"}, {"path": "name", "match": "fuzzy"}]
FULL_SIZES = {"tiny": [1_000_000], "invoices": [10_000, 100_000], "library": [10_000], "repeat": [100_000]}
GUARD_SIZES = {"tiny": [20_000], "invoices": [5_000], "library": [4_000], "repeat": [20_000]}
NAMES = ["Acme Corp", "Globex Corporation", "Initech LLC", "Umbrella Ltd", "Stark Industries", "Wayne Enterprises"]


def make_tiny(i: int, rng: random.Random) -> dict:
    name = rng.choice(NAMES)
    got = name.upper() if rng.random() < 0.3 else name
    code = f"C{i % 1000:03d}"
    return {"id": f"t{i}", "expected": {"code": code, "name": name}, "output": {"code": code, "name": got}}


def write_cases(folder: Path, kind: str, size: int) -> Path:
    make = make_tiny if kind == "tiny" else make_invoice
    fields = TINY_FIELDS if kind == "tiny" else INVOICE_FIELDS
    rng = random.Random(size)
    cases = folder / f"{kind}-{size}.jsonl"
    with cases.open("wb") as handle:
        for i in range(size):
            handle.write(orjson.dumps(make(i, rng)) + b"\n")
    (folder / f"{kind}-{size}.yaml").write_text(json.dumps({
        "name": f"{kind}-{size}", "evaluators": [{"name": "fields", "type": "field_accuracy", "fields": fields}],
        "cases": cases.name,
    }))
    return cases


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS MB, what it printed) of one child process, which may cache
    bytecode as an installed program does (PYTHONDONTWRITEBYTECODE would have every start-up compile
    agenteval's modules from source again)."""
    env = {key: value for key, value in (os.environ if env is None else env).items() if key != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryFile() as printed:
        started = time.perf_counter()
        # (run from a folder of its own: `python -m` puts the working folder first on sys.path, ahead of PYTHONPATH)
        child = subprocess.Popen(argv, stdout=printed, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            raise SystemExit(f"{' '.join(argv)} exited {code}: {child.stderr.read().decode() if child.stderr else ''}")
        child.stderr.close()
        printed.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, printed.read().decode()


def cli_aim(kind: str, size: int, rounds: int, folder: Path, before: Path | None = None) -> dict:
    """Rounds of (floor, agenteval[, agenteval from the `before` checkout]) on N cases and on one
    case, taking turns."""
    big, one = write_cases(folder, kind, size), write_cases(folder, kind, 1)
    out = folder / "results.jsonl"

    def run(env: dict[str, str] | None) -> Callable[[Path], tuple[float, float, float, str]]:
        def agenteval(cases: Path) -> tuple[float, float, float, str]:
            out.unlink(missing_ok=True)
            out.with_name(out.stem + ".summary.json").unlink(missing_ok=True)
            return timed([sys.executable, "-m", "agenteval", "run", str(cases.with_suffix(".yaml")), "-o", str(out), "-q"], env)

        return agenteval

    def floor(cases: Path) -> tuple[float, float, float, str]:
        return timed([sys.executable, str(HERE / "floor_loop.py"), kind, str(cases), str(out)])

    sides = [("floor", floor), ("agenteval", run(None))]
    if before is not None:
        sides.append(("before", run({**os.environ, "PYTHONPATH": str(before)})))
    rows = []
    for turn in range(rounds):
        order = sides[turn % len(sides):] + sides[: turn % len(sides)]  # each side takes each place in turn
        row = {}
        for name, side in order:
            row[name + "_1"], row[name + "_cpu_1"], _, _ = side(one)
            row[name], row[name + "_cpu"], row[name + "_rss"], printed = side(big)
            if name == "floor":
                loop = json.loads(printed)
                row["floor_loop"], row["floor_loop_cpu"] = loop["loop_wall"], loop["loop_cpu"]
            else:
                lines = sum(1 for _ in out.open("rb"))
                assert lines == size, (lines, size)
        rows.append(row)
    return summarize(kind, size, rows)


def summarize(kind: str, size: int, rows: list[dict]) -> dict:
    def median(key: str) -> float:
        return statistics.median(row[key] for row in rows)

    def ratio(ours: str, floor: str) -> float:
        return statistics.median(row[ours] / max(row[floor], 1e-9) for row in rows)

    def per_case(suffix: str, side: str = "agenteval") -> float:
        """agenteval's time beyond its one-case run, over the floor's loop alone (its own clock):
        what each side spends on the cases, without start-up."""
        return statistics.median(
            (row[side + suffix] - row[side + suffix + "_1"]) / max(row["floor_loop" + suffix], 1e-9) for row in rows
        )

    found = {
        "aim": kind, "cases": size, "rounds": len(rows),
        "agenteval_s": median("agenteval"), "floor_s": median("floor"),
        "agenteval_cpu_s": median("agenteval_cpu"), "floor_cpu_s": median("floor_cpu"),
        "agenteval_one_case_s": median("agenteval_1"), "floor_one_case_s": median("floor_1"),
        "ratio_wall": ratio("agenteval", "floor"), "ratio_cpu": ratio("agenteval_cpu", "floor_cpu"),
        "ratio_per_case_wall": per_case(""), "ratio_per_case_cpu": per_case("_cpu"),
        "ratio_one_case_cpu": ratio("agenteval_cpu_1", "floor_cpu_1"),
        "peak_rss_mb": max(row["agenteval_rss"] for row in rows), "floor_peak_rss_mb": max(row["floor_rss"] for row in rows),
    }
    if "before" in rows[0]:
        found |= {
            "before_ratio_cpu": ratio("before_cpu", "floor_cpu"), "before_ratio_per_case_cpu": per_case("_cpu", "before"),
            "before_ratio_one_case_cpu": ratio("before_cpu_1", "floor_cpu_1"), "before_peak_rss_mb": max(row["before_rss"] for row in rows),
        }
    return found


def repeat_aim(size: int, rounds: int, folder: Path) -> dict:
    """Rounds of (N/2 tiny cases x `--repeat 2`, N tiny cases once), taking turns, each also on one
    case (x 2, once) so that start-up and the run's fixed work (the repeat statistics' set-up) are
    taken apart: the ratio is per scored answer (1.0: repeating costs what scoring as many answers does)."""
    once, half, one = write_cases(folder, "tiny", size), write_cases(folder, "tiny", size // 2), write_cases(folder, "tiny", 1)
    out = folder / "results.jsonl"

    def run(cases: Path, *extra: str) -> float:
        out.unlink(missing_ok=True)
        out.with_name(out.stem + ".summary.json").unlink(missing_ok=True)
        _, cpu, _, _ = timed([sys.executable, "-m", "agenteval", "run", str(cases.with_suffix(".yaml")), "-o", str(out), "-q", *extra])
        return cpu

    rows = []
    for turn in range(rounds):
        sides = [
            ("repeat", lambda: run(half, "--repeat", "2") - run(one, "--repeat", "2")),
            ("once", lambda: run(once) - run(one)),
        ]
        row = {name: side() for name, side in (sides if turn % 2 == 0 else sides[::-1])}
        rows.append(row)
    return {
        "aim": "repeat", "cases": size, "rounds": rounds,
        "repeat_cpu_s": statistics.median(row["repeat"] for row in rows), "once_cpu_s": statistics.median(row["once"] for row in rows),
        "ratio_cpu": statistics.median(row["repeat"] / max(row["once"], 1e-9) for row in rows),
    }


# -- the library path, in its own child process ---------------------------------------------------------------------


def library_child(size: int, rounds: int) -> None:
    import agenteval
    from rapidfuzz.distance import JaroWinkler, Levenshtein

    sys.path.insert(0, str(HERE))
    from floor_loop import day

    rng = random.Random(size)
    cases = [make_invoice(i, rng) for i in range(size)]
    checks = [{"type": "field_accuracy", "name": "fields", "fields": INVOICE_FIELDS}]
    lev, jaro = Levenshtein.normalized_similarity, JaroWinkler.normalized_similarity

    def ours() -> int:
        return agenteval.evaluate(cases, checks).summary["counts"]["total"]

    def floor() -> int:
        count = 0
        for case in cases:
            out, exp = case["output"], case["expected"]
            oi, ei = out["invoice"], exp["invoice"]
            fields = (
                oi["number"] == ei["number"], oi["currency"] == ei["currency"],
                lev(out["vendor"]["name"].lower(), exp["vendor"]["name"].lower()) >= 0.85,
                jaro(out["buyer"]["name"].lower(), exp["buyer"]["name"].lower()) >= 0.85,
                abs(oi["total"] - ei["total"]) <= 0.01, abs(oi["tax"] - ei["tax"]) <= 0.02 * abs(ei["tax"]),
                day(oi["date"]) == day(ei["date"]), day(oi["due_date"]) == day(ei["due_date"]),
            )
            count += all(fields)
        return len(cases)

    ours(), floor()  # warm-up: first-use imports
    rows = []
    for turn in range(rounds):
        row = {}
        for name, side in ([("floor", floor), ("agenteval", ours)] if turn % 2 == 0 else [("agenteval", ours), ("floor", floor)]):
            started, cpu = time.perf_counter(), time.process_time()
            assert side() == size
            row[name], row[name + "_cpu"] = time.perf_counter() - started, time.process_time() - cpu
        rows.append(row)
    print(json.dumps({
        "aim": "library", "cases": size, "rounds": rounds,
        "agenteval_s": statistics.median(r["agenteval"] for r in rows), "floor_s": statistics.median(r["floor"] for r in rows),
        "ratio_wall": statistics.median(r["agenteval"] / r["floor"] for r in rows),
        "ratio_cpu": statistics.median(r["agenteval_cpu"] / max(r["floor_cpu"], 1e-9) for r in rows),
    }))


def library_aim(size: int, rounds: int, before: Path | None = None) -> dict:
    def child(env: dict[str, str] | None) -> dict:
        argv = [sys.executable, __file__, "--library-child", str(size), "--rounds", str(2 * rounds + 1)]
        done = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
        return json.loads(done.stdout.strip().splitlines()[-1])

    found = child(None)
    if before is not None:
        earlier = child({**os.environ, "PYTHONPATH": str(before)})
        found |= {"before_ratio_cpu": earlier["ratio_cpu"], "before_ratio_wall": earlier["ratio_wall"]}
    return found


def show(result: dict) -> str:
    before = ""
    if "before_ratio_cpu" in result:
        before = f" {result['before_ratio_cpu']:.2f}"
        if "before_ratio_per_case_cpu" in result:
            before += f" / {result['before_ratio_per_case_cpu']:.2f} / {result['before_ratio_one_case_cpu']:.2f}"
        before += " |"
    if result["aim"] == "repeat":
        return (f"| repeat: {result['cases'] // 2:,} x 2 against {result['cases']:,} x 1 | {result['cases']:,} | {result['repeat_cpu_s']:.3f} "
                f"| {result['once_cpu_s']:.3f} (once) | | {result['ratio_cpu']:.2f} | | | | |" + ("" if "before_ratio_cpu" not in result else " |"))
    if result["aim"] == "library":
        return (f"| library | {result['cases']:,} | {result['agenteval_s']:.3f} | {result['floor_s']:.3f} | {result['ratio_wall']:.2f} "
                f"| {result['ratio_cpu']:.2f} | | | | |" + before)
    return (
        f"| {result['aim']} | {result['cases']:,} | {result['agenteval_s']:.3f} | {result['floor_s']:.3f} | {result['ratio_wall']:.2f} "
        f"| {result['ratio_cpu']:.2f} | {result['ratio_per_case_wall']:.2f} / {result['ratio_per_case_cpu']:.2f} "
        f"| {result['agenteval_one_case_s']:.3f} / {result['floor_one_case_s']:.3f} | {result['ratio_one_case_cpu']:.2f} "
        f"| {result['peak_rss_mb']:.0f} / {result['floor_peak_rss_mb']:.0f} |" + before
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aims", nargs="+", choices=list(FULL_SIZES), default=list(FULL_SIZES))
    parser.add_argument("--sizes", type=int, nargs="+", help="case counts for every chosen aim (default: the aim's own)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--guard", action="store_true", help="the short sizes the CI guard runs")
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement instead of a table")
    parser.add_argument("--before", type=Path, help="also run agenteval from this checkout (PYTHONPATH) in the same rounds")
    parser.add_argument("--library-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.library_child:
        library_child(args.library_child, args.rounds)
        return
    sizes = GUARD_SIZES if args.guard else FULL_SIZES
    if not args.json:
        extra = (" before: CPU / per case CPU / one case CPU |", "---:|") if args.before else ("", "")
        print("| aim | cases | agenteval s | floor s | ratio, wall | ratio, CPU | per case, wall / CPU | one case s (ours / floor) "
              "| one case, CPU | peak MB (ours / floor) |" + extra[0])
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + extra[1])
    with tempfile.TemporaryDirectory() as tmp:
        for aim in args.aims:
            for size in args.sizes or sizes[aim]:
                if aim == "library":
                    result = library_aim(size, args.rounds, args.before)
                elif aim == "repeat":
                    result = repeat_aim(size, args.rounds, Path(tmp))
                else:
                    result = cli_aim(aim, size, args.rounds, Path(tmp), args.before)
                print(json.dumps(result) if args.json else show(result), flush=True)


if __name__ == "__main__":
    main()
