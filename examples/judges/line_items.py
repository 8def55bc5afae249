"""Line items matched before scoring: robust to reordered, missing, merged and extra items.

config:
  path: line_items                 (where the list is, in candidate and reference)
  match_fields: [description]      (fields that decide which items pair up)
  fields: [...]                    (attributes scored per pair; default: keys of expected items)
  threshold: 0.8                   (pairs less similar never match)
  max_rows: 50                     (alignment rows kept in details)

Similarity of two items = mean over match_fields of: equality of the calendar date for two
dates (as `match: date` reads them), normalized Levenshtein for other text (case and whitespace
ignored), equality for anything else. Pairs are taken greedily, most similar first,
1:1. Matched pairs are scored per attribute with the header confusion rules; every non-empty
attribute of an unmatched expected item is a FN, of an unmatched candidate item a FP.
The row `(items)` counts the matching itself (matched TP, extra FP, unmatched expected FN);
the score is the mean of the defined F1s of all rows.
"""

import os
import sys

from rapidfuzz.distance import Levenshtein

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from header_confusion import MISSING, empty, get_path, macro_f1, metrics, outcome  # noqa: E402

from agenteval.judge import run_judge  # noqa: E402
from agenteval.matching import parse_date  # noqa: E402


def value_similarity(a, b):
    if empty(a) or empty(b):
        return 0.0
    if isinstance(a, str) and isinstance(b, str):
        day_a, day_b = parse_date(a), parse_date(b)
        if day_a is not None and day_b is not None:
            return 1.0 if day_a == day_b else 0.0
        return Levenshtein.normalized_similarity(" ".join(a.lower().split()), " ".join(b.lower().split()))
    same = a == b and (type(a) is type(b) or (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                               and not isinstance(a, bool) and not isinstance(b, bool)))
    return 1.0 if same else 0.0


def judge(payload):
    config = payload.get("config") or {}
    path = config.get("path", "line_items")
    match_fields = config.get("match_fields", ["description"])
    threshold = config.get("threshold", 0.8)
    expected = get_path(payload["reference_answer"], path)
    candidate = get_path(payload["candidate_answer"], path)
    if not isinstance(expected, list):
        return {"score": 0.0, "verdict": "fail", "misses": [f"{path} (no expected list)"]}
    if not isinstance(candidate, list):
        candidate = []
    as_dict = [item if isinstance(item, dict) else {} for item in expected], [item if isinstance(item, dict) else {} for item in candidate]
    fields = config.get("fields") or list(dict.fromkeys(key for item in as_dict[0] for key in item))

    ranked = []
    for i, want in enumerate(as_dict[0]):
        for j, got in enumerate(as_dict[1]):
            similarity = sum(value_similarity(want.get(f), got.get(f)) for f in match_fields) / len(match_fields)
            if similarity >= threshold:
                ranked.append((-similarity, i, j))
    ranked.sort()
    pairs, used_i, used_j = [], set(), set()
    for negative, i, j in ranked:
        if i not in used_i and j not in used_j:
            used_i.add(i)
            used_j.add(j)
            pairs.append((i, j, -negative))

    counts = {f: {"tp": 0, "fp": 0, "fn": 0, "tn": 0} for f in fields}
    for i, j, _ in pairs:
        for f in fields:
            for key in outcome(as_dict[0][i].get(f, MISSING), as_dict[1][j].get(f, MISSING)).split("+"):
                counts[f][key] += 1
    for items, used, kind in ((as_dict[0], used_i, "fn"), (as_dict[1], used_j, "fp")):
        for index, item in enumerate(items):
            if index not in used:
                for f in fields:
                    if not empty(item.get(f)):
                        counts[f][kind] += 1
    rows = {f: metrics(c) for f, c in counts.items()}
    rows["(items)"] = metrics({"tp": len(pairs), "fp": len(candidate) - len(pairs), "fn": len(expected) - len(pairs), "tn": 0})
    score = macro_f1(rows)
    limit = config.get("max_rows", 50)
    return {
        "score": score,
        "reasoning": f"{len(pairs)} of {len(expected)} expected items matched; macro-F1 {score:.3f}",
        "details": {
            "metrics": rows,
            "alignment": [{"expected": i, "candidate": j, "similarity": round(s, 6)} for i, j, s in sorted(pairs)][:limit],
        },
    }


if __name__ == "__main__":
    run_judge(judge)
