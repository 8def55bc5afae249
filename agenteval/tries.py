"""pass@k and pass^k: from n tries of a case of which c passed, the chance that at least one, or
all, of k tries drawn without replacement pass (the unbiased estimators). `--repeat` reports them.

Exact integer arithmetic and the standard library only (no numpy: a `--repeat` run needs nothing more).
"""

from __future__ import annotations

import math
import operator


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k tries passes, from n tries of which c passed:
    1 - C(n - c, k) / C(n, k), the unbiased estimator (Chen et al., 2021).

    Computed in exact integer arithmetic and rounded once, so it is the closest float to the true
    ratio at any n (no cancellation in 1 - a ratio close to 1, no overflow in C(n, k)).
    """
    n, c, k = _tries(n, c, k)
    if n - c < k:
        return 1.0
    whole = math.comb(n, k)
    return (whole - math.comb(n - c, k)) / whole


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all of k tries pass, from n tries of which c passed: C(c, k) / C(n, k)
    (pass^k, the consistency a user meets when every try has to work). Exact, rounded once."""
    n, c, k = _tries(n, c, k)
    if c < k:
        return 0.0
    return math.comb(c, k) / math.comb(n, k)


def _tries(n: int, c: int, k: int) -> tuple[int, int, int]:
    n, c, k = operator.index(n), operator.index(c), operator.index(k)
    if not 0 <= c <= n:
        raise ValueError(f"passes must be between 0 and the number of tries ({n}), not {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of tries ({n}), not {k}")
    return n, c, k
