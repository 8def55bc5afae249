"""The response cache: one SQLite file, keyed by a hash of the full request.

The key covers the URL, the model, the messages and every option sent, never the headers (which
carry keys), so a cache file holds no secret and no machine path and can be committed next to a
suite to replay it offline. The file is created on the first write only; a run that only reads
it (a replay) leaves it untouched.

The cache is an optimisation, so once it is open its failures never fail a run: a record that
cannot be read (another version's, a damaged one) is a miss, a write that fails (a full disk, a
file another run keeps locked) is one warning on stderr and no more writes, and closing a cache
that another run still has open leaves the folding of its WAL to that run.
"""

from __future__ import annotations

import hashlib
import queue
import sqlite3
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import orjson

CACHE_FILE = "responses.sqlite"
DEFAULT_DIR = Path(".agenteval") / "cache"
LOCK_WAIT_S = 10  # how long one write waits for another process's write to finish
READERS = 8  # connections reading the file at once: a lookup borrows one, so threads never queue on one lock
READER_CACHE_KIB = 256  # each one's page cache: the eight together hold what SQLite's default gives one (2 MiB)
BATCH_WAIT_S = 0.05  # how long the writer, woken by a put, lets more puts join its transaction
KNOWN_KEYS = 100_000  # a cache empty when opened knows its keys (every other one is a miss) up to this many
AHEAD_ROWS = 256  # a lookup that reads the file reads up to this many of the records stored after its own too
AHEAD_BYTES = 8 << 20  # ... at most this many bytes of them (compressed): memory stays bounded whatever the replies' size
AHEAD_WORTH = 8  # read ahead again while one record in this many read ahead was asked for; else once in AHEAD_PROBE lookups
AHEAD_PROBE = 64


class CacheError(Exception):
    """The cache file exists but cannot be used, or its folder cannot be one."""


