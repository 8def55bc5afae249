"""What a target returns (the candidate answer, or why there is none) and what it is given to work with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.process import MAX_ANSWER_DEPTH

if TYPE_CHECKING:
    from agenteval.endpoints import Endpoints
    from agenteval.process import Processes


@dataclass(slots=True)
class Answer:
    output: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    usage: dict[str, Any] | None = None  # latency, tokens, cost of getting the answer (see agenteval.usage)


@dataclass(slots=True)
class TargetRun:
    """The run's resources every target's `answer(case, run)` may use."""

    base_dir: Path
    processes: Processes
    endpoints: Endpoints | None = None
    repetition: int = 0  # which of --repeat N this is (part of a target's cache key when > 0)
    answer_depth: int = MAX_ANSWER_DEPTH  # the suite's `limits.answer_depth`: deepest answer a target may parse
