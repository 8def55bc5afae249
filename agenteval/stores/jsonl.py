"""The default store: one JSON line per case in a results file, and the summary beside it.

The file is opened for appending and locked against a second run writing it. Its lines are
handed to the kernel in batches (agenteval.results.JsonlWriter): every 64 KiB, at most 30 ms after
a case finished, and all of them before the file is read, summarised or closed, so Ctrl-C loses
nothing and `kill -9` at most the last 30 ms of finished cases. `-o -` (a stream) gets each line
as it finishes; it and `-o /dev/null` (not a regular file) get no lock and no summary file.

Running the same command twice gives fresh results: when the file holds a finished run, the new
run streams into a hidden file beside it (`.NAME.partial`) and replaces it when the run ends, so
a reader sees the old results or the new ones, never a mix. A file holding an interrupted run is
refused, with the two ways on: `--resume` continues it, `--overwrite` starts again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from agenteval.results import CaseResult, JsonlWriter, ResultsWriteError, dump_summary, read_results, repair_torn_tail
from agenteval.stores.base import RunStart, Store, StoreError


def summary_path(results: Path) -> Path:
    """`run.jsonl` -> `run.summary.json`."""
    name = results.name[: -len(".jsonl")] if results.name.endswith(".jsonl") else results.name
    return results.with_name(name + ".summary.json")


class JsonlStore(Store):
    """Results in a JSONL file at `path`, or written to `stream` (a binary stream such as stdout)."""

    def __init__(self, path: Path | None = None, stream: IO[bytes] | None = None, overwrite: bool = False) -> None:
        if (path is None) == (stream is None):
            raise ValueError("JsonlStore takes a path or a stream")
        self.path = path
        self.url = str(path) if path is not None else "results"
        self._overwrite = overwrite  # start again even over an interrupted run's results
        self._handle: IO[bytes] | None = None
        self._lock: IO[bytes] | None = None  # the old file, locked while a new run replaces it
        self._partial: Path | None = None  # where a replacing run writes until it ends
        self._writer = None if stream is None else JsonlWriter(stream, self.url)
        self.is_file = False  # a regular file: locked, and the summary is written beside it
        self._fingerprint: dict[str, Any] | None = None  # the run's (agenteval.resume), kept in its summary

    def open_run(self, run: RunStart, resume: bool = False) -> str:
        """Open (and lock) the file; with `resume`, the run id of the results already in it."""
        if self.path is None:
            return run.run_id
        self._fingerprint = run.fingerprint
        self._handle, self.is_file = _open_locked(self.path)
        if self.is_file and not resume and os.fstat(self._handle.fileno()).st_size:
            self._replace_later()
        elif self.is_file and not resume:  # a new file: its summary says what --resume must match, even after kill -9
            try:
                self._write_summary({"run_id": run.run_id, "suite": run.suite, "interrupted": True})
            except ResultsWriteError:
                pass  # (a full disk) the run goes on; the summary at its end says it again
        self._writer = JsonlWriter(self._handle, self.url, batched=self.is_file)
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
        if self._writer is not None:
            self._writer.flush()  # every line is in the file before the summary says it is
        if self.path is None or not self.is_file:
            return
        self._write_summary(summary)

    def _write_summary(self, summary: dict[str, Any]) -> None:
        assert self.path is not None
        if self._fingerprint is not None:
            summary = {**summary, "fingerprint": self._fingerprint}
        target = summary_path(self.path)
        try:
            if self._partial is None:
                target.write_bytes(dump_summary(summary))
                return
            fresh = target.with_name(f".{target.name}.partial")
            fresh.write_bytes(dump_summary(summary))
            self._finish_replacing()
            os.replace(fresh, target)
        except OSError as exc:
            raise ResultsWriteError(f"cannot write {target}: {exc.strerror or exc}") from None

    def recorded_fingerprint(self, run_id: str) -> Any:
        """What the summary beside the file recorded (None without one, or from an older version)."""
        if self.path is None:
            return None
        try:
            summary = orjson.loads(summary_path(self.path).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        return summary.get("fingerprint") if isinstance(summary, dict) and summary.get("run_id") == run_id else None

    def _replace_later(self) -> None:
        """The file holds results: a finished run is replaced when this one ends (it goes to a
        partial file until then); an interrupted one is kept for --resume unless overwriting."""
        assert self.path is not None and self._handle is not None
        if not self._overwrite:
            unfinished = _unfinished(self.path)
            if unfinished:
                self.close()
                raise StoreError(
                    f"{self.path} holds an interrupted run ({unfinished}); --resume continues it, --overwrite starts again"
                )
        self._lock, self._partial = self._handle, self.path.with_name(f".{self.path.name}.partial")
        try:
            self._handle = self._partial.open("wb", buffering=0)
        except OSError as exc:
            self.close()
            raise StoreError(f"cannot write results next to {self.path}: {exc.strerror or exc}") from None

    def _finish_replacing(self) -> None:
        """The new results take the old ones' place, in one rename."""
        if self._partial is None or self.path is None:
            return
        partial, self._partial = self._partial, None
        os.replace(partial, self.path)

    def read_run(self, run_id: str) -> Iterator[CaseResult]:
        """The file's results (a results file holds one run)."""
        if self.path is None:
            raise StoreError("results written to a stream cannot be read back")
        if self._writer is not None:
            self._writer.flush()
        return read_results(self.path)

    def close(self) -> None:
        try:
            if self._writer is not None and self._handle is not None:
                self._writer.close()  # the lines still waiting, then the timer stops
        finally:
            self._close_files()

    def _close_files(self) -> None:
        if self._handle is not None:
            self._handle.close()  # releases the lock
            self._handle = None
        if self._partial is not None and self.path is not None:  # ended without a summary: keep what finished
            try:
                self._finish_replacing()
                summary_path(self.path).unlink(missing_ok=True)  # the old run's summary no longer describes the file
            except OSError:
                pass
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _open_locked(path: Path) -> tuple[IO[bytes], bool]:
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
    return handle, True


def _unfinished(path: Path) -> str | None:
    """Why the results in `path` are not a finished run (None when they are): no summary beside
    them, a summary that says the run was interrupted, or one of another run."""
    try:
        summary = orjson.loads(summary_path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return "no summary beside it"
    if isinstance(summary, dict) and summary.get("interrupted") is True and "counts" not in summary:
        return "it stopped before it could write its summary"
    if not isinstance(summary, dict) or summary.get("interrupted") is not False:
        total = _total(summary)
        return f"its summary says it stopped after {total} case{'' if total == 1 else 's'}"
    with path.open("rb") as handle:
        first = handle.readline()
    try:
        run_id = orjson.loads(first).get("run_id")
    except (orjson.JSONDecodeError, AttributeError):
        return "its first line is not a result"
    if run_id != summary.get("run_id"):
        return "its summary is of another run"
    return None


def _total(summary: Any) -> Any:
    counts = summary.get("counts") if isinstance(summary, dict) else None
    return counts.get("total", "?") if isinstance(counts, dict) else "?"
