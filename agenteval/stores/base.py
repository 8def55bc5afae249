"""The Store interface: where a run's results go as they finish, and how they are read back.

The run loop calls it in this order: `open_run` (or continue one, for --resume), `save` once per
finished case, `close_run` with the summary, then `close`. A store keeps nothing per case in
memory: every result is written when it is saved and read back as a stream.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agenteval.results import CaseResult, ResultsFileError


class StoreError(ResultsFileError):
    """The store cannot be opened or read, or holds no such run: one line for the user, exit 2."""


@dataclass(frozen=True, slots=True)
class RunStart:
    """What a store records when a run begins."""

    run_id: str
    suite: str
    started_at: datetime
    agenteval_version: str
    config: dict[str, Any] = field(default_factory=dict)  # the resolved suite, secrets redacted
    # The run's (target, prompt) cells (agenteval.cells), so a store that can hold only one per
    # run refuses the run before it starts; () for a run of the one unnamed cell.
    cells: tuple[tuple[str | None, str | None], ...] = ()
    # What --resume compares (agenteval.resume): the suite, cases and selection, hashed.
    fingerprint: dict[str, Any] | None = None


class Store(ABC):
    """A destination for results other than the default JSONL file (`--store URL`, `store:`)."""

    url: str  # for messages: the password, if any, is hidden

    @abstractmethod
    def open_run(self, run: RunStart, resume: bool = False) -> str:
        """Record a new run, or with `resume` find the newest run of the same suite; its run id.
        Raises StoreError."""

    @abstractmethod
    def save(self, result: CaseResult) -> None:
        """Write one finished case with its evaluator results. Raises ResultsWriteError."""

    @abstractmethod
    def close_run(self, run_id: str, summary: dict[str, Any]) -> None:
        """Record the run's end and its summary (counts, per-evaluator and per-field figures).
        Raises ResultsWriteError."""

    @abstractmethod
    def read_run(self, run_id: str) -> Iterator[CaseResult]:
        """Every case result of a run, streamed. Raises StoreError for an unknown run."""

    def recorded_fingerprint(self, run_id: str) -> Any:
        """The fingerprint a run recorded when it began (agenteval.resume), or None (none recorded)."""
        return None

    def close(self) -> None:
        """Release connections."""


def checked_store(store: Store) -> Store:
    """A Store given as an object, checked before a run uses it: it must name where its results go
    with a non-empty text `url` (messages, the summary and `history` show it)."""
    url = getattr(store, "url", None)
    if not isinstance(url, str) or not url.strip():
        kind = f"{type(store).__module__}.{type(store).__qualname__}"
        got = "none" if url is None else repr(url)[:60]
        raise StoreError(
            f"{kind} has no `url` (got {got}): a Store names where its results go with a non-empty text `url`, "
            "e.g. `self.url = \"s3://bucket/evals\"` in its __init__ (docs/stores.md, Writing your own store)"
        )
    return store


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A run in a store, given where a results file could be (`report`, `compare`)."""

    store: Store
    run_id: str

    def __str__(self) -> str:
        return f"run {self.run_id} in {self.store.url}"

    def results(self) -> Iterator[CaseResult]:
        return self.store.read_run(self.run_id)
