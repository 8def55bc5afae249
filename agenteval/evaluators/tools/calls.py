"""Expected tool calls and the per-argument checks that decide whether an actual call satisfies one.

An argument is checked with the field matchers (`exact`, `fuzzy`, `numeric_tolerance`, `date`)
plus `regex` and `any_of`. In YAML a bare value means `exact`; an object with a `match` key is a
check with options, so `{order_id: A-1}` and `{order_id: {match: exact, value: A-1}}` agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from agenteval import matching
from agenteval.config import StrictModel
from agenteval.evaluators.fields import ValueMatch
from agenteval.paths import MISSING

ArgumentMatch = Literal["exact", "fuzzy", "numeric_tolerance", "date", "regex", "any_of"]
Status = Literal["hit", "miss", "skipped"]
_SHOWN_CHARS = 40


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


class ArgumentCheck(ValueMatch):
    """One argument of an expected call."""

    match: ArgumentMatch = "exact"
    value: Any = Field(None, description="The expected value (exact, fuzzy, numeric_tolerance, date).")
    pattern: str | None = Field(None, description="regex: the whole value must match this pattern.")
    values: list[Any] | None = Field(
        None, min_length=1, description="any_of: the acceptable values; an empty string allows leaving the argument out."
    )
    required: bool = Field(True, description="A call that misses a required argument does not satisfy the expected call.")

    @model_validator(mode="after")
    def _check_operands(self) -> ArgumentCheck:
        given = self.model_fields_set
        if self.match == "regex":
            if self.pattern is None:
                raise ValueError("match: regex needs `pattern`")
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"invalid regex {self.pattern!r}: {exc}") from None
        elif self.match == "any_of":
            if self.values is None:
                raise ValueError("match: any_of needs `values`")
        elif "value" not in given:
            raise ValueError(f"match: {self.match} needs `value`")
        for key, owner in (("pattern", "regex"), ("values", "any_of")):
            if key in given and self.match != owner:
                raise ValueError(f"`{key}` (match: {owner}) does not apply to match: {self.match}")
        if "value" in given and self.match in ("regex", "any_of"):
            raise ValueError(f"`value` does not apply to match: {self.match}")
        return self

    def compile(self, name: str) -> ArgumentRule:
        """The check as a plain object with its comparison bound, for the per-pair loop."""
        values = tuple(self.values) if self.values is not None else None
        scalars, objects = set(), []
        for value in values or ():
            try:
                scalars.add(_strict_key(value))
            except TypeError:  # unhashable: an object or a list
                objects.append(value)
        return ArgumentRule(
            name, self.match, self.required, self.value, self.comparison(),
            re.compile(self.pattern) if self.pattern is not None else None,
            values, frozenset(scalars), tuple(objects),
        )


def _strict_key(value: Any) -> tuple[Any, Any]:
    """A set key under which two values are equal exactly when `matching.exact` says so."""
    return ("number", value) if type(value) in (int, float) else (type(value), value)


@dataclass(frozen=True, slots=True)
class ArgumentRule:
    name: str
    match: str
    required: bool
    value: Any
    compare: Callable[[Any, Any], matching.Match]
    regex: re.Pattern[str] | None
    values: tuple[Any, ...] | None  # any_of, as written
    accepted: frozenset[tuple[Any, Any]]  # any_of: the scalar values, by strict key
    accepted_objects: tuple[Any, ...]  # any_of: the object and list values

    def check(self, arguments: dict[str, Any], explain: bool = False) -> tuple[Status, str | None]:
        """Whether this argument of an actual call hits; with `explain`, why not."""
        got = arguments.get(self.name, MISSING)
        if self.values is not None:  # any_of
            if got is MISSING:
                if "" in self.values:
                    return "hit", None
                return ("miss", "missing") if self.required else ("skipped", "optional, missing")
            try:
                if _strict_key(got) in self.accepted:
                    return "hit", None
            except TypeError:  # an object or a list: compared one by one
                if any(matching.exact(got, value).hit for value in self.accepted_objects):
                    return "hit", None
            return "miss", f"{_show(got)} is not one of {_show(list(self.values))}" if explain else None
        if self.regex is None and self.value is None:  # an expected null: absent or null hits
            if got is MISSING or got is None:
                return "hit", None
            return "miss", f"expected null, got {_show(got)}" if explain else None
        if got is MISSING or got is None:
            if not self.required:
                return "skipped", "optional, missing"
            return "miss", "missing" if got is MISSING else "null value"
        if self.regex is not None:
            text = str(got) if type(got) in (int, float) else got  # numbers match as written
            if type(text) is not str:
                return "miss", "type mismatch"
            if self.regex.fullmatch(text):
                return "hit", None
            return "miss", f"{_show(got)} does not match {self.regex.pattern!r}" if explain else None
        if self.match == "exact" and type(got) is type(self.value) and not explain:
            return ("hit", None) if got == self.value else ("miss", None)  # the common case, quickly
        outcome = self.compare(got, self.value)
        if outcome.hit:
            return "hit", None
        if not explain:
            return "miss", None
        why = f"expected {_show(self.value)}, got {_show(got)}"
        if outcome.reason:
            why = f"{outcome.reason}: {why}"
        elif outcome.similarity is not None:
            why += f" (similarity {outcome.similarity:.2f})"
        return "miss", why


def _bare_values_as_exact(arguments: Any) -> Any:
    if not isinstance(arguments, dict):
        return arguments
    return {
        name: check if isinstance(check, dict) and "match" in check else {"match": "exact", "value": check}
        for name, check in arguments.items()
    }


class ExpectedCall(StrictModel):
    """A call the agent should make."""

    name: str = Field(min_length=1, description="The tool's name.")
    arguments: Annotated[
        dict[str, ArgumentCheck],
        BeforeValidator(_bare_values_as_exact, json_schema_input_type=dict[str, Any]),
    ] = Field(
        default_factory=dict,
        description="Per argument: a bare value (exact) or a check {match, value | pattern | values, options, required}.",
    )
    required: bool = Field(True, description="Optional calls do not count in the score but may be made.")

    def compile(self) -> CompiledCall:
        rules = tuple(check.compile(name) for name, check in self.arguments.items())
        required = sorted((rule for rule in rules if rule.required), key=lambda rule: _COST[rule.match])
        return CompiledCall(self.name, self.required, rules, tuple(required))


_COST = {"exact": 0, "any_of": 1, "numeric_tolerance": 2, "regex": 3, "date": 4, "fuzzy": 5}  # cheapest first


@dataclass(frozen=True, slots=True)
class CompiledCall:
    name: str
    required: bool
    rules: tuple[ArgumentRule, ...]  # in the order written, for the details
    required_rules: tuple[ArgumentRule, ...]  # cheapest first, to reject a call early

    def satisfied_by(self, arguments: dict[str, Any]) -> bool:
        """Every required argument hits."""
        for rule in self.required_rules:
            if rule.check(arguments)[0] == "miss":
                return False
        return True

    def hits(self, arguments: dict[str, Any]) -> int:
        """How many arguments hit: how close a call that does not satisfy this one came."""
        return sum(rule.check(arguments)[0] == "hit" for rule in self.rules)

    def missed(self, arguments: dict[str, Any]) -> dict[str, str]:
        """Why each argument that missed did, for the details."""
        found = {}
        for rule in self.rules:
            status, reason = rule.check(arguments, explain=True)
            if status == "miss":
                found[rule.name] = reason or "differs"
        return found


class ExpectedCalls(StrictModel):
    """Expected calls read from a case's expected answer, validated like the `calls` key."""

    calls: list[ExpectedCall]
