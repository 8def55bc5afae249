"""Finished results read back (`report`, `compare`): many files, such as the shards of one run, each case once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from typing import Any

import orjson

from agenteval.results import MAX_CELLS, CaseResult
from agenteval.stores import StoredRun, read_source
from agenteval.stores.jsonl import summary_path


class ResultInputs:
    """Streams the results of several files; a case seen before (same suite and case id) is skipped and counted.

    With `repetitions`, each `--repeat` run of a case is its own result (same suite, case id and
    repetition is a duplicate). Only the case keys are remembered, never the results, so memory
    grows with ids alone.
    """

    def __init__(self, paths: Sequence[Path | StoredRun], repetitions: bool = False) -> None:
        self.paths = list(paths)
        self.repetitions = repetitions
        self.suites: list[str] = []
        self.run_ids: list[str] = []
        self.count = 0
        self.duplicates = 0
        self._first_duplicate: tuple[str, int, int] | None = None  # case id, index of its first file, of the repeat

    def __iter__(self) -> Iterator[CaseResult]:
        seen: dict[str, int] = {}
        for index, path in enumerate(self.paths):
            for result in read_source(path):  # a file, or a run in a store
                key = f"{result.suite}\x00{result.case_id}"
                if result.target is not None or result.prompt is not None:  # a matrix run: each cell runs the case
                    key += f"\x00{result.target or ''}\x00{result.prompt or ''}"
                if self.repetitions and result.repetition:
                    key += f"\x00{result.repetition}"
                first = seen.get(key)
                if first is not None:
                    self.duplicates += 1
                    if self._first_duplicate is None:
                        self._first_duplicate = (result.case_id, first, index)
                    continue
                seen[key] = index
                self.count += 1
                if result.suite not in self.suites:
                    self.suites.append(result.suite)
                if result.run_id not in self.run_ids:
                    self.run_ids.append(result.run_id)
                yield result

    def cell_order(self) -> list[tuple[str | None, str | None]]:
        """The cells in the order the suite declares them, as the run's summary lists them (beside
        a results file, or in the store), so `report` orders cells and compares them in the run's
        direction, not in the order results finished; [] when no summary of these results says."""
        order: dict[tuple[str | None, str | None], None] = {}
        for source in self.paths:
            for names in _summary_cells(source):
                order.setdefault(names, None)
        return list(order)

    def describe_runs(self) -> str:
        """The run ids, or how many runs when there are many (e.g. the shards of a large run)."""
        return ", ".join(self.run_ids) if len(self.run_ids) <= 3 else f"{len(self.run_ids)} runs"

    def warning(self) -> str | None:
        """One line naming the first duplicate, or None when every case appeared once."""
        if self._first_duplicate is None:
            return None
        case_id, first, again = self._first_duplicate
        one, other = self.paths[first], self.paths[again]
        if first == again:
            where = f"twice in {one}"
        elif isinstance(one, Path) and isinstance(other, Path) and one.resolve() == other.resolve():
            where = f"in {one}, which is given twice"
        else:
            where = f"in {one} and again in {other}"
        return (
            f"{self.duplicates} duplicate result{'s' if self.duplicates != 1 else ''} skipped "
            f"(e.g. case {case_id!r} {where}); each case is counted once"
        )


def _summary_cells(source: Path | StoredRun) -> list[tuple[str | None, str | None]]:
    """(target, prompt) of each cell the run's own summary lists, when that summary is of the run
    whose results these are; [] otherwise (no summary, another run's, or not a summary at all)."""
    summary: Any = None
    if isinstance(source, StoredRun):
        read = getattr(source.store, "summary", None)
        summary = read(source.run_id) if callable(read) else None
        run_id = source.run_id
    else:
        try:
            summary = orjson.loads(summary_path(source).read_bytes())
            with source.open("rb") as handle:
                run_id = orjson.loads(handle.readline()).get("run_id")
        except (OSError, orjson.JSONDecodeError, AttributeError):
            return []
    if not isinstance(summary, dict) or summary.get("run_id") != run_id or not isinstance(summary.get("cells"), list):
        return []
    found = []
    for cell in summary["cells"][:MAX_CELLS]:
        names = (cell.get("target"), cell.get("prompt")) if isinstance(cell, dict) else None
        if names is not None and all(name is None or type(name) is str for name in names):
            found.append(names)
    return found