def request_key(url: str, body: Any, variant: int = 0) -> str:
    """The key of a request: sha256 of the URL and the JSON body with sorted keys (plus a repetition)."""
    identity = {"url": url, "body": body, **({"repetition": variant} if variant else {})}
    return hashlib.sha256(orjson.dumps(identity, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


def compress(data: bytes) -> bytes:
    """`zlib.compress(data, 6)` with a 4 KiB window and a 16 KiB hash table: the same zlib format and
    about the same size for records of this kind, in 5 µs instead of 40 (the default state is 256 KiB,
    allocated afresh for each record)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 12, 5)
    return packer.compress(data) + packer.flush()


def _folder_problem(folder: Path) -> str | None:
    """Why `folder` cannot hold the cache: it, or the nearest of its parents that exists, is not a folder."""
    for place in (folder, *folder.parents):
        if place.exists():
            return None if place.is_dir() else f"{place} is a file, not a folder"
    return None


class ResponseCache:
    """Thread-safe get/put of JSON records (zlib-compressed); writes use WAL while the run lasts, folded back on close.

    `put` only queues a record: one writer thread stores what is queued, a batch per transaction,
    so the threads sending requests never wait on the disk (nor on each other's writes); only a
    put to an idle writer wakes it, and it then gathers puts for BATCH_WAIT_S, so a run wakes it
    a few times a second rather than once a reply; `get`
    reads a queued record as a stored one, and the file through connections of its own (WAL lets
    them read while the writer writes), borrowed from a pool of READERS: with one connection behind
    one lock, a lookup's thread held the lock while it waited for the GIL after SQLite's read, and
    the other request threads queued behind it for milliseconds per request; `close` stores everything queued before it folds.
    A cache that held nothing when it was opened (a first run) remembers the keys it stores, up to
    KNOWN_KEYS, and answers a lookup of any other key as a miss without reading the file (records
    another process stores meanwhile are not looked for: at worst a request is sent again).
    A re-run asks for its records in about the order the run before stored them, so a lookup that
    reads the file also reads the records stored after its own (AHEAD_ROWS, AHEAD_BYTES) and the
    next lookups take theirs from those: one query for hundreds of replies instead of one each.
    While too few of them are asked for (another order: a sample, another suite's cases) it stops
    reading ahead but for a probe now and then.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()  # the connection that writes (and folds)
        self._db: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()  # guards _readers_made and _generation
        self._readers: queue.SimpleQueue[tuple[int, sqlite3.Connection]] = queue.SimpleQueue()  # idle reading connections
        self._readers_made = 0  # reading connections of this generation, idle or lent
        self._generation = 0  # close() starts a new one: a connection of an older one is closed when given back
        self._readable = False  # the file holds the table: it did when opened, or the writer has stored in it
        self._known: set[str] | None = set()  # empty when opened: the keys stored since (None: look every key up)
        self._queued: dict[str, bytes] = {}  # key -> compressed record, put and not yet stored
        self._queue = threading.Condition()  # guards _queued, _writer and _flushing
        self._writer: threading.Thread | None = None
        self._flushing = False  # close() waits for the writer to store what is queued and end
        self._idle = False  # the writer waits for a put to wake it
        self._wrote = False
        self._broken = False  # a write failed: no more writes this run
        self._unreadable = False  # the file was locked or damaged: no more reads this run (each would wait)
        self._warned: set[str] = set()
        self._ahead: dict[str, bytes] = {}  # key -> compressed record, read ahead and not yet asked for
        self._ahead_lock = threading.Lock()  # guards _ahead and the counts below
        self._ahead_read = self._ahead_used = 0  # records read ahead, and of them asked for
        self._puts = 0  # puts and stored batches so far: records read ahead while one happened may be older, and are not kept
        self._lookups = 0  # lookups that read the file while reading ahead did not pay (every AHEAD_PROBE-th reads ahead)
        problem = _folder_problem(path.parent)
        if problem is None and path.exists() and not path.is_file():
            problem = f"{path} is not a file"
        if problem:
            raise CacheError(f"cannot use {path.parent} for the response cache: {problem} (give --cache-dir a folder, or --no-cache)")
        if path.exists():
            try:
                (count,) = self._connect().execute("SELECT count(*) FROM responses").fetchone()
            except sqlite3.DatabaseError as exc:
                self.close()
                raise CacheError(f"{path} is not a readable response cache ({exc}); delete it or run with --no-cache") from None
            self._readable = True
            if count:
                self._known = None

    def _connect(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=LOCK_WAIT_S)
        return self._db

    def get(self, key: str) -> dict[str, Any] | None:
        """The record stored under `key`; None when there is none or it cannot be read (a miss)."""
        queued = self._queued.get(key)  # (put, not yet stored: read as stored)
        if queued is not None:
            return orjson.loads(zlib.decompress(queued))
        known = self._known
        if self._unreadable or not self._readable or (known is not None and key not in known):
            return None
        with self._ahead_lock:
            value = self._ahead.pop(key, None)
            if value is not None:
                self._ahead_used += 1
        try:
            if value is None:
                puts = self._puts
                generation, reader = self._borrow()
                try:
                    row = reader.execute("SELECT rowid, value FROM responses WHERE key = ?", (key,)).fetchone()
                    ahead = self._read_ahead(reader, row[0]) if row and self._reads_ahead() else None
                finally:
                    self._give_back(generation, reader)
                if ahead is not None:
                    with self._ahead_lock:
                        if self._puts == puts:  # (a record put before, and still queued, is newer than the one read)
                            ahead = {name: record for name, record in ahead.items() if name not in self._queued}
                            self._ahead, self._ahead_read = ahead, self._ahead_read + len(ahead)
                if not row or not isinstance(row[1], bytes):
                    return None
                value = row[1]
            record = orjson.loads(zlib.decompress(value))
        except (sqlite3.Error, zlib.error, orjson.JSONDecodeError, OSError, MemoryError) as exc:
            if isinstance(exc, (sqlite3.OperationalError, sqlite3.DatabaseError, OSError)) and not isinstance(exc, sqlite3.DataError):
                self._unreadable = True
            self._warn("read", f"a record could not be read ({type(exc).__name__}: {exc}); it counts as a miss")
            return None
        return record if isinstance(record, dict) else None

    def _reads_ahead(self) -> bool:
        """Whether this lookup reads ahead: while one record in AHEAD_WORTH read ahead was asked for, else once in AHEAD_PROBE."""
        with self._ahead_lock:
            if self._ahead_used * AHEAD_WORTH >= self._ahead_read:
                return True
            self._lookups += 1
            return self._lookups % AHEAD_PROBE == 0

    def _read_ahead(self, reader: sqlite3.Connection, rowid: int) -> dict[str, bytes]:
        """The records stored after row `rowid`, in the order they were stored, up to AHEAD_ROWS and AHEAD_BYTES."""
        ahead: dict[str, bytes] = {}
        size = 0
        for key, value in reader.execute("SELECT key, value FROM responses WHERE rowid > ? ORDER BY rowid LIMIT ?", (rowid, AHEAD_ROWS)):
            if not isinstance(value, bytes):
                continue  # (a damaged record: looked up by its key, and a miss there)
            size += len(value)
            if size > AHEAD_BYTES:
                break
            ahead[key] = value
        return ahead

    def _borrow(self) -> tuple[int, sqlite3.Connection]:
        """An idle reading connection, a new one while there are fewer than READERS, else the next one given back."""
        try:
            return self._readers.get_nowait()
        except queue.Empty:
            pass
        with self._read_lock:
            generation = self._generation
            make = self._readers_made < READERS
            if make:
                self._readers_made += 1
        if not make:
            try:
                return self._readers.get(timeout=1.0)
            except queue.Empty:  # (close() retired the one this thread waited for: one may be made now)
                return self._borrow()
        try:
            reader = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=LOCK_WAIT_S)
            reader.execute(f"PRAGMA cache_size = -{READER_CACHE_KIB}")
            return generation, reader
        except BaseException:
            with self._read_lock:
                if self._generation == generation:
                    self._readers_made -= 1
            raise

    def _give_back(self, generation: int, reader: sqlite3.Connection) -> None:
        if generation == self._generation:
            self._readers.put((generation, reader))
            return
        try:  # lent before close(): closed now
            reader.close()
        except sqlite3.Error:
            pass

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Store `record`; a failure is a warning (once) and the end of writes for this run, never an error."""
        if self._broken:
            return
        try:
            value = compress(orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS))
        except (orjson.JSONEncodeError, MemoryError) as exc:  # this reply only (a lone surrogate in it): not stored
            self._warn("unstorable", f"a reply could not be stored ({type(exc).__name__}: {exc}); it is asked for again next run")
            return
        with self._queue:
            self._queued[key] = value
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_queued, name="agenteval-cache", daemon=True)
                self._writer.start()
            elif self._idle:
                self._queue.notify()
        with self._ahead_lock:  # (after queueing: records read ahead before lose the old one; a read ahead under way is not kept)
            self._ahead.pop(key, None)
            self._puts += 1

    def _write_queued(self) -> None:
        """The writer thread: stores what `put` queued, all of it in one transaction, until `close` asks it to end."""
        while True:
            with self._queue:
                while not self._queued and not self._flushing:
                    self._idle = True
                    self._queue.wait()
                    self._idle = False
                if not self._queued:  # closing, and everything is stored
                    self._writer = None
                    return
                if not self._flushing:
                    self._queue.wait(BATCH_WAIT_S)  # (close's notify ends it early)
                batch = list(self._queued.items())
            self._store(batch)
            with self._ahead_lock:  # (records read ahead while the batch was stored may be older than it: not kept)
                self._puts += 1
            with self._queue:
                for key, value in batch:
                    if self._queued.get(key) is value:
                        del self._queued[key]

    def _store(self, batch: list[tuple[str, bytes]]) -> None:
        if self._broken:
            return
        try:
            with self._lock:
                if not self._wrote:
                    self._prepare_for_writes()
                assert self._db is not None
                self._db.execute("BEGIN")
                try:
                    self._db.executemany("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", batch)
                    self._db.execute("COMMIT")
                    known = self._known
                    if known is not None:  # (before the batch leaves the queue: a key is always in one or the other)
                        if len(known) + len(batch) > KNOWN_KEYS:
                            self._known = None
                        else:
                            known.update(key for key, _ in batch)
                    self._readable = True
                except BaseException:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    raise
        except (sqlite3.Error, OSError, MemoryError) as exc:
            self._broken = True
            self._warn("write", f"a reply could not be stored ({type(exc).__name__}: {exc}); the run goes on without storing more")

    def _flush(self) -> None:
        """Wait until every queued record is stored (or storing failed) and the writer has ended."""
        with self._queue:
            writer = self._writer
            self._flushing = True
            self._queue.notify_all()
        try:
            if writer is not None and writer is not threading.current_thread():
                writer.join()
        finally:
            with self._queue:
                self._flushing = False

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
        """Fold the WAL back into the file (one self-contained file to commit) and close; reopened on
        the next use. A run's workers on Ray write WAL the driver never saw, so the driver folds a
        WAL it finds too. When another run still has the file open the fold is left to it: closing
        never waits for it and never fails."""
        self._flush()
        with self._read_lock:  # (closed first: the fold needs the file to itself)
            self._generation += 1
            self._readers_made = 0
        with self._ahead_lock:
            self._ahead = {}
        while True:
            try:
                _, reader = self._readers.get_nowait()
            except queue.Empty:
                break
            try:
                reader.close()
            except sqlite3.Error:
                pass
        with self._lock:
            db, self._db, wrote = self._db, None, self._wrote
            self._wrote = False
            wal = self.path.with_name(self.path.name + "-wal")
            try:
                if db is None and wal.exists():
                    db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=0)
                if db is not None and (wrote or wal.exists()):
                    db.execute("PRAGMA busy_timeout = 0")
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                    db.execute("PRAGMA journal_mode = DELETE")
            except (sqlite3.Error, OSError):
                pass  # another process has it open: the last one to close folds it
            finally:
                if db is not None:
                    try:
                        db.close()
                    except sqlite3.Error:
                        pass

    def _warn(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            print(f"warning: response cache {self.path}: {message}", file=sys.stderr, flush=True)
