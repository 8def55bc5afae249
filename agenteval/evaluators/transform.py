"""`transform:` the answer before an evaluator sees it: a jinja2 expression over the answer
(`output.choices[0].message.content | trim`), `python: module:function` called with it, or
`javascript: CODE` (promptfoo's `options.transform`, run as written in the embedded engine).

Set on one evaluator, or on the suite for every evaluator without its own; the result file keeps
the answer as it came. A transform that fails is the evaluator's `error`, naming the transform.
Expressions run in jinja2's sandbox (data from a cases file may use them); a `python:` transform
runs code, so in a cases file it needs `trust_cases`, and it runs on a helper thread with a
timeout like a `python` evaluator. A `javascript:` transform runs in QuickJS (no file, network or
process access, bounded in CPU time and memory); in a cases file it needs `trust_cases` too, as a
`javascript` evaluator does.
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


class JavaScriptTransform(StrictModel):
    """promptfoo's `transform`: JavaScript over `output` and `context`, whose value is the answer evaluators see."""

    javascript: str = Field(
        min_length=1,
        description="An expression or a function body over `output` and `context` (`context.vars`: the case input), as "
        "promptfoo's `options.transform`; runs in the embedded QuickJS engine (the `javascript` extra).",
    )
    path: str = Field("", description="Where `output` is in the answer (e.g. `content` for a model target's text); empty: the whole answer.")
    timeout: float = Field(5.0, gt=0, le=600, allow_inf_nan=False, description="Seconds of CPU one call may take.")


Transform = str | PythonTransform | JavaScriptTransform
TRANSFORM_DESCRIPTION = (
    "Change the answer before this evaluator sees it: a jinja2 expression over `output` (also `expected`, `input`, "
    "`metadata`, `case_id`), e.g. `output.content | trim`, `{python: module:function}` called with the answer, or "
    "`{javascript: CODE}` (promptfoo's transform)."
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
    if isinstance(transform, JavaScriptTransform):
        return _javascript(transform, output, input, metadata, case_id)
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


def _javascript(transform: JavaScriptTransform, output: Any, input: Any, metadata: Any, case_id: str) -> Any:
    """promptfoo's call: `transform(output, context)`, with the output at `path` (the answer's text)."""
    from agenteval.evaluators.js_source import JavaScriptFailed, call_function
    from agenteval.paths import MISSING, compile_path, resolve

    value = output
    if transform.path:
        keys = compile_path(transform.path)
        value = MISSING if keys is None else resolve(output, keys)
        value = None if value is MISSING else value
    variables = input if isinstance(input, dict) else {}
    context = {"vars": variables, "prompt": input if isinstance(input, str) else None,
               "test": {"vars": variables, "description": case_id, "metadata": metadata}}
    try:
        return call_function(transform.javascript, ("output", "context"), [value, context], transform.timeout)
    except JavaScriptFailed as exc:
        raise TransformFailed(f"transform (javascript) {exc}") from None
