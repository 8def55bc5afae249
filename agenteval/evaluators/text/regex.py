"""regex: the candidate text matches (or, with `must_match: false`, does not match) a pattern.

The pattern is Python `re` syntax, checked with `re` when the suite loads (its messages name the
position). It is matched with agenteval.patterns, the one time-bounded engine: a pattern that
backtracks without end on some answer makes that case an `error`, not a hung run.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationInfo, field_validator

from agenteval import patterns
from agenteval.evaluators.base import EvalContext, EvaluatorResult
from agenteval.evaluators.text.base import TextOptions, folding, keep, show

Flag = Literal["ignorecase", "multiline", "dotall", "verbose", "ascii"]
_FLAGS = {"ignorecase": re.IGNORECASE, "multiline": re.MULTILINE, "dotall": re.DOTALL, "verbose": re.VERBOSE, "ascii": re.ASCII}


def compile_pattern(pattern: str, flags: list[Flag], case_sensitive: bool) -> Any:
    """The pattern compiled for agenteval.patterns; ValueError naming the position when it is invalid."""
    value = 0
    for flag in flags:
        value |= _FLAGS[flag]
    if not case_sensitive:
        value |= re.IGNORECASE
    try:
        re.compile(pattern, value)  # the syntax users write is re's, and re's messages are the clearest
        return patterns.compile(pattern, value)
    except (re.error, patterns.PatternError) as exc:
        pos, lineno, colno = getattr(exc, "pos", None), getattr(exc, "lineno", None), getattr(exc, "colno", None)
        where = f"line {lineno}, column {colno}" if lineno and "\n" in pattern else f"position {pos}"
        raise ValueError(f"invalid regular expression at {where}: {exc.msg} in {pattern!r}") from None


# Characters a regex written in YAML's double quotes gets from an escape meant for the regex (`\b` a
# word boundary): what YAML made of each escape, and the escape as written.
_YAML_ESCAPED = {"\b": ("a backspace", "\\b"), "\a": ("a bell", "\\a"), "\x1b": ("an escape", "\\e"),
                 "\v": ("a vertical tab", "\\v"), "\f": ("a form feed", "\\f"), "\0": ("a NUL", "\\0")}


class Regex(TextOptions):
    """A search over the text, bounded by `limits.pattern_seconds`; an invalid pattern is a load-time error."""

    type: Literal["regex"]
    type_name = "regex"
    flags: list[Flag] = Field(default_factory=list, description="Python re flags by name.")
    pattern: str = Field(description="A Python regular expression, searched anywhere in the text (anchor with ^ and $).")
    must_match: bool = Field(True, description="false: pass only when the pattern is not found.")

    if TYPE_CHECKING:
        _regex: Any
        _shown: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str, info: ValidationInfo) -> str:
        compile_pattern(pattern, info.data.get("flags", []), info.data.get("case_sensitive", True))
        return pattern

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found = super().warnings()
        control = next((char for char in self.pattern if char in _YAML_ESCAPED), None)
        if control is not None:  # `pattern: "\bJane\b"`: YAML read `\b` as a backspace, which no answer holds
            name, escape = _YAML_ESCAPED[control]
            found.append((("pattern",), f"the pattern holds {name} ({control!r}): in double quotes YAML reads `{escape}` as one; "
                          "write the regex in single quotes"))
        return found

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        # case is the IGNORECASE flag's job, so the text keeps its case
        regex = compile_pattern(self.pattern, self.flags, self.case_sensitive)
        shown = f"/{self.pattern}/" if len(self.pattern) <= 40 else f"/{self.pattern[:37]}.../"
        keep(self, _fold=folding(True, self.normalize_whitespace, self.unicode), _regex=regex, _shown=shown)

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        try:
            found = patterns.search(self._regex, self._fold(text), ctx.limits.pattern_seconds)
        except patterns.PatternTimeout as exc:
            return self.error_result(f"regex {self.label!r}: {exc}")
        shown = self._shown
        if found is None:
            if self.must_match:
                return self.result(0.0, "fail", misses=[f"{self.where} does not match {shown}"])
            return self.result(1.0, "pass", hits=[f"{self.where} does not match {shown}"])
        details = {"match": found.group(0)[:200], "start": found.start()}
        if self.must_match:
            return self.result(1.0, "pass", hits=[f"{self.where} matches {shown}"], details=details)
        return self.result(0.0, "fail", misses=[f"{self.where} matches {shown} at {found.start()}: {show(found.group(0))}"], details=details)
