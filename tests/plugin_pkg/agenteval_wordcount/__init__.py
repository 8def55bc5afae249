"""An evaluator plugin: the candidate answer must fit in a word budget.

Installed, it adds `type: word_count` to every suite, validated like a built-in type.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agenteval.evaluators import EvalContext, EvaluatorConfig, EvaluatorResult


class WordCount(EvaluatorConfig):
    """Answers of at most `max_words` words pass. Score: 1 within the budget, else budget / words."""

    type: Literal["word_count"]
    max_words: int = Field(gt=0, description="The word budget.")

    type_name = "word_count"

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        words = len(str(ctx.output).split())
        if words <= self.max_words:
            return self.result(1.0, "pass", hits=[f"{words} words"])
        return self.result(self.max_words / words, "fail", misses=[f"{words} words > {self.max_words}"])
