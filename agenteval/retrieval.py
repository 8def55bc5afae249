"""Ranking metrics as trec_eval computes them: pure functions over one query's ranked ids and judgments.

Each follows trec_eval 9/10's code step for step (same float operations in the same order), so
the numbers are the ones `trec_eval` and `pytrec_eval` print, bit for bit. Grades are integers
>= 0 (trec_eval's negative judgments are not taken: the evaluator refuses them). The conventions:
relevant means a grade >= 1; an id the judgments do not name is not relevant; a cutoff beyond
the ranking is filled with non-relevant documents; a query with no relevant document scores 0
on every metric. trec_eval refuses a run naming an id twice: `ranked_grades` keeps each id's
first (best) rank. docs/rag.md writes out every formula.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import compress, count, repeat
from math import log2



METRICS = ("precision", "recall", "hit_rate", "reciprocal_rank", "average_precision", "ndcg", "r_precision")
"""Metric names, in the order docs list them."""

NEEDS_K = frozenset(("precision", "recall", "hit_rate"))
TAKES_K = frozenset((*NEEDS_K, "reciprocal_rank", "average_precision", "ndcg"))
TREC_NAMES = {
    "precision": "P", "recall": "recall", "hit_rate": "success", "reciprocal_rank": "recip_rank",
    "average_precision": "map", "ndcg": "ndcg", "r_precision": "Rprec",
}
"""trec_eval's name of each metric (with a cutoff: P_5, recall_5, success_5, map_cut_5, ndcg_cut_5)."""


def ranked_ids(ids: Sequence[str], scores: Sequence[float] | None = None) -> list[str]:
    """The ranking trec_eval evaluates: by score, highest first, ties broken by id in reverse
    (byte) order, as trec_eval's `comp_sim_docno`; without scores, the order given. Each id is
    kept at its first rank only."""
    if scores is not None:
        ids = [doc for _, doc in sorted(zip(scores, ids), reverse=True)]
    unique = list(dict.fromkeys(ids))
    return unique


def ranked_grades(ranking: Sequence[str], judgments: Mapping[str, int], depth: int | None = None) -> list[int]:
    """The grade of each ranked id (0 for an id not judged), for the first `depth` ids: what every metric reads."""
    return list(map(judgments.get, ranking if depth is None else ranking[:depth], repeat(0)))


def relevant_count(judgments: Mapping[str, int]) -> int:
    """R: how many judged ids are relevant (grade >= 1; grades are integers >= 0)."""
    return len(judgments) - list(judgments.values()).count(0)


def precision(grades: Sequence[int], k: int) -> float:
    """P@k: relevant in the first k / k (k beyond the ranking: the rest count as non-relevant)."""
    top = grades[:k]
    return (len(top) - top.count(0)) / k


def recall(grades: Sequence[int], k: int, relevant: int) -> float:
    """recall@k: relevant in the first k / R; 0 when R is 0."""
    if not relevant:
        return 0.0
    top = grades[:k]
    return (len(top) - top.count(0)) / relevant


def hit_rate(grades: Sequence[int], k: int) -> float:
    """success@k: 1 when a relevant id is in the first k, else 0."""
    top = grades[:k]
    return 1.0 if top.count(0) < len(top) else 0.0


def reciprocal_rank(grades: Sequence[int], k: int | None = None) -> float:
    """1 / the rank of the first relevant id (within the first k), 0 when there is none."""
    for rank in compress(count(1), grades[:k] if k is not None else grades):
        return 1.0 / rank
    return 0.0


def average_precision(grades: Sequence[int], relevant: int, k: int | None = None) -> float:
    """AP (trec_eval map; map_cut with k): the sum of P@rank at each relevant rank (within the first k), / R."""
    found = 0
    total = 0.0
    for rank in compress(count(1), grades[:k] if k is not None else grades):  # the ranks of grades >= 1
        found += 1
        total += found / rank
    return total / relevant if found else 0.0


