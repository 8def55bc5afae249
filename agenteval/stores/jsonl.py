"""The default store: one JSON line per case in a results file, and the summary beside it.

The file is opened for appending, unbuffered, and locked against a second run writing it; a
finished case is on disk when `save` returns. `-o -` (a stream) and `-o /dev/null` (not a
regular file) get no lock and no summary file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from agenteval.results import CaseResult, JsonlWriter, ResultsWriteError, read_results, repair_torn_tail
from agenteval.stores.base import RunStart, Store, StoreError


def summary_path(results: Path) -> Path:
    """`run.jsonl` -> `run.summary.json`."""
    name = results.name[: -len(".jsonl")] if results.name.endswith(".jsonl") else results.name
    return results.with_name(name + ".summary.json")


class JsonlStore(Store):
    """Results in a JSONL file at `path`, or written to `stream` (a binary stream such as stdout)."""

    def __init__(self, path: Path | None = None, stream: IO[bytes] | None = None) -> None:
        if (path is None) == (stream is None):
            raise ValueError("JsonlStore takes a path or a stream")
        self.path = path
        self.url = str(path) if path is not None else "results"
        self._handle: IO[bytes] | None = None
        self._writer = None if stream is None else JsonlWriter(stream, self.url)
        self.is_file = False  # a regular file: locked, and the summary is written beside it

    def open_run(self, run: RunStart, resume: bool = False) -> str:
        """Open (and lock) the file; with `resume`, the run id of the results already in it."""
        if self.path is None:
            return run.run_id
        self._handle, self.is_file = _open_locked(self.path, resume)
        self._writer = JsonlWriter(self._handle, self.url)
        if not (resume and self.is_file):
            return run.run_id
        repair_torn_tail(self.path)
        for result in read_results(self.path):
            if result.suite != run.suite:
                self.close()
                raise StoreError(
                    f"{self.path} holds results of suite {result.suite!r}, not {run.suite!r}; --resume continues the same suite"
                )
            return result.run_id
        return run.run_id

    def save(self, result: CaseResult) -> None:
        assert self._writer is not None, "open_run first"
        self._writer.write(result)

    def close_run(self, run_id: str, summary: dict[str, Any]) -> None:
        if self.path is None or not self.is_file:
            return
        target = summary_path(self.path)
        try:
            target.write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
        except OSError as exc:
            raise ResultsWriteError(f"cannot write {target}: {exc.strerror or exc}") from None

    def read_run(self, run_id: str) -> Iterator[CaseResult]:
        """The file's results (a results file holds one run)."""
        if self.path is None:
            raise StoreError("results written to a stream cannot be read back")
        return read_results(self.path)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()  # releases the lock
            self._handle = None


def _open_locked(path: Path, resume: bool) -> tuple[IO[bytes], bool]:
    """The results file opened for appending and locked against a second run, and whether it is a
    regular file (`-o /dev/null` is not: no lock, no summary beside it). Raises StoreError."""
    import fcntl
    import stat

    if path.is_dir():
        raise StoreError(f"{path} is a directory; -o takes a file path (e.g. {path / 'results.jsonl'})")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("ab", buffering=0)  # unbuffered: a failed write leaves nothing behind to fail again
    except OSError as exc:
        raise StoreError(f"cannot write results to {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
        return handle, False
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise StoreError(f"{path} is being written by another agenteval run; wait for it, or give another -o") from None
    if not resume and os.fstat(handle.fileno()).st_size:
        handle.close()
        raise StoreError(f"{path} already has results; use --resume to continue it, or another -o")
    return handle, True
