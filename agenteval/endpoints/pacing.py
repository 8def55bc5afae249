"""Pacing requests to one endpoint: how long to wait before a retry, and how many go at once.

A `Gate` per endpoint bounds requests in flight (a semaphore), spaces their starts to honour a
requests-per-minute limit, and lets a 429/503 with Retry-After hold back every request to that
endpoint, not just the one that was refused.
"""

from __future__ import annotations

import math
import queue
import random
import threading
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

MAX_WAIT_S = 120.0  # the longest backoff sleep before a retry
MAX_RETRY_AFTER_S = 60.0  # the longest pause a server's Retry-After can impose (a longer one is cut to this)


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date), at most
    MAX_RETRY_AFTER_S; None if absent, unreadable or not a finite number (`inf`, `nan`)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return min(MAX_RETRY_AFTER_S, max(0.0, seconds)) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return min(MAX_RETRY_AFTER_S, max(0.0, seconds))


def retry_delay(attempt: int, backoff: float, retry_after: float | None, rng: random.Random) -> float:
    """Seconds before retry number `attempt` (0-based): Retry-After when the server gave one, else
    exponential backoff with jitter (between half and all of backoff * 2**attempt), capped."""
    if retry_after is not None and math.isfinite(retry_after):
        return min(MAX_RETRY_AFTER_S, max(0.0, retry_after) * rng.uniform(1.0, 1.1))
    ceiling = min(MAX_WAIT_S, backoff * 2**attempt)
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


class Gate:
    """At most `concurrency` requests in flight, starts spaced by 60/`rate_limit` seconds.

    A slot is a token taken from a queue and put back (both in C): a Python semaphore and a
    generator context manager cost more CPU per request than the rest of the pacing."""

    def __init__(self, concurrency: int, rate_limit: float | None) -> None:
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(concurrency):
            self._tokens.put(None)
        self._interval = 60.0 / rate_limit if rate_limit else 0.0
        self._lock = threading.Lock()
        self._next_start = 0.0

    def slot(self) -> Gate:
        """`with gate.slot():` holds one of the slots for the block."""
        return self

    def __enter__(self) -> None:
        self._tokens.get()
        try:
            if self._interval or self._next_start > time.monotonic():  # (else there is no turn to wait for)
                self._wait_turn()
        except BaseException:
            self._tokens.put(None)
            raise

    def __exit__(self, *exc: object) -> None:
        self._tokens.put(None)

    def hold(self, seconds: float) -> None:
        """Keep every request to this endpoint back for `seconds` (the server asked for a pause),
        at most MAX_RETRY_AFTER_S: one server's answer must not stall the run for days."""
        if not math.isfinite(seconds):
            return
        seconds = min(MAX_RETRY_AFTER_S, max(0.0, seconds))
        with self._lock:
            self._next_start = max(self._next_start, time.monotonic() + seconds)

    def _wait_turn(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = max(self._next_start, start + self._interval) if self._interval else max(self._next_start, now)
        if start > now:
            time.sleep(start - now)
