"""How numbers read in every report: undefined values are "n/a", never 0."""

from __future__ import annotations

from typing import Any


def counted(count: Any, noun: str = "case") -> str:
    """`1 case`, `3 cases`: a count with its noun, singular for one."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 3) -> str:
    """A delta with its sign, so a drop never reads like a level."""
    return "n/a" if value is None else f"{value:+.{digits}f}"


def points(value: float | None) -> str:
    """A difference of two rates, in percentage points."""
    return "n/a" if value is None else f"{value * 100:+.1f} pts"


def one_line(report: dict[str, Any]) -> str:
    """A run's summary in one line, as `run -q` and `report -q` print it."""
    counts = report["counts"]
    rate = report["pass_rate"]
    return (
        f"{report['suite']}: {counted(counts['total'])}, {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['errored']} errored, pass rate {'n/a' if rate is None else f'{rate:.1%}'}{smoke_words(report)}"
    )


def smoke_words(summary: dict[str, Any]) -> str:
    """What a smoke run was, after its counts: ` (first 3 of 8 cases)`, ` (a sample of 20 of 200
    cases, seed 0)`; "" for a full run."""
    smoke = summary.get("smoke")
    if not isinstance(smoke, dict):
        return ""
    if "first" in smoke:
        return f" (first {smoke['first']} of {counted(smoke.get('of', '?'))})"
    return f" (a sample of {smoke.get('sample', '?')} of {counted(smoke.get('of', '?'))}, seed {smoke.get('seed', 0)})"
