"""keyword_coverage: the share of keywords the candidate text mentions.

Keywords are listed in the suite (`keywords:`) or read per case (`keywords_path:` into the
expected answer, the input or the metadata). A keyword may be a list of synonyms: any counts.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorResult, graded_verdict
from agenteval.evaluators.text.base import TextOptions, keep, kind_of
from agenteval.paths import MISSING, compile_path, resolve

KEYWORD_SOURCES = ("expected", "input", "metadata")

Keyword = tuple[tuple[str, Callable[[str], bool]], ...]
"""One keyword: its synonyms as written, each with the test that finds it in normalized text."""


def _is_word_char(char: str) -> bool:
    r"""What `\w` matches: a letter, digit or underscore, in any script."""
    return char.isalnum() or char == "_"


def finder(word: str, whole_word: bool) -> Callable[[str], bool]:
    r"""A test for `word` (already normalized) in normalized text: substring, or whole word.

    A whole word is not preceded or followed by a word character (like `(?<!\w)word(?!\w)`,
    so `C++` works); found with str.find, which is several times faster than that regex.
    """
    return partial(_whole_word_in if whole_word else _substring_in, word)


def _substring_in(word: str, text: str) -> bool:
    return word in text


def _whole_word_in(word: str, text: str) -> bool:
    start = text.find(word)
    while start != -1:
        end = start + len(word)
        if not (start and _is_word_char(text[start - 1])) and not (end < len(text) and _is_word_char(text[end])):
            return True
        start = text.find(word, start + 1)
    return False


class KeywordCoverage(TextOptions):
    """Score = share of keywords found; pass when all are, fail when none is."""

    type: Literal["keyword_coverage"]
    type_name = "keyword_coverage"
    keywords: list[str | list[str]] | None = Field(
        None, description="The keywords; a keyword given as a list is a set of synonyms (any one counts)."
    )
    keywords_path: str | None = Field(
        None, description="Where each case lists its keywords: expected.<path>, input.<path> or metadata.<path>."
    )
    whole_word: bool = Field(False, description="A keyword counts only as a whole word (not inside a longer word).")
    case_sensitive: bool = Field(False, description="Compare case as written (default false: Unicode case folding).")
    normalize_whitespace: bool = Field(True, description="Fold runs of whitespace to one space and trim the ends (default true).")

    if TYPE_CHECKING:
        _keywords: tuple[Keyword, ...] | None
        _source: tuple[str, Any] | None

    @field_validator("keywords")
    @classmethod
    def _not_empty(cls, keywords: list[str | list[str]] | None) -> list[str | list[str]] | None:
        if keywords is not None and (not keywords or any(not item or (isinstance(item, list) and "" in item) for item in keywords)):
            raise ValueError("keywords, synonym lists and keywords themselves must not be empty")
        return keywords

    @field_validator("keywords_path")
    @classmethod
    def _known_source(cls, path: str | None) -> str | None:
        if path is not None and path.split(".", 1)[0] not in KEYWORD_SOURCES:
            raise ValueError(f"keywords_path {path!r} must start with expected, input or metadata (e.g. expected.keywords)")
        return path

    @model_validator(mode="after")
    def _one_source(self) -> KeywordCoverage:
        if (self.keywords is None) == (self.keywords_path is None):
            raise ValueError("give `keywords` or `keywords_path`, one of them")
        return self

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        keywords, source = None, None
        if self.keywords is not None:
            keywords = tuple(self._keyword(item) for item in self.keywords)
        elif self.keywords_path is not None:
            root, _, rest = self.keywords_path.partition(".")
            source = (root, compile_path(rest) if rest else ())
        keep(self, _keywords=keywords, _source=source)

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found = super().warnings()
        if self._source is not None and self._source[1] is None:
            found.append((("keywords_path",), f"malformed path {self.keywords_path!r}: it will resolve to missing"))
        return found

    def _keyword(self, item: str | list[str]) -> Keyword:
        synonyms = [item] if isinstance(item, str) else item
        return tuple((word, finder(self._fold(word), self.whole_word)) for word in synonyms)

    def _case_keywords(self, ctx: EvalContext) -> tuple[Keyword, ...] | str:
        """The keywords a case lists at keywords_path, or why there are none."""
        assert self._source is not None
        root, keys = self._source
        data = {"expected": ctx.expected, "input": ctx.input, "metadata": ctx.metadata}[root]
        value = MISSING if keys is None else resolve(data, keys)
        if type(value) is str:
            value = [value]
        if value is MISSING or type(value) is not list or not value:
            if root == "expected" and ctx.expected is None:
                return NO_EXPECTED
            return "missing" if value is MISSING else "an empty list" if value == [] else f"{kind_of(value)}, not a list"
        for item in value:
            if item == "":
                return "an empty keyword in the list"
            if type(item) is not str and not (type(item) is list and item and all(type(word) is str for word in item)):
                return f"{kind_of(item)} in the list, not a keyword or a list of synonyms"
        return tuple(self._keyword(item) for item in value)

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        keywords = self._keywords
        if keywords is None:
            keywords = self._case_keywords(ctx)
            if type(keywords) is str:
                return self.result(0.0, "fail", misses=[f"{self.keywords_path} (no keywords: {keywords})"], reasoning="nothing to look for")
        text = self._fold(text)
        hits, misses = [], []
        for keyword in keywords:
            found = next((word for word, present in keyword if present(text)), None)
            if found is not None:
                hits.append(found)
            else:
                misses.append(" | ".join(word for word, _ in keyword))
        score = len(hits) / len(keywords)
        details = {"found": len(hits), "total": len(keywords)}
        return self.result(score, graded_verdict(score), hits=hits, misses=misses, reasoning=f"{len(hits)}/{len(keywords)} keywords found", details=details)
