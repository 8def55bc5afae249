"""Which runs the viewer shows: results files named on the command line, or every run in a folder.

Each run gets a short key for its URLs (its file name without `.jsonl`, made unique), its index
(agenteval.view.index) and, once it has finished, its summary (`.summary.json`, the same file
`history` reads). Runs that appear in a folder while the viewer is open are picked up.

With a SQL store (`--store URL`), each of its runs is streamed from the store into a snapshot file
when the runs are listed, and read from there like any other. A run the store is still being
written into is read on (`Run.sync`, at most every SYNC_EVERY seconds): the results saved since are
appended to its snapshot, which then grows on the page as a results file does, and its summary is
written beside it once the run has one. Reviews of a store's run are kept in the store's reviews
table (agenteval.stores.reviews.store_review) and read from there.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agenteval.stores.jsonl import summary_path
from agenteval.results import dump_line
from agenteval.stores.base import StoredRun, StoreError
from agenteval.stores.reviews import SUFFIX, ReviewError, append_review, read_reviews, reviews_path, store_review, stored_reviews
from agenteval.view.index import RunIndex


OPEN_WAIT = 0.3
"""Seconds a page waits for a run's index before it is shown with the cases read so far."""
COPY_LINES = 1000
"""Results a store's run is copied into its snapshot by, so its page shows them as they come."""
SYNC_EVERY = 0.5
"""Seconds between two looks at a store for a run still being written into it."""


class SourceError(ValueError):
    """A path given to `agenteval view` that is neither a results file nor a folder of them."""


