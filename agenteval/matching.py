"""Pure value comparisons used by the field evaluators: exact, fuzzy, numeric, date.

Each returns a `Match`: a score in [0, 1], whether the field counts as a hit, and a short
reason for a miss (`"type mismatch"`, `"not a finite number"`...). Nothing here raises on data.
"""

from __future__ import annotations

import math
import re
import unicodedata
from datetime import date, datetime, timedelta
from functools import lru_cache
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from rapidfuzz.distance import JaroWinkler, Levenshtein

FuzzyAlgorithm = Literal["levenshtein", "jaro_winkler"]
UnicodeForm = Literal["nfc", "nfkc", "raw"]

SIMILARITY = {
    "levenshtein": Levenshtein.normalized_similarity,
    "jaro_winkler": JaroWinkler.normalized_similarity,
}


class Match(NamedTuple):
    score: float
    hit: bool
    reason: str | None = None  # why it missed, when that is more than "the values differ"
    similarity: float | None = None
    limit: str | None = None  # the `limits:` key the values went past (nothing was computed)


TYPE_MISMATCH = Match(0.0, False, "type mismatch")
HIT = Match(1.0, True)
DIFFERENT = Match(0.0, False)


def _is_number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and type(value) is not bool


def normalize_unicode(text: str, form: UnicodeForm = "nfc") -> str:
    """`text` in Unicode normal form `form` (NFC: `e` + U+0301 is `é`; NFKC also folds compatibility
    forms such as `ﬁ` and full-width digits); `raw` keeps it as written. ASCII is left as it is."""
    if form == "raw" or text.isascii():
        return text
    return unicodedata.normalize("NFKC" if form == "nfkc" else "NFC", text)


def _same_text(a: str, b: str, form: UnicodeForm) -> bool:
    return a == b or (form != "raw" and normalize_unicode(a, form) == normalize_unicode(b, form))


