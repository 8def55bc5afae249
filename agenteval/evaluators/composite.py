"""composite: several evaluators scored as one, so a rubric can group, weigh and gate its criteria.

Children are any evaluators, composites included. Each child's result (criterion, score,
misses...) is kept in `details.children`; the child's own `weight` is its weight here.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Literal

from pydantic import Field, model_validator

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult, EvaluatorSpec, Verdict, run_evaluator

Aggregation = Literal["weighted_average", "all_or_nothing", "min", "any"]


class Composite(EvaluatorConfig):
    """Child evaluators as one score. Default verdict: pass when every child passes (`any`: when
    one does), fail when none does, else partial (`all_or_nothing`: pass or fail)."""

    type: Literal["composite"]
    evaluators: list[EvaluatorSpec] = Field(min_length=1, description="The children: any evaluators, composites included.")
    aggregation: Aggregation = Field(
        "weighted_average",
        description=(
            "weighted_average of the children's scores (by their `weight`); all_or_nothing: 1 when every child "
            "passes, else 0; min: the lowest child score; any: 1 when some child passes, else the best child score."
        ),
    )

    type_name = "composite"

    @model_validator(mode="after")
    def _unique_children(self) -> Composite:
        labels = [child.label for child in self.evaluators]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(f"two children are named {repeated[0]!r}; give each a unique `name`")
        return self

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        return [
            (("evaluators", index, *where), message)
            for index, child in enumerate(self.evaluators)
            for where, message in child.warnings()
        ]

    def close(self) -> None:
        for child in self.evaluators:
            child.close()

    def prepare(self) -> None:
        for child in self.evaluators:
            child.prepare()

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        children: list[EvaluatorConfig] = list(self.evaluators)
        results = [run_evaluator(child, ctx) for child in children]
        passed = [result.verdict == "pass" for result in results]
        score = aggregate(self.aggregation, [r.score for r in results], [c.weight for c in children], passed)
        hits = [result.name for result in results if result.verdict == "pass"]
        misses = []
        for result in results:
            if result.misses:
                misses += [f"{result.name}: {miss}" for miss in result.misses]
            elif result.verdict != "pass":
                misses.append(f"{result.name}: {result.error or result.verdict}")
        details = {"aggregation": self.aggregation, "children": [_as_dict(result) for result in results]}
        reasoning = f"{sum(passed)}/{len(results)} children passed ({self.aggregation})"
        errors = [f"{result.name}: {result.error or 'error'}" for result in results if result.verdict == "error"]
        if errors:
            return EvaluatorResult(
                self.label, self.type, score, "error", hits, misses, reasoning, details, "; ".join(errors)
            )
        if self.aggregation == "any":
            default: Verdict = "pass" if any(passed) else "fail"
        elif self.aggregation == "all_or_nothing":
            default = "pass" if all(passed) else "fail"
        else:
            default = "pass" if all(passed) else "fail" if not any(passed) else "partial"
        return self.result(score, default, hits=hits, misses=misses, reasoning=reasoning, details=details)


def aggregate(aggregation: Aggregation, scores: list[float], weights: list[float], passed: list[bool]) -> float:
    """The composite score from its children's scores, weights and pass/fail."""
    if aggregation == "all_or_nothing":
        return 1.0 if all(passed) else 0.0
    if aggregation == "any":
        return 1.0 if any(passed) else max(scores)
    if aggregation == "min":
        return min(scores)
    total = sum(weights)
    if total > 0:
        return sum(score * weight for score, weight in zip(scores, weights)) / total
    return sum(scores) / len(scores)


def _as_dict(result: EvaluatorResult) -> dict[str, Any]:
    return {field.name: getattr(result, field.name) for field in fields(result)}
