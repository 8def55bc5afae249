"""A code_judge that rates a support reply's empathy from 1 to 5 (used with `scale: likert5`).

A deterministic stand-in for a human or model rater: it starts at 3, adds a point for
acknowledging the customer's problem and one for a concrete next step, and takes two off for
dismissive phrases. Config: `path` (where the reply is in the answer, default: `reply`).
"""

from agenteval.judge import run_judge

ACKNOWLEDGING = ("sorry", "apologi", "thanks for", "thank you", "good news")
NEXT_STEP = ("i've", "will contact", "within", "should arrive", "tracking number")
DISMISSIVE = ("whatever", "calm down", "not that hard", "not our fault", "read the", "like everyone else")


def judge(payload):
    answer = payload["candidate_answer"]
    key = payload["config"].get("path", "reply")
    reply = answer.get(key) if isinstance(answer, dict) else answer
    if not isinstance(reply, str):
        return {"score": 1, "misses": [f"no reply text at `{key}`"]}
    text = reply.lower()
    hits, misses = [], []
    rating = 3
    for label, phrases, points in (("acknowledges the problem", ACKNOWLEDGING, 1), ("gives a next step", NEXT_STEP, 1)):
        if any(phrase in text for phrase in phrases):
            rating += points
            hits.append(label)
        else:
            misses.append(label)
    rude = [phrase for phrase in DISMISSIVE if phrase in text]
    if rude:
        rating -= 2
        misses.append("dismissive: " + ", ".join(rude))
    rating = max(1, min(5, rating))
    return {"score": rating, "hits": hits, "misses": misses, "reasoning": f"empathy {rating}/5"}


if __name__ == "__main__":
    run_judge(judge)
