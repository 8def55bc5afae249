"""The response cache: one SQLite file, keyed by a hash of the full request.

The key covers the URL, the model, the messages and every option sent, never the headers (which
carry keys), so a cache file holds no secret and no machine path and can be committed next to a
suite to replay it offline. The file is created on the first write only; a run that only reads
it (a replay) leaves it untouched.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import zlib
from pathlib import Path
from typing import Any

import orjson

CACHE_FILE = "responses.sqlite"
DEFAULT_DIR = Path(".agenteval") / "cache"


class CacheError(Exception):
    """The cache file exists but cannot be used."""


def request_key(url: str, body: Any, variant: int = 0) -> str:
    """The key of a request: sha256 of the URL and the JSON body with sorted keys (plus a repetition)."""
    identity = {"url": url, "body": body, **({"repetition": variant} if variant else {})}
    return hashlib.sha256(orjson.dumps(identity, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


class ResponseCache:
    """Thread-safe get/put of JSON records (zlib-compressed); writes use WAL while the run lasts, reverted on close."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._wrote = False
        if path.exists():
            try:
                self._connect().execute("SELECT count(*) FROM responses").fetchone()
            except sqlite3.DatabaseError as exc:
                self.close()
                raise CacheError(f"{path} is not a readable response cache ({exc}); delete it or run with --no-cache") from None

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        return self._db

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            if self._db is None and not self.path.exists():
                return None
            row = self._connect().execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        return orjson.loads(zlib.decompress(row[0])) if row else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        value = zlib.compress(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS), 6)
        with self._lock:
            if not self._wrote:
                self._prepare_for_writes()
            assert self._db is not None
            self._db.execute("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, value))

    def _prepare_for_writes(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = self._connect()
        db.execute("PRAGMA page_size = 1024")  # small pages, free ones given back: a committed cache stays a few KB
        db.execute("PRAGMA auto_vacuum = FULL")
        db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        self._wrote = True

    def close(self) -> None:
        with self._lock:
            if self._db is None:
                return
            if self._wrote:
                self._db.execute("PRAGMA journal_mode = DELETE")  # fold the WAL back: one self-contained file
            self._db.close()
            self._db = None
