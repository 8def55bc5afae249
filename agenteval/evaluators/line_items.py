"""line_items: match expected items to candidate items first, then score them per attribute.

Index-based comparison breaks when a model reorders, merges, drops or invents items. Here each
pair of items gets a similarity on the configured match fields (normalized Levenshtein for
text, equality for numbers and for dates, read as `match: date` reads them), pairs below the
threshold never match, and items are paired 1:1, greedily by descending similarity or by
optimal assignment. Unmatched expected items count as FN for each attribute they have,
unmatched candidate items as FP.
"""

from __future__ import annotations

from collections import Counter
from datetime import date
from typing import Any, Literal

from pydantic import Field

from agenteval import matching
from agenteval.evaluators.base import EvalContext, EvaluatorResult, PathEvaluator
from agenteval.evaluators.confusion import classify, confusion_verdict, count, is_empty
from agenteval.metrics import macro_f1, metrics_row
from agenteval.pairing import pair
from agenteval.paths import MISSING

ITEMS_ROW = "(items)"


def value_similarity(a: Any, b: Any) -> float:
    """Dates (as `match: date` reads them): the same calendar date or not. Other text: normalized
    Levenshtein ignoring case and whitespace. Anything else: equal or not."""
    if is_empty(a) or is_empty(b):
        return 0.0
    if isinstance(a, str) and isinstance(b, str):
        day_a, day_b = _as_date(a), _as_date(b)
        if day_a is not None and day_b is not None:
            return 1.0 if day_a == day_b else 0.0
        return matching.similarity(a, b, "levenshtein")
    return 1.0 if matching.exact(a, b).hit else 0.0


def _as_date(text: str) -> date | None:
    """The date a text names; text with no digit (most descriptions) cannot be one, so skip parsing it."""
    if len(text) > 40 or not any(character.isdigit() for character in text):
        return None
    return matching.parse_date(text)


def item_similarity(expected: Any, candidate: Any, match_fields: list[str]) -> float:
    """Mean similarity over the match fields (0 when either item is not an object)."""
    if not isinstance(expected, dict) or not isinstance(candidate, dict):
        return 0.0
    return sum(value_similarity(expected.get(f), candidate.get(f)) for f in match_fields) / len(match_fields)


def similarity_matrix(expected: list[Any], candidate: list[Any], match_fields: list[str]) -> list[list[float]]:
    return [[item_similarity(e, c, match_fields) for c in candidate] for e in expected]


class LineItems(PathEvaluator):
    """Items matched before scoring. Score: macro-F1 over the attributes and `(items)`, the matching itself."""

    type: Literal["line_items"]
    path: str = Field("line_items", description="Where the list is, in both candidate and expected.")
    match_fields: list[str] = Field(["description"], min_length=1, description="Fields that decide which items pair up.")
    fields: list[str] | None = Field(
        None, description="Attributes scored on each pair (default: every key of the expected items)."
    )
    threshold: float = Field(0.8, ge=0, le=1, description="Pairs less similar than this never match.")
    matching: Literal["greedy", "optimal"] = Field("greedy", description="optimal needs scipy (the geometry extra).")
    max_rows: int = Field(50, ge=0, description="Alignment rows and examples kept in details (the rest are counted).")

    type_name = "line_items"

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        expected, candidate = self.values(ctx)
        if not isinstance(expected, list):
            return self.result(0.0, "fail", misses=[f"{self.path} (no expected list)"], reasoning="nothing to score")
        misses: list[str] = []
        if not isinstance(candidate, list):
            misses.append(f"{self.path} ({'missing' if candidate is MISSING or candidate is None else 'not a list'})")
            candidate = []
        pairs = self.pair(expected, candidate)
        rows, details = self.score_pairs(expected, candidate, pairs)
        unmatched_expected = len(expected) - len(pairs)
        unmatched_candidate = len(candidate) - len(pairs)
        if unmatched_expected:
            misses.append(f"{unmatched_expected} expected item(s) unmatched")
        if unmatched_candidate:
            misses.append(f"{unmatched_candidate} extra candidate item(s)")
        misses += [f"{attribute} ({row['fp']} FP, {row['fn']} FN)" for attribute, row in rows.items()
                   if attribute != ITEMS_ROW and (row["fp"] or row["fn"])]
        macro = macro_f1(rows)
        score = 1.0 if macro is None else macro  # undefined only when both lists are empty
        verdict = confusion_verdict(rows)
        reasoning = (
            f"{len(pairs)} of {len(expected)} expected items matched ({self.matching}), "
            f"{unmatched_candidate} extra; macro-F1 {score:.3f}"
        )
        return self.result(score, verdict, misses=misses, reasoning=reasoning, details=details)

    def pair(self, expected: list[Any], candidate: list[Any]) -> list[tuple[int, int, float]]:
        matrix = similarity_matrix(expected, candidate, self.match_fields)
        return pair(matrix, self.matching, self.threshold)

    def score_pairs(
        self, expected: list[Any], candidate: list[Any], pairs: list[tuple[int, int, float]]
    ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        attributes = self.fields or _keys_of(expected)
        counts: dict[str, Counter[str]] = {attribute: Counter() for attribute in attributes}
        mismatches = []
        for i, j, _ in pairs:
            want, got = _as_dict(expected[i]), _as_dict(candidate[j])
            for attribute in attributes:
                outcome = classify(want.get(attribute), got.get(attribute))
                count(outcome, counts[attribute])
                if outcome not in ("tp", "tn"):
                    mismatches.append({"expected_index": i, "candidate_index": j, "field": attribute,
                                       "outcome": outcome, "expected": want.get(attribute), "actual": got.get(attribute)})
        matched_expected = {i for i, _, _ in pairs}
        matched_candidate = {j for _, j, _ in pairs}
        for items, matched, kind in ((expected, matched_expected, "fn"), (candidate, matched_candidate, "fp")):
            for index, item in enumerate(items):
                if index in matched:
                    continue
                for attribute in attributes:
                    if not is_empty(_as_dict(item).get(attribute)):
                        counts[attribute][kind] += 1
        rows = {attribute: metrics_row(c) for attribute, c in counts.items()}
        rows[ITEMS_ROW] = metrics_row({"tp": len(pairs), "fp": len(candidate) - len(pairs), "fn": len(expected) - len(pairs)})
        alignment = [{"expected": i, "candidate": j, "similarity": round(s, 6)} for i, j, s in pairs]
        details: dict[str, Any] = {
            "metrics": rows,
            "alignment": alignment[: self.max_rows],
            "unmatched_expected": sorted(set(range(len(expected))) - matched_expected)[: self.max_rows],
            "unmatched_candidate": sorted(set(range(len(candidate))) - matched_candidate)[: self.max_rows],
            "mismatches": mismatches[: self.max_rows],
        }
        cut = {
            "alignment": len(alignment) - self.max_rows,
            "unmatched_expected": len(expected) - len(pairs) - self.max_rows,
            "unmatched_candidate": len(candidate) - len(pairs) - self.max_rows,
            "mismatches": len(mismatches) - self.max_rows,
        }
        if any(n > 0 for n in cut.values()):
            details["cut"] = {key: n for key, n in cut.items() if n > 0}
        return rows, details


def _as_dict(item: Any) -> dict[str, Any]:
    return item if isinstance(item, dict) else {}


def _keys_of(items: list[Any]) -> list[str]:
    keys: dict[str, None] = {}
    for item in items:
        keys.update(dict.fromkeys(_as_dict(item)))
    return list(keys)
