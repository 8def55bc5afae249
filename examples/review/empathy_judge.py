"""A code_judge that rates a support reply's empathy from 1 to 5 (used with `scale: likert5`).

A deterministic stand-in for a model judge, so the example runs offline: it starts at 3, adds a
point for acknowledging the problem and one for a concrete next step, and takes two off for a
dismissive phrase. People reviewing its scores disagree with it now and then: that is what
`agenteval report --agreement` measures.
"""

from agenteval.judge import run_judge

ACKNOWLEDGING = ("sorry", "apologi", "thank you", "thanks for")
NEXT_STEP = ("i've", "will ", "within", "tracking")
DISMISSIVE = ("whatever", "calm down", "not our fault", "read the")


def judge(payload):
    text = str(payload["candidate_answer"]).lower()
    rating = 3 + any(p in text for p in ACKNOWLEDGING) + any(p in text for p in NEXT_STEP) - 2 * any(p in text for p in DISMISSIVE)
    rating = max(1, min(5, rating))
    return {"score": rating, "reasoning": f"empathy {rating} of 5"}


if __name__ == "__main__":
    run_judge(judge)
