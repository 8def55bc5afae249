"""Answers where they enter a run: checked once, so evaluators and stores can take any answer.

A candidate answer from any target, from `--predictions` or from the Python API is JSON-like.
Three things in one would break scoring or storing, so the case becomes an `error` naming where
in the answer the problem is, as the cases-file loader refuses the same values in a cases file:

- nesting deeper than `limits.answer_depth` (every reader and writer of results recurses);
- a lone surrogate in a string or key (half of a UTF-16 pair, e.g. an emoji cut off mid-token):
  not Unicode text, and not writable as UTF-8;
- an integer beyond the float range (about ±1.8e308): every numeric comparison goes through a float.

NaN, Infinity and subnormal numbers are accepted: the evaluators score them (a miss, never a crash).
"""

from __future__ import annotations

from dataclasses import replace

from agenteval.limits import Limits
from agenteval.targets.base import Answer
from agenteval.usable import problem


def admit(answer: Answer, limits: Limits) -> Answer:
    """The answer as it came, or (for a value no evaluator or store can take) the case's error."""
    if answer.error is not None:
        return answer
    found = problem(answer.output, limits.answer_depth)
    if found is None:
        return answer
    if found.startswith("answer nested deeper"):
        found = limits.message("answer_depth", found)
    return replace(answer, output=None, error=found)
