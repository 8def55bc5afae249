"""How numbers read in every report: undefined values are "n/a", never 0."""

from __future__ import annotations


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
