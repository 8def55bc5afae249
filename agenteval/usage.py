"""Latency, tokens and cost: the per-case record, the suite's price table, and the run's figures.

A case's `usage` is what its target's answer cost (latency of the answering request, tokens,
cost when the suite has a price for the model); a model judge puts the same record in its
result's `details.usage`. The summary keeps one float per case for the latency percentiles
(8 bytes a case: a million cases is 8 MB) and running totals for the rest.
"""

from __future__ import annotations

import math
from array import array
from typing import TYPE_CHECKING, Any

from pydantic import Field

from agenteval.config import StrictModel

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Protocol

    class _Scored(Protocol):  # one evaluator's result, as far as usage reads it
        details: dict[str, Any] | None

    class CaseResult(Protocol):
        """What usage reads of a case's result (agenteval.results.CaseResult, which sits above
        this module: endpoints and targets write usage records, results sum them)."""

        usage: dict[str, Any] | None

        @property
        def evaluator_results(self) -> Sequence[_Scored]: ...


class Price(StrictModel):
    """USD per million tokens, as price lists give them."""

    input: float = Field(ge=0, description="USD per million input (prompt) tokens.")
    output: float = Field(ge=0, description="USD per million output (completion) tokens.")


def usage_record(latency_ms: float, tokens: dict[str, Any] | None = None, *, cached: bool = False) -> dict[str, Any]:
    """`{latency_ms, input_tokens, output_tokens, total_tokens, cached}` from an OpenAI-style `usage`."""
    record: dict[str, Any] = {"latency_ms": round(latency_ms, 3)}
    if isinstance(tokens, dict):
        prompt, completion = _count(tokens.get("prompt_tokens")), _count(tokens.get("completion_tokens"))
        total = _count(tokens.get("total_tokens"))
        if total is None and prompt is not None and completion is not None:
            total = prompt + completion
        record.update(input_tokens=prompt, output_tokens=completion, total_tokens=total)
    if cached:
        record["cached"] = True
    return record


def combine_usage(first: dict[str, Any] | None, second: dict[str, Any]) -> dict[str, Any]:
    """Two requests made for one result (a judge's retry): latencies, tokens and costs add up."""
    if first is None:
        return dict(second)
    combined: dict[str, Any] = {}
    for key in ("latency_ms", "input_tokens", "output_tokens", "total_tokens", "cost_usd"):
        values = [record[key] for record in (first, second) if record.get(key) is not None]
        if values:
            combined[key] = sum(values)
    if first.get("cached") and second.get("cached"):
        combined["cached"] = True
    return combined


def _count(value: Any) -> int | None:
    return value if type(value) is int and 0 <= value < 2**53 else None  # a count a JSON reader keeps exactly (and orjson writes)


def price_of(record: dict[str, Any], models: list[str | None], prices: dict[str, Price]) -> float | None:
    """The cost of a record under the first of `models` the price table knows; None when none is priced."""
    price = next((prices[model] for model in models if model and model in prices), None)
    if price is None or record.get("input_tokens") is None and record.get("output_tokens") is None:
        return None
    return ((record.get("input_tokens") or 0) * price.input + (record.get("output_tokens") or 0) * price.output) / 1e6


def percentile(sorted_values: list[float] | array, fraction: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not len(sorted_values):
        return None
    position = (len(sorted_values) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


class _Totals:
    def __init__(self) -> None:
        self.records = 0
        self.cached = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.total_tokens = 0
        self.cost = 0.0
        self.priced = 0

    def add(self, record: dict[str, Any]) -> None:
        self.records += 1
        self.cached += bool(record.get("cached"))
        for key in ("input_tokens", "output_tokens", "total_tokens"):
            value = record.get(key)
            if type(value) is int:
                setattr(self, key, getattr(self, key) + value)
        cost = record.get("cost_usd")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.cost += cost
            self.priced += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.records,
            "cached": self.cached,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens, "total": self.total_tokens},
            "cost_usd": self.cost if self.priced else None,
        }


class UsageStats:
    """Latency percentiles and token/cost totals of targets and model judges over a run."""

    def __init__(self) -> None:
        self.latencies = array("d")
        self.target = _Totals()
        self.judges = _Totals()

    def add(self, result: CaseResult) -> None:
        usage = getattr(result, "usage", None)
        if isinstance(usage, dict):
            latency = usage.get("latency_ms")
            if isinstance(latency, (int, float)) and not isinstance(latency, bool):
                self.latencies.append(float(latency))
            self.target.add(usage)
        for evaluator in result.evaluator_results:
            record = (evaluator.details or {}).get("usage")
            if isinstance(record, dict):
                self.judges.add(record)

    def latency(self) -> dict[str, float | None]:
        ordered = sorted(self.latencies)
        return {
            "p50": percentile(ordered, 0.5),
            "p95": percentile(ordered, 0.95),
            "mean": sum(ordered) / len(ordered) if ordered else None,
            "max": ordered[-1] if ordered else None,
        }

    def to_dict(self) -> dict[str, Any] | None:
        """The summary's `usage` section, or None when no case recorded any."""
        if not self.target.records and not self.judges.records:
            return None
        target, judges = self.target.to_dict(), self.judges.to_dict()
        costs = [cost for cost in (target["cost_usd"], judges["cost_usd"]) if cost is not None]
        return {
            "latency_ms": self.latency(),
            "target": target,
            "judges": judges,
            "total_tokens": target["tokens"]["total"] + judges["tokens"]["total"],
            "total_cost_usd": sum(costs) if costs else None,
        }