def equal(a: Any, b: Any, unicode: UnicodeForm = "raw") -> bool:
    """Deep equality that keeps types apart at every depth ("100" != 100, True != 1, [True] != [1])
    but lets 100 == 100.0; strings compare in Unicode form `unicode`. Iterative, so depth costs no stack."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        tx, ty = type(x), type(y)
        if tx is str and ty is str:
            if not _same_text(x, y, unicode):
                return False
        elif tx is bool or ty is bool:
            if tx is not ty or x != y:
                return False
        elif _is_number(x) and _is_number(y):
            if x != y:
                return False
        elif tx is not ty:
            return False
        elif tx is dict:
            if x.keys() != y.keys():
                return False
            pending.extend((x[key], y[key]) for key in x)
        elif tx is list:
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y))
        elif x != y:
            return False
    return True


def exact(candidate: Any, expected: Any, unicode: UnicodeForm = "raw") -> Match:
    """Strict equality at every depth: "100" vs 100 is a type mismatch, [true] vs [1] differs;
    100 vs 100.0 is equal. Strings compare in Unicode form `unicode` (`raw`: as written)."""
    kind = type(candidate)
    if kind is str and candidate == expected and type(expected) is str:  # the common hit, settled at once
        return HIT
    if kind is not type(expected):
        if _is_number(candidate) and _is_number(expected):
            return HIT if candidate == expected else DIFFERENT
        return TYPE_MISMATCH
    if kind is str:
        same = _same_text(candidate, expected, unicode)
    elif kind is dict or kind is list:
        same = equal(candidate, expected, unicode)
    else:
        same = candidate == expected
    return HIT if same else DIFFERENT


def normalize_text(text: str) -> str:
    """Lower case, runs of whitespace folded to one space, ends trimmed."""
    return " ".join(text.split()).lower()


def too_long(a: str, b: str, max_chars: int | None) -> Match | None:
    """The miss for texts past `max_chars` (limits.edit_distance_chars), decided before any edit distance:
    its cost grows with the product of the lengths and cannot be interrupted once started."""
    if max_chars is None:
        return None
    longest = max(len(a), len(b))
    if longest <= max_chars:
        return None
    reason = f"a text of {longest:,} characters is too long for an edit distance (limits.edit_distance_chars: {max_chars})"
    return Match(0.0, False, reason, None, "edit_distance_chars")


def similarity(
    a: str, b: str, algorithm: FuzzyAlgorithm = "levenshtein", case_sensitive: bool = False, unicode: UnicodeForm = "raw"
) -> float:
    """Normalized similarity in [0, 1] (1 = identical)."""
    if not case_sensitive:
        a, b = normalize_text(a), normalize_text(b)
    return SIMILARITY[algorithm](normalize_unicode(a, unicode), normalize_unicode(b, unicode))


def fuzzy(
    candidate: Any,
    expected: Any,
    threshold: float = 0.85,
    algorithm: FuzzyAlgorithm = "levenshtein",
    case_sensitive: bool = False,
    unicode: UnicodeForm = "raw",
    max_chars: int | None = None,
) -> Match:
    """Field score = similarity; a hit when similarity >= threshold. Numbers compare as text.
    Texts longer than `max_chars` are a miss naming the limit (`Match.limit`), never computed."""
    return fuzzy_comparison(threshold, algorithm, case_sensitive, unicode)(candidate, expected, max_chars)


def fuzzy_comparison(
    threshold: float = 0.85, algorithm: FuzzyAlgorithm = "levenshtein", case_sensitive: bool = False, unicode: UnicodeForm = "raw",
) -> Callable[[Any, Any, int | None], Match]:
    """`fuzzy` with its options bound, as one call per comparison (field_accuracy makes one per field and case)."""
    measure = SIMILARITY[algorithm]

    def compare(candidate: Any, expected: Any, max_chars: int | None = None) -> Match:
        if type(candidate) is not str:
            if not _is_number(candidate):
                return TYPE_MISMATCH
            candidate = str(candidate)
        if type(expected) is not str:
            if not _is_number(expected):
                return TYPE_MISMATCH
            expected = str(expected)
        if max_chars is not None and (len(candidate) > max_chars or len(expected) > max_chars):
            return too_long(candidate, expected, max_chars)  # type: ignore[return-value]
        if not case_sensitive:
            candidate, expected = " ".join(candidate.split()).lower(), " ".join(expected.split()).lower()
        if unicode != "raw" and not (candidate.isascii() and expected.isascii()):
            candidate, expected = normalize_unicode(candidate, unicode), normalize_unicode(expected, unicode)
        score = measure(candidate, expected)
        return Match(score, score >= threshold, None, score)

    return compare


def numeric(candidate: Any, expected: Any, tolerance: float = 0.0, relative: bool = False) -> Match:
    """|candidate - expected| <= tolerance (relative: divided by |expected|, absolute when expected is 0)."""
    if type(candidate) is float and type(expected) is float and candidate - candidate == 0 and expected - expected == 0:
        diff = abs(candidate - expected)  # two finite floats, the common case: the comparison below without its checks
        if relative and expected != 0:
            diff /= abs(expected)
        return HIT if diff <= tolerance else DIFFERENT
    if not _is_number(candidate) or not _is_number(expected):
        return TYPE_MISMATCH
    if _beyond_float(candidate) or _beyond_float(expected):
        return _numeric_exact(candidate, expected, tolerance, relative)
    if not (math.isfinite(candidate) and math.isfinite(expected)):
        return Match(0.0, False, "not a finite number")
    diff = abs(candidate - expected)
    if relative and expected != 0:
        diff /= abs(expected)
    return Match(1.0, True) if diff <= tolerance else Match(0.0, False)


def _beyond_float(value: Any) -> bool:
    return type(value) is int and not -1.7976931348623157e308 <= value <= 1.7976931348623157e308


def _numeric_exact(candidate: Any, expected: Any, tolerance: float, relative: bool) -> Match:
    """numeric() with an integer beyond the float range (a YAML cases file can hold one): compared
    exactly as fractions, since no float holds it (math.isfinite would raise OverflowError)."""
    from fractions import Fraction

    if not all(type(value) is int or math.isfinite(value) for value in (candidate, expected)):
        return Match(0.0, False, "not a finite number")
    diff = abs(Fraction(candidate) - Fraction(expected))
    if relative and expected != 0:
        diff /= abs(Fraction(expected))
    return Match(1.0, True) if diff <= tolerance else Match(0.0, False)


# Formats tried after ISO 8601. Slash dates are ambiguous, so `day_first` picks the reading.
_DATE_FORMATS = (
    "%Y/%m/%d", "%Y.%m.%d", "%Y%m%d", "%d.%m.%Y", "%d-%m-%Y",
    "%d %B %Y", "%d %b %Y", "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%b %d %Y",
    "%d %B, %Y", "%d %b, %Y", "%b. %d, %Y", "%A, %B %d, %Y", "%a, %d %b %Y",
)
_WORD_FIRST = tuple(fmt for fmt in _DATE_FORMATS if fmt[1] in "AaBb")  # a text starting with a letter tries only these
_NUMBER_FIRST = tuple(fmt for fmt in _DATE_FORMATS if fmt not in _WORD_FIRST)
_MONTH_FIRST = ("%m/%d/%Y", "%m/%d/%y")
_DAY_FIRST = ("%d/%m/%Y", "%d/%m/%y")
_LONGEST_DATE = 64  # no form below is longer: a longer text is not tried at all

# ISO 8601 forms Python's fromisoformat refuses: ordinal dates (2024-015, 2024015), a leap second
# (23:59:60) and the end of a day (24:00). The date part is then read alone: the calendar date as written.
_ISO_ORDINAL = re.compile(r"(\d{4})-?(\d{3})", re.ASCII)
_ISO_TIME = re.compile(
    r"(?P<h>\d{2})(?::?(?P<m>\d{2})(?::?(?P<s>\d{2})(?:[.,](?P<f>\d+))?)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?", re.ASCII
)
# The numeric written forms, read directly (strptime costs microseconds a try): m/d/y or d/m/y,
# y/m/d or y.m.d, d.m.y or d-m-y (each with one separator throughout).
_SLASHED = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})", re.ASCII)
_YEAR_FIRST = re.compile(r"(\d{4})([/.])(\d{1,2})\2(\d{1,2})", re.ASCII)
_DAY_FIRST_DOTTED = re.compile(r"(\d{1,2})([.-])(\d{1,2})\2(\d{4})", re.ASCII)
# Only text that could be one of the other written forms is handed to strptime.
_NUMERIC_DATE = re.compile(r"\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}|\d{6,8}", re.ASCII)
_MONTH_NAME = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)", re.IGNORECASE)


def _iso_date_part(text: str) -> date | None:
    ordinal = _ISO_ORDINAL.fullmatch(text)
    if ordinal is not None:
        year, day = int(ordinal.group(1)), int(ordinal.group(2))
        first = date(year, 1, 1) if year >= 1 else None
        if first is None or not 1 <= day <= (366 if _is_leap(year) else 365):
            return None
        return first + timedelta(days=day - 1)
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _is_leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _iso_time_is_valid(text: str) -> bool:
    """hh[:mm[:ss[.f]]][zone] with 24:00:00 (end of day) and a leap second :60 (at any minute: in a
    zone like +05:30 the leap second is 05:29:60) allowed."""
    match = _ISO_TIME.fullmatch(text)
    if match is None:
        return False
    hour, minute, second = int(match["h"]), int(match["m"] or 0), int(match["s"] or 0)
    fraction = int(match["f"] or 0)
    if hour == 24:
        return minute == 0 and second == 0 and fraction == 0
    return hour <= 23 and minute <= 59 and second <= 60


def _iso_fallback(text: str) -> date | None:
    """The ISO 8601 forms fromisoformat refuses (see _ISO_ORDINAL)."""
    for separator in ("T", " "):
        if separator in text:
            day_part, _, time_part = text.partition(separator)
            return _iso_date_part(day_part) if _iso_time_is_valid(time_part) else None
    return _iso_date_part(text)


def _numeric_date(text: str, day_first: bool) -> tuple[bool, date | None]:
    """(whether `text` has one of the numeric written forms, the date it names or None), read as
    strptime reads them (%y: 69-99 is 19xx, 00-68 is 20xx)."""
    if (match := _SLASHED.fullmatch(text)) is not None:
        first, second, year_text = int(match[1]), int(match[2]), match[3]
        year = int(year_text) if len(year_text) == 4 else int(year_text) + (1900 if int(year_text) >= 69 else 2000)
        day, month = (first, second) if day_first else (second, first)
    elif (match := _YEAR_FIRST.fullmatch(text)) is not None:
        year, month, day = int(match[1]), int(match[3]), int(match[4])
    elif (match := _DAY_FIRST_DOTTED.fullmatch(text)) is not None:
        day, month, year = int(match[1]), int(match[3]), int(match[4])
    else:
        return False, None
    try:
        return True, date(year, month, day)
    except ValueError:
        return True, None


@lru_cache(maxsize=4096)
def parse_date(text: str, day_first: bool = False) -> date | None:
    """`read_date`, memoized: a suite's dates repeat from case to case (the same few hundred days).
    A caller that reads many distinct texts at once (line_items) uses `read_date` with a dict of its
    own, so one answer's texts cannot evict each other or make every lookup a miss."""
    return read_date(text, day_first)


def read_date(text: str, day_first: bool = False) -> date | None:
    """The calendar date a string names, in ISO 8601 or a common written form; None if none."""
    text = text.strip()
    if len(text) > _LONGEST_DATE:
        return None
    if text[:4].isdigit() and text[:4].isascii():  # every ISO 8601 form starts with the year
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
        except ValueError:
            pass
        iso = _iso_fallback(text)
        if iso is not None:
            return iso
    numeric, day = _numeric_date(text, day_first)
    if numeric:
        return day
    if not (_NUMERIC_DATE.fullmatch(text) or _MONTH_NAME.search(text)):
        return None
    if text[:1].isdigit():
        formats = (_DAY_FIRST if day_first else _MONTH_FIRST) + _NUMBER_FIRST
    else:
        formats = _WORD_FIRST
    for fmt in formats:
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
