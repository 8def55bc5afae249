"""Expected tool calls, and whether an actual call satisfies one.

Each argument is a check (`checks.ArgumentCheck`): in YAML a bare value means `exact`, an object
with a `match` key is a check with options, so `{order_id: A-1}` and
`{order_id: {match: exact, value: A-1}}` agree. A call may also check its tool's `result`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from agenteval.config import StrictModel
from agenteval.evaluators.tools.checks import ArgumentCheck, Defaults, Env, Rule, as_check
from agenteval.evaluators.tools.trajectory import ToolCall
from agenteval.paths import MISSING
from agenteval.process import decode_json

RESULT = "(result)"  # the key of a result's miss among the argument misses


def _bare_values_as_checks(arguments: Any) -> Any:
    if not isinstance(arguments, dict):
        return arguments
    return {name: as_check(check) for name, check in arguments.items()}


class ExpectedCall(StrictModel):
    """A call the agent should make."""

    name: str = Field(min_length=1, description="The tool's name.")
    arguments: Annotated[
        dict[str, ArgumentCheck],
        BeforeValidator(_bare_values_as_checks, json_schema_input_type=dict[str, Any]),
    ] = Field(
        default_factory=dict,
        description="Per argument: a bare value (exact) or a check {match, value | pattern | values | properties | items | function, options, required}.",
    )
    required: bool = Field(True, description="Optional calls do not count in the score but may be made.")
    extra_arguments: bool | None = Field(
        None, description="Whether the call may have arguments not listed in `arguments` (default: the evaluator's `extra_arguments`).",
    )
    result: Annotated[ArgumentCheck, BeforeValidator(as_check, json_schema_input_type=Any)] | None = Field(
        None, description="What the tool returned for this call (its tool / tool_result / functionResponse): a bare value (exact) or a check.",
    )

    def compile(self, defaults: Defaults) -> CompiledCall:
        rules = tuple((name, check.compile(defaults)) for name, check in self.arguments.items())
        cheapest = tuple(sorted(rules, key=lambda pair: _COST[pair[1].match]))
        extra = defaults.extra_arguments if self.extra_arguments is None else self.extra_arguments
        result = self.result.compile(defaults) if self.result is not None else None
        return CompiledCall(self.name, self.required, rules, cheapest, extra, frozenset(self.arguments), result)

    def runs_code(self) -> bool:
        checks = list(self.arguments.values()) + ([self.result] if self.result is not None else [])
        return any(check.runs_code() for check in checks)


_COST = {"exact": 0, "any_of": 1, "numeric_tolerance": 2, "object": 3, "array": 3, "regex": 4, "date": 5, "fuzzy": 6, "python": 7}


@dataclass(frozen=True, slots=True)
class CompiledCall:
    name: str
    required: bool
    rules: tuple[tuple[str, Rule], ...]  # in the order written, for the details
    cheapest: tuple[tuple[str, Rule], ...]  # cheapest first, to reject a call early
    extra_allowed: bool
    known: frozenset[str]
    result: Rule | None

    def satisfied_by(self, call: ToolCall, env: Env) -> bool:
        """Every argument given hits, every required one is given, nothing unexpected, the result hits."""
        arguments = call.arguments or {}
        for name, rule in self.cheapest:
            got = arguments.get(name, MISSING)
            if got is MISSING or got is None:
                if rule.status(got, env, False)[0] == "miss":
                    return False
            elif rule.test(got, env, False) is not None:  # the common case, without the absent/null layer
                return False
        if not self.extra_allowed and any(name not in self.known for name in arguments):
            return False
        return self.result is None or _result_status(self.result, call.result, env, False)[0] != "miss"

    def hits(self, call: ToolCall, env: Env) -> int:
        """How many arguments hit: how close a call that does not satisfy this one came."""
        arguments = call.arguments or {}
        return sum(rule.status(arguments.get(name, MISSING), env, False)[0] == "hit" for name, rule in self.rules)

    def missed(self, call: ToolCall, env: Env) -> dict[str, str]:
        """Why each argument that missed did (and each unexpected one, and the result), for the details."""
        arguments = call.arguments or {}
        found = {}
        for name, rule in self.rules:
            status, reason = rule.status(arguments.get(name, MISSING), env, True)
            if status == "miss":
                found[name] = reason or "differs"
        if not self.extra_allowed:
            for name in arguments:
                if name not in self.known:
                    found[name] = "unexpected argument"
        if self.result is not None:
            status, reason = _result_status(self.result, call.result, env, True)
            if status == "miss":
                found[RESULT] = "no result recorded" if call.result is MISSING else reason or "differs"
        return found


def _result_status(rule: Rule, result: Any, env: Env, explain: bool) -> tuple[str, str | None]:
    """A result recorded as JSON text (a tool message's content) is checked as text, then decoded."""
    status, reason = rule.status(result, env, explain)
    if status == "miss" and type(result) is str and result[:1] in ("{", "["):
        try:
            decoded = decode_json(result)
        except (ValueError, RecursionError):
            return status, reason
        return rule.status(decoded, env, explain)
    return status, reason


class ExpectedCalls(StrictModel):
    """Expected calls read from a case's expected answer, validated like the `calls` key."""

    calls: list[ExpectedCall]