@dataclass
class Run:
    key: str
    path: Path
    index: RunIndex
    store: Any = None  # a run in a SQL store: `path` is a snapshot of it, its reviews are in the store
    run_id: str | None = None
    known: set[tuple[str, str, int]] | None = None  # a store's run still being written: what the snapshot holds
    synced: float = field(default=0.0)
    newest: Any = None  # the latest finishing time among the results the snapshot holds (a datetime)
    problem: str | None = None  # the store could not be read on
    copying: Any = None  # the thread copying a store's run into its snapshot

    def save_review(self, record: dict[str, Any]) -> dict[str, Any]:
        """Keep a review: beside the results file, or in the store for a run of a store."""
        if self.store is not None:
            try:
                return store_review(self.store, str(self.run_id), record)
            except StoreError as exc:
                raise ReviewError(str(exc)) from None
        return append_review(reviews_path(self.path), record)

    @property
    def loading(self) -> bool:
        """Being copied from its store, or indexed: the page shows what is read so far."""
        return not self.index.caught_up or (self.copying is not None and self.copying.is_alive())

    def copy(self) -> None:
        """Stream the run from the store into its snapshot (in a background thread), then its summary
        when it has finished, or else what `sync` needs to read on."""
        from agenteval.stores.sql import cell_column

        try:
            summary = self.store.summary(self.run_id)  # before the results: a run that has one has saved them all
            finished = isinstance(summary, dict) and bool(summary.get("counts"))
            keys: set[tuple[str, str, int]] = set()
            newest = None
            with self.path.open("ab") as out:
                lines = []
                for result in self.store.read_run(self.run_id):
                    lines.append(dump_line(result))
                    if not finished:
                        keys.add((result.case_id, cell_column(result.target, result.prompt), result.repetition))
                        newest = _newest(newest, [result])
                    if len(lines) >= COPY_LINES:
                        out.write(b"".join(lines))
                        out.flush()
                        lines = []
                out.write(b"".join(lines))
        except StoreError as exc:
            self.problem = str(exc)
            return
        if finished:
            summary_path(self.path).write_bytes(orjson.dumps(summary))
        else:
            self.newest, self.synced, self.known = newest, time.monotonic(), keys

    def sync(self, force: bool = False) -> None:
        """A store's run still being written: append the results saved since to the snapshot, and
        its summary once it has one (then it is finished and never looked at again)."""
        if self.known is None or (not force and time.monotonic() - self.synced < SYNC_EVERY):
            return
        self.synced = time.monotonic()
        from agenteval.stores.sql import cell_column

        try:
            summary = self.store.summary(self.run_id)
            added = self.store.results_except(self.run_id, self.known, self.newest)
        except StoreError as exc:
            self.problem = str(exc)
            return
        self.problem = None
        if added:
            with self.path.open("ab") as out:
                out.write(b"".join(dump_line(result) for result in added))
        self.known.update((result.case_id, cell_column(result.target, result.prompt), result.repetition) for result in added)
        self.newest = _newest(self.newest, added)
        if isinstance(summary, dict) and summary.get("counts"):
            summary_path(self.path).write_bytes(orjson.dumps(summary))
            self.known = None

    def summary(self) -> dict[str, Any] | None:
        """The run's summary when it has finished; None while it is being written (or was killed)."""
        try:
            data = orjson.loads(summary_path(self.path).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        return data if isinstance(data, dict) and isinstance(data.get("counts"), dict) else None

    def reviews(self) -> tuple[list[dict[str, Any]], str | None]:
        """The run's reviews, and a problem reading them (shown on the page) or None."""
        try:
            if self.store is not None:
                return stored_reviews(StoredRun(self.store, str(self.run_id))), None
            return read_reviews(reviews_path(self.path)), None
        except (ReviewError, StoreError) as exc:
            return [], str(exc)


class Runs:
    """The runs of the given files and folders, found again when a folder changes."""

    def __init__(self, sources: list[Path], store: Any = None) -> None:
        for source in sources:
            if not source.exists():
                raise SourceError(f"{source}: no such file or folder")
            if source.is_file() and not source.name.endswith(".jsonl"):
                raise SourceError(f"{source}: not a results file (.jsonl) or a folder of them")
        self.sources = sources
        self.store = store
        self._by_path: dict[Path, Run] = {}
        self._by_key: dict[str, Run] = {}
        self._snapshots: Any = None

    def _files(self) -> list[Path]:
        found: list[Path] = []
        for source in self.sources:
            if source.is_dir():
                found += sorted(path for path in source.glob("*.jsonl") if not path.name.endswith(SUFFIX) and not path.name.startswith("."))
            else:
                found.append(source)
        return found

    def _store_runs(self) -> None:
        """Each run of the store, as a snapshot file copied from the store in the background when the
        run is first listed (`Run.copy`: pages show what is copied so far); a run still being
        written is then read on."""
        import tempfile

        if self._snapshots is None:
            self._snapshots = tempfile.TemporaryDirectory(prefix="agenteval-view-")
        started = []
        for row in self.store.history_rows(None, None):  # no LIMIT
            run_id = str(row["run_id"])
            path = Path(self._snapshots.name) / (re.sub(r"[^A-Za-z0-9._-]+", "-", run_id) + ".jsonl")
            known = self._by_path.get(path.resolve())
            if known is not None:
                known.sync()
                continue
            path.write_bytes(b"")
            self._add(path, store=self.store, run_id=run_id)
            run = self._by_path[path.resolve()]
            run.copying = threading.Thread(target=run.copy, name=f"copy {run_id}", daemon=True)
            run.copying.start()
            started.append(run.copying)
        deadline = time.monotonic() + OPEN_WAIT
        for thread in started:  # a small run is listed whole
            thread.join(max(0.0, deadline - time.monotonic()))

    def _add(self, path: Path, store: Any = None, run_id: str | None = None) -> None:
        base = re.sub(r"[^A-Za-z0-9._-]+", "-", path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.name) or "run"
        key, number = base, 2
        while key in self._by_key:
            key, number = f"{base}-{number}", number + 1
        run = Run(key, path, RunIndex(path), store, run_id)
        self._by_path[path.resolve()] = run
        self._by_key[key] = run

    def all(self) -> list[Run]:
        if self.store is not None:
            self._store_runs()
        for path in self._files():
            if path.resolve() not in self._by_path:
                self._add(path)
        return list(self._by_key.values())

    def get(self, key: str) -> Run | None:
        if key not in self._by_key:
            self.all()
        run = self._by_key.get(key)
        if run is not None:
            run.sync()
            run.index.complete = run.summary() is not None
            run.index.follow(OPEN_WAIT)
        return run


def _newest(newest: Any, results: list[Any]) -> Any:
    """The latest finishing time of `newest` and the results' timestamps (ISO 8601 text)."""
    from datetime import datetime

    for result in results:
        try:
            moment = datetime.fromisoformat(result.timestamp) if result.timestamp else None
        except ValueError:
            continue
        if moment is not None and moment.tzinfo is not None and (newest is None or moment > newest):
            newest = moment
    return newest
