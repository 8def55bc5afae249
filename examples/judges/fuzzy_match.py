"""Fuzzy-match one value: the whole candidate answer, or the value at config `path`.

config: threshold (default 0.85), algorithm (levenshtein | jaro_winkler), path (optional),
case_sensitive (default false). Score = similarity; verdict pass when it reaches the threshold.
"""

from rapidfuzz.distance import JaroWinkler, Levenshtein

from agenteval.judge import run_judge

ALGORITHMS = {"levenshtein": Levenshtein, "jaro_winkler": JaroWinkler}


def get_path(data, path):
    """Dot path with [i] indexes; None when any step is absent."""
    for part in path.replace("]", "").replace("[", ".").split("."):
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return None
    return data


def similarity(a, b, algorithm="levenshtein", case_sensitive=False):
    a, b = str(a), str(b)
    if not case_sensitive:
        a, b = " ".join(a.lower().split()), " ".join(b.lower().split())
    return ALGORITHMS[algorithm].normalized_similarity(a, b)


def judge(payload):
    config = payload.get("config") or {}
    threshold = config.get("threshold", 0.85)
    candidate, reference = payload["candidate_answer"], payload["reference_answer"]
    if config.get("path"):
        candidate, reference = get_path(candidate, config["path"]), get_path(reference, config["path"])
    if candidate is None:
        return {"score": 0.0, "verdict": "fail", "misses": ["no candidate value"]}
    score = similarity(candidate, reference, config.get("algorithm", "levenshtein"), config.get("case_sensitive", False))
    return {
        "score": score,
        "verdict": "pass" if score >= threshold else "fail",
        "reasoning": f"similarity {score:.3f} vs threshold {threshold}",
        "details": {"similarity": score, "threshold": threshold},
    }


if __name__ == "__main__":
    run_judge(judge)
