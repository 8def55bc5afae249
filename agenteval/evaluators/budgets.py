"""latency, token_usage and cost: thresholds on what getting each answer took.

Per-case limits (`max_*`) score each case; suite limits (`p95_ms`, `total_usd`, ...) are checked
on the run's summary figures once every case is in, and a run over one exits 1, so a CI gate can
say "p95 under 3 s and under $0.50 for the suite". The figures are those recorded with the
answer (`usage` on each result): a replay from the response cache reports the recorded ones.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult


class _Budget(EvaluatorConfig):
    """Pass iff every per-case limit holds (no limit: pass, the figure recorded in details)."""

    figures: ClassVar[tuple[tuple[str, str, str], ...]]  # (usage key, limit field, unit) per case
    nothing_recorded: ClassVar[str]

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        usage = ctx.usage or {}
        recorded = {key: usage.get(key) for key, _, _ in self.figures}
        if all(value is None for value in recorded.values()):
            return self.result(0.0, "fail", misses=[self.nothing_recorded], reasoning=self.nothing_recorded)
        hits, misses = [], []
        for key, limit_field, unit in self.figures:
            limit, value = getattr(self, limit_field), recorded[key]
            if limit is None:
                continue
            if value is None:
                misses.append(f"{key} (not recorded)")
            elif value > limit:
                misses.append(f"{key} {_show(value, unit)} > {_show(limit, unit)}")
            else:
                hits.append(f"{key} {_show(value, unit)} <= {_show(limit, unit)}")
        reasoning = ", ".join(f"{key} {_show(value, unit)}" for (key, _, unit), value in zip(self.figures, recorded.values()) if value is not None)
        details = {key: value for key, value in recorded.items() if value is not None}
        return self.result(0.0 if misses else 1.0, "fail" if misses else "pass", hits=hits, misses=misses, reasoning=reasoning, details=details)

    def suite_limits(self) -> list[tuple[str, float]]:
        """(summary figure, limit) pairs this evaluator sets on the whole run."""
        return []


def _show(value: float, unit: str) -> str:
    if unit == "usd":
        return f"${value:.4f}"
    if unit == "ms":
        return f"{value:.0f} ms"
    return f"{value:g}"


class Latency(_Budget):
    """Latency of each answer: the request of an `openai` or `http` target, or the `command` target's process."""

    type: Literal["latency"]
    max_ms: float | None = Field(None, gt=0, description="Per case: the answer took at most this many ms.")
    p50_ms: float | None = Field(None, gt=0, description="Suite: the median latency over the run is at most this.")
    p95_ms: float | None = Field(None, gt=0, description="Suite: the 95th percentile latency over the run is at most this.")

    type_name = "latency"
    figures = (("latency_ms", "max_ms", "ms"),)
    nothing_recorded = "no latency recorded for this answer (recorded answers and --predictions have none)"

    def suite_limits(self) -> list[tuple[str, float]]:
        return [(figure, limit) for figure, limit in (("latency_p50_ms", self.p50_ms), ("latency_p95_ms", self.p95_ms)) if limit]


class TokenUsage(_Budget):
    """Tokens the target's model used for each answer, as its server reported them."""

    type: Literal["token_usage"]
    max_tokens: int | None = Field(None, gt=0, description="Per case: input + output tokens at most this.")
    max_input_tokens: int | None = Field(None, gt=0, description="Per case: input (prompt) tokens at most this.")
    max_output_tokens: int | None = Field(None, gt=0, description="Per case: output (completion) tokens at most this.")
    total_tokens: int | None = Field(None, gt=0, description="Suite: tokens of every target and model judge request at most this.")

    type_name = "token_usage"
    figures = (
        ("total_tokens", "max_tokens", ""), ("input_tokens", "max_input_tokens", ""), ("output_tokens", "max_output_tokens", ""),
    )
    nothing_recorded = "no token usage recorded for this answer (the target reported none)"

    def suite_limits(self) -> list[tuple[str, float]]:
        return [("total_tokens", self.total_tokens)] if self.total_tokens else []


class Cost(_Budget):
    """Cost of each answer from the suite's `prices:` table (USD per million tokens)."""

    type: Literal["cost"]
    max_usd: float | None = Field(None, ge=0, description="Per case: the answer cost at most this many USD.")
    total_usd: float | None = Field(None, ge=0, description="Suite: every target and model judge request together cost at most this.")

    type_name = "cost"
    figures = (("cost_usd", "max_usd", "usd"),)
    nothing_recorded = "no cost recorded for this answer (no `prices:` entry for its model, or no token usage)"

    def suite_limits(self) -> list[tuple[str, float]]:
        return [("total_cost_usd", self.total_usd)] if self.total_usd is not None else []


def suite_figures(usage: dict[str, Any] | None) -> dict[str, float | None]:
    """The summary figures suite limits are checked against, from the summary's `usage` section."""
    usage = usage or {}
    latency = usage.get("latency_ms") or {}
    return {
        "latency_p50_ms": latency.get("p50"),
        "latency_p95_ms": latency.get("p95"),
        "total_tokens": usage.get("total_tokens"),
        "total_cost_usd": usage.get("total_cost_usd"),
    }


def check_suite_limits(evaluators: list[EvaluatorConfig], usage: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every suite limit of the suite's budget evaluators, with its figure and whether it held.

    A limit whose figure was never recorded (no latency, no price) fails: nothing verified is not a pass.
    """
    figures = suite_figures(usage)
    checks = []
    for evaluator in evaluators:
        if not isinstance(evaluator, _Budget):
            continue
        for figure, limit in evaluator.suite_limits():
            value = figures.get(figure)
            checks.append({
                "evaluator": evaluator.label, "figure": figure, "limit": limit, "value": value,
                "passed": value is not None and value <= limit,
            })
    return checks


def describe_limit(check: dict[str, Any]) -> str:
    """`latency_p95_ms 3412 > 3000 (evaluator latency)`, for the end of a run."""
    value = "not recorded" if check["value"] is None else f"{check['value']:g}"
    relation = "<=" if check["passed"] else ">" if check["value"] is not None else "vs"
    return f"{check['figure']} {value} {relation} {check['limit']:g} (evaluator {check['evaluator']})"
