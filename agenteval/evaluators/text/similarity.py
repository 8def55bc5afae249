"""text_similarity: how close the candidate text is to a reference text, as a score in [0, 1].

`sorensen_dice` (default) is the Dice coefficient on character bigrams; `token_jaccard` the
Jaccard index of the two word sets; `levenshtein`, `jaro_winkler` and `token_set` are
rapidfuzz's normalized similarities. Those three cost time proportional to the product of the
two lengths and run in C without a pause, so a text longer than `limits.edit_distance_chars`
makes the case an `error` before anything is computed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from operator import add
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, Levenshtein

from agenteval.evaluators.base import EvalContext, EvaluatorResult
from agenteval.evaluators.text.base import Reference, ReferenceText, keep, show

Algorithm = Literal["sorensen_dice", "token_jaccard", "levenshtein", "jaro_winkler", "token_set"]

QUADRATIC = frozenset({"levenshtein", "jaro_winkler", "token_set"})
"""The algorithms whose time grows with the product of the lengths: bounded by `limits.edit_distance_chars`."""

_WORD = re.compile(r"\w+")  # a fixed pattern that cannot backtrack: linear on any text


def sorensen_dice(a: str, b: str) -> float:
    """2 x shared bigrams / all bigrams, counting repeats (so "aaaa" vs "aa" is not 1).

    Equal texts score 1 (even empty ones); a text shorter than two characters has no bigram
    and scores 0 against anything else.
    """
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    first, second = Counter(map(add, a, a[1:])), Counter(map(add, b, b[1:]))
    if len(first) > len(second):
        first, second = second, first
    shared = 0
    for bigram, count in first.items():
        other = second.get(bigram)
        if other:
            shared += count if count < other else other
    return 2.0 * shared / (len(a) + len(b) - 2)


def token_jaccard(a: str, b: str) -> float:
    """Shared words over all distinct words (runs of letters, digits, underscores; punctuation ignored).

    Every word in one text and not the other costs, so extra words (a negation, a list of other
    answers) lower the score. Two texts without words score 1 when equal, else 0.
    """
    first, second = set(_WORD.findall(a)), set(_WORD.findall(b))
    if not first or not second:
        return 1.0 if first == second and a == b else 0.0
    shared = len(first & second)
    return shared / (len(first) + len(second) - shared)


def _token_set(a: str, b: str) -> float:
    """rapidfuzz's token_set_ratio / 100: 1 whenever one text's word set contains the other's.

    Equal texts score 1, like every other algorithm (rapidfuzz gives two empty texts 0).
    """
    if a == b:
        return 1.0
    return fuzz.token_set_ratio(a, b) / 100.0


SIMILARITY: dict[str, Callable[[str, str], float]] = {
    "sorensen_dice": sorensen_dice,
    "token_jaccard": token_jaccard,
    "levenshtein": Levenshtein.normalized_similarity,
    "jaro_winkler": JaroWinkler.normalized_similarity,
    "token_set": _token_set,
}


class TextSimilarity(ReferenceText):
    """Score = similarity to the reference (the best one, given a list); pass at `threshold`."""

    type: Literal["text_similarity"]
    type_name = "text_similarity"
    algorithm: Algorithm = Field(
        "sorensen_dice",
        description="sorensen_dice (character bigrams), token_jaccard (shared words over all words), levenshtein, jaro_winkler, "
        "or token_set (1 whenever one text's words include all of the other's).",
    )
    threshold: float = Field(0.8, ge=0, le=1, description="Similarity needed to pass.")
    case_sensitive: bool = Field(False, description="Compare case as written (default false: Unicode case folding).")
    normalize_whitespace: bool = Field(True, description="Fold runs of whitespace to one space and trim the ends (default true).")

    if TYPE_CHECKING:
        _similarity: Callable[[str, str], float]

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        keep(self, _similarity=SIMILARITY[self.algorithm])

    def compare(self, text: str, references: tuple[Reference, ...], ctx: EvalContext) -> EvaluatorResult:
        if self.algorithm in QUADRATIC and (too_long := self._too_long(text, references, ctx.limits.edit_distance_chars)):
            return self.error_result(ctx.limits.message("edit_distance_chars", f"text_similarity {self.label!r} ({self.algorithm}): {too_long}"))
        best, closest = -1.0, references[0][0]
        for shown, reference in references:
            similarity = self._similarity(text, reference)
            if similarity > best:
                best, closest = similarity, shown
        details = {"similarity": best, "algorithm": self.algorithm, "reference": closest[:200]}
        reasoning = f"{self.algorithm} similarity {best:.4f} to {show(closest)} (threshold {self.threshold})"
        if best >= self.threshold:
            return self.result(best, "pass", hits=[f"{self.where} ({best:.3f})"], reasoning=reasoning, details=details)
        return self.result(best, "fail", misses=[f"{self.where} ({best:.3f} < {self.threshold})"], reasoning=reasoning, details=details)

    def _too_long(self, text: str, references: tuple[Reference, ...], most: int) -> str | None:
        """Which text is past `most` characters (checked before computing), or None.

        token_set compares the texts' distinct words, so there it is their length that counts:
        a long answer that repeats a few words stays cheap.
        """
        for name, compared in ((self.where, text), *(("the reference", reference) for _, reference in references)):
            if len(compared) <= most:
                continue
            if self.algorithm != "token_set":
                return f"{name} has {len(compared):,} characters, more than an edit distance is computed on"
            if (size := distinct_words_length(compared)) > most:
                return f"{name} has {size:,} characters of distinct words, more than an edit distance is computed on"
        return None


def distinct_words_length(text: str) -> int:
    """The length of the text's distinct words joined by spaces: what token_set compares at most."""
    return sum(len(word) + 1 for word in set(text.split()))
