"""field_confusion: per-attribute TP/FP/FN/TN for header fields, scored as macro-F1.

Empty means null, absent or a blank string. Equal and non-empty is TP; equal and empty is TN;
both non-empty and different is one FP and one FN (a wrong value instead of the right one);
expected empty but candidate not is FP; expected non-empty but candidate empty is FN.
`details.metrics` holds the counts per attribute, which the run summary sums over the dataset.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult, Verdict
from agenteval.metrics import macro_f1, metrics_row
from agenteval.paths import MISSING, compile_path, resolve

Outcome = Literal["tp", "tn", "fp+fn", "fp", "fn"]


def is_empty(value: Any) -> bool:
    return value is None or value is MISSING or (isinstance(value, str) and not value.strip())


def classify(expected: Any, candidate: Any) -> Outcome:
    """The confusion outcome of one attribute (values compared with deep equality)."""
    expected_empty, candidate_empty = is_empty(expected), is_empty(candidate)
    if expected_empty and candidate_empty:
        return "tn"
    if expected_empty:
        return "fp"
    if candidate_empty:
        return "fn"
    return "tp" if _equal(expected, candidate) else "fp+fn"


def _equal(a: Any, b: Any) -> bool:
    """Deep equality that keeps types apart ("100" != 100, True != 1) but lets 100 == 100.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def count(outcome: Outcome, counts: Counter[str]) -> None:
    if outcome == "fp+fn":
        counts["fp"] += 1
        counts["fn"] += 1
    else:
        counts[outcome] += 1


def confusion_verdict(rows: dict[str, dict[str, Any]]) -> Verdict:
    """pass: nothing wrong; fail: nothing right; partial otherwise."""
    wrong = sum(row["fp"] + row["fn"] for row in rows.values())
    right = sum(row["tp"] + row["tn"] for row in rows.values())
    return "pass" if not wrong else "fail" if not right else "partial"


class FieldConfusion(EvaluatorConfig):
    """Header fields as a confusion matrix. Score: macro-F1 over the attributes (1.0 when all are rightly empty)."""

    type: Literal["field_confusion"]
    fields: list[str] = Field(min_length=1, description="Attribute paths, e.g. invoice.number")
    max_examples: int = Field(5, ge=0, description="Mismatch examples kept in details (the rest are counted).")

    type_name = "field_confusion"

    _paths: tuple[tuple[str, Any], ...] = PrivateAttr(())

    def model_post_init(self, context: Any) -> None:
        self._paths = tuple((path, compile_path(path)) for path in self.fields)

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        return [
            (("fields", i), f"malformed path {path!r}: it will resolve to missing")
            for i, (path, keys) in enumerate(self._paths)
            if keys is None
        ]

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        rows: dict[str, dict[str, Any]] = {}
        hits, misses, examples = [], [], []
        for path, keys in self._paths:
            expected = MISSING if keys is None else resolve(ctx.expected, keys)
            candidate = MISSING if keys is None else resolve(ctx.output, keys)
            outcome = classify(expected, candidate)
            counts: Counter[str] = Counter()
            count(outcome, counts)
            rows[path] = metrics_row(counts)
            if outcome in ("tp", "tn"):
                hits.append(path)
                continue
            misses.append(f"{path} ({_WORDS[outcome]})")
            examples.append({
                "field": path, "outcome": outcome,
                "expected": None if expected is MISSING else expected,
                "actual": None if candidate is MISSING else candidate,
            })
        macro = macro_f1(rows)
        details: dict[str, Any] = {"metrics": rows, "mismatches": examples[: self.max_examples]}
        if len(examples) > self.max_examples:
            details["mismatches_cut"] = len(examples) - self.max_examples
        score = 1.0 if macro is None else macro
        reasoning = f"macro-F1 {score:.3f} over {len(rows)} fields; {len(hits)} right, {len(misses)} wrong"
        return self.result(score, confusion_verdict(rows), hits=hits, misses=misses, reasoning=reasoning, details=details)


_WORDS = {"fp+fn": "wrong value", "fp": "unexpected value", "fn": "missing value"}