def ndcg(grades: Sequence[int], judgments: Mapping[str, int], k: int | None = None) -> float:
    """nDCG (trec_eval ndcg; ndcg_cut with k): DCG = sum of grade / log2(rank + 1) over positive
    grades (linear gain), divided by the DCG of the ideal ranking of every judged id; 0 when
    nothing is relevant."""
    dcg = 0.0
    top = grades[:k] if k is not None else grades
    for i in compress(count(0), top):  # the positions of grades > 0
        dcg += top[i] / log2(i + 2)
    ideal = sorted((grade for grade in judgments.values() if grade > 0), reverse=True)
    ideal_dcg = 0.0
    for i, grade in enumerate(ideal[:k] if k is not None else ideal):
        ideal_dcg += grade / log2(i + 2)
    return dcg / ideal_dcg if ideal_dcg > 0.0 else dcg


def r_precision(grades: Sequence[int], relevant: int) -> float:
    """R-precision: relevant in the first R / R; 0 when R is 0."""
    if not relevant or not grades:
        return 0.0
    top = grades[:relevant]
    return (len(top) - top.count(0)) / relevant


def metric(name: str, grades: Sequence[int], judgments: Mapping[str, int], relevant: int, k: int | None) -> float:
    """One metric by name (METRICS) on a query's grades; `relevant` is relevant_count(judgments)."""
    if name == "precision":
        return precision(grades, k)  # type: ignore[arg-type]
    if name == "recall":
        return recall(grades, k, relevant)  # type: ignore[arg-type]
    if name == "hit_rate":
        return hit_rate(grades, k)  # type: ignore[arg-type]
    if name == "reciprocal_rank":
        return reciprocal_rank(grades, k)
    if name == "average_precision":
        return average_precision(grades, relevant, k)
    if name == "ndcg":
        return ndcg(grades, judgments, k)
    if name == "r_precision":
        return r_precision(grades, relevant)
    raise ValueError(f"unknown metric {name!r}")


def evaluate(
    ids: Sequence[str], judgments: Mapping[str, int], metrics: Sequence[tuple[str, int | None]], scores: Sequence[float] | None = None,
) -> list[float]:
    """Each (metric, k) of one query, from its ranked ids (repeats allowed, `scores` optional, as
    ranked_ids) and its judgments. Only the ranks the metrics read are graded: the first k, the
    first R, or up to the first relevant id for reciprocal_rank."""
    relevant = -1  # counted once, when a metric needs R
    depth: int | None = 0
    for name, k in metrics:
        if relevant < 0 and name in _NEEDS_R:
            relevant = relevant_count(judgments)
        reach = relevant if name == "r_precision" else k
        if reach is None:
            depth = None
        elif depth is not None:
            depth = max(depth, reach)
    if scores is not None:
        ranking: Sequence[str] = ranked_ids(ids, scores)
    elif depth is not None and len(set(ids[:depth])) == min(depth, len(ids)):
        ranking = ids  # the first `depth` ids are distinct: nothing past them is read
    elif depth is None and len(metrics) == 1 and metrics[0] == ("reciprocal_rank", None):
        return [_first_relevant(ids, judgments)]  # read up to the first relevant id only
    else:
        ranking = ranked_ids(ids)
    grades = list(map(judgments.get, ranking if depth is None else ranking[:depth], repeat(0)))
    return [metric(name, grades, judgments, relevant, k) for name, k in metrics]  # relevant is read only where counted


_NEEDS_R = frozenset(("recall", "average_precision", "r_precision"))


def _first_relevant(ids: Sequence[str], judgments: Mapping[str, int]) -> float:
    """Reciprocal rank over the ids as ranked_ids keeps them (each at its first rank), stopping at the first relevant one."""
    get = judgments.get
    seen: set[str] = set()
    rank = 0
    for doc in ids:
        if doc in seen:
            continue
        seen.add(doc)
        rank += 1
        if get(doc, 0) >= 1:
            return 1.0 / rank
    return 0.0


def label(name: str, k: int | None) -> str:
    """How a metric is named in results: `ndcg@10`, `average_precision`."""
    return name if k is None else f"{name}@{k}"
