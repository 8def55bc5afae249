"""Score scales: how a judge's raw score reads, and its normalization to [0, 1].

Judges think in their own units (a 1-5 rating, a percentage, pass/fail); results and case
scores are always in [0, 1]. A `scale` on an evaluator says how to map one to the other, so a
judge returning 85 under `scale: percent` scores 0.85 instead of failing validation. Nothing
here raises on data: a raw value that does not fit the scale comes back as a message.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pydantic import Field, model_validator

from agenteval.config import StrictModel

ScaleName = Literal["unit", "binary", "pass_fail", "likert5", "percent"]

_BINARY_WORDS = {"true": 1.0, "pass": 1.0, "yes": 1.0, "false": 0.0, "fail": 0.0, "no": 0.0}
_BOUNDS: dict[str, tuple[float, float]] = {"unit": (0.0, 1.0), "likert5": (1.0, 5.0), "percent": (0.0, 100.0)}


class RangeScale(StrictModel):
    """Any numeric range: `scale: {range: [1, 10]}` maps 1 to 0 and 10 to 1, linearly."""

    range: list[float] = Field(min_length=2, max_length=2, description="[min, max] of the raw score; min < max.")

    @model_validator(mode="after")
    def _ordered(self) -> RangeScale:
        low, high = self.range
        if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
            raise ValueError(f"range must be [min, max] with finite min < max, got {self.range}")
        return self


Scale = Annotated[
    Union[ScaleName, RangeScale],
    Field(
        description=(
            "How the raw score reads: unit (0-1, default), binary (true/false or 0/1), pass_fail (pass or fail), likert5 (1-5, "
            "scored (s-1)/4), percent (0-100), or {range: [min, max]}. The raw score is kept in "
            "details.raw_score; the normalized one is the score."
        )
    ),
]


def describe(scale: ScaleName | RangeScale) -> str:
    """The scale in words, for messages and judge prompts: `percent (0 to 100)`."""
    if isinstance(scale, RangeScale):
        low, high = scale.range
        return f"range ({low:g} to {high:g})"
    if scale == "binary":
        return "binary (true/false or 0/1)"
    if scale == "pass_fail":
        return "pass_fail (pass or fail)"
    low, high = _BOUNDS[scale]
    return f"{scale} ({low:g} to {high:g})"


def _is_number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and math.isfinite(value)


def normalize(raw: Any, scale: ScaleName | RangeScale) -> float | str:
    """The score in [0, 1] that `raw` means on `scale`, or why `raw` is not a score on it."""
    if scale in ("binary", "pass_fail"):
        if type(raw) is bool:
            return 1.0 if raw else 0.0
        if type(raw) is str and raw.strip().lower() in _BINARY_WORDS:
            return _BINARY_WORDS[raw.strip().lower()]
        if _is_number(raw) and raw in (0, 1):
            return float(raw)
        return f"score {raw!r} is not {describe(scale)}"
    if not _is_number(raw):
        return f"score {raw!r} is not a finite number on {describe(scale)}"
    low, high = scale.range if isinstance(scale, RangeScale) else _BOUNDS[scale]
    if not low <= raw <= high:
        return f"score {raw!r} is outside {describe(scale)}"
    return (raw - low) / (high - low)


def rescale_answer(answer: dict[str, Any], scale: ScaleName | RangeScale) -> dict[str, Any] | str:
    """A judge's answer `{score, details?, ...}` with its score normalized and the raw one in
    `details.raw_score`; or why its score does not fit. An answer without a score, or with
    details that are not an object, is returned as is for the caller's own validation to report."""
    if "score" not in answer or scale == "unit":
        return answer
    raw = answer["score"]
    score = normalize(raw, scale)
    if isinstance(score, str):
        return score
    details = answer.get("details")
    if details is None:
        details = {}
    elif not isinstance(details, dict):
        return {**answer, "score": score}
    return {**answer, "score": score, "details": {**details, "raw_score": raw}}
