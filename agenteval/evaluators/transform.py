"""`transform:` the answer before an evaluator sees it: a jinja2 expression over the answer
(`output.choices[0].message.content | trim`), or `python: module:function` called with it.

Set on one evaluator, or on the suite for every evaluator without its own; the result file keeps
the answer as it came. A transform that fails is the evaluator's `error`, naming the transform.
Expressions run in jinja2's sandbox (data from a cases file may use them); a `python:` transform
runs code, so in a cases file it needs `trust_cases`, and it runs on a helper thread with a
timeout like a `python` evaluator.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from pydantic import Field

from agenteval.config import StrictModel

TIMEOUT = 60.0  # seconds a `python:` transform may take


class PythonTransform(StrictModel):
    """A Python function that takes the answer and returns the answer evaluators see."""

    python: str = Field(
        pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$",
        description="`module:function` (a module next to the suite file, or an installed one), called with the answer.",
    )
    timeout: float = Field(TIMEOUT, gt=0, allow_inf_nan=False, description="Seconds one call may take; past it the evaluator errors.")


Transform = str | PythonTransform
TRANSFORM_DESCRIPTION = (
    "Change the answer before this evaluator sees it: a jinja2 expression over `output` (also `expected`, `input`, "
    "`metadata`, `case_id`), e.g. `output.content | trim`, or `{python: module:function}` called with the answer."
)


class TransformFailed(Exception):
    """The transform could not give a value: the message says which transform and why."""


def check_expression(expression: str) -> str:
    """A load-time check: the expression compiles, and any constant arithmetic in it stays within the
    bounds of agenteval.endpoints.sandbox (a ValueError names the problem)."""
    from jinja2.exceptions import TemplateSyntaxError

    from agenteval.endpoints.sandbox import TooLarge, refuse_huge_constants

    try:
        refuse_huge_constants(expression, expression=True)
        _compiled(expression)
    except TemplateSyntaxError as exc:
        raise ValueError(f"the transform is not a valid jinja2 expression: {exc.message}") from None
    except TooLarge as exc:
        raise ValueError(f"the transform builds too large a value: {exc}") from None
    except RecursionError:
        raise ValueError("the transform is nested too deeply") from None
    return expression


@functools.lru_cache(maxsize=256)
def _compiled(expression: str) -> Any:
    from agenteval.endpoints.sandbox import bounded_sandbox

    return bounded_sandbox().compile_expression(expression, undefined_to_none=False)


_imported: dict[tuple[str, Path], Any] = {}
_import_lock = threading.Lock()


def apply(transform: Transform, output: Any, expected: Any, input: Any, metadata: Any, case_id: str, base_dir: Path) -> Any:
    """The transformed answer; raises TransformFailed."""
    if isinstance(transform, str):
        try:
            value = _compiled(transform)(output=output, expected=expected, input=input, metadata=metadata, case_id=case_id)
        except Exception as exc:  # noqa: BLE001 - a template error, an undefined name, a sandbox refusal
            raise TransformFailed(f"transform {transform!r} failed: {type(exc).__name__}: {exc}") from None
        from jinja2 import Undefined

        return None if isinstance(value, Undefined) else value
    from agenteval.functions import HELPERS, FunctionImportError, import_function, traceback_tail

    key = (transform.python, base_dir)
    function = _imported.get(key)
    if function is None:
        with _import_lock:
            try:
                function = _imported[key] = _imported.get(key) or import_function(transform.python, base_dir)
            except FunctionImportError as exc:
                raise TransformFailed(f"transform {transform.python}: {exc}") from None
    call = HELPERS.call(function, (output,), transform.timeout)
    if call is None:
        raise TransformFailed(f"transform {transform.python} took longer than its timeout of {transform.timeout:g} s; the call was abandoned")
    value, failure = call
    if failure is not None:
        raise TransformFailed(f"transform {transform.python} raised {type(failure).__name__}: {failure}\n{traceback_tail(failure)}")
    return value
