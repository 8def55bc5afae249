"""python: the system under test is a Python function, called in-process once per case.

`target: {type: python, function: "pkg.module:extract"}` in a suite, or `task=extract` in the
Python API. The case's `input` meets the function's parameters this way: a function of one
parameter gets the input whole; a function of several gets a mapping input as keyword arguments;
a function of none is called with nothing. From the Python API the function gets the input as the
caller gave it (a pydantic model stays one); from a suite, the input as the cases file holds it.

A sync function runs on a helper thread handed over from the case's worker thread, so a call
past `timeout` is that case's error and the run goes on (Python cannot kill a thread: the late
call is abandoned and may finish in the background). An async function runs on one event loop in
a background thread shared by every python target and Python evaluator; its calls are bounded by
`max_concurrency`, and a call past `timeout` is cancelled. A run (`Prefetch`) hands an async
target its cases ahead and scores each as its answer arrives, so an answer crosses threads once. An exception (`sys.exit()` included)
is that case's error with the exception and its last frame; the answer is converted once
(agenteval.values): an object with no plain form is the case's error naming where it is.
The wall time of each call is the answer's `usage.latency_ms`, as for `command` targets.
"""

from __future__ import annotations

import inspect
import threading
from inspect import Parameter
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from agenteval.config import StrictModel
from agenteval.run_context import RunContext, call_in, in_context
from agenteval.targets.base import Answer, TargetRun
from agenteval.usage import usage_record

DEFAULT_MAX_CONCURRENCY = 8
DEFAULT_TIMEOUT = 60.0
LOOP_GRACE_SECONDS = 1.0  # past a call's longest possible time, how long a run waits for an event loop that does not answer
_WAIT_SLICE = 0.25  # waits are short slices, so an exception raised in the waiting thread is not held up


