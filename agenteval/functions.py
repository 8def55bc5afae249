"""A user's Python function: imported by `module:attr` reference (the suite's own module first,
then an installed one), and called on helper daemon threads that a caller can stop waiting for.

Shared by the `python` and callable evaluators and by python targets, so it sits below all of
them (targets are below evaluators). Importing a suite's module leaves `sys.path` and
`sys.modules` as they were. Python cannot kill a thread, so an abandoned call keeps running in the
background until it returns or agenteval exits; idle helper threads are reused, so a call costs a
thread hand-over (about 20 µs).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import queue
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["HELPERS", "TRACEBACK_LINES_KEPT", "FunctionImportError", "import_function", "suite_module_file", "traceback_tail"]

TRACEBACK_LINES_KEPT = 4

# sys.path and sys.modules belong to the whole interpreter: two evaluators importing suite modules
# from two worker threads at once must not interleave their scoped changes.
_IMPORT_LOCK = threading.Lock()


class FunctionImportError(Exception):
    """The `function:` reference cannot be imported; the message says where it was looked for."""


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


HELPERS = _Helpers()  # one pool for every caller: python evaluators, callables, python targets
_WAIT_SLICE = 0.25


def traceback_tail(exc: BaseException, kept: int = TRACEBACK_LINES_KEPT) -> str:
    """The last lines of the traceback: where it was raised, the source line, and the exception
    (without the `~~^^^^` lines that point into the source line: they read as noise in a message)."""
    lines = [line for line in "".join(traceback.format_exception(exc)).rstrip().splitlines() if not _CARETS.fullmatch(line)]
    frames = [index for index, line in enumerate(lines) if line.startswith("  File ")]
    return "\n".join(lines[frames[-1] if frames else 0:][-kept:])


_CARETS = re.compile(r"\s*[~^]+\s*")


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
