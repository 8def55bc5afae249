"""length: the candidate text is between `min` and `max` characters, words or lines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from agenteval.evaluators.base import EvalContext, EvaluatorResult
from agenteval.evaluators.text.base import TextEvaluator, folding, keep

Unit = Literal["chars", "words", "lines"]


def measure(text: str, unit: Unit) -> int:
    """Characters (code points), words (runs of non-space) or lines (an empty text has none)."""
    if unit == "words":
        return len(text.split())
    if unit == "lines":
        return len(text.splitlines())
    return len(text)


class Length(TextEvaluator):
    """Passes when the text's length in `unit` is within [`min`, `max`]."""

    type: Literal["length"]
    type_name = "length"
    min: int | None = Field(None, ge=0, description="Fewest units allowed.")
    max: int | None = Field(None, ge=0, description="Most units allowed.")
    unit: Unit = Field("chars", description="chars (code points), words (separated by whitespace) or lines.")
    normalize_whitespace: bool = Field(False, description="Fold runs of whitespace (newlines too) to one space and trim the ends first.")

    if TYPE_CHECKING:
        _fold: Any

    @model_validator(mode="after")
    def _bounds(self) -> Length:
        if self.min is None and self.max is None:
            raise ValueError("give `min`, `max` or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"`min` ({self.min}) is greater than `max` ({self.max})")
        return self

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        keep(self, _fold=folding(True, self.normalize_whitespace))

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        size = measure(self._fold(text), self.unit)
        details = {"length": size, "unit": self.unit}
        if self.min is not None and size < self.min:
            return self.result(0.0, "fail", misses=[f"{self.where} has {size} {self.unit}, fewer than {self.min}"], details=details)
        if self.max is not None and size > self.max:
            return self.result(0.0, "fail", misses=[f"{self.where} has {size} {self.unit}, more than {self.max}"], details=details)
        return self.result(1.0, "pass", hits=[f"{self.where} has {size} {self.unit}"], details=details)
