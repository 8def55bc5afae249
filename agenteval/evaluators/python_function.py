"""python: a judge written as a Python function, called in-process with a code_judge's payload.

No process starts per case, so it costs microseconds where a subprocess judge costs milliseconds.
The function returns a number, a bool or a judge's answer object; an exception (`sys.exit()`
included) becomes verdict `error` with the traceback's last lines. The module is looked for next
to the suite first, then among installed modules, and importing it leaves `sys.path` and
`sys.modules` as they were.

Each call (the first one imports the module) runs on a helper daemon thread, waited for at most
`timeout` seconds: a call past it is that case's error and the run goes on. Python cannot kill a
thread, so an abandoned call keeps running in the background until it returns or agenteval
exits; idle helper threads are reused, so a call costs a thread hand-over (about 20 µs).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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
DEFAULT_TIMEOUT = 60.0  # seconds one call may take

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

    judge_config = CodeJudge.judge_config  # `config` with the unknown keys merged in, as a code_judge gets it
    warnings = CodeJudge.warnings  # an unknown key close to a known one is probably a typo

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        # A JSON round trip gives the function exactly a code_judge's payload, and a copy it may mutate.
        payload = orjson.loads(judge_payload(ctx, self.judge_config))
        call = _HELPERS.call(self._call, (payload, ctx.base_dir), self.timeout)
        if call is None:
            return self.error_result(
                f"{self.function} took longer than its timeout of {self.timeout:g} s; the call was abandoned "
                "(it may still be running in the background)"
            )
        answer, failure = call
        if failure is not None:
            if isinstance(failure, SystemExit):
                return self.error_result(f"{self.function} called sys.exit({failure.code!r})\n{traceback_tail(failure)}")
            return self.error_result(f"{self.function} raised {type(failure).__name__}: {failure}\n{traceback_tail(failure)}")
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


@dataclass(frozen=True, slots=True)
class _ImportFailed:
    message: str


class _Helpers:
    """Daemon threads that make the calls, so a caller can stop waiting for one. A thread whose
    call was abandoned serves again only if that call ever returns; idle threads wait for the next
    call (there are at most as many as calls that ran at the same time, plus the abandoned ones)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], list[Any], threading.Lock]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def call(self, function: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> tuple[Any, BaseException | None] | None:
        """(answer, None) or (None, the exception it raised), or None when `timeout` seconds passed first."""
        box: list[Any] = []
        done = threading.Lock()
        done.acquire()
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._serve, name="agenteval-python-evaluator", daemon=True).start()
        self._jobs.put((function, args, box, done))
        deadline = time.monotonic() + timeout
        # Short waits, so an exception raised in this thread (a case's deadline) is not held up.
        while not done.acquire(timeout=max(0.0, min(_WAIT_SLICE, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return None
        return box[0]

    def _serve(self) -> None:
        while True:
            function, args, box, done = self._jobs.get()
            try:
                box.append((function(*args), None))
            except BaseException as exc:  # noqa: BLE001 - sys.exit() included: it is the caller's case error
                box.append((None, exc))
            finally:
                del function, args
                with self._lock:
                    self._idle += 1
                done.release()


_HELPERS = _Helpers()
_WAIT_SLICE = 0.25


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
        except BaseException as exc:  # noqa: BLE001 - the module's own code failed (or called sys.exit) while importing
            if isinstance(exc, KeyboardInterrupt):
                raise
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
        except BaseException as exc:  # noqa: BLE001 - the module's own code failed (or called sys.exit) while importing
            if isinstance(exc, KeyboardInterrupt):
                raise
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
    if isinstance(exc, SystemExit):  # e.g. a script that parses its command line (agenteval's) when imported
        return f"it called sys.exit({exc.code!r}) while being imported\n{traceback_tail(exc)}"
    return f"{type(exc).__name__}: {exc}\n{traceback_tail(exc)}"
