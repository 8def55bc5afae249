"""Header fields as a confusion matrix: per-field TP/FP/FN/TN, score = macro-F1.

config:
  fields: [invoice.number, vendor.name, ...]   (dot paths with [i] indexes)
  max_examples: 5                               (mismatch examples kept in details)

Empty means null, absent or a blank string. Equal and non-empty: TP. Equal and empty: TN.
Both non-empty and different: one FP and one FN. Expected empty, candidate not: FP.
Expected non-empty, candidate empty: FN. F1 = 2TP / (2TP + FP + FN), undefined (null) when
that denominator is 0; the score is the mean of the defined F1s (1.0 when none is defined).
`details.metrics` has the shape agenteval sums into dataset-level precision/recall/F1.
"""

from agenteval.judge import run_judge

MISSING = object()


def get_path(data, path):
    for part in path.replace("]", "").replace("[", ".").split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return MISSING
    return data


def empty(value):
    return value is None or value is MISSING or (isinstance(value, str) and not value.strip())


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def outcome(expected, candidate):
    if empty(expected) and empty(candidate):
        return "tn"
    if empty(expected):
        return "fp"
    if empty(candidate):
        return "fn"
    return "tp" if same(expected, candidate) else "fp+fn"


def metrics(counts):
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    return {
        **counts,
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "f1": 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else None,
    }


def macro_f1(rows):
    """Mean of the defined F1s; 1.0 when none is defined (everything rightly empty)."""
    f1s = [row["f1"] for row in rows.values() if row["f1"] is not None]
    return sum(f1s) / len(f1s) if f1s else 1.0


def judge(payload):
    config = payload.get("config") or {}
    fields = config.get("fields") or []
    if not fields:
        raise ValueError("config.fields is empty: list the header fields to score")
    rows, mismatches = {}, []
    for path in fields:
        expected = get_path(payload["reference_answer"], path)
        candidate = get_path(payload["candidate_answer"], path)
        result = outcome(expected, candidate)
        counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
        for key in result.split("+"):
            counts[key] += 1
        rows[path] = metrics(counts)
        if result not in ("tp", "tn"):
            mismatches.append({"field": path, "outcome": result,
                               "expected": None if expected is MISSING else expected,
                               "actual": None if candidate is MISSING else candidate})
    score = macro_f1(rows)
    limit = config.get("max_examples", 5)
    return {
        "score": score,
        "reasoning": f"macro-F1 {score:.3f} over {len(rows)} fields",
        "misses": [m["field"] for m in mismatches],
        "details": {"metrics": rows, "mismatches": mismatches[:limit]},
    }


if __name__ == "__main__":
    run_judge(judge)
