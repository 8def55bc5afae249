"""python: a judge written as a Python function, called in-process with a code_judge's payload.

No process starts per case, so it costs microseconds where a subprocess judge costs milliseconds.
The function returns a number, a bool or a judge's answer object; an exception (`sys.exit()`
included) becomes verdict `error` with the traceback's last lines. The module is looked for next
to the suite first, then among installed modules, and importing it leaves `sys.path` and
`sys.modules` as they were (agenteval.functions imports and calls it, for python targets too).
`expression:` instead of `function:` is a one-line check (`'refund' in output.lower()`), compiled
at load time and called the same way, with the same timeout and result checks.

Each call (the first one imports the module) runs on a helper daemon thread, waited for at most
`timeout` seconds: a call past it is that case's error and the run goes on. Python cannot kill a
thread, so an abandoned call keeps running in the background until it returns or agenteval
exits; idle helper threads are reused, so a call costs a thread hand-over (about 20 µs).
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.code_judge import (
    CodeJudge,
    check_judge_answer,
    judge_payload,
    judged_result,
)
from agenteval.evaluators.scales import Scale
from agenteval.functions import HELPERS as _HELPERS
from agenteval.functions import TRACEBACK_LINES_KEPT as TRACEBACK_LINES_KEPT  # kept importable from here
from agenteval.functions import FunctionImportError, import_function, traceback_tail
from agenteval.functions import suite_module_file as suite_module_file  # kept importable from here

DEFAULT_TIMEOUT = 60.0  # seconds one call may take


def call_problem(shown: str, timeout: float, outcome: tuple[Any, BaseException | None] | None) -> str | None:
    """Why a helper-thread call of user code gave no answer (timed out, raised, called sys.exit), or None."""
    if outcome is None:
        return f"{shown} took longer than its timeout of {timeout:g} s; the call was abandoned (it may still be running in the background)"
    failure = outcome[1]
    if failure is None:
        return None
    if isinstance(failure, SystemExit):
        return f"{shown} called sys.exit({failure.code!r})\n{traceback_tail(failure)}"
    return f"{shown} raised {type(failure).__name__}: {failure}\n{traceback_tail(failure)}"


class PythonFunction(EvaluatorConfig):
    """Calls a Python function in-process with the payload a code_judge receives. Default verdict: as for code_judge."""

    model_config = ConfigDict(extra="allow", strict=True)

    type: Literal["python"]
    function: str | None = Field(
        None,
        pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$",
        description=(
            "`module:function`: a module next to the suite file (module.py, or a package folder) or an "
            "installed one. Called with the code_judge payload; returns a number, a bool or a result object."
        ),
    )
    expression: str | None = Field(
        None,
        min_length=1,
        description="Instead of `function`: one Python expression, e.g. `\"'refund' in output.lower()\"`, with the names "
        "output, expected, input, metadata, case_id and config; its value is read as a function's answer.",
    )
    config: dict[str, Any] = Field(default_factory=dict, description="Passed to the function; unknown keys are merged in.")
    scale: Scale = "unit"
    timeout: float = Field(
        DEFAULT_TIMEOUT,
        gt=0,
        allow_inf_nan=False,
        description="Seconds one call may take (the first includes importing the module); past it the case errors "
        "and the run goes on. The late call is abandoned, not stopped: Python cannot kill a thread.",
    )

    type_name = "python"
    runs_programs = True  # it runs code named in its config: a cases file needs trust_cases

    _loaded: Callable[[dict[str, Any]], Any] | str | None = PrivateAttr(None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @field_validator("expression")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            _compiled(value)  # a SyntaxError is a load-time problem at the key's line, not each case's error
        return value

    @model_validator(mode="after")
    def _one_of(self) -> PythonFunction:
        if (self.function is None) == (self.expression is None):
            raise ValueError("give either `function` (module:function) or `expression`")
        return self

    @property
    def shown(self) -> str:
        """How messages name what was called: the function, or the expression."""
        return self.function if self.function is not None else f"expression {self.expression!r}"

    judge_config = CodeJudge.judge_config  # `config` with the unknown keys merged in, as a code_judge gets it
    warnings = CodeJudge.warnings  # an unknown key close to a known one is probably a typo

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        # A JSON round trip gives the function exactly a code_judge's payload, and a copy it may mutate.
        payload = orjson.loads(judge_payload(ctx, self.judge_config))
        call = _HELPERS.call(self._call, (payload, ctx.base_dir), self.timeout)
        problem = call_problem(self.shown, self.timeout, call)
        if problem is not None:
            return self.error_result(problem)
        answer = call[0]  # type: ignore[index] - call_problem said the call returned
        if isinstance(answer, _ImportFailed):
            return self.error_result(answer.message)
        return self.from_answer(answer)

    def _call(self, payload: dict[str, Any], base_dir: Path) -> Any:
        """On a helper thread: import (first time), call, await. An import failure is returned as _ImportFailed."""
        function = self._function(base_dir)
        if isinstance(function, str):
            return _ImportFailed(function)
        answer = function(payload)
        if inspect.isawaitable(answer):
            answer = asyncio.run(_awaited(answer))
        return answer

    def from_answer(self, answer: Any) -> EvaluatorResult:
        """A number or bool is the score; an object is read like a code_judge's output. What the
        function returned is read as the Python API reads values (a Decimal or a numpy number is a
        number), the same for a suite's `python` evaluator and an `agenteval.evaluator()` callable."""
        from agenteval.values import ValueNotPlain, plain_and_exact

        try:
            answer = plain_and_exact(answer, "result")[0]  # a numpy score, Decimals in a dict's details
        except (ValueNotPlain, RecursionError) as exc:
            return self.error_result(f"{self.shown} returned a value with no plain form: {exc}")
        if isinstance(answer, bool):
            answer = {"score": float(answer) if self.scale == "unit" else answer}
        elif isinstance(answer, Real):
            answer = {"score": float(answer)}
        elif not isinstance(answer, dict):
            return self.error_result(
                f"{self.shown} returned {type(answer).__name__}; expected a number, a bool or a dict with `score`"
            )
        parsed = check_judge_answer(answer, self.scale)
        if isinstance(parsed, str):
            return self.error_result(parsed.replace("judge output", f"{self.shown} result", 1))
        return judged_result(self, parsed)

    def _function(self, base_dir: Path) -> Callable[[dict[str, Any]], Any] | str:
        """The function, imported on first use; an import failure is remembered as its message."""
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None and self.expression is not None:
                self._loaded = _expression_function(self.expression)
            elif self._loaded is None:
                assert self.function is not None
                try:
                    self._loaded = import_function(self.function, base_dir)
                except FunctionImportError as exc:
                    self._loaded = str(exc)
            return self._loaded


def _compiled(expression: str) -> Any:
    try:
        return compile(expression, "<expression>", "eval")
    except SyntaxError as exc:
        raise ValueError(f"the expression is not valid Python: {exc.msg}") from None


def _expression_function(expression: str) -> Callable[[dict[str, Any]], Any]:
    """An `expression:` as a function of the payload. The names are globals, not locals, so a
    comprehension in the expression sees them too."""
    code = _compiled(expression)

    def evaluate(payload: dict[str, Any]) -> Any:
        names = {
            "__builtins__": builtins, "output": payload["candidate_answer"], "expected": payload["reference_answer"],
            "input": payload["input"], "metadata": payload["metadata"], "case_id": payload["case_id"],
            "config": payload["config"],
        }
        return eval(code, names)  # noqa: S307 - the suite's own code, or a trusted cases file's (runs_programs)

    return evaluate


async def _awaited(answer: Any) -> Any:
    return await answer


@dataclass(frozen=True, slots=True)
class _ImportFailed:
    message: str
