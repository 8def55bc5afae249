"""What the text evaluators share: reading the candidate text, the text options, the reference.

The candidate is the value at `path` (default: the whole answer). A string is used as is; any
other value is a type-mismatch miss unless `as_json: true` serializes it as canonical JSON.
Normalizations and literal references are prepared once, when the config is validated.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson
from pydantic import BaseModel, Field, model_validator

from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.paths import MISSING, compile_path, resolve

_JSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def canonical_json(value: Any) -> str | None:
    """Compact JSON with sorted keys; None when the value has no JSON form."""
    try:
        return orjson.dumps(value, option=_JSON_OPTIONS).decode()
    except orjson.JSONEncodeError:  # e.g. an integer wider than 64 bits, read from YAML
        try:
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            return None


def kind_of(value: Any) -> str:
    """A JSON-ish name for a value's type, for miss messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {dict: "object", list: "array", str: "string"}.get(type(value), type(value).__name__)


def show(text: str, limit: int = 40) -> str:
    """A short quoted preview of a string for hits and misses."""
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def whitespace_folded(text: str) -> str:
    return " ".join(text.split())


def case_and_whitespace_folded(text: str) -> str:
    return " ".join(text.casefold().split())


Unicode = Literal["nfc", "nfkc", "raw"]
"""How text is normalized before comparing: canonical composition (NFC), compatibility (NFKC), or as written."""


def folding(case_sensitive: bool, normalize_whitespace: bool, unicode: Unicode = "raw") -> Callable[[str], str]:
    """The normalization both candidate and reference go through, chosen once per config.

    Unicode normalization comes last, so case folding cannot leave a decomposed form behind;
    `unicodedata.normalize` returns an already-normalized text (all ASCII ones) at once.
    """
    if case_sensitive and not normalize_whitespace:
        fold: Callable[[str], str] = str
    elif case_sensitive:
        fold = whitespace_folded
    elif not normalize_whitespace:
        fold = str.casefold
    else:
        fold = case_and_whitespace_folded
    if unicode == "raw":
        return fold
    form = unicode.upper()
    if fold is str:
        return partial(unicodedata.normalize, form)
    return partial(_then_normalized, form, fold)  # a partial of module functions: evaluators are pickled


def _then_normalized(form: str, fold: Callable[[str], str], text: str) -> str:
    return unicodedata.normalize(form, fold(text))


def suite_file(name: str, context: Any, what: str) -> Path:
    """A file named in the suite, relative to the suite's folder. Raises ValueError when it is not there.

    The loader passes the folder as the validation context `base_dir`; without one (a config
    built in code) the name is relative to the working directory.
    """
    base = context.get("base_dir") if isinstance(context, dict) else None
    file = (Path(base) if base is not None else Path.cwd()) / name
    if not file.is_file():
        raise ValueError(f"{what} not found: {name} (looked for {file.resolve()})")
    return file


def read_suite_file(name: str, context: Any, what: str) -> str:
    """The text of a file next to the suite (see suite_file); ValueError says why it cannot be read."""
    file = suite_file(name, context, what)
    try:
        return file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {what} {name}: {exc}") from None


def keep(model: BaseModel, **compiled: Any) -> None:
    """Keep what the per-case loop reads as plain instance attributes.

    A pydantic private attribute costs microseconds per read (a failed lookup and an exception
    each time); an entry of the instance dict costs nanoseconds. The names are not fields, so
    validation, dumps, copies and the schema are unaffected.
    """
    model.__dict__.update(compiled)


