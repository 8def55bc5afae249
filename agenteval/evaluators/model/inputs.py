"""What a model-graded evaluator reads: part of the candidate (`path`) and part of the expected answer (`reference_path`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, PrivateAttr, model_validator

from agenteval.config import StrictModel
from agenteval.evaluators.base import EvalContext
from agenteval.paths import compile_path, resolve


class CandidateAndReference(StrictModel):
    path: str = Field("", description="The part of the candidate to use (e.g. `content`); empty: all of it.")
    reference_path: str = Field("", description="The part of `expected` to use as the reference; empty: all of it.")

    _keys: Any = PrivateAttr(())
    _reference_keys: Any = PrivateAttr(())

    @model_validator(mode="after")
    def _paths_compile(self) -> CandidateAndReference:
        for key in ("path", "reference_path"):
            if getattr(self, key) and compile_path(getattr(self, key)) is None:
                raise ValueError(f"{key}: malformed path {getattr(self, key)!r}")
        self._keys = compile_path(self.path) if self.path else ()
        self._reference_keys = compile_path(self.reference_path) if self.reference_path else ()
        return self

    def candidate_and_reference(self, ctx: EvalContext) -> tuple[Any, Any]:
        """(candidate, reference); MISSING where a path finds nothing. Without `path`, an openai
        target's answer is seen without its request metadata (what_was_said): the model grades
        what was said, and a re-run's request is the same, so it comes from the cache."""
        from agenteval.targets.openai import what_was_said

        candidate = resolve(ctx.output, self._keys) if self._keys else what_was_said(ctx.output)
        return candidate, resolve(ctx.expected, self._reference_keys)
