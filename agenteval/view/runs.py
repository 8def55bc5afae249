"""Which runs the viewer shows: results files named on the command line, or every run in a folder.

Each run gets a short key for its URLs (its file name without `.jsonl`, made unique), its index
(agenteval.view.index) and, once it has finished, its summary (`.summary.json`, the same file
`history` reads). Runs that appear in a folder while the viewer is open are picked up.

With a SQL store (`--store URL`), each of its runs is streamed from the store into a snapshot file
when the runs are listed, and read from there like any other; reviews of it are kept in the store
(agenteval.stores.reviews.store_review) as well as beside the snapshot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agenteval.stores.jsonl import summary_path
from agenteval.results import dump_line
from agenteval.stores.reviews import SUFFIX, ReviewError, append_review, read_reviews, reviews_path, store_review, stored_reviews
from agenteval.view.index import RunIndex


OPEN_WAIT = 0.3
"""Seconds a page waits for a run's index before it is shown with the cases read so far."""


class SourceError(ValueError):
    """A path given to `agenteval view` that is neither a results file nor a folder of them."""


@dataclass
class Run:
    key: str
    path: Path
    index: RunIndex
    store: Any = None  # a run in a SQL store: `path` is a snapshot of it, reviews go to the store too
    run_id: str | None = None

    def save_review(self, record: dict[str, Any]) -> dict[str, Any]:
        """Keep a review: beside the results file, and in the store for a run of a store."""
        if self.store is not None:
            review = store_review(self.store, self.run_id, record)
            record = {key: value for key, value in review.items() if key != "time"}
        return append_review(reviews_path(self.path), record)

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
            return read_reviews(reviews_path(self.path)), None
        except ReviewError as exc:
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
        """Each run of the store, as a snapshot file written when the run is first listed (its
        results streamed from the store, its summary, and the reviews kept in it)."""
        import tempfile

        if self._snapshots is None:
            self._snapshots = tempfile.TemporaryDirectory(prefix="agenteval-view-")
        for row in self.store.history_rows(None, None):  # no LIMIT
            run_id = str(row["run_id"])
            path = Path(self._snapshots.name) / (re.sub(r"[^A-Za-z0-9._-]+", "-", run_id) + ".jsonl")
            if path.resolve() in self._by_path:
                continue
            results = []
            with path.open("wb") as out:
                for result in self.store.read_run(run_id):
                    out.write(dump_line(result))
                    if any(e.name == "human:review" for e in result.evaluator_results):
                        results.append(result)
            summary = self.store.summary(run_id)
            if isinstance(summary, dict) and summary.get("counts"):
                summary_path(path).write_bytes(orjson.dumps(summary))
            reviews = stored_reviews(results)
            if reviews:
                reviews_path(path).write_bytes(b"".join(orjson.dumps(review) + b"\n" for review in reviews))
            self._add(path, store=self.store, run_id=run_id)

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
            run.index.follow(OPEN_WAIT)
        return run
