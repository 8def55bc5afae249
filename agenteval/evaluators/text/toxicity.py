"""toxicity: the candidate text uses none of a list of terms.

Terms come from the suite (`terms:`), a file next to it (`terms_file:`, one term per line, `#`
comments), and/or better-profanity's English word list (`default_list: true`). They are
compiled once into one trie-shaped regular expression (see trie.py), so a text is scanned in
one pass however long the list is. Misses name the terms found, masked after their first letter.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from agenteval.evaluators.base import EvalContext, EvaluatorResult
from agenteval.evaluators.text.base import TextOptions, keep, read_suite_file
from agenteval.evaluators.text.trie import trie_pattern
from agenteval.extras import MissingDependency, missing_warning, package_folder

DEFAULT_LIST_MODULE = "better_profanity"
DEFAULT_LIST_FILE = "profanity_wordlist.txt"


def read_terms(text: str) -> list[str]:
    """One term per line; blank lines and lines starting with # are skipped."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@lru_cache(maxsize=1)
def default_terms() -> tuple[str, ...]:
    """better-profanity's English list, read from the package's data file (importing it would build a 5 MB word set)."""
    folder = package_folder(DEFAULT_LIST_MODULE, "toxicity (default_list)")
    return tuple(read_terms((folder / DEFAULT_LIST_FILE).read_text(encoding="utf-8")))


@lru_cache(maxsize=64)
def term_scanner(terms: tuple[str, ...], whole_word: bool) -> re.Pattern[str]:
    """One pattern for all the (normalized) terms, built once per list: a case-level evaluator repeats it per case."""
    body = trie_pattern(terms)
    return re.compile(rf"(?<!\w){body}(?!\w)" if whole_word else body)


def mask(term: str) -> str:
    """`d***`: the first character, then one * per remaining character."""
    return term[:1] + "*" * (len(term) - 1)


class Toxicity(TextOptions):
    """Score 1 when none of the terms occurs, 0 when one does."""

    type: Literal["toxicity"]
    type_name = "toxicity"
    terms: list[str] | None = Field(None, description="Terms that must not occur.")
    terms_file: str | None = Field(None, description="A text file of terms, one per line (# comments), relative to the suite file.")
    default_list: bool = Field(False, description="Also use better-profanity's English word list (needs the `text` extra).")
    whole_word: bool = Field(True, description="A term counts only as a whole word (false: also inside longer words).")
    case_sensitive: bool = Field(False, description="Compare case as written (default false: Unicode case folding).")
    normalize_whitespace: bool = Field(True, description="Fold runs of whitespace to one space and trim the ends (default true).")

    if TYPE_CHECKING:
        _scan: re.Pattern[str] | None
        _written: dict[str, str]
        _unavailable: str | None

    @field_validator("terms")
    @classmethod
    def _no_empty_term(cls, terms: list[str] | None) -> list[str] | None:
        if terms is not None and any(not term.strip() for term in terms):
            raise ValueError("terms must not be empty or blank")
        return terms

    @field_validator("terms_file")
    @classmethod
    def _readable(cls, name: str | None, info: ValidationInfo) -> str | None:
        if name is not None and not read_terms(read_suite_file(name, info.context, "terms file")):
            raise ValueError(f"terms file {name} lists no terms")
        return name

    @model_validator(mode="after")
    def _some_terms(self) -> Toxicity:
        if self.terms is None and self.terms_file is None and not self.default_list:
            raise ValueError("give `terms`, `terms_file` or `default_list: true`")
        return self

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        listed = list(self.terms or [])
        if self.terms_file is not None:
            listed += read_terms(read_suite_file(self.terms_file, context, "terms file"))
        unavailable = None
        if self.default_list:
            try:
                listed += default_terms()
            except (MissingDependency, OSError) as exc:
                unavailable = str(exc)
        written: dict[str, str] = {}  # normalized term -> as written
        for term in listed:
            written.setdefault(self._fold(term.strip()), term.strip())
        scan = term_scanner(tuple(written), self.whole_word) if written else None
        keep(self, _scan=scan, _written=written, _unavailable=unavailable)

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found = super().warnings()
        if self.default_list and (message := missing_warning(DEFAULT_LIST_MODULE, "toxicity (default_list)")):
            found.append((("default_list",), message))
        return found

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        if self._unavailable is not None:
            return self.error_result(self._unavailable)
        if self._scan is None:  # only when a terms file emptied after validation
            return self.error_result("no terms to check")
        found: dict[str, int] = {}
        for match in self._scan.finditer(self._fold(text)):
            term = self._written.get(match.group(0), match.group(0))
            found[term] = found.get(term, 0) + 1
        details = {"terms_checked": len(self._written), "matches": sum(found.values())}
        if not found:
            return self.result(1.0, "pass", hits=[f"{self.where}: none of {len(self._written)} terms found"], details=details)
        misses = [mask(term) + (f" ({count}x)" if count > 1 else "") for term, count in found.items()]
        return self.result(0.0, "fail", misses=misses, reasoning=f"{len(found)} listed term(s) found", details=details)
