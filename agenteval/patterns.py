"""Where a pattern meets an answer: one regular-expression engine with a time bound no pattern defeats.

Python's `re` backtracks without limit and holds the GIL, so one pattern such as `^(a+)+$` on a
long answer hangs a run (and, with threads, its signal handling). Every evaluator therefore
matches through this module: the `regex` engine, which understands `re`'s syntax, releases the
GIL while matching (`concurrent=True`) and stops at a deadline (`PatternTimeout`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import regex

from agenteval.limits import DEFAULT_LIMITS

PatternError = regex.error
"""Raised by `compile` for a pattern that is not a valid regular expression."""

IGNORECASE, MULTILINE, DOTALL, VERBOSE, ASCII = re.IGNORECASE, re.MULTILINE, re.DOTALL, re.VERBOSE, re.ASCII  # same bits in both engines


class PatternTimeout(Exception):
    """A match ran past its time bound."""

    def __init__(self, pattern: str, seconds: float) -> None:
        super().__init__(
            f"pattern {pattern!r} ran longer than {seconds:g} s on this text "
            f"(limit `limits.pattern_seconds: {seconds:g}`; raise it in the suite's `limits:` if this is expected)"
        )
        self.pattern = pattern
        self.seconds = seconds


@lru_cache(maxsize=1024)
def compile(pattern: str, flags: int = 0) -> Any:  # noqa: A001 - mirrors re.compile
    """A compiled pattern (cached); `PatternError` when the pattern is invalid."""
    return regex.compile(pattern, flags | regex.VERSION0)


def search(compiled: Any, text: str, seconds: float = DEFAULT_LIMITS.pattern_seconds) -> Any:
    """`compiled.search(text)` within `seconds`, else `PatternTimeout`."""
    try:
        return compiled.search(text, timeout=seconds, concurrent=True)
    except TimeoutError:
        raise PatternTimeout(compiled.pattern, seconds) from None


def fullmatch(compiled: Any, text: str, seconds: float = DEFAULT_LIMITS.pattern_seconds) -> Any:
    """`compiled.fullmatch(text)` within `seconds`, else `PatternTimeout`."""
    try:
        return compiled.fullmatch(text, timeout=seconds, concurrent=True)
    except TimeoutError:
        raise PatternTimeout(compiled.pattern, seconds) from None


def findall(compiled: Any, text: str, seconds: float = DEFAULT_LIMITS.pattern_seconds) -> list[Any]:
    """Every non-overlapping match object of `compiled` in `text`, all within `seconds` together."""
    try:
        return list(compiled.finditer(text, timeout=seconds, concurrent=True))
    except TimeoutError:
        raise PatternTimeout(compiled.pattern, seconds) from None
