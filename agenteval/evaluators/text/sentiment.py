"""sentiment: the tone of the candidate text, offline, from a lexicon shipped in a package.

Both analyzers give a polarity in [-1, 1]: VADER's compound score (vaderSentiment), or AFINN's
comparative score (the sum of word scores per word, afinn) divided by 5. The category is
positive above `positive_above`, negative below `negative_below`, else neutral.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from agenteval.evaluators.base import EvalContext, EvaluatorResult
from agenteval.evaluators.text.base import TextEvaluator
from agenteval.evaluators.text.trie import trie_pattern
from agenteval.extras import MissingDependency, missing_warning, require

Analyzer = Literal["vader", "afinn"]
Category = Literal["positive", "neutral", "negative"]
_MODULES = {"vader": "vaderSentiment.vaderSentiment", "afinn": "afinn.afinn"}
_CATEGORY_SCORE = {"positive": 1.0, "neutral": 0.5, "negative": 0.0}


@lru_cache(maxsize=None)
def _vader() -> Any:
    return require(_MODULES["vader"], "sentiment (analyzer: vader)").SentimentIntensityAnalyzer()


class AfinnLexicon:
    """AFINN-165 as the afinn package ships it, matched with one trie-shaped pattern.

    Scores what `Afinn().score` does (lower-cased text, whole words and phrases, longest first)
    in a few microseconds instead of a try of each of its 3,382 entries at every character.
    """

    def __init__(self) -> None:
        afinn = require("afinn.afinn", "sentiment (analyzer: afinn)")
        data = Path(afinn.__file__).parent / "data" / afinn.LANGUAGE_TO_FILENAME["en"]
        self.values: dict[str, int] = afinn.Afinn.read_word_file(str(data))
        self.pattern = re.compile(r"\b(?:" + trie_pattern(self.values) + r")\b")

    def score(self, text: str) -> float:
        text = _WHITESPACE.sub(" ", text).lower()
        return float(sum(self.values[word] for word in self.pattern.findall(text)))

    @staticmethod
    def words(text: str) -> int:
        """How many words afinn's `split` finds (runs of word characters)."""
        return len(_WORD.findall(text))


_WORD = re.compile(r"\w+")
_WHITESPACE = re.compile(r"\s+")


@lru_cache(maxsize=None)
def _afinn() -> AfinnLexicon:
    return AfinnLexicon()


@lru_cache(maxsize=None)
def _emoji_as_words() -> dict[int, str]:
    """Each emoji VADER reads as words (its keys of one character), mapped to its description between spaces."""
    return {ord(char): f" {description} " for char, description in _vader().emojis.items() if len(char) == 1}


def vader_words(text: str) -> int:
    """How many words VADER weighs, at most: the text split on whitespace, each emoji read as its description.

    VADER's time grows with the square of this count, not of the characters: 20,000 characters of
    emoji become up to 26,666 words (25 s), the same length of prose about 3,500.
    """
    if text.isascii():
        return len(text.split())
    return len(text.translate(_emoji_as_words()).split())


def vader_figures(text: str) -> dict[str, Any]:
    scores = _vader().polarity_scores(text)
    return {"compound": scores["compound"], "pos": scores["pos"], "neu": scores["neu"], "neg": scores["neg"], "polarity": scores["compound"]}


def afinn_figures(text: str) -> dict[str, Any]:
    lexicon = _afinn()
    total = lexicon.score(text)
    words = lexicon.words(text)
    comparative = total / words if words else 0.0
    return {"afinn_score": total, "words": words, "comparative": comparative, "polarity": max(-1.0, min(1.0, comparative / 5))}


class Sentiment(TextEvaluator):
    """Scores the tone; with `expect` it is a pass/fail check, without it a measurement that passes."""

    type: Literal["sentiment"]
    type_name = "sentiment"
    analyzer: Analyzer = Field("vader", description="vader (vaderSentiment) or afinn (the AFINN-165 word list); both need the `text` extra.")
    output: Literal["normalized", "raw", "category"] = Field(
        "normalized",
        description="The figure reported as details.value: normalized (polarity mapped to [0, 1], also the score), "
        "raw (VADER compound or AFINN sum), or category (score 1 positive, 0.5 neutral, 0 negative).",
    )
    positive_above: float = Field(0.05, ge=-1, le=1, description="Polarity above this is positive.")
    negative_below: float = Field(-0.05, ge=-1, le=1, description="Polarity below this is negative.")
    expect: Literal["positive", "neutral", "negative", "not_negative"] | None = Field(
        None, description="Makes it a check: score 1 (pass) when the category is as expected, else 0 (fail)."
    )
    max_chars: int = Field(20_000, ge=1, description="Longer texts are an error (both analyzers).")
    max_words: int = Field(
        2_000, ge=1,
        description="vader: texts of more words are an error, counted as VADER reads them (each emoji as the words of its description); "
        "its time grows with the square of that count (up to about 0.5 s at 2,000 words).",
    )

    @model_validator(mode="after")
    def _ordered(self) -> Sentiment:
        if self.negative_below > self.positive_above:
            raise ValueError(f"`negative_below` ({self.negative_below}) is above `positive_above` ({self.positive_above})")
        return self

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found = super().warnings()
        if message := missing_warning(_MODULES[self.analyzer], f"sentiment (analyzer: {self.analyzer})"):
            found.append((("analyzer",), message))
        return found

    def prepare(self) -> None:
        try:  # VADER's lexicon and emoji table, or the AFINN pattern: read once, not in the first case
            _emoji_as_words() if self.analyzer == "vader" else _afinn()
        except MissingDependency:
            pass

    def category(self, polarity: float) -> Category:
        if polarity > self.positive_above:
            return "positive"
        if polarity < self.negative_below:
            return "negative"
        return "neutral"

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        if len(text) > self.max_chars:
            return self.error_result(f"{self.where} has {len(text)} characters, more than max_chars ({self.max_chars})")
        try:
            if self.analyzer == "vader" and (words := vader_words(text)) > self.max_words:
                return self.error_result(
                    f"{self.where} has {words:,} words as VADER reads it (emoji as their descriptions), more than max_words ({self.max_words:,})"
                )
            figures = vader_figures(text) if self.analyzer == "vader" else afinn_figures(text)
        except MissingDependency as exc:
            return self.error_result(str(exc))
        polarity = figures["polarity"]
        category = self.category(polarity)
        normalized = (polarity + 1) / 2
        raw = figures["compound"] if self.analyzer == "vader" else figures["afinn_score"]
        value = {"normalized": normalized, "raw": raw, "category": category}[self.output]
        details = {"analyzer": self.analyzer, "value": value, "category": category, "normalized": normalized, **figures}
        reasoning = f"{category} (polarity {polarity:.4f}, {self.analyzer})"
        if self.expect is not None:
            met = category == self.expect or (self.expect == "not_negative" and category != "negative")
            line = [f"{self.where} is {category} (expected {self.expect.replace('_', ' ')})"]
            if met:
                return self.result(1.0, "pass", hits=line, reasoning=reasoning, details=details)
            return self.result(0.0, "fail", misses=line, reasoning=reasoning, details=details)
        score = _CATEGORY_SCORE[category] if self.output == "category" else normalized
        return self.result(score, "pass", hits=[f"{self.where} is {category}"], reasoning=reasoning, details=details)
