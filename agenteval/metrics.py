"""Precision, recall and F1 from confusion counts: pure, shared by evaluators and summaries.

Undefined values are None, never 0: a ratio whose denominator is 0 says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def ratio(numerator: float, denominator: float) -> float | None:
    """None (undefined) rather than 0 when there is nothing to divide by."""
    return numerator / denominator if denominator else None


def prf(tp: int, fp: int, fn: int) -> tuple[float | None, float | None, float | None]:
    """Precision, recall and F1 = 2TP / (2TP + FP + FN); each None (undefined) when its denominator is 0.

    The count form of F1 equals 2PR / (P + R) wherever both are defined, and is 0 (not undefined)
    for an attribute that is always wrong or always missed, so it cannot drop out of a macro-F1.
    """
    return ratio(tp, tp + fp), ratio(tp, tp + fn), ratio(2 * tp, 2 * tp + fp + fn)


def metrics_row(counts: Mapping[str, int]) -> dict[str, Any]:
    """Counts plus precision, recall and F1 (None where undefined: a denominator of 0)."""
    tp, fp, fn, tn = (counts.get(k, 0) for k in ("tp", "fp", "fn", "tn"))
    precision, recall, f1 = prf(tp, fp, fn)
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision, "recall": recall, "f1": f1}


def macro_f1(rows: Mapping[str, Mapping[str, Any]]) -> float | None:
    """Mean of the defined F1s; None when none is defined."""
    f1s = [row["f1"] for row in rows.values() if row["f1"] is not None]
    return sum(f1s) / len(f1s) if f1s else None


class ExactSum:
    """A sum of floats kept exactly (as an integer over a power of two), so a mean does not depend
    on the order cases finish in: with several workers, 1.0 + 1/3 + 0.75 + 2/3 and another order
    of the same scores must both give 0.6875, not 0.68749999 (which prints as 0.687). Memory stays
    constant; an add costs a fraction of a microsecond. `stats.total += x` and `ratio(total, n)` work."""

    __slots__ = ("_numerator", "_denominator")

    def __init__(self) -> None:
        self._numerator, self._denominator = 0, 1

    def __iadd__(self, value: float) -> ExactSum:
        if value == 1.0:  # a hit's score and a pass, the usual values: exact without the fraction
            self._numerator += self._denominator
            return self
        if value == 0.0:
            return self
        numerator, denominator = float(value).as_integer_ratio()  # denominator: a power of two
        if denominator > self._denominator:
            self._numerator *= denominator // self._denominator
            self._denominator = denominator
        self._numerator += numerator * (self._denominator // denominator)
        return self

    def __truediv__(self, count: float) -> float:
        if isinstance(count, int):
            return self._numerator / (self._denominator * count)  # correctly rounded: int / int
        return float(self) / count

    def __float__(self) -> float:
        return self._numerator / self._denominator

    def __bool__(self) -> bool:
        return self._numerator != 0

