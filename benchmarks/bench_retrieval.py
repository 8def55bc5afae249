"""Retrieval metrics: 100,000 queries x 100 retrieved ids, agenteval.retrieval against a bare loop.

    python benchmarks/bench_retrieval.py                     # 100,000 queries
    python benchmarks/bench_retrieval.py --queries 10000     # quicker

Each query ranks 100 distinct ids out of a pool of 1,000 and has 20 judged ids (grades 0 to 3,
about 15 relevant). Each row times, best of --rounds, one metric (or all seven) over every query:
- agenteval: `retrieval.evaluate(ids, judgments, metrics)`, the pure function the `retrieval`
  evaluator's numbers come from (it drops repeated ids and grades only the ranks the metrics read);
- the floor: the same metric written as a bare loop over the ids with `judgments.get`, as one
  would in a notebook (trusting the ids to be distinct).
The last row times the `retrieval` evaluator on whole answers (ids read from objects, checked,
details built), per case. Prints Markdown; the figures go in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import random
import time
from math import log2
from pathlib import Path

from agenteval import retrieval

METRICS = [("precision", 10), ("recall", 10), ("hit_rate", 10), ("reciprocal_rank", None),
           ("average_precision", None), ("ndcg", 10), ("r_precision", None)]


def data(count: int) -> list[tuple[list[str], dict[str, int]]]:
    rng = random.Random(42)
    pool = [f"doc-{i}" for i in range(1_000)]
    queries = []
    for _ in range(count):
        ids = rng.sample(pool, 100)
        judged = rng.sample(ids[:60], 12) + rng.sample(pool, 8)
        queries.append((ids, {doc: rng.choice((0, 1, 1, 2, 3)) for doc in judged}))
    return queries


def bare(name: str, k: int | None, ids: list[str], rel: dict[str, int]) -> float:
    """One metric as a bare loop."""
    if name == "precision":
        hits = 0
        for doc in ids[:k]:
            if rel.get(doc, 0) >= 1:
                hits += 1
        return hits / k  # type: ignore[operator]
    if name == "recall":
        relevant = 0
        for grade in rel.values():
            if grade >= 1:
                relevant += 1
        hits = 0
        for doc in ids[:k]:
            if rel.get(doc, 0) >= 1:
                hits += 1
        return hits / relevant if relevant else 0.0
    if name == "hit_rate":
        for doc in ids[:k]:
            if rel.get(doc, 0) >= 1:
                return 1.0
        return 0.0
    if name == "reciprocal_rank":
        for rank, doc in enumerate(ids, 1):
            if rel.get(doc, 0) >= 1:
                return 1 / rank
        return 0.0
    if name == "average_precision":
        relevant = 0
        for grade in rel.values():
            if grade >= 1:
                relevant += 1
        found, total = 0, 0.0
        for rank, doc in enumerate(ids, 1):
            if rel.get(doc, 0) >= 1:
                found += 1
                total += found / rank
        return total / relevant if found else 0.0
    if name == "ndcg":
        dcg = 0.0
        for i, doc in enumerate(ids[:k]):
            grade = rel.get(doc, 0)
            if grade > 0:
                dcg += grade / log2(i + 2)
        ideal = 0.0
        for i, grade in enumerate(sorted((g for g in rel.values() if g > 0), reverse=True)[:k]):
            ideal += grade / log2(i + 2)
        return dcg / ideal if ideal else 0.0
    relevant = 0  # r_precision
    for grade in rel.values():
        if grade >= 1:
            relevant += 1
    hits = 0
    for doc in ids[:relevant]:
        if rel.get(doc, 0) >= 1:
            hits += 1
    return hits / relevant if relevant else 0.0


def best(call, rounds: int) -> float:
    fastest = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        call()
        fastest = min(fastest, time.process_time() - start)
    return fastest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    queries = data(args.queries)
    rows = []
    for chosen in [[metric] for metric in METRICS] + [METRICS]:
        ours = best(lambda: [retrieval.evaluate(ids, rel, chosen) for ids, rel in queries], args.rounds)
        floor = best(lambda: [[bare(name, k, ids, rel) for name, k in chosen] for ids, rel in queries], args.rounds)
        for ids, rel in queries[:2000]:  # the same numbers, or the comparison means nothing
            assert retrieval.evaluate(ids, rel, chosen) == [bare(name, k, ids, rel) for name, k in chosen]
        name = "all seven" if len(chosen) > 1 else retrieval.label(*chosen[0])
        rows.append((name, ours, floor))
    print(f"{args.queries:,} queries x 100 ids, CPU seconds, best of {args.rounds}\n")
    print("| metrics | agenteval s | bare loop s | ratio |\n| --- | ---: | ---: | ---: |")
    for name, ours, floor in rows:
        print(f"| {name} | {ours:.2f} | {floor:.2f} | {ours / floor:.2f} |")

    from agenteval.evaluators import EvalContext
    from agenteval.evaluators.retrieval import Retrieval

    evaluator = Retrieval.model_validate({"type": "retrieval", "metrics": [
        {"metric": name, "k": k, **({"min": 0.5} if name == "ndcg" else {})} for name, k in METRICS]})
    sample = queries[:10_000]
    contexts = [EvalContext("q", None, rel, {"retrieved": [{"id": doc} for doc in ids]}, {}, Path(".")) for ids, rel in sample]
    seconds = best(lambda: [evaluator.evaluate(ctx) for ctx in contexts], args.rounds)
    print(f"\n`retrieval` evaluator, all seven metrics, 100 ids as objects: {seconds / len(sample) * 1e6:.0f} µs per case")


if __name__ == "__main__":
    main()
