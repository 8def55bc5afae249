"""equals, contains, not_contains, starts_with, ends_with: one small text check per type.

Each compares the candidate text with a reference (a literal `reference`, or text in the
expected answer). A list of references means "any of them" for equals/starts_with/ends_with,
"all" or "any" (`mode`) for contains and "none of them" for not_contains.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import ClassVar, Literal

from pydantic import Field

from agenteval.evaluators.base import EvalContext, EvaluatorResult, graded_verdict
from agenteval.evaluators.text.base import Reference, ReferenceText, show


class _AnyOf(ReferenceText):
    """Passes when `holds(text, reference)` for any reference."""

    pure = True  # a comparison of two texts, linear in their length
    holds: ClassVar[Callable[[str, str], bool]]
    relation: ClassVar[str]  # "equals": how a hit reads
    verb: ClassVar[str]  # "equal": how a miss reads

    def compare(self, text: str, references: tuple[Reference, ...], ctx: EvalContext) -> EvaluatorResult:
        for shown, reference in references:
            if self.holds(text, reference):
                return self.result(1.0, "pass", hits=[f"{self.where} {self.relation} {show(shown)}"])
        wanted = show(references[0][0]) if len(references) == 1 else f"any of {len(references)} references"
        return self.result(0.0, "fail", misses=[f"{self.where} does not {self.verb} {wanted}"])


class Equals(_AnyOf):
    """The candidate text equals the reference (or one of a list)."""

    type: Literal["equals"]
    type_name = "equals"
    holds, relation, verb = staticmethod(operator.eq), "equals", "equal"


class StartsWith(_AnyOf):
    """The candidate text starts with the reference (or one of a list)."""

    type: Literal["starts_with"]
    type_name = "starts_with"
    holds, relation, verb = staticmethod(str.startswith), "starts with", "start with"


class EndsWith(_AnyOf):
    """The candidate text ends with the reference (or one of a list)."""

    type: Literal["ends_with"]
    type_name = "ends_with"
    holds, relation, verb = staticmethod(str.endswith), "ends with", "end with"


class Contains(ReferenceText):
    """The candidate text contains the reference strings: `mode: all` scores the share found, `any` needs one."""

    type: Literal["contains"]
    type_name = "contains"
    pure = True  # substring searches, linear in the texts' length
    mode: Literal["all", "any"] = Field("all", description="all: every string must appear (score: share found); any: one is enough.")

    def compare(self, text: str, references: tuple[Reference, ...], ctx: EvalContext) -> EvaluatorResult:
        hits, misses = [], []
        for shown, reference in references:
            (hits if reference in text else misses).append(show(shown))
        reasoning = f"{len(hits)}/{len(references)} found"
        if self.mode == "any":
            score = 1.0 if hits else 0.0
            return self.result(score, "pass" if hits else "fail", hits=hits, misses=misses, reasoning=reasoning)
        score = len(hits) / len(references)
        if misses and len(references) > 1:  # say why a list half found is not a pass, and the other way to read it
            why = f"not found ({len(hits)} of {len(references)} found; every one is needed, `mode: any` passes with one)"
            misses = [f"{miss} {why}" for miss in misses]
        return self.result(score, graded_verdict(score), hits=hits, misses=misses, reasoning=reasoning)


class NotContains(ReferenceText):
    """The candidate text contains none of the reference strings."""

    type: Literal["not_contains"]
    type_name = "not_contains"
    pure = True

    def compare(self, text: str, references: tuple[Reference, ...], ctx: EvalContext) -> EvaluatorResult:
        found = [show(shown) for shown, reference in references if reference in text]
        if found:
            return self.result(0.0, "fail", misses=[f"{self.where} contains {shown}" for shown in found])
        return self.result(1.0, "pass", hits=[f"{self.where} contains none of {len(references)}"])