class TextEvaluator(EvaluatorConfig):
    """An evaluator that reads the candidate's text at `path`; subclasses implement `score_text`."""

    path: str = Field("", description="Where the text is in the candidate answer; empty: the whole answer.")
    as_json: bool = Field(
        False,
        description="Serialize a non-string value as canonical JSON (sorted keys, compact) instead of missing it as a type mismatch.",
    )

    if TYPE_CHECKING:
        _keys: Any

    def model_post_init(self, context: Any) -> None:
        keep(self, _keys=compile_path(self.path) if self.path else ())

    @property
    def where(self) -> str:
        return self.path or "answer"

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        if self._keys is None:
            return [(("path",), f"malformed path {self.path!r}: it will resolve to missing")]
        return []

    def as_text(self, value: Any) -> str | None:
        """The value as text: a string as is, anything else only with `as_json`; None otherwise."""
        if type(value) is str:
            return value
        if self.as_json and value is not MISSING:
            return canonical_json(value)
        return None

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        value = MISSING if self._keys is None else resolve(ctx.output, self._keys)
        text = self.as_text(value)
        if text is not None:
            return self.score_text(text, ctx)
        if value is MISSING:
            reason = "missing"
        elif self.as_json:
            reason = "not serializable as JSON"
        else:
            reason = f"type mismatch: {kind_of(value)}, not a string"
        return self.result(0.0, "fail", misses=[f"{self.where} ({reason})"], reasoning="no text to check")

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        raise NotImplementedError


class TextOptions(TextEvaluator):
    """Text compared in NFC, case and spaces as written by default; `case_sensitive: false`, `normalize_whitespace` and `unicode` change it."""

    case_sensitive: bool = Field(True, description="Compare case as written (false: Unicode case folding).")
    normalize_whitespace: bool = Field(False, description="Fold runs of whitespace to one space and trim the ends first.")
    unicode: Unicode = Field(
        "nfc",
        description="Unicode normalization of both texts: nfc (default: composed and decomposed accents are equal), "
        "nfkc (also compatibility forms: ligatures, full-width letters, superscripts), raw (code points as written).",
    )

    if TYPE_CHECKING:
        _fold: Callable[[str], str]

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        keep(self, _fold=folding(self.case_sensitive, self.normalize_whitespace, self.unicode))


Reference = tuple[str, str]
"""A reference text as written (for messages) and as normalized (for comparing)."""


class ReferenceText(TextOptions):
    """Compared with a reference: a literal, or text in the expected answer. Subclasses implement `compare`."""

    reference: str | list[str] | None = Field(
        None, description="The reference text, or a list of them (what a list means depends on the type). Default: from the expected answer."
    )
    reference_path: str | None = Field(
        None, description="Where the reference is in the expected answer (a string or a list of strings); default: the same `path`."
    )

    if TYPE_CHECKING:
        _references: tuple[Reference, ...] | None
        _reference_keys: Any

    @model_validator(mode="after")
    def _one_reference(self) -> ReferenceText:
        if self.reference is not None and self.reference_path is not None:
            raise ValueError("give `reference` or `reference_path`, not both")
        if self.reference == []:
            raise ValueError("`reference` must not be an empty list")
        return self

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        references, keys = None, self._keys
        if self.reference is not None:
            literal = [self.reference] if isinstance(self.reference, str) else self.reference
            references = tuple((text, self._fold(text)) for text in literal)
        elif self.reference_path is not None:
            keys = compile_path(self.reference_path) if self.reference_path else ()
        keep(self, _references=references, _reference_keys=keys)

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found = super().warnings()
        if self.reference_path and self._reference_keys is None:
            found.append((("reference_path",), f"malformed path {self.reference_path!r}: it will resolve to missing"))
        return found

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        references = self._references
        if references is None:
            value = MISSING if self._reference_keys is None else resolve(ctx.expected, self._reference_keys)
            references = self._references_in(value)
            if not references:
                where = f"expected {self.reference_path or self.path or 'answer'}"
                reason = (
                    NO_EXPECTED if ctx.expected is None else "missing" if value is MISSING
                    else "an empty list" if value == [] else f"{kind_of(value)}, not text"
                )
                return self.result(0.0, "fail", misses=[f"{where} (no reference: {reason})"], reasoning="nothing to compare with")
        return self.compare(self._fold(text), references, ctx)

    def _references_in(self, value: Any) -> tuple[Reference, ...]:
        if type(value) is list and all(type(item) is str for item in value):
            return tuple((item, self._fold(item)) for item in value)
        text = self.as_text(value)
        return () if text is None else ((text, self._fold(text)),)

    def compare(self, text: str, references: tuple[Reference, ...], ctx: EvalContext) -> EvaluatorResult:
        raise NotImplementedError
