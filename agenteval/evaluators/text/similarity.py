"""text_similarity: how close the candidate text is to a reference text, as a score in [0, 1].

`sorensen_dice` (default) is the Dice coefficient on character bigrams; `levenshtein`,
`jaro_winkler` and `token_set` are rapidfuzz's normalized similarities. Levenshtein and
Jaro-Winkler cost time proportional to the product of the two lengths: prefer sorensen_dice or
token_set for texts of many thousands of characters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from operator import add
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field
from rapidfuzz import fuzz
from rapidfuzz.distance import JaroWinkler, Levenshtein

from agenteval.evaluators.base import EvaluatorResult
from agenteval.evaluators.text.base import Reference, ReferenceText, keep, show

Algorithm = Literal["sorensen_dice", "levenshtein", "jaro_winkler", "token_set"]


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


def _token_set(a: str, b: str) -> float:
    return fuzz.token_set_ratio(a, b) / 100.0


SIMILARITY: dict[str, Callable[[str, str], float]] = {
    "sorensen_dice": sorensen_dice,
    "levenshtein": Levenshtein.normalized_similarity,
    "jaro_winkler": JaroWinkler.normalized_similarity,
    "token_set": _token_set,
}


class TextSimilarity(ReferenceText):
    """Score = similarity to the reference (the best one, given a list); pass at `threshold`."""

    type: Literal["text_similarity"]
    type_name = "text_similarity"
    algorithm: Algorithm = Field("sorensen_dice", description="sorensen_dice (character bigrams), levenshtein, jaro_winkler or token_set.")
    threshold: float = Field(0.8, ge=0, le=1, description="Similarity needed to pass.")
    case_sensitive: bool = Field(False, description="Compare case as written (default false: Unicode case folding).")
    normalize_whitespace: bool = Field(True, description="Fold runs of whitespace to one space and trim the ends (default true).")

    if TYPE_CHECKING:
        _similarity: Callable[[str, str], float]

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        keep(self, _similarity=SIMILARITY[self.algorithm])

    def compare(self, text: str, references: tuple[Reference, ...]) -> EvaluatorResult:
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
