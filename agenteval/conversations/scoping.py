"""Where each evaluator applies in a conversation: `scope: turn | last | conversation`, and the
evaluators of one scripted turn (`turns[i].evaluators`).

The runner asks `plan(evaluators, case, output)` for the list to score (the case's evaluators,
then each turn's own) and a `run(evaluator, ctx)` that gives each its part of the conversation.
An answer that is not a conversation is scored whole, as it always was, whatever the scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from agenteval.conversations.transcript import is_conversation, transcript_text, turn_usage, turn_view
from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult, Scope
from agenteval.usage import combine_usage

RunOne = Callable[[EvaluatorConfig, EvalContext], EvaluatorResult]

WHOLE_CONVERSATION_TYPES = frozenset({"conversation", "latency", "token_usage", "cost"})
"""Types whose default scope is the whole conversation: its own figures, and what the case cost.
A plugin type says so with a class attribute `default_scope = "conversation"`."""


def scope_of(evaluator: EvaluatorConfig) -> Scope:
    """The evaluator's `scope:`, else its type's default (`last`, or see WHOLE_CONVERSATION_TYPES)."""
    if evaluator.scope is not None:
        return evaluator.scope
    if evaluator.type in WHOLE_CONVERSATION_TYPES:
        return "conversation"
    default = getattr(type(evaluator), "default_scope", "last")
    return default if default in ("turn", "last", "conversation") else "last"


@dataclass
class Plan:
    """The evaluators of one case and how each is run on its part of the answer."""

    evaluators: list[EvaluatorConfig]
    run_one: RunOne
    output: Any = None
    turn_of: dict[int, int] = field(default_factory=dict)  # id(per-turn evaluator) -> its turn's index

    def run(self, evaluator: EvaluatorConfig, ctx: EvalContext) -> EvaluatorResult:
        if not is_conversation(self.output):
            return self.run_one(evaluator, ctx)
        turns = self.output["turns"]
        index = self.turn_of.get(id(evaluator))
        if index is not None:
            try:
                if index >= len(turns):  # a limit ended the conversation first: the agent's miss, not the evaluator's error
                    never = f"turn {index + 1} was never answered (the conversation ended after {len(turns)}: {self.output.get('stopped')})"
                    return evaluator.result(0.0, "fail", misses=[never])
                return self._on_turn(evaluator, ctx, index)
            finally:
                evaluator.close()  # a turn's own evaluators run once per case, like a case's own
        scope = scope_of(evaluator)
        if scope == "conversation":  # said in its details, so a report places the verdict at the end
            result = self.run_one(evaluator, replace(ctx, transcript=transcript_text(self.output)))
            result.details = {**(result.details if isinstance(result.details, dict) else {}), "scope": "conversation"}
            return result
        if scope == "last":
            return self._on_turn(evaluator, ctx, len(turns) - 1)
        return each_turn(evaluator, [self._on_turn(evaluator, ctx, index) for index in range(len(turns))])

    def _on_turn(self, evaluator: EvaluatorConfig, ctx: EvalContext, index: int) -> EvaluatorResult:
        """The evaluator on one turn's reply; a turn that is no object (an answer's own `turns`
        holds anything) is this evaluator's error, so the case's, never the run's."""
        problem = turn_problem(self.output, index)
        if problem is not None:
            return evaluator.error_result(problem)
        return self.run_one(evaluator, turn_context(ctx, self.output, index))


def plan(
    evaluators: list[EvaluatorConfig], case: Any, output: Any, run_one: RunOne, only: frozenset[str] | None = None,
) -> tuple[list[EvaluatorConfig], RunOne]:
    """The evaluators to score the case with and how to run each: for a conversation, the case's
    evaluators then each scripted turn's own (named `turn N: NAME` at load; `only`, --evaluator,
    selects among them too), each on its part of the answer. Anything else: as given, run as is."""
    if not is_conversation(output) and not getattr(case, "turns", None):
        return evaluators, run_one
    found = Plan(list(evaluators), run_one, output)
    for index, turn in enumerate(getattr(case, "turns", None) or ()):
        for evaluator in turn.evaluators or ():
            if only is None or evaluator.label in only:
                found.evaluators.append(evaluator)
                found.turn_of[id(evaluator)] = index
    return found.evaluators, found.run


def turn_problem(output: dict[str, Any], index: int) -> str | None:
    """Why turn `index` of an answer has no reply to score, or None: a conversation's turns are
    objects (`{user, reply, tool_calls}`), and an answer may say anything."""
    turn = output["turns"][index]
    if isinstance(turn, dict):
        return None
    return f"the answer's `turns[{index}]` is {_kind(turn)}, not an object with `user` and `reply`: no reply to score"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "a string" if isinstance(value, str) else "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def turn_context(ctx: EvalContext, output: dict[str, Any], index: int) -> EvalContext:
    """The context of one turn's reply: its view as the answer, its own usage."""
    return replace(ctx, output=turn_view(output, index), usage=turn_usage(output, index))


def each_turn(evaluator: EvaluatorConfig, results: list[EvaluatorResult]) -> EvaluatorResult:
    """`scope: turn`: one result from each turn's: the mean score; every turn's misses (and hits)
    prefixed `turn N:`; per-turn figures in details. Pass iff every turn passes (or, with
    `min_score`, iff the mean reaches it); an error in any turn is the result's error."""
    per_turn = [{"turn": number, "score": result.score, "verdict": result.verdict} for number, result in enumerate(results, 1)]
    errors = [f"turn {number}: {result.error}" for number, result in enumerate(results, 1) if result.verdict == "error"]
    if errors:
        return evaluator.error_result("; ".join(errors), details={"turns": per_turn})
    score = sum(result.score for result in results) / len(results)
    verdicts = {result.verdict for result in results}
    default = "pass" if verdicts == {"pass"} else "fail" if verdicts == {"fail"} else "partial"
    hits = [f"turn {number}: {hit}" for number, result in enumerate(results, 1) for hit in result.hits]
    misses = [f"turn {number}: {miss}" for number, result in enumerate(results, 1) for miss in result.misses]
    reasons = [f"turn {number}: {result.reasoning}" for number, result in enumerate(results, 1) if result.reasoning]
    details: dict[str, Any] = {"turns": per_turn}
    usage = None
    for result in results:  # a model judge's requests, counted in the run's judge usage
        if isinstance((result.details or {}).get("usage"), dict):
            usage = combine_usage(usage, result.details["usage"])  # type: ignore[index]
    if usage is not None:
        details["usage"] = usage
    outcome = EvaluatorResult(
        evaluator.label, evaluator.type, score, evaluator.verdict(score, default), hits=hits, misses=misses,
        reasoning="; ".join(reasons) or None, details=details,
    )
    if evaluator.criterion is not None:
        outcome.criterion = evaluator.criterion.as_dict()
    outcome.duration_ms = sum(result.duration_ms for result in results)
    return outcome
