"""spans: what only a trace shows, checked on the compact `spans` a `traces` target's answer carries.

Each check picks spans (by `name`, `kind`, attribute values in `where`) and asserts one thing of
them: how many there are, whether one ended in an error, a duration percentile, or an attribute
of each (e.g. "the retriever span returned at least 3 documents"). The case's score is the share
of checks that hold; it passes when all do.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, model_validator

from agenteval.config import StrictModel
from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult

Scalar = str | int | float | bool
SpanKind = Literal["model", "tool", "retriever", "chain", "agent", "embedding", "reranker", "guardrail", "evaluator", "other"]


class SpanCheck(StrictModel):
    """Which spans (`name`, `kind`, `where`), and one assertion about them."""

    name: str | None = Field(None, description="Spans of this name only (exact).")
    kind: SpanKind | None = Field(None, description="Spans of this kind only, as the trace's conventions say (model, tool, retriever, ...).")
    where: dict[str, Scalar] | None = Field(None, description="Spans whose attributes have these values only (e.g. `{gen_ai.tool.name: refund}`).")
    count: int | None = Field(None, ge=0, description="Exactly this many spans are picked.")
    min_count: int | None = Field(None, ge=0, description="At least this many spans are picked.")
    max_count: int | None = Field(None, ge=0, description="At most this many spans are picked.")
    error: bool | None = Field(None, description="true: a picked span ended in an error; false: none did.")
    max_ms: float | None = Field(None, gt=0, allow_inf_nan=False, description="The `percentile` of the picked spans' durations is at most this (ms).")
    percentile: float = Field(100, gt=0, le=100, allow_inf_nan=False, description="Which percentile `max_ms` bounds (default 100: every span).")
    attribute: str | None = Field(
        None, min_length=1,
        description="An attribute every picked span (at least one) must have, checked with `equals`, `at_least` or `at_most`; "
        "`documents` is a retriever span's document count.",
    )
    equals: Scalar | None = Field(None, description="The attribute equals this.")
    at_least: float | None = Field(None, allow_inf_nan=False, description="The attribute is a number at least this.")
    at_most: float | None = Field(None, allow_inf_nan=False, description="The attribute is a number at most this.")

    @model_validator(mode="after")
    def _one_assertion(self) -> SpanCheck:
        given = [key for key in ("count", "min_count", "max_count", "error", "max_ms", "attribute") if getattr(self, key) is not None]
        if not given:
            raise ValueError("a check asserts something: give `count`, `min_count`, `max_count`, `error`, `max_ms` or `attribute`")
        compared = self.equals is not None or self.at_least is not None or self.at_most is not None
        if self.attribute is not None and not compared:
            raise ValueError("`attribute` needs `equals`, `at_least` or `at_most`")
        if self.attribute is None and compared:
            raise ValueError("`equals`, `at_least` and `at_most` compare an `attribute`: name it")
        return self

    def label(self) -> str:
        picked = [f"{key}={getattr(self, key)}" for key in ("kind", "name") if getattr(self, key) is not None]
        picked += [f"{key}={value}" for key, value in (self.where or {}).items()]
        return " ".join(picked) or "all spans"

    def picks(self, span: dict[str, Any]) -> bool:
        if self.name is not None and span.get("name") != self.name:
            return False
        if self.kind is not None and span.get("kind") != self.kind:
            return False
        attributes = span.get("attributes") if isinstance(span.get("attributes"), dict) else {}
        return all(key in attributes and _same(attributes[key], value) for key, value in (self.where or {}).items())

    def misses(self, spans: list[dict[str, Any]]) -> list[str]:
        """What does not hold, each as a sentence ([] when the check holds)."""
        label, found = self.label(), len(spans)
        misses = []
        if self.count is not None and found != self.count:
            misses.append(f"{label}: {found} span(s), expected {self.count}")
        if self.min_count is not None and found < self.min_count:
            misses.append(f"{label}: {found} span(s), expected at least {self.min_count}")
        if self.max_count is not None and found > self.max_count:
            misses.append(f"{label}: {found} span(s), expected at most {self.max_count}")
        if self.error is not None:
            failed = [span.get("name") for span in spans if span.get("error") is True]
            if self.error and not failed:
                misses.append(f"{label}: no span ended in an error")
            if not self.error and failed:
                misses.append(f"{label}: {len(failed)} span(s) ended in an error: {', '.join(map(str, failed[:5]))}")
        if self.max_ms is not None:
            misses += self._duration(label, spans)
        if self.attribute is not None:
            misses += self._attribute(label, spans)
        return misses

    def _duration(self, label: str, spans: list[dict[str, Any]]) -> list[str]:
        from agenteval.usage import percentile

        durations = sorted(span["duration_ms"] for span in spans if _number(span.get("duration_ms")))
        if not durations:
            return [f"{label}: no span to time"]
        value = percentile(durations, self.percentile / 100)
        assert value is not None and self.max_ms is not None
        return [] if value <= self.max_ms else [f"{label}: p{self.percentile:g} duration {value:g} ms > {self.max_ms:g} ms"]

    def _attribute(self, label: str, spans: list[dict[str, Any]]) -> list[str]:
        if not spans:
            return [f"{label}: no span to check `{self.attribute}` on"]
        misses = []
        for span in spans:
            value = _attribute(span, self.attribute or "")
            where = f"{label}: span {span.get('name')!r}"
            if value is _ABSENT:
                misses.append(f"{where} has no `{self.attribute}`")
            elif self.equals is not None and not _same(value, self.equals):
                misses.append(f"{where}: `{self.attribute}` is {value!r}, expected {self.equals!r}")
            elif (self.at_least is not None or self.at_most is not None) and not _number(value):
                misses.append(f"{where}: `{self.attribute}` is {value!r}, not a number")
            elif self.at_least is not None and value < self.at_least:
                misses.append(f"{where}: `{self.attribute}` is {value:g}, expected at least {self.at_least:g}")
            elif self.at_most is not None and value > self.at_most:
                misses.append(f"{where}: `{self.attribute}` is {value:g}, expected at most {self.at_most:g}")
        return misses[:20]


_ABSENT = object()


def _attribute(span: dict[str, Any], name: str) -> Any:
    attributes = span.get("attributes") if isinstance(span.get("attributes"), dict) else {}
    if name in attributes:
        return attributes[name]
    return span.get(name, _ABSENT) if name in ("documents", "duration_ms", "start_ms", "name", "kind", "error") else _ABSENT


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _same(value: Any, expected: Any) -> bool:
    """Equal and of the same kind (`1` is not `"1"`, `true` is not `1`)."""
    if isinstance(value, bool) or isinstance(expected, bool):
        return value is expected
    if _number(value) and _number(expected):
        return value == expected
    return type(value) is type(expected) and value == expected


class Spans(EvaluatorConfig):
    """Pass iff every check holds on the answer's `spans` (from a `traces` target)."""

    type: Literal["spans"]
    checks: list[SpanCheck] = Field(min_length=1, description="What must hold of the trace's spans, each check on the spans it picks.")

    type_name = "spans"

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        spans = ctx.output.get("spans") if isinstance(ctx.output, dict) else None
        if not isinstance(spans, list):
            return self.error_result("the answer carries no `spans` list (a `traces` target's answers do)")
        spans = [span for span in spans if isinstance(span, dict)]
        hits, misses, passed = [], [], 0
        for check in self.checks:
            picked = [span for span in spans if check.picks(span)]
            missed = check.misses(picked)
            misses += missed
            if not missed:
                passed += 1
                hits.append(f"{check.label()}: holds ({len(picked)} span(s))")
        score = passed / len(self.checks)
        return self.result(score, "pass" if passed == len(self.checks) else "fail", hits=hits, misses=misses,
                           details={"spans": len(spans), "checks_passed": passed, "checks": len(self.checks)})
