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
    limit_reached: str | None = None  # a limit ended the answer early (a tool loop's max_steps, budget, timeout): the case fails, naming it


@dataclass(slots=True)
class TargetRun:
    """The run's resources every target's `answer(case, run)` may use."""

    base_dir: Path
    processes: Processes
    endpoints: Endpoints | None = None
    repetition: int = 0  # which of --repeat N this is (part of a target's cache key when > 0)
    answer_depth: int = MAX_ANSWER_DEPTH  # the suite's `limits.answer_depth`: deepest answer a target may parse


def template_variables(case: Any) -> dict[str, Any]:
    """What a model target's message templates see of a case (never `expected`: the target must
    not see the answer). Shared by every model target, so one suite's templates mean the same to each."""
    return {
        "input": case.input,
        "metadata": case.metadata,
        "case": {"id": case.id, "tags": case.tags, "metadata": case.metadata},
    }


def parse_json_content(content: str | None) -> tuple[Any, str | None]:
    """`parse_json: true` of a model target: (the reply's text as JSON, None), or (None, why not).
    A fenced block (```json ... ```) is read as its inside, as models often wrap JSON in one."""
    from agenteval.process import decode_json

    if content is None:
        return None, "the reply has no text content"
    text = content.strip()
    if text.startswith("```"):  # a fenced block: ```json ... ```
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    try:
        return decode_json(text.encode()), None
    except (ValueError, RecursionError):
        return None, f"content is not JSON: {content[:200]!r}"
