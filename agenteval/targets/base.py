"""What a target returns: the candidate answer, or why there is none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Answer:
    output: Any = None
    error: str | None = None
    duration_ms: float = 0.0
