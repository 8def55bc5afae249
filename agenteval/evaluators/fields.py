"""field_accuracy: compare fields of a structured answer with the expected values.

Per field: exact, fuzzy (similarity is the field score), numeric_tolerance or date. Fields whose
expected value is absent are skipped; optional fields the candidate lacks do not count. A dotted
path that misses only because the expected answer has the dotted key itself (`{"a.b": 1}`) is a
miss saying how to quote it, never a silent skip.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from agenteval import matching
from agenteval.config import StrictModel
from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorConfig, EvaluatorResult, Verdict
from agenteval.limits import DEFAULT_LIMITS, Limits
from agenteval.paths import MISSING, Path, compile_path, dotted_key_problem, resolve

MatchType = Literal["exact", "fuzzy", "numeric_tolerance", "date"]

# Which per-field options belong to which match types (anything else is a config error).
_OPTIONS: dict[str, tuple[MatchType, ...]] = {
    "algorithm": ("fuzzy",),
    "threshold": ("fuzzy",),
    "case_sensitive": ("fuzzy",),
    "unicode": ("exact", "fuzzy"),
    "tolerance": ("numeric_tolerance",),
    "relative": ("numeric_tolerance",),
    "day_first": ("date",),
}


class ValueMatch(StrictModel):
    """How one value is compared with its expected value: the match type and its options."""

    match: MatchType = "exact"
    algorithm: matching.FuzzyAlgorithm | None = Field(None, description="fuzzy: levenshtein (default) or jaro_winkler")
    threshold: float | None = Field(None, ge=0, le=1, description="fuzzy: similarity needed for a hit (default 0.85)")
    case_sensitive: bool | None = Field(None, description="fuzzy: compare case and whitespace as written (default false)")
    unicode: matching.UnicodeForm | None = Field(
        None, description="exact, fuzzy: Unicode normalization of both texts: nfc (default), nfkc, or raw (as written)"
    )
    tolerance: float | None = Field(None, ge=0, description="numeric_tolerance: allowed difference (default 0)")
    relative: bool | None = Field(None, description="numeric_tolerance: tolerance is a fraction of |expected| (default false)")
    day_first: bool | None = Field(None, description="date: read 03/04/2024 as 3 April (default: March 4)")

    @model_validator(mode="after")
    def _check_options(self) -> FieldSpec:
        misplaced = [key for key, owners in _OPTIONS.items() if getattr(self, key) is not None and self.match not in owners]
        if misplaced:
            names = ", ".join(f"`{key}` (match: {', '.join(_OPTIONS[key])})" for key in misplaced)
            raise ValueError(f"{names} does not apply to match: {self.match}")
        return self

    def comparison(self) -> Callable[..., matching.Match]:
        """The comparison with its options bound: `compare(candidate, expected, max_chars=...) -> Match`,
        where `max_chars` is the suite's `limits.edit_distance_chars` (fuzzy texts past it are not compared)."""
        unicode: matching.UnicodeForm = self.unicode or "nfc"
        default_chars = DEFAULT_LIMITS.edit_distance_chars
        if self.match == "fuzzy":
            threshold = 0.85 if self.threshold is None else self.threshold
            compare = matching.fuzzy_comparison(threshold, self.algorithm or "levenshtein", bool(self.case_sensitive), unicode)
            return lambda got, want, max_chars=default_chars: compare(got, want, max_chars)
        if self.match == "numeric_tolerance":
            tolerance, relative = self.tolerance or 0.0, bool(self.relative)
            return lambda got, want, max_chars=None: matching.numeric(got, want, tolerance, relative)
        if self.match == "date":
            day_first = bool(self.day_first)
            return lambda got, want, max_chars=None: matching.date_match(got, want, day_first)
        return lambda got, want, max_chars=None: matching.exact(got, want, unicode)


