"""recorded: the candidate answer is already in the case (`output`) or in a predictions file."""

from __future__ import annotations

from typing import Literal

from agenteval.config import StrictModel


class RecordedTarget(StrictModel):
    """Answers come from each case's `output`, or from `--predictions` matched by case id."""

    type: Literal["recorded"] = "recorded"
