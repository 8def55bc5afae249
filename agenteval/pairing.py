"""Pair the items of two lists 1:1 from a similarity matrix (rows: expected, columns: candidate).

- index: by position, whatever the similarity (the simplest reading of two lists)
- greedy: the most similar remaining pair first, ties broken by lower indexes
- optimal: the largest total similarity (Hungarian assignment, scipy)

greedy and optimal only pair items at least `threshold` similar.

Every mode weighs all n x m pairs in dense matrices, so a caller checks `too_many_pairs` first:
past `limits.pairs` the case is an error before anything is allocated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from agenteval.limits import Limits

Pairing = Literal["index", "greedy", "optimal"]
Pair = tuple[int, int, float]


def too_many_pairs(expected: int, candidate: int, limits: Limits) -> str | None:
    """The error for lists whose pairs are past `limits.pairs`, or None: a 6 MB answer of points
    against 1,000 expected would otherwise ask for gigabytes of similarity matrices."""
    if expected * candidate <= limits.pairs:
        return None
    what = f"{expected:,} expected x {candidate:,} candidate items make {expected * candidate:,} pairs to weigh"
    return limits.message("pairs", what)


def index_pairs(matrix: Any, threshold: float = 0.0) -> list[Pair]:
    size = min(len(matrix), len(matrix[0]) if len(matrix) else 0)
    return [(i, i, float(matrix[i][i])) for i in range(size)]


def greedy_pairs(matrix: Any, threshold: float) -> list[Pair]:
    import numpy as np

    scores = np.asarray(matrix, dtype=float)
    if not scores.size:
        return []
    rows, cols = np.nonzero(scores >= threshold)
    values = scores[rows, cols]
    used_expected: set[int] = set()
    used_candidate: set[int] = set()
    pairs = []
    for k in np.lexsort((cols, rows, -values)):  # most similar first; ties: lower indexes first
        i, j = int(rows[k]), int(cols[k])
        if i not in used_expected and j not in used_candidate:
            used_expected.add(i)
            used_candidate.add(j)
            pairs.append((i, j, float(values[k])))
    return sorted(pairs)


def optimal_pairs(matrix: Any, threshold: float) -> list[Pair]:
    if not len(matrix) or not len(matrix[0]):
        return []
    import numpy as np

    from agenteval.extras import require

    linear_sum_assignment = require("scipy.optimize", "optimal matching").linear_sum_assignment
    scores = np.asarray(matrix, dtype=float)
    allowed = np.where(scores >= threshold, scores, 0.0)
    rows, cols = linear_sum_assignment(allowed, maximize=True)
    return [(int(i), int(j), float(scores[i, j])) for i, j in zip(rows, cols) if scores[i, j] >= threshold]


PAIRERS = {"index": index_pairs, "greedy": greedy_pairs, "optimal": optimal_pairs}


def pair(matrix: Sequence[Sequence[float]] | Any, mode: Pairing, threshold: float) -> list[Pair]:
    return PAIRERS[mode](matrix, threshold)


def unmatched(count: int, matched: set[int]) -> list[int]:
    return [index for index in range(count) if index not in matched]
