"""An evaluator given as a Python object: a callable `(ctx) -> ...`, or an object with `evaluate(ctx)`.

Only the Python API builds one (`agenteval.evaluate(cases, [check_totals, FieldAccuracy(...)])`):
nothing in a suite file or a cases file can name it, so it needs no trust. The function gets a
`CheckContext` whose `input`, `expected`, `output` and `metadata` are the caller's own objects
(a pydantic model stays a model, a Decimal a Decimal), not their plain forms. It returns what a
`python` evaluator returns (a bool, a number in [0, 1], a dict with `score`, or an
EvaluatorResult) and is held to the same checks: NaN, a score out of range, `None`, an
exception or `sys.exit()` is that case's `error`. A sync function runs on a helper thread and an
async one (or one returning an awaitable) on the background event loop python targets use; a
call past `timeout` seconds is that case's error.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PrivateAttr

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.python_function import DEFAULT_TIMEOUT, PythonFunction, call_problem
from agenteval.evaluators.scales import Scale

if TYPE_CHECKING:
    from agenteval.run_context import RunContext


@dataclass(frozen=True, slots=True)
class CheckContext:
    """One case as a Python evaluator sees it: the caller's own objects, plus what the run recorded."""

    case_id: str
    input: Any
    expected: Any
    output: Any
    metadata: Any
    usage: dict[str, Any] | None = None  # latency (and tokens, cost) of getting the answer
    run: RunContext | None = None  # run_id, suite, cell and repetition (agenteval.run_context)


class CallableEvaluator(EvaluatorConfig):
    """A Python callable or object with `evaluate(ctx)` as an evaluator (Python API only)."""

    type: Literal["callable"] = "callable"
    function: str = Field(description="`module:qualname` of the callable, for the summary.")
    scale: Scale = "unit"
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0, allow_inf_nan=False)

    type_name = "callable"
    runs_programs = True  # its results come from code agenteval does not own: they get the full check

    _call: Callable[[CheckContext], Any] | None = PrivateAttr(None)
    _originals: Mapping[str, Any] | None = PrivateAttr(None)  # case id -> agenteval.values.Originals

    @classmethod
    def of(cls, check: Any, *, name: str | None = None, weight: float = 1.0, min_score: float | None = None,
           timeout: float = DEFAULT_TIMEOUT) -> CallableEvaluator:
        """The evaluator for `check`: a callable, or an object with `evaluate(ctx)`. Its name is
        `name`, else the object's `name` attribute, else the function's or class's name."""
        from agenteval.targets.python import callable_name

        method = getattr(check, "evaluate", None)
        call = method if callable(method) and not isinstance(check, type) else check
        if not callable(call):
            raise TypeError(f"an evaluator is a mapping, a typed config, a callable or an object with evaluate(ctx); got {type(check).__name__}")
        label = name or _own_name(check)
        evaluator = cls(type="callable", name=label, weight=weight, min_score=min_score, function=callable_name(call), timeout=timeout)
        evaluator._call = call
        return evaluator

    @property
    def shown(self) -> str:
        """How messages name what was called (as PythonFunction.shown, which `from_answer` uses)."""
        return self.function

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        from agenteval.functions import HELPERS as _HELPERS

        call = self._call
        if call is None:
            return self.error_result(f"{self.function}: the callable did not come with this evaluator (Python API only)")
        outcome = _HELPERS.call(_called, (call, self._context(ctx)), self.timeout)
        problem = call_problem(self.function, self.timeout, outcome)
        if problem is not None:
            return self.error_result(problem)
        answer = outcome[0]  # type: ignore[index] - call_problem said the call returned
        if isinstance(answer, EvaluatorResult):  # held to run_evaluator's full check, under this evaluator's name
            return dataclasses.replace(answer, name=self.label, type=self.type)
        return PythonFunction.from_answer(self, answer)  # type: ignore[arg-type] - the same reading as a `python` evaluator's

    def _context(self, ctx: EvalContext) -> CheckContext:
        from agenteval.values import original_answer

        originals = self._originals.get(ctx.case_id) if self._originals is not None else None
        from_target, output = original_answer(ctx.case_id, ctx.output)  # a python target's answer as it returned it
        if not from_target:
            output = ctx.output if originals is None else originals.output  # a recorded answer as the caller gave it
        if originals is None:
            return CheckContext(ctx.case_id, ctx.input, ctx.expected, output, ctx.metadata, ctx.usage, ctx.run)
        return CheckContext(ctx.case_id, originals.input, originals.expected, output, originals.metadata, ctx.usage, ctx.run)


def _called(call: Callable[[CheckContext], Any], ctx: CheckContext) -> Any:
    """On a helper thread: call; an awaitable is awaited on the background event loop."""
    answer = call(ctx)
    if inspect.isawaitable(answer):
        import asyncio

        from agenteval.targets.python import background_loop

        answer = asyncio.run_coroutine_threadsafe(_awaited(answer), background_loop()).result()
    return answer


async def _awaited(answer: Any) -> Any:
    return await answer


def _own_name(check: Any) -> str:
    name = getattr(check, "name", None)
    if isinstance(name, str) and name:
        return name
    if inspect.isfunction(check) or inspect.ismethod(check):
        return check.__name__
    return type(check).__name__ if not isinstance(check, type) else check.__name__
