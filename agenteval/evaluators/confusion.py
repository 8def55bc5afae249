"""field_confusion: per-attribute TP/FP/FN/TN for header fields, scored as macro-F1.

Empty means null, absent or a blank string. Equal and non-empty is TP; equal and empty is TN;
both non-empty and different is one FP and one FN (a wrong value instead of the right one);
expected empty but candidate not is FP; expected non-empty but candidate empty is FN.
`details.metrics` holds the counts per attribute, which the run summary sums over the dataset.
Values are compared with `matching.equal`, the one strict deep equality every field matcher uses.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from agenteval import matching
from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorConfig, EvaluatorResult, Verdict
from agenteval.metrics import macro_f1, metrics_row
from agenteval.paths import MISSING, compile_path, dotted_key_problem, resolve

Outcome = Literal["tp", "tn", "fp+fn", "fp", "fn"]


def is_empty(value: Any) -> bool:
    return value is None or value is MISSING or (isinstance(value, str) and not value.strip())


def classify(expected: Any, candidate: Any, unicode: matching.UnicodeForm = "nfc") -> Outcome:
    """The confusion outcome of one attribute (values compared with strict deep equality, texts in form `unicode`)."""
    expected_empty, candidate_empty = is_empty(expected), is_empty(candidate)
    if expected_empty and candidate_empty:
        return "tn"
    if expected_empty:
        return "fp"
    if candidate_empty:
        return "fn"
    return "tp" if matching.equal(expected, candidate, unicode) else "fp+fn"


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
    fields: list[str] = Field(min_length=1, description="Attribute paths, e.g. invoice.number (a key with a dot: ['net.amount'])")
    unicode: matching.UnicodeForm = Field("nfc", description="Unicode normalization of texts before comparing: nfc, nfkc or raw.")
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

    def expected_problems(self, expected: Any) -> list[str]:
        """Fields that an expected answer written in the suite itself cannot be scored on as written."""
        return [problem for path, keys in self._paths if (problem := dotted_key_problem(path, keys, expected))]

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        if ctx.expected is None:  # nothing to classify against: not a row of false positives in the dataset's metrics
            return self.result(0.0, "fail", misses=[NO_EXPECTED], reasoning="nothing to compare with")
        rows: dict[str, dict[str, Any]] = {}
        hits, misses, examples = [], [], []
        for path, keys in self._paths:
            expected = MISSING if keys is None else resolve(ctx.expected, keys)
            candidate = MISSING if keys is None else resolve(ctx.output, keys)
            outcome = classify(expected, candidate, self.unicode)
            dotted = dotted_key_problem(path, keys, ctx.expected) if expected is MISSING else None
            if dotted is not None:
                outcome = "fn"  # the expected value is there under a dotted key: never a silent TN
            counts: Counter[str] = Counter()
            count(outcome, counts)
            rows[path] = metrics_row(counts)
            if outcome in ("tp", "tn"):
                hits.append(path)
                continue
            misses.append(f"{path} ({dotted or _WORDS[outcome]})")
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