class PythonTarget(StrictModel):
    """Calls a Python function per case (sync or async); its return value is the answer."""

    type: Literal["python"]
    function: str = Field(
        pattern=r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$",
        description=(
            "`module:function`: a module next to the suite file (module.py, or a package folder) or an installed one. "
            "One parameter: it gets the case input whole; several: a mapping input as keyword arguments."
        ),
    )
    max_concurrency: int = Field(
        DEFAULT_MAX_CONCURRENCY, ge=1, le=4096,
        description="Calls in flight at once (the run's workers default to this many).",
    )
    timeout: float = Field(
        DEFAULT_TIMEOUT, gt=0, allow_inf_nan=False,
        description="Seconds one call may take (the first includes importing the module); past it the case errors. "
        "An async call is cancelled; a sync one is abandoned (Python cannot kill a thread).",
    )

    _loaded: Callable[..., Any] | str | None = PrivateAttr(None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _slots: threading.BoundedSemaphore | None = PrivateAttr(None)
    _calling: tuple[bool, str] | None = PrivateAttr(None)  # (async?, how the input is passed)
    _originals: Mapping[str, Any] | None = PrivateAttr(None)  # case id -> agenteval.values.Originals (Python API)
    _exact: dict[tuple[str, int], Any] = PrivateAttr(default_factory=dict)  # answers holding Decimals, as the results line writes them
    _in_flight: set[Any] = PrivateAttr(default_factory=set)  # async calls on the loop (_Call)

    @classmethod
    def of(cls, function: Callable[..., Any], max_concurrency: int = DEFAULT_MAX_CONCURRENCY, timeout: float = DEFAULT_TIMEOUT) -> PythonTarget:
        """The target for a callable given in Python (`task=`): named `module:qualname` in the summary."""
        if not callable(function):
            raise TypeError(f"task must be a function (sync or async), not {type(function).__name__}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise ValueError(f"max_concurrency must be a whole number of at least 1, got {max_concurrency!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        target = cls.model_construct(type="python", function=callable_name(function), max_concurrency=max_concurrency, timeout=float(timeout))
        target._loaded = function
        return target

    def prefetching(self, cases: Iterable[Any], run: TargetRun) -> Prefetch | None:
        """For an async function: a Prefetch that calls it for the cases ahead of scoring, on the
        event loop alone (None for a sync function, or one that cannot be imported)."""
        function = self._function(run)
        if isinstance(function, str) or not self._calling[0]:  # type: ignore[index]
            return None
        return Prefetch(self, function, cases, run)

    def _input(self, case: Any) -> Any:
        """The case's input as the caller gave it (from the Python API), else as the suite holds it."""
        if self._originals is not None and case.id in self._originals:
            return self._originals[case.id].input
        return case.input

    def answer(self, case: Any, run: TargetRun) -> Answer:
        function = self._function(run)
        if isinstance(function, str):
            return Answer(error=function)
        value = self._input(case)
        started = time.perf_counter()
        call = self._call_async if self._calling[0] else self._call_sync  # type: ignore[index]
        outcome = call(function, value, run.context)
        duration_ms = (time.perf_counter() - started) * 1000
        kind, got = outcome
        if kind != "answer":  # no answer, so no latency of one (a timeout would pose as the slowest answer)
            return Answer(error=self._failure(kind, got), duration_ms=duration_ms)
        return self._answer(case, run, got, duration_ms)

    def _answer(self, case: Any, run: TargetRun, got: Any, duration_ms: float) -> Answer:
        from agenteval.values import ValueNotPlain, plain_and_exact, remember_answer

        usage = usage_record(duration_ms)
        try:
            plain, exact = plain_and_exact(got, "answer")
        except ValueNotPlain as exc:
            return Answer(error=f"{self.function} returned an answer with no plain form: {exc}", duration_ms=duration_ms, usage=usage)
        except RecursionError:
            return Answer(error=f"{self.function} returned an answer that contains itself", duration_ms=duration_ms, usage=usage)
        if exact is not None:
            self._exact[(case.id, run.repetition)] = exact
        remember_answer(case.id, plain, got)
        return Answer(plain, duration_ms=duration_ms, usage=usage)

    def _failure(self, kind: str, got: Any) -> str:
        from agenteval.functions import traceback_tail

        if kind == "timeout":
            late = "cancelled" if self._calling and self._calling[0] else "abandoned (it may still be running in the background)"
            return f"{self.function} took longer than its timeout of {self.timeout:g} s; the call was {late}"
        if kind == "cancelled":
            return f"{self.function}: the call was cancelled (the run was stopped)"
        if kind == "stuck":
            return (f"{self.function} did not finish within its timeout of {self.timeout:g} s and the event loop did not answer "
                    "(a blocking call inside an async function holds the loop)")
        if isinstance(got, SystemExit):
            return f"{self.function} called sys.exit({got.code!r})\n{traceback_tail(got)}"
        return f"{self.function} raised {type(got).__name__}: {got}\n{traceback_tail(got)}"

    def cancel_calls(self) -> None:
        """Cancel the async calls in flight (the run was stopped); sync calls cannot be stopped."""
        if self._in_flight:
            loop = background_loop()
            for call in list(self._in_flight):
                call.cancel(loop)

    # -- calling ---------------------------------------------------------------------------------

    def _function(self, run: TargetRun) -> Callable[..., Any] | str:
        """The function (imported on first use; an import failure is remembered as its message)."""
        if self._calling is not None and self._loaded is not None:
            return self._loaded
        with self._lock:
            if self._loaded is None:
                from agenteval.functions import FunctionImportError, import_function

                try:
                    self._loaded = import_function(self.function, run.base_dir)
                except FunctionImportError as exc:
                    self._loaded = f"python target: {exc}"
            if isinstance(self._loaded, str):
                return self._loaded
            if self._calling is None:
                self._calling = (is_async(self._loaded), passing(self._loaded))
                self._slots = threading.BoundedSemaphore(self.max_concurrency)
            return self._loaded

    def _arguments(self, value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        how = self._calling[1]  # type: ignore[index]
        if how == "none":
            return (), {}
        if how == "keywords" and isinstance(value, Mapping):
            return (), {str(key): item for key, item in value.items()}
        return (value,), {}  # not a mapping: the input whole, as the first argument

    def _call_sync(self, function: Callable[..., Any], value: Any, context: RunContext | None = None) -> tuple[str, Any]:
        from agenteval.functions import HELPERS as _HELPERS

        args, kwargs = self._arguments(value)
        slots = self._slots
        assert slots is not None
        while not slots.acquire(timeout=_WAIT_SLICE):
            pass
        try:
            call = _HELPERS.call(call_in, (context, _call_and_await, function, args, kwargs), self.timeout)
        finally:
            slots.release()
        if call is None:
            return "timeout", None
        answer, failure = call
        return ("error", failure) if failure is not None else ("answer", answer)

    def _call_async(self, function: Callable[..., Any], value: Any, context: RunContext | None = None) -> tuple[str, Any]:
        """On the case's thread: hand the call to the event loop and wait for it in short slices
        (so an exception raised in this thread, a stopped run, is not held up); past `timeout`,
        counted from the hand-over, the call is cancelled. A lock is the cheapest hand-back."""
        args, kwargs = self._arguments(value)
        slots = self._slots
        assert slots is not None
        while not slots.acquire(timeout=_WAIT_SLICE):
            pass
        call = _Call()
        try:
            try:
                coroutine = in_context(context, call_in(context, function, *args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - calling it raised before it started
                if isinstance(exc, KeyboardInterrupt) or type(exc).__module__.startswith("agenteval."):
                    raise
                return "error", exc
            loop = background_loop()
            self._in_flight.add(call)
            loop.call_soon_threadsafe(_start, loop, call, coroutine)
            deadline = time.monotonic() + self.timeout
            done = call.done
            try:
                while not done.acquire(timeout=max(0.0, min(_WAIT_SLICE, deadline - time.monotonic()))):
                    if time.monotonic() >= deadline:
                        call.cancel(loop)
                        return "timeout", None
            except BaseException:
                call.cancel(loop)  # this case was stopped (its deadline, the run's end): so is its call
                raise
            return call.outcome
        finally:
            slots.release()
            self._in_flight.discard(call)


class Prefetch:
    """An async python target's answers, fetched ahead of scoring: the run hands cases over as it
    reads them, at most `max_concurrency` calls run on the event loop (twice that many cases are
    handed over, so a slot never waits for the run), and `cases()` yields each case as its answer
    arrives; the runner then takes the answer with `answer(case_id)`, as from a predictions file.
    A case's answer crosses threads once (the loop to the run), not four times as through a worker
    thread per case, which is what lets an async target's run approach its ideal time."""

    def __init__(self, target: PythonTarget, function: Callable[..., Any], cases: Iterable[Any], run: TargetRun) -> None:
        import queue

        self._target = target
        self._function = function
        self._cases = iter(cases)
        self._run = run
        self._ready: queue.SimpleQueue[tuple[Any, tuple[str, Any], float]] = queue.SimpleQueue()
        self._fetched: dict[str, tuple[Any, tuple[str, Any], float]] = {}
        self._traceparents: dict[str, str] = {}  # case id -> the W3C trace context its call was given
        self._ahead = target.max_concurrency * 2
        self._timeout = target.timeout
        self._inputs = target._input  # read once: pydantic's private attributes are slow to reach
        self._arguments = target._arguments
        self._slots: Any = None  # an asyncio.Semaphore of max_concurrency, made on the loop

    def cases(self) -> Iterator[Any]:
        """The cases in the order their answers arrive (the calls are cancelled if this stops early)."""
        import queue

        loop = background_loop()
        pending: dict[_Call, tuple[Any, float]] = {}  # call -> (its case, when it was handed over)
        # A call ends within its timeout of starting, and starts within one call's time of being
        # handed over (twice max_concurrency are handed over): past that the loop is held up.
        give_up_after = 2 * self._target.timeout + LOOP_GRACE_SECONDS
        try:
            while True:
                batch = []
                while len(pending) + len(batch) < self._ahead:
                    case = next(self._cases, None)
                    if case is None:
                        break
                    batch.append((case, _Call()))
                if batch:
                    now = time.monotonic()
                    for case, call in batch:
                        pending[call] = (case, now)
                    self._target._in_flight.update(call for _, call in batch)
                    loop.call_soon_threadsafe(_start_batch, loop, self, batch)
                if not pending:
                    return
                try:
                    case, outcome, duration_ms, call = self._ready.get(timeout=_WAIT_SLICE)  # type: ignore[misc]
                except queue.Empty:
                    stuck = [(call, case) for call, (case, handed) in pending.items() if time.monotonic() - handed > give_up_after]
                    for call, case in stuck:  # the loop does not answer: these cases are given up
                        call.cancel(loop)
                        del pending[call]
                        self._target._in_flight.discard(call)
                        self._fetched[case.id] = (case, ("stuck", None), 0.0)
                        yield case
                    continue
                if pending.pop(call, None) is None:
                    continue  # given up already; its late outcome is dropped
                self._target._in_flight.discard(call)
                self._fetched[case.id] = (case, outcome, duration_ms)
                yield case
        finally:
            for call in pending:
                call.cancel(loop)
                self._target._in_flight.discard(call)

    def answer(self, case_id: str, target: str | None = None, prompt: str | None = None) -> Answer:  # one cell: the suite's own target
        """The fetched answer of a case `cases()` yielded (on the thread that scores it)."""
        from agenteval.traces.propagation import trace_id_of

        case, (kind, got), duration_ms = self._fetched.pop(case_id)
        traceparent = self._traceparents.pop(case_id, None)
        if kind != "answer":
            answer = Answer(error=self._target._failure(kind, got), duration_ms=duration_ms)
        else:
            answer = self._target._answer(case, self._run, got, duration_ms)
        if traceparent is not None:  # as the runner records it for a target it calls itself
            answer.trace_id = trace_id_of(traceparent)
        return answer

    def close(self) -> None:
        """Nothing to release: the calls end with `cases()`."""

    async def fetch(self, case: Any, call: _Call) -> None:
        """On the loop: one call within the target's slots and its timeout, handed back when done."""
        import asyncio

        if self._slots is None:
            self._slots = asyncio.Semaphore(self._target.max_concurrency)
        outcome: tuple[str, Any] = ("cancelled", None)
        started = None
        try:
            async with self._slots:
                started = time.perf_counter()
                args, kwargs = self._arguments(self._inputs(case))
                deadline = asyncio.timeout(self._timeout)
                try:
                    async with deadline:
                        context = None if self._run.context is None else self._run.context.for_case(case.id)
                        if context is not None:  # a W3C trace context per case (agenteval.traces.propagation)
                            from agenteval.traces.propagation import new_traceparent

                            context = replace(context, traceparent=new_traceparent())
                            self._traceparents[case.id] = context.traceparent
                        outcome = ("answer", await in_context(context, self._function(*args, **kwargs)))
                except TimeoutError as exc:
                    outcome = ("timeout", None) if deadline.expired() else ("error", exc)
        except asyncio.CancelledError:
            outcome = ("cancelled", None)
        except BaseException as exc:  # noqa: BLE001 - sys.exit() included: the case's error, never the loop's end
            outcome = ("error", exc)
        duration_ms = 0.0 if started is None else (time.perf_counter() - started) * 1000
        self._ready.put((case, outcome, duration_ms, call))  # type: ignore[arg-type]


def _start_batch(loop: Any, prefetch: Prefetch, batch: list[tuple[Any, _Call]]) -> None:
    """On the loop: start the calls of a batch of cases (one wake-up of the loop per batch)."""
    for case, call in batch:
        if call.cancelled:
            prefetch._ready.put((case, ("cancelled", None), 0.0, call))  # type: ignore[arg-type]
            continue
        call.task = loop.create_task(prefetch.fetch(case, call))


class _Call:
    """One async call: its task on the loop, its outcome, and the lock released when it ends."""

    __slots__ = ("done", "outcome", "task", "cancelled")

    def __init__(self) -> None:
        import _thread

        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.outcome: tuple[str, Any] = ("cancelled", None)
        self.task: Any = None
        self.cancelled = False

    def cancel(self, loop: Any) -> None:
        """Cancel the call's task (from any thread; a call not started yet never starts)."""
        self.cancelled = True
        try:
            loop.call_soon_threadsafe(self._cancel_task)
        except RuntimeError:  # the loop is closed
            pass

    def _cancel_task(self) -> None:
        if self.task is not None:
            self.task.cancel()


def _start(loop: Any, call: _Call, coroutine: Any) -> None:
    """On the loop: run the call as a task (unless it was cancelled before it started)."""
    if call.cancelled:
        coroutine.close()
        call.done.release()
        return
    call.task = loop.create_task(_guarded(call, coroutine))


async def _guarded(call: _Call, coroutine: Any) -> None:
    """On the loop: the call's answer, or the exception it raised (`sys.exit()` included: the
    case's error, never the loop's end); cancellation (a timeout, the run stopped) ends it."""
    try:
        call.outcome = ("answer", await coroutine)
    except BaseException as exc:  # noqa: BLE001
        import asyncio

        if not isinstance(exc, asyncio.CancelledError):
            call.outcome = ("error", exc)
    finally:
        call.done.release()


def _call_and_await(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """On a helper thread: a sync function that returns an awaitable has it awaited there."""
    answer = function(*args, **kwargs)
    if inspect.isawaitable(answer):
        import asyncio

        answer = asyncio.run(_awaited(answer))
    return answer


async def _awaited(answer: Any) -> Any:
    return await answer


def is_async(function: Any) -> bool:
    """An `async def` function, or an object whose `__call__` is one."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(getattr(function, "__call__", None))


def passing(function: Callable[..., Any]) -> str:
    """How a case input is passed: `whole` (one parameter), `keywords` (several), `none` (no parameter)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: give it the input
        return "whole"
    if not parameters:
        return "none"
    if len(parameters) == 1 and parameters[0].kind in (Parameter.POSITIONAL_ONLY, Parameter.POSITIONAL_OR_KEYWORD, Parameter.VAR_POSITIONAL):
        return "whole"
    return "keywords"  # several parameters (or only keywords): a mapping input fills them by name


def callable_name(function: Any) -> str:
    """`module:qualname` of a function, for the summary and messages."""
    module = getattr(function, "__module__", None) or type(function).__module__
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}:{name}"


# -- the one background event loop ---------------------------------------------------------------

_LOOP: Any = None  # an asyncio event loop
_LOOP_THREAD: threading.Thread | None = None
_LOOP_LOCK = threading.Lock()


def background_loop() -> Any:
    """The event loop async python targets and Python evaluators run on, in a daemon thread
    started on first use (and again if it ever stopped)."""
    import asyncio

    global _LOOP, _LOOP_THREAD
    loop = _LOOP
    if loop is not None and _LOOP_THREAD is not None and _LOOP_THREAD.is_alive():
        return loop
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP_THREAD is None or not _LOOP_THREAD.is_alive():
            _LOOP = asyncio.new_event_loop()
            _LOOP_THREAD = threading.Thread(target=_LOOP.run_forever, name="agenteval-event-loop", daemon=True)
            _LOOP_THREAD.start()
        return _LOOP
