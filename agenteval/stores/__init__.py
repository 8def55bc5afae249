"""Where results are kept: the JSONL file (default) or a SQL store chosen by URL.

`--store sqlite:///runs.db` keeps runs in one SQLite file; `--store postgresql://USER@HOST/DB`
in PostgreSQL (both need the `store` extra). See `agenteval.stores.tables` for the layout.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agenteval.results import CaseResult, read_results
from agenteval.stores.base import RunStart, Store, StoredRun, StoreError
from agenteval.stores.sql import SqlStore

__all__ = ["RunStart", "Store", "StoreError", "StoredRun", "is_store_url", "open_store", "read_source"]


def is_store_url(text: str) -> bool:
    """A store URL (`scheme://...`) rather than a file path or a run id."""
    return "://" in text


def open_store(url: str, base_dir: Path | None = None, environ: Any = None) -> SqlStore:
    """The store at `url` (`${NAME}` read from `environ`, else the environment); a relative SQLite path is relative
    to `base_dir` (default: the current folder), and a SQLite file that cannot be written there is
    opened read-only. Raises StoreError (malformed URL, unknown scheme, missing extra, unreachable
    server, damaged file)."""
    return SqlStore(url, base_dir, environ)


def read_source(source: Path | StoredRun) -> Iterator[CaseResult]:
    """The results of a JSONL file or of a run in a store, streamed; the run's reviews (people's,
    from `agenteval view`: RUN.reviews.jsonl beside a file, the store's reviews table) come along
    as each reviewed cell's `human:review` result."""
    from agenteval.stores.reviews import read_reviews, reviews_path, stored_reviews, with_reviews

    if isinstance(source, StoredRun):
        reviews = stored_reviews(source)
        return iter(with_reviews(source.results(), reviews)) if reviews else source.results()
    reviews = read_reviews(reviews_path(source))
    return iter(with_reviews(read_results(source), reviews)) if reviews else read_results(source)
