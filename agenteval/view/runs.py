"""Which runs the viewer shows: results files named on the command line, or every run in a folder.

Each run gets a short key for its URLs (its file name without `.jsonl`, made unique), its index
(agenteval.view.index) and, once it has finished, its summary (`.summary.json`, the same file
`history` reads). Runs that appear in a folder while the viewer is open are picked up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agenteval.stores.jsonl import summary_path
from agenteval.stores.reviews import SUFFIX, ReviewError, read_reviews, reviews_path
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

    def __init__(self, sources: list[Path]) -> None:
        for source in sources:
            if not source.exists():
                raise SourceError(f"{source}: no such file or folder")
            if source.is_file() and not source.name.endswith(".jsonl"):
                raise SourceError(f"{source}: not a results file (.jsonl) or a folder of them")
        self.sources = sources
        self._by_path: dict[Path, Run] = {}
        self._by_key: dict[str, Run] = {}

    def _files(self) -> list[Path]:
        found: list[Path] = []
        for source in self.sources:
            if source.is_dir():
                found += sorted(path for path in source.glob("*.jsonl") if not path.name.endswith(SUFFIX) and not path.name.startswith("."))
            else:
                found.append(source)
        return found

    def all(self) -> list[Run]:
        for path in self._files():
            if path.resolve() not in self._by_path:
                base = re.sub(r"[^A-Za-z0-9._-]+", "-", path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.name) or "run"
                key, number = base, 2
                while key in self._by_key:
                    key, number = f"{base}-{number}", number + 1
                run = Run(key, path, RunIndex(path))
                self._by_path[path.resolve()] = run
                self._by_key[key] = run
        return list(self._by_key.values())

    def get(self, key: str) -> Run | None:
        if key not in self._by_key:
            self.all()
        run = self._by_key.get(key)
        if run is not None:
            run.index.follow(OPEN_WAIT)
        return run
