"""Fuzzy-match several fields, each with its own threshold.

config:
  fields: [{path: supplier.name, threshold: 0.85}, ...]   (threshold defaults to 0.85)
  algorithm: levenshtein | jaro_winkler                    (default levenshtein)
Score = mean similarity over the fields; verdict pass when every field reaches its threshold.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fuzzy_match import get_path, similarity  # noqa: E402

from agenteval.judge import run_judge  # noqa: E402


def judge(payload):
    config = payload.get("config") or {}
    fields = config.get("fields") or []
    if not fields:
        raise ValueError("config.fields is empty: list the fields to compare")
    algorithm = config.get("algorithm", "levenshtein")
    hits, misses, rows = [], [], {}
    for spec in fields:
        path, threshold = spec["path"], spec.get("threshold", 0.85)
        expected = get_path(payload["reference_answer"], path)
        actual = get_path(payload["candidate_answer"], path)
        score = 0.0 if actual is None or expected is None else similarity(actual, expected, algorithm)
        rows[path] = {"similarity": score, "threshold": threshold, "expected": expected, "actual": actual}
        (hits if score >= threshold else misses).append(path)
    mean = sum(row["similarity"] for row in rows.values()) / len(rows)
    return {
        "score": mean,
        "verdict": "pass" if not misses else "fail" if not hits else "partial",
        "hits": hits,
        "misses": misses,
        "reasoning": f"{len(hits)}/{len(rows)} fields above threshold ({algorithm})",
        "details": {"fields": rows},
    }


if __name__ == "__main__":
    run_judge(judge)