class FieldSpec(ValueMatch):
    path: str = Field(
        description="Dot path with [i] indexes, e.g. invoice.line_items[0].amount; a key with a dot is quoted: ['net.amount']"
    )
    required: bool = Field(True, description="A required field the candidate lacks scores 0; an optional one does not count.")
    weight: float = Field(1.0, ge=0)

    def compile(self) -> CompiledField:
        """The field with its path parsed and its comparison bound, ready for the per-case loop: the
        same one for every spec of the same values (an `evaluate()` call per answer compiles its
        fields once; a CompiledField and its functions are pure)."""
        key = tuple(getattr(self, name) for name in type(self).model_fields)
        field = _COMPILED.get(key)
        if field is None:
            field = CompiledField(self.path, compile_path(self.path), self.match, self.required, self.weight, self.comparison(), score_field)
            object.__setattr__(field, "row", _row_function(self, field))
            if len(_COMPILED) >= _COMPILED_KEPT:
                _COMPILED.clear()
            _COMPILED[key] = field
        return field


_COMPILED: dict[tuple[Any, ...], CompiledField] = {}  # a FieldSpec's values -> its CompiledField
_COMPILED_KEPT = 4096  # at most this many, so a process that scores ever new fields holds no more


@dataclass(frozen=True, slots=True)
class CompiledField:
    path: str
    keys: Path | None  # None: the path is malformed
    match: str
    required: bool
    weight: float
    compare: Callable[..., matching.Match]
    row: Callable[..., dict[str, Any]]  # (candidate, expected, limits) -> the field's row: `score_field` with the usual cases inline


_FLOAT_MAX = 1.7976931348623157e308


def _getter(keys: Path | None) -> Callable[[Any], Any]:
    """`resolve(value, keys)`, for a path of one or two plain keys as direct lookups (the usual path)."""
    if keys is not None and 0 < len(keys) <= 2 and all(type(key) is str for key in keys):
        if len(keys) == 1:
            (only,) = keys
            return lambda value: value.get(only, MISSING) if type(value) is dict else MISSING

        first, second = keys

        def get(value: Any) -> Any:
            if type(value) is not dict:
                return MISSING
            inner = value.get(first, MISSING)
            return inner.get(second, MISSING) if type(inner) is dict else MISSING

        return get
    return lambda value: resolve(value, keys) if keys is not None else MISSING


