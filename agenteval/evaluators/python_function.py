"""python: a judge written as a Python function, called in-process with a code_judge's payload.

No process starts per case, so it costs microseconds where a subprocess judge costs milliseconds.
The function returns a number, a bool or a judge's answer object; an exception becomes verdict
`error` with the traceback's last lines. The module is looked for next to the suite first, then
among installed modules, and importing it leaves `sys.path` and `sys.modules` as they were.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from numbers import Real
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import ConfigDict, Field, PrivateAttr

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.code_judge import (
    CodeJudge,
    check_judge_answer,
    judge_payload,
    judged_result,
)
from agenteval.evaluators.scales import Scale

TRACEBACK_LINES_KEPT = 4

# sys.path and sys.modules belong to the whole interpreter: two evaluators importing suite modules
# from two worker threads at once must not interleave their scoped changes.
_IMPORT_LOCK = threading.Lock()


class FunctionImportError(Exception):
    """The `function:` reference cannot be imported; the message says where it was looked for."""


class PythonFunction(EvaluatorConfig):
    """Calls a Python function in-process with the payload a code_judge receives. Default verdict: as for code_judge."""

    model_config = ConfigDict(extra="allow", strict=True)

    type: Literal["python"]
    function: str = Field(
        pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$",
        description=(
            "`module:function`: a module next to the suite file (module.py, or a package folder) or an "
            "installed one. Called with the code_judge payload; returns a number, a bool or a result object."
        ),
    )
    config: dict[str, Any] = Field(default_factory=dict, description="Passed to the function; unknown keys are merged in.")
    scale: Scale = "unit"

    type_name = "python"
    runs_programs = True  # it runs code named in its config: a cases file needs trust_case_commands

    _loaded: Callable[[dict[str, Any]], Any] | str | None = PrivateAttr(None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    judge_config = CodeJudge.judge_config  # `config` with the unknown keys merged in, as a code_judge gets it
    warnings = CodeJudge.warnings  # an unknown key close to a known one is probably a typo

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        function = self._function(ctx.base_dir)
        if isinstance(function, str):
            return self.error_result(function)
        # A JSON round trip gives the function exactly a code_judge's payload, and a copy it may mutate.
        payload = orjson.loads(judge_payload(ctx, self.judge_config))
        try:
            answer = function(payload)
            if inspect.isawaitable(answer):
                answer = asyncio.run(_awaited(answer))
        except Exception as exc:  # noqa: BLE001 - the user's bug is kept in the result; the run goes on
            return self.error_result(f"{self.function} raised {type(exc).__name__}: {exc}\n{traceback_tail(exc)}")
        return self.from_answer(answer)

    def from_answer(self, answer: Any) -> EvaluatorResult:
        """A number or bool is the score; an object is read like a code_judge's output."""
        if isinstance(answer, bool):
            answer = {"score": float(answer) if self.scale == "unit" else answer}
        elif isinstance(answer, Real):
            answer = {"score": float(answer)}
        elif not isinstance(answer, dict):
            return self.error_result(
                f"{self.function} returned {type(answer).__name__}; expected a number, a bool or a dict with `score`"
            )
        parsed = check_judge_answer(answer, self.scale)
        if isinstance(parsed, str):
            return self.error_result(parsed.replace("judge output", f"{self.function} result", 1))
        return judged_result(self, parsed)

    def _function(self, base_dir: Path) -> Callable[[dict[str, Any]], Any] | str:
        """The function, imported on first use; an import failure is remembered as its message."""
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                try:
                    self._loaded = import_function(self.function, base_dir)
                except FunctionImportError as exc:
                    self._loaded = str(exc)
            return self._loaded


async def _awaited(answer: Any) -> Any:
    return await answer


def traceback_tail(exc: BaseException, kept: int = TRACEBACK_LINES_KEPT) -> str:
    """The last lines of the traceback: where it was raised, the source line, and the exception."""
    lines = "".join(traceback.format_exception(exc)).rstrip().splitlines()
    return "\n".join(lines[-kept:])


def import_function(reference: str, base_dir: Path) -> Callable[[dict[str, Any]], Any]:
    """`module:attr.path` resolved to a callable: the suite's own module first, then an installed one."""
    module_name, _, attribute = reference.partition(":")
    source = suite_module_file(module_name, base_dir)
    if source is not None:
        module = _import_suite_module(module_name, source, base_dir)
    else:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                raise FunctionImportError(
                    f"cannot import {module_name!r}: no {module_name.replace('.', '/')}.py next to the suite "
                    f"(in {base_dir}) and no installed module of that name"
                ) from None
            raise FunctionImportError(f"cannot import {module_name!r}: {_failure(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - the module's own code failed while importing
            raise FunctionImportError(f"cannot import {module_name!r}: {_failure(exc)}") from None
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise FunctionImportError(f"{module_name} ({getattr(module, '__file__', None)}) has no {attribute!r}") from None
    if not callable(target):
        raise FunctionImportError(f"{reference} is a {type(target).__name__}, not a function")
    return target


def suite_module_file(module_name: str, base_dir: Path) -> Path | None:
    """`a.b` as `a/b.py` or `a/b/__init__.py` under the suite's folder, if there is one."""
    parts = module_name.split(".")
    for candidate in (base_dir.joinpath(*parts[:-1], parts[-1] + ".py"), base_dir.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def _import_suite_module(module_name: str, source: Path, base_dir: Path) -> Any:
    """Run the suite's module under a private name (never shadowing an installed module of the same
    name), with the suite folder on sys.path only while it runs, so its own sibling imports work."""
    digest = hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:12]
    private_name = f"_agenteval_suite_{digest}_{module_name.replace('.', '_')}"
    is_package = source.name == "__init__.py"
    spec = importlib.util.spec_from_file_location(
        private_name, source, submodule_search_locations=[str(source.parent)] if is_package else None
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with _suite_importable(base_dir):
        sys.modules[private_name] = module  # dataclasses and typing look the module up while it runs
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the module's own code failed while importing
            raise FunctionImportError(f"cannot import {source.name} (next to the suite): {_failure(exc)}") from None
        finally:
            sys.modules.pop(private_name, None)
    return module


@contextmanager
def _suite_importable(base_dir: Path) -> Iterator[None]:
    """sys.path with the suite folder first, for the duration; modules imported from that folder are
    then dropped from sys.modules again (the loaded module keeps its references to them)."""
    folder = str(base_dir.resolve())
    with _IMPORT_LOCK:
        saved_path = list(sys.path)
        before = set(sys.modules)
        sys.path.insert(0, folder)
        importlib.invalidate_caches()
        try:
            yield
        finally:
            sys.path[:] = saved_path
            for name in set(sys.modules) - before:
                origin = getattr(sys.modules[name], "__file__", None) or ""
                if origin.startswith(folder + "/"):
                    del sys.modules[name]


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}\n{traceback_tail(exc)}"
