"""Where a pattern meets an answer: one regular-expression engine with a time bound no pattern defeats.

Python's `re` backtracks without limit and holds the GIL, so one pattern such as `^(a+)+$` on a
long answer hangs a run (and, with threads, its signal handling). Every evaluator therefore
matches through this module: the `regex` engine, which understands `re`'s syntax, releases the
GIL while matching (`concurrent=True`) and stops at a deadline (`PatternTimeout`). A pattern
proven unable to backtrack (`#\\d{5}`, a literal) on a text short enough to stay under a million
steps skips the timer, which costs more than such a match.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import regex

from agenteval.limits import DEFAULT_LIMITS

PatternError = regex.error
"""Raised by `compile` for a pattern that is not a valid regular expression."""

IGNORECASE, MULTILINE, DOTALL, VERBOSE, ASCII = re.IGNORECASE, re.MULTILINE, re.DOTALL, re.VERBOSE, re.ASCII
"""`re`'s flags, which `compile` takes: the same bits in both engines, except ASCII (regex's VERSION1 bit), translated there."""


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
    """A compiled pattern (cached); `PatternError` when the pattern is invalid. `flags` are `re`'s."""
    flags = int(flags)
    if flags & re.ASCII:
        flags = (flags & ~re.ASCII) | regex.ASCII
    return regex.compile(pattern, flags | regex.VERSION0)


def is_valid(pattern: str, flags: int = 0) -> bool:
    """Whether `pattern` compiles, without caching it: for patterns that come from answers (`format: regex`)."""
    try:
        compile.__wrapped__(pattern, flags)
    except (PatternError, RecursionError, OverflowError, ValueError):
        return False
    return True


def search(compiled: Any, text: str, seconds: float = DEFAULT_LIMITS.pattern_seconds) -> Any:
    """`compiled.search(text)` within `seconds`, else `PatternTimeout`."""
    if _few_steps(compiled, len(text) + 1):
        return compiled.search(text)
    try:
        return compiled.search(text, timeout=seconds, concurrent=True)
    except TimeoutError:
        raise PatternTimeout(compiled.pattern, seconds) from None


def fullmatch(compiled: Any, text: str, seconds: float = DEFAULT_LIMITS.pattern_seconds) -> Any:
    """`compiled.fullmatch(text)` within `seconds`, else `PatternTimeout`."""
    if _few_steps(compiled, 1):
        return compiled.fullmatch(text)
    try:
        return compiled.fullmatch(text, timeout=seconds, concurrent=True)
    except TimeoutError:
        raise PatternTimeout(compiled.pattern, seconds) from None


def findall(compiled: Any, text: str, seconds: float = DEFAULT_LIMITS.pattern_seconds) -> list[Any]:
    """Every non-overlapping match object of `compiled` in `text`, all within `seconds` together."""
    if _few_steps(compiled, len(text) + 1):
        return list(compiled.finditer(text))
    try:
        return list(compiled.finditer(text, timeout=seconds, concurrent=True))
    except TimeoutError:
        raise PatternTimeout(compiled.pattern, seconds) from None


_UNTIMED_STEPS = 1_000_000
"""Matches proven to take at most this many steps (a few milliseconds) skip the timer and its ~2 µs per call."""

_VERBOSE = int(re.VERBOSE)  # a plain int: `&` on a RegexFlag costs microseconds


def _few_steps(compiled: Any, positions: int) -> bool:
    """Whether trying `compiled` at `positions` start positions is proven to stay under _UNTIMED_STEPS."""
    steps = _steps_of(compiled)
    return steps is not None and steps * positions <= _UNTIMED_STEPS


@lru_cache(maxsize=1024)
def _steps_of(compiled: Any) -> int | None:
    """steps_per_position of a compiled pattern (keyed by the pattern object: one cheap lookup per match)."""
    return steps_per_position(compiled.pattern, compiled.flags & _VERBOSE)


@lru_cache(maxsize=1024)
def steps_per_position(pattern: str, flags: int = 0) -> int | None:
    """At most how many characters one attempt of `pattern` at one position compares, or None when unbounded.

    Bounded only for patterns that cannot backtrack beyond one choice: no repetition of variable
    length (`*`, `+`, `?`, `{m,n}`), fixed repetitions of single characters only (`\\d{5}`), at most
    one alternation, no back-references. Such a pattern (literals, classes, `#\\d{5}`, `refund|return`)
    costs at most its expanded width per position; every other pattern runs under the timer.
    """
    from re import _parser  # the standard library's own parser: the syntax users write is re's

    try:
        parsed = _parser.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError):
        return None
    branches = [0]
    width = _width(parsed, branches)
    return width if width is not None and branches[0] <= 1 else None


_ONE_CHARACTER = frozenset({"LITERAL", "NOT_LITERAL", "ANY", "IN", "CATEGORY"})


def _width(items: Any, branches: list[int]) -> int | None:
    total = 0
    for op, argument in items:
        name = str(op)
        if name in _ONE_CHARACTER:
            total += 1
        elif name == "AT":
            continue
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = argument
            if low != high or len(body) != 1 or str(body[0][0]) not in _ONE_CHARACTER:
                return None
            total += high
        elif name == "SUBPATTERN":
            inner = _width(argument[-1], branches)
            if inner is None:
                return None
            total += inner
        elif name in ("ASSERT", "ASSERT_NOT"):
            inner = _width(argument[1], branches)
            if inner is None:
                return None
            total += inner
        elif name == "ATOMIC_GROUP":
            inner = _width(argument, branches)
            if inner is None:
                return None
            total += inner
        elif name == "BRANCH":
            branches[0] += 1
            widths = [_width(alternative, branches) for alternative in argument[1]]
            if None in widths:
                return None
            total += sum(widths)  # type: ignore[arg-type]
        else:  # back-references, conditionals, anything unknown: not proven
            return None
    return total
