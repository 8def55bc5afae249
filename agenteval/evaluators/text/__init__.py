"""Offline text evaluators: small rules (equals, contains, regex, length, JSON checks) and the lexical suite."""

from agenteval.evaluators.text.json_checks import JsonSchema, JsonValid
from agenteval.evaluators.text.keywords import KeywordCoverage
from agenteval.evaluators.text.length import Length
from agenteval.evaluators.text.regex import Regex
from agenteval.evaluators.text.rules import Contains, EndsWith, Equals, NotContains, StartsWith
from agenteval.evaluators.text.sentiment import Sentiment
from agenteval.evaluators.text.similarity import TextSimilarity
from agenteval.evaluators.text.toxicity import Toxicity

TEXT_EVALUATORS = (
    Equals,
    Contains,
    NotContains,
    StartsWith,
    EndsWith,
    Regex,
    Length,
    JsonValid,
    JsonSchema,
    TextSimilarity,
    KeywordCoverage,
    Sentiment,
    Toxicity,
)

__all__ = ["TEXT_EVALUATORS", *(cls.__name__ for cls in TEXT_EVALUATORS)]
