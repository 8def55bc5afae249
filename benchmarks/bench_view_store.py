"""How fast the viewer lists a store holding a big run, and what following a run being written
into a SQL store costs it per look (`Run.sync`,
at most every 0.5 s while a page of the run is open): a SQLite store holding one run of N cases
(a case finishing every 0.1 s), then `SqlStore.results_except` asked for the few new ones.

    python benchmarks/bench_view_store.py [--cases 100000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from agenteval.evaluators.base import EvaluatorResult
from agenteval.results import CaseResult
from agenteval.stores import RunStart, open_store


def best(call, times: int = 3) -> float:
    found = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        found.append(time.perf_counter() - start)
    return min(found)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    cases = parser.parse_args().cases
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    finished = [start + timedelta(milliseconds=100 * i) for i in range(cases)]
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{Path(folder) / 'runs.db'}")
        run_id = store.open_run(RunStart("live", "live", start, "bench"))
        for i in range(cases):
            store.save(CaseResult(run_id, "live", f"c{i:07d}", 1.0, "pass", f"answer {i}", [EvaluatorResult("same", "equals", 1.0, "pass")],
                                  timestamp=finished[i].isoformat()))
        store.flush()
        every = {(f"c{i:07d}", "", 0) for i in range(cases)}
        all_but_five = {(f"c{i:07d}", "", 0) for i in range(cases - 5)}
        rows = [
            ("nothing new", best(lambda: store.results_except(run_id, every, finished[-1]))),
            ("5 new results", best(lambda: store.results_except(run_id, all_but_five, finished[-6]))),
            ("5 new, newest unknown (every key read)", best(lambda: store.results_except(run_id, all_but_five, None))),
        ]
        from agenteval.view.runs import Runs

        started = time.perf_counter()
        runs = Runs([], store=store)
        [run] = runs.all()
        listed = time.perf_counter() - started
        runs.get(run.key)
        opened = time.perf_counter() - started
        shown = len(run.index)
        run.copying.join()
        rows.insert(0, (f"first listing of the store / first open of the run ({shown:,} results shown, the rest copied "
                        f"in the background in {time.perf_counter() - started:.1f} s)", f"{listed:.2f} / {opened:.2f}"))
        store.close()
    print(f"| look, run of {cases:,} cases | s |\n|---|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds if isinstance(seconds, str) else f'{seconds:.3f}'} |")


if __name__ == "__main__":
    main()
