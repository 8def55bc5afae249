"""Pure value comparisons used by the field evaluators: exact, fuzzy, numeric, date.

Each returns a `Match`: a score in [0, 1], whether the field counts as a hit, and a short
reason for a miss (`"type mismatch"`, `"not a finite number"`...). Nothing here raises on data.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from rapidfuzz.distance import JaroWinkler, Levenshtein

FuzzyAlgorithm = Literal["levenshtein", "jaro_winkler"]

_SIMILARITY = {
    "levenshtein": Levenshtein.normalized_similarity,
    "jaro_winkler": JaroWinkler.normalized_similarity,
}


class Match(NamedTuple):
    score: float
    hit: bool
    reason: str | None = None  # why it missed, when that is more than "the values differ"
    similarity: float | None = None


TYPE_MISMATCH = Match(0.0, False, "type mismatch")


def _is_number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and type(value) is not bool


def exact(candidate: Any, expected: Any) -> Match:
    """Strict equality: "100" vs 100 is a type mismatch; 100 vs 100.0 is equal."""
    if type(candidate) is not type(expected) and not (_is_number(candidate) and _is_number(expected)):
        return TYPE_MISMATCH
    return Match(1.0, True) if candidate == expected else Match(0.0, False)


def normalize_text(text: str) -> str:
    """Lower case, runs of whitespace folded to one space, ends trimmed."""
    return " ".join(text.split()).lower()


def similarity(a: str, b: str, algorithm: FuzzyAlgorithm = "levenshtein", case_sensitive: bool = False) -> float:
    """Normalized similarity in [0, 1] (1 = identical)."""
    if not case_sensitive:
        a, b = normalize_text(a), normalize_text(b)
    return _SIMILARITY[algorithm](a, b)


def fuzzy(
    candidate: Any,
    expected: Any,
    threshold: float = 0.85,
    algorithm: FuzzyAlgorithm = "levenshtein",
    case_sensitive: bool = False,
) -> Match:
    """Field score = similarity; a hit when similarity >= threshold. Numbers compare as text."""
    if _is_number(candidate):
        candidate = str(candidate)
    if _is_number(expected):
        expected = str(expected)
    if type(candidate) is not str or type(expected) is not str:
        return TYPE_MISMATCH
    score = similarity(candidate, expected, algorithm, case_sensitive)
    return Match(score, score >= threshold, None, score)


def numeric(candidate: Any, expected: Any, tolerance: float = 0.0, relative: bool = False) -> Match:
    """|candidate - expected| <= tolerance (relative: divided by |expected|, absolute when expected is 0)."""
    if not _is_number(candidate) or not _is_number(expected):
        return TYPE_MISMATCH
    if not (math.isfinite(candidate) and math.isfinite(expected)):
        return Match(0.0, False, "not a finite number")
    diff = abs(candidate - expected)
    if relative and expected != 0:
        diff /= abs(expected)
    return Match(1.0, True) if diff <= tolerance else Match(0.0, False)


# Formats tried after ISO 8601. Slash dates are ambiguous, so `day_first` picks the reading.
_DATE_FORMATS = (
    "%Y/%m/%d", "%Y.%m.%d", "%Y%m%d", "%d.%m.%Y", "%d-%m-%Y",
    "%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y",
    "%d %B, %Y", "%d %b, %Y", "%b. %d, %Y", "%A, %B %d, %Y", "%a, %d %b %Y",
)
_MONTH_FIRST = ("%m/%d/%Y", "%m/%d/%y")
_DAY_FIRST = ("%d/%m/%Y", "%d/%m/%y")


@lru_cache(maxsize=4096)
def parse_date(text: str, day_first: bool = False) -> date | None:
    """The calendar date a string names, in ISO 8601 or a common written form; None if none."""
    text = text.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    for fmt in (_DAY_FIRST if day_first else _MONTH_FIRST) + _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    return None


def as_date(value: Any, day_first: bool = False) -> date | None:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if type(value) is str:
        return parse_date(value, day_first)
    return None


def date_match(candidate: Any, expected: Any, day_first: bool = False) -> Match:
    """Same calendar date, whatever the written format."""
    expected_date = as_date(expected, day_first)
    if expected_date is None:
        return Match(0.0, False, "expected value is not a date")
    if type(candidate) is not str and not isinstance(candidate, date):
        return TYPE_MISMATCH
    candidate_date = as_date(candidate, day_first)
    if candidate_date is None:
        return Match(0.0, False, "not a date")
    return Match(1.0, True) if candidate_date == expected_date else Match(0.0, False)
