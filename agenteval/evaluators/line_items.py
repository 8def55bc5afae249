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
from agenteval.matching import UnicodeForm
from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorResult, PathEvaluator
from agenteval.evaluators.confusion import classify, confusion_verdict, count, is_empty
from agenteval.metrics import macro_f1, metrics_row
from agenteval.pairing import pair, too_many_pairs
from agenteval.paths import MISSING

ITEMS_ROW = "(items)"
_TEXT, _OTHER = 1, 2  # kinds of a match-field value; anything else (empty) pairs with nothing


def value_similarity(a: Any, b: Any, unicode: UnicodeForm = "nfc", dates: dict[str, date | None] | None = None) -> float:
    """Dates (as `match: date` reads them): the same calendar date or not. Other text: normalized
    Levenshtein ignoring case and whitespace. Anything else: strictly equal or not.
    (`similarity_matrix` computes the same for whole lists at once.)"""
    if is_empty(a) or is_empty(b):
        return 0.0
    if isinstance(a, str) and isinstance(b, str):
        dates = {} if dates is None else dates
        day_a, day_b = _as_date(a, dates), _as_date(b, dates)
        if day_a is not None and day_b is not None:
            return 1.0 if day_a == day_b else 0.0
        return matching.similarity(a, b, "levenshtein", unicode=unicode)
    return 1.0 if matching.exact(a, b, unicode).hit else 0.0


def _as_date(text: str, dates: dict[str, date | None]) -> date | None:
    """The date a text names, parsed once per text and case (`dates`); text with no digit (most
    descriptions) cannot be one, so it is not parsed at all."""
    if text in dates:
        return dates[text]
    day = None
    if len(text) <= 40 and any(character.isdigit() for character in text):
        day = matching.read_date(text)
    dates[text] = day
    return day


def item_similarity(expected: Any, candidate: Any, match_fields: list[str], unicode: UnicodeForm = "nfc") -> float:
    """Mean similarity over the match fields (0 when either item is not an object)."""
    if not isinstance(expected, dict) or not isinstance(candidate, dict):
        return 0.0
    return sum(value_similarity(expected.get(f), candidate.get(f), unicode) for f in match_fields) / len(match_fields)


class _Column:
    """One match field's values on one side, read once: what each value is and what it compares as."""

    def __init__(self, items: list[Any], field: str, unicode: UnicodeForm, dates: dict[str, date | None]) -> None:
        self.kinds: list[int] = []
        self.texts: list[str] = []  # case, whitespace and Unicode folded, for Levenshtein
        self.days: list[int] = []  # the date's ordinal, -1 when the text is not a date
        self.keys: list[Any] = []  # strict-equality keys of the other values
        for item in items:
            value = item.get(field) if isinstance(item, dict) else None
            if is_empty(value):
                self.kinds.append(0)
            elif isinstance(value, str):
                self.kinds.append(_TEXT)
                self.texts.append(matching.normalize_unicode(matching.normalize_text(value), unicode))
                day = _as_date(value, dates)
                self.days.append(-1 if day is None else day.toordinal())
            else:
                self.kinds.append(_OTHER)
                self.keys.append(_strict_key(value, unicode))

    def where(self, kind: int) -> list[int]:
        return [index for index, k in enumerate(self.kinds) if k == kind]


def _strict_key(value: Any, unicode: UnicodeForm) -> Any:
    """A key equal for two values exactly when `matching.exact` says they are (100 and 100.0 share
    one; True and 1 do not); NaN, equal to nothing, gets a key of its own."""
    kind = type(value)
    if kind is bool:
        return ("bool", value)
    if kind is int or kind is float:
        return ("nan", object()) if value != value else ("number", value)
    if kind is str:
        return ("str", matching.normalize_unicode(value, unicode))
    if kind is list:
        return ("list", tuple(_strict_key(item, unicode) for item in value))
    if kind is dict:
        return ("dict", frozenset((key, _strict_key(item, unicode)) for key, item in value.items()))
    return (kind, repr(value))


def longest_text(items: list[Any], match_fields: list[str]) -> int:
    """The longest text a pair similarity would measure (Levenshtein's cost grows with its square)."""
    return max(
        (len(value) for item in items if isinstance(item, dict) for f in match_fields if isinstance(value := item.get(f), str)),
        default=0,
    )


def similarity_matrix(
    expected: list[Any], candidate: list[Any], match_fields: list[str], unicode: UnicodeForm = "nfc"
) -> Any:
    """Every pair's `item_similarity` as an (expected x candidate) numpy array, computed column-wise:
    each value is folded and date-parsed once (a dict for this call), texts are compared by rapidfuzz's
    cdist in C, and other values by their strict keys."""
    import numpy as np
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cdist

    total = np.zeros((len(expected), len(candidate)))
    if not expected or not candidate:
        return total
    dates: dict[str, date | None] = {}
    for field in match_fields:
        want, got = _Column(expected, field, unicode, dates), _Column(candidate, field, unicode, dates)
        rows, cols = want.where(_TEXT), got.where(_TEXT)
        if rows and cols:
            texts = cdist(want.texts, got.texts, scorer=Levenshtein.normalized_similarity, dtype=np.float64, workers=1)
            row_days, col_days = np.array(want.days)[:, None], np.array(got.days)[None, :]
            both_dates = (row_days >= 0) & (col_days >= 0)
            total[np.ix_(rows, cols)] += np.where(both_dates, (row_days == col_days).astype(float), texts)
        rows, cols = want.where(_OTHER), got.where(_OTHER)
        if rows and cols:
            ids: dict[Any, int] = {}
            row_ids = np.array([ids.setdefault(key, len(ids)) for key in want.keys])
            col_ids = np.array([ids.setdefault(key, len(ids)) for key in got.keys])
            total[np.ix_(rows, cols)] += row_ids[:, None] == col_ids[None, :]
    return total / len(match_fields)


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
    unicode: UnicodeForm = Field("nfc", description="Unicode normalization of texts before comparing: nfc, nfkc or raw.")

    type_name = "line_items"

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        expected, candidate = self.values(ctx)
        if not isinstance(expected, list):
            return self.result(0.0, "fail", misses=[f"{self.path} ({NO_EXPECTED if ctx.expected is None else 'no expected list'})"], reasoning="nothing to score")
        misses: list[str] = []
        if not isinstance(candidate, list):
            misses.append(f"{self.path} ({'missing' if candidate is MISSING or candidate is None else 'not a list'})")
            candidate = []
        too_many = too_many_pairs(len(expected), len(candidate), ctx.limits)
        if too_many is not None:
            return self.error_result(f"{self.path}: {too_many}")  # before any n x m matrix is allocated
        longest = max(longest_text(expected, self.match_fields), longest_text(candidate, self.match_fields))
        if candidate and longest > ctx.limits.edit_distance_chars:
            what = f"{self.path}: a text of {longest:,} characters in {', '.join(self.match_fields)} is too long for an edit distance"
            return self.error_result(ctx.limits.message("edit_distance_chars", what))
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
        matrix = similarity_matrix(expected, candidate, self.match_fields, self.unicode)
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
                outcome = classify(want.get(attribute), got.get(attribute), self.unicode)
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