def _row_function(spec: ValueMatch, field: CompiledField) -> Callable[[Any, Any, Limits], dict[str, Any]]:
    """`score_field(field, ...)` for one field, with the usual values (two texts, two finite numbers,
    two dates that read) compared inline and the row built at once; anything else goes to
    `score_field`, so every row is the one it gives (tests/test_fields_fast.py holds them equal)."""
    path, match, get, slow = field.path, field.match, _getter(field.keys), score_field
    if field.keys is None:
        return lambda candidate, expected, limits=DEFAULT_LIMITS: slow(field, candidate, expected, limits)
    if match == "exact":
        def exact_row(candidate: Any, expected: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
            want, got = get(expected), get(candidate)
            if type(want) is str and type(got) is str:
                if want == got:
                    return {"path": path, "match": match, "status": "hit", "score": 1.0, "expected": want, "actual": got}
                if want.isascii() and got.isascii():  # (Unicode forms change no ASCII text)
                    return {"path": path, "match": match, "status": "miss", "score": 0.0, "expected": want, "actual": got}
            return slow(field, candidate, expected, limits)

        return exact_row
    if match == "fuzzy":
        threshold = 0.85 if spec.threshold is None else spec.threshold
        measure = matching.SIMILARITY[spec.algorithm or "levenshtein"]
        folded, unicode = not spec.case_sensitive, spec.unicode or "nfc"

        def fuzzy_row(candidate: Any, expected: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
            want, got = get(expected), get(candidate)
            if type(want) is str and type(got) is str:
                most = limits.edit_distance_chars
                if len(got) <= most and len(want) <= most:
                    a, b = (" ".join(got.split()).lower(), " ".join(want.split()).lower()) if folded else (got, want)
                    if unicode == "raw" or (a.isascii() and b.isascii()):
                        score = 1.0 if a == b else measure(a, b)  # (equal texts: every measure gives 1.0)
                        return {"path": path, "match": match, "status": "hit" if score >= threshold else "miss", "score": score,
                                "expected": want, "actual": got, "similarity": score if score == 1.0 else round(score, 6)}
            return slow(field, candidate, expected, limits)

        return fuzzy_row
    if match == "numeric_tolerance":
        tolerance, relative = spec.tolerance or 0.0, bool(spec.relative)

        def numeric_row(candidate: Any, expected: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
            want, got = get(expected), get(candidate)
            kind_want, kind_got = type(want), type(got)
            if (kind_want is float or kind_want is int) and (kind_got is float or kind_got is int) \
                    and -_FLOAT_MAX <= want <= _FLOAT_MAX and -_FLOAT_MAX <= got <= _FLOAT_MAX:  # (NaN fails both)
                diff = abs(got - want)
                if relative and want != 0:
                    diff /= abs(want)
                hit = diff <= tolerance
                return {"path": path, "match": match, "status": "hit" if hit else "miss", "score": 1.0 if hit else 0.0,
                        "expected": want, "actual": got}
            return slow(field, candidate, expected, limits)

        return numeric_row
    day_first, parse = bool(spec.day_first), matching.parse_date

    def date_row(candidate: Any, expected: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
        want, got = get(expected), get(candidate)
        if type(want) is str and type(got) is str:
            want_day, got_day = parse(want, day_first), parse(got, day_first)
            if want_day is not None and got_day is not None:
                hit = want_day == got_day
                return {"path": path, "match": match, "status": "hit" if hit else "miss", "score": 1.0 if hit else 0.0,
                        "expected": want, "actual": got}
        return slow(field, candidate, expected, limits)

    return date_row


def score_field(field: CompiledField, candidate: Any, expected: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """One field's outcome: status `hit`, `miss` or `skipped`, its score and why (`limit`: the
    `limits:` key the values went past, so nothing was compared)."""
    keys = field.keys
    if keys is None:
        return {"path": field.path, "match": field.match, "status": "miss", "score": 0.0, "reason": "invalid path"}
    want = resolve(expected, keys)
    got = resolve(candidate, keys)
    if want is not MISSING and want is not None and got is not MISSING and got is not None:  # both present: compare
        outcome = field.compare(got, want, limits.edit_distance_chars)
        if outcome.hit and outcome.similarity is None:  # the common case, built in one go
            return {"path": field.path, "match": field.match, "status": "hit", "score": outcome.score, "expected": want, "actual": got}
        row = {"path": field.path, "match": field.match, "status": "hit" if outcome.hit else "miss", "score": outcome.score,
               "expected": want, "actual": got}
        if outcome.limit is not None:
            row["limit"] = outcome.limit
        if outcome.similarity is not None:
            row["similarity"] = round(outcome.similarity, 6)
        if not outcome.hit and outcome.reason:
            row["reason"] = outcome.reason
        return row
    row = {"path": field.path, "match": field.match, "status": "miss", "score": 0.0}
    if want is not MISSING:
        row["expected"] = want
    if got is not MISSING:
        row["actual"] = got
    if want is MISSING:
        problem = dotted_key_problem(field.path, keys, expected)
        if problem is None:
            row["status"] = "skipped"
        row["reason"] = problem or "expected value absent"
    elif want is None:
        if got is MISSING or got is None:
            row["status"] = "hit"
            row["score"] = 1.0
        else:
            row["reason"] = "expected null"
    elif not field.required:
        row["status"] = "skipped"
        row["reason"] = "optional, missing"
    else:
        row["reason"] = "required, missing" if got is MISSING else "null value"
    return row


class FieldAccuracy(EvaluatorConfig):
    """Per-field comparison. Default verdict: pass when no field missed, fail when none hit, else partial."""

    type: Literal["field_accuracy"]
    fields: list[FieldSpec] = Field(min_length=1)
    aggregation: Literal["weighted_average", "all_or_nothing"] = "weighted_average"

    type_name = "field_accuracy"
    pure = True  # linear at most: edit distances are bounded by `limits.edit_distance_chars`, dates by their length

    _plan: tuple[CompiledField, ...] = PrivateAttr(())
    _rows: tuple[tuple[Callable[..., dict[str, Any]], str, float], ...] = PrivateAttr(())  # (row, path, weight) of each field
    _lookups: tuple[tuple[CompiledField, Callable[[Any], Any]], ...] = PrivateAttr(())  # each field and its value's lookup

    def model_post_init(self, context: Any) -> None:
        self._plan = tuple(spec.compile() for spec in self.fields)
        self._rows = tuple((field.row, field.path, field.weight) for field in self._plan)
        self._lookups = tuple((field, _getter(field.keys)) for field in self._plan)

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found: list[tuple[tuple[str | int, ...], str]] = [
            (("fields", i, "path"), f"malformed path {field.path!r}: it will resolve to missing")
            for i, field in enumerate(self._plan)
            if field.keys is None
        ]
        if self.aggregation == "weighted_average" and not any(field.weight for field in self._plan):
            found.append((("fields",), "every field has weight 0: the score is always 0"))
        return found

    def expected_paths(self) -> list[tuple[tuple[str | int, ...], Path, Callable[[Any], Any]]]:
        """(where, parsed path, lookup: MISSING when absent) of each field read from the expected answer:
        validation warns of one that no case's `expected` has (agenteval.suite.loader)."""
        return [(("fields", i, "path"), field.keys, get) for i, (field, get) in enumerate(self._lookups) if field.keys]

    def expected_problems(self, expected: Any) -> list[str]:
        """Fields that an expected answer written in the suite itself cannot be scored on as written
        (only a path that reads as absent can be one: the others are looked up directly)."""
        return [
            problem for field, get in self.__pydantic_private__["_lookups"]
            if get(expected) is MISSING and (problem := dotted_key_problem(field.path, field.keys, expected))
        ]

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        hits: list[str] = []
        misses: list[str] = []
        rows = []
        weighted = total_weight = 0.0
        output, expected, limits = ctx.output, ctx.expected, ctx.limits
        for row_of, path, weight in self.__pydantic_private__["_rows"]:  # (read directly: `self._rows` goes through pydantic's __getattr__)
            row = row_of(output, expected, limits)
            rows.append(row)
            if len(row) > 6 and "limit" in row:  # (a hit's row has six keys)
                longest = max(len(str(row.get("actual", ""))), len(str(row.get("expected", ""))))
                what = f"{path}: a text of {longest:,} characters is too long for an edit distance"
                return self.error_result(ctx.limits.message(row["limit"], what), details={"fields": rows})
            status = row["status"]
            if status == "skipped":
                continue
            weighted += row["score"] * weight
            total_weight += weight
            if status == "hit":
                hits.append(path)
            else:
                reason = row.get("reason")
                misses.append(f"{path} ({reason})" if reason else path)
        scored = len(hits) + len(misses)
        details = {"fields": rows}
        if scored == 0:
            return self.result(
                0.0, "fail", misses=[f"no field was scored: {NO_EXPECTED if expected is None else 'every expected value is absent'}"],
                reasoning="0/0 fields matched", details=details,
            )
        if self.aggregation == "all_or_nothing":
            score = 1.0 if not misses else 0.0  # every field a hit by its own rule (a fuzzy hit counts in full)
        else:
            score = weighted / total_weight if total_weight > 0 else 0.0  # fields that weigh nothing score nothing
        default: Verdict = "pass" if not misses else "fail" if not hits else "partial"
        skipped = len(rows) - scored
        reasoning = f"{len(hits)}/{scored} fields matched" + (f" ({skipped} skipped)" if skipped else "")
        verdict = default if self.min_score is None else self.verdict(score, default)
        return EvaluatorResult(self.name or self.type, self.type, score, verdict, hits, misses, reasoning, details)
