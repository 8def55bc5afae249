"""recorded: the candidate answer is already in the case (`output`) or in a predictions file."""

from __future__ import annotations

from typing import Any, Literal

from agenteval.config import StrictModel
from agenteval.targets.base import Answer, TargetRun


class RecordedTarget(StrictModel):
    """Answers come from each case's `output`, or from `--predictions` matched by case id."""

    type: Literal["recorded"] = "recorded"

    def answer(self, case: Any, run: TargetRun) -> Answer:
        if not case.has_output:
            return Answer(error=f"case {case.id!r} has no recorded `output` (add one, or pass --predictions)")
        return Answer(case.output)
