"""Pacing requests to one endpoint: how long to wait before a retry, and how many go at once.

A `Gate` per endpoint bounds requests in flight (a semaphore), spaces their starts to honour a
requests-per-minute limit, and lets a 429/503 with Retry-After hold back every request to that
endpoint, not just the one that was refused.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

MAX_WAIT_S = 120.0


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def retry_delay(attempt: int, backoff: float, retry_after: float | None, rng: random.Random) -> float:
    """Seconds before retry number `attempt` (0-based): Retry-After when the server gave one, else
    exponential backoff with jitter (between half and all of backoff * 2**attempt), capped."""
    if retry_after is not None:
        return min(MAX_WAIT_S, retry_after * rng.uniform(1.0, 1.1))
    ceiling = min(MAX_WAIT_S, backoff * 2**attempt)
    return ceiling / 2 + rng.uniform(0, ceiling / 2)


class Gate:
    """At most `concurrency` requests in flight, starts spaced by 60/`rate_limit` seconds."""

    def __init__(self, concurrency: int, rate_limit: float | None) -> None:
        self._slots = threading.BoundedSemaphore(concurrency)
        self._interval = 60.0 / rate_limit if rate_limit else 0.0
        self._lock = threading.Lock()
        self._next_start = 0.0

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._slots:
            self._wait_turn()
            yield

    def hold(self, seconds: float) -> None:
        """Keep every request to this endpoint back for `seconds` (the server asked for a pause)."""
        with self._lock:
            self._next_start = max(self._next_start, time.monotonic() + seconds)

    def _wait_turn(self) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = max(self._next_start, start + self._interval) if self._interval else max(self._next_start, now)
        if start > now:
            time.sleep(start - now)
