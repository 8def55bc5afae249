"""Sampled evaluation of a live function's calls: `agenteval.monitor(evaluators, sample=0.1, store=URL)`.

    @agenteval.monitor([valid_invoice, {"type": "json_schema", "schema": {...}}], sample=0.1,
                       store="sqlite:///monitoring.db", name="extractor")
    async def extract(document: str) -> InvoiceSchema: ...

The wrapped function behaves as before (same value, same exceptions, sync or async). After a
call returns, a `sample` share of calls hand their arguments and answer to a bounded queue; one
background thread converts them (agenteval.values), scores them with the evaluators and saves
each as a case of a run in the store, which `agenteval history` and the reports read like any
run: one run per process (per monitor), or one per `period` seconds. Without `expected=`
nothing is known about the right answer, so the evaluators should be reference-free (formats,
schemas, rules, judges, Python checks of the answer); `expected=` is a function of the call's
arguments that returns the reference (a lookup in a golden table, say).

The caller never waits for anything but the hand-over, and nothing here raises into it: when the
queue is full the call is dropped and counted; a store that cannot be opened or written, an
evaluator that fails or hangs (held to its own timeout and `limits.case_seconds`), an answer that
cannot be converted: each is counted in `stats` (and an evaluator's failure is its case's
`error`, saved like any other). The CLI never imports this module.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agenteval.version import __version__

if TYPE_CHECKING:
    from agenteval.results import CaseResult
    from agenteval.stores.base import Store

__all__ = ["Monitor", "monitor"]

Function = TypeVar("Function", bound=Callable[..., Any])
DEFAULT_QUEUE_SIZE = 1000
RETRY_STORE_SECONDS = 30.0  # after a store fails, how long results go unsaved before it is opened again
CLOSE_SECONDS = 5.0  # at interpreter exit, how long queued calls may take to be scored and saved
_IDLE_POLL_SECONDS = 0.5
_STOP: Any = object()


def monitor(
    evaluators: Iterable[Any],
    *,
    sample: float = 0.1,
    store: str | Store | None = None,
    name: str | None = None,
    expected: Callable[..., Any] | None = None,
    period: float | None = None,
    queue_size: int = DEFAULT_QUEUE_SIZE,
    seed: int | None = None,
    base_dir: str | Path | None = None,
    otel: bool = False,
) -> Callable[[Function], Function]:
    """A decorator: the function's calls, a `sample` share of them (0 to 1), evaluated in the
    background with `evaluators` (YAML mappings, typed configs or Python callables, as for
    `agenteval.evaluate`) and saved to `store` (a URL such as `sqlite:///monitoring.db`, or a
    Store; None keeps only the figures). `name` names the runs (default: the function's name);
    `period` starts a new run every so many seconds (default: one run per process). The wrapped
    function has a `.monitor` attribute (a `Monitor`: `stats`, `flush()`, `close()`). `otel=True`
    exports each evaluated call as `--otel` does a case (agenteval.tracing): its span, inside the
    application's span of the call when there was one, holds a `gen_ai.evaluation.result` per verdict.

    Raises SuiteInvalid (an invalid evaluator) or ValueError (a bad option) when it is applied,
    never when the function is called."""

    def wrap(function: Function) -> Function:
        watcher = Monitor(
            evaluators, sample=sample, store=store, name=name or getattr(function, "__name__", "monitor"),
            expected=expected, period=period, queue_size=queue_size, seed=seed, base_dir=base_dir, function=function, otel=otel,
        )
        return watcher.wrap(function)

    return wrap


class Monitor:
    """The queue, the background worker and the counters behind `monitor`. Thread-safe."""

    def __init__(
        self,
        evaluators: Iterable[Any],
        *,
        sample: float = 0.1,
        store: str | Store | None = None,
        name: str = "monitor",
        expected: Callable[..., Any] | None = None,
        period: float | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        seed: int | None = None,
        base_dir: str | Path | None = None,
        function: Callable[..., Any] | None = None,
        otel: bool = False,
    ) -> None:
        from agenteval.api import _python_values
        from agenteval.stores.base import Store
        from agenteval.suite.loader import load_suite_data

        if isinstance(sample, bool) or not isinstance(sample, (int, float)) or not 0 <= sample <= 1:
            raise ValueError(f"sample is the share of calls evaluated, from 0 to 1; got {sample!r}")
        if isinstance(queue_size, bool) or not isinstance(queue_size, int) or queue_size < 1:
            raise ValueError(f"queue_size must be a whole number of at least 1, got {queue_size!r}")
        if period is not None and (isinstance(period, bool) or not isinstance(period, (int, float)) or not 0 < period < float("inf")):
            raise ValueError(f"period is a number of seconds above 0 (or None: one run per process), got {period!r}")
        if store is not None and not isinstance(store, Store) and not (isinstance(store, str) and "://" in store):
            raise ValueError(f"store is a URL such as sqlite:///monitoring.db, or a Store; got {store!r}")
        if isinstance(store, Store):
            from agenteval.stores.base import checked_store

            checked_store(store)  # StoreError: one without a `url`, now rather than at its first save
        if expected is not None and not callable(expected):
            raise ValueError("expected is a function of the call's arguments that returns the reference answer")
        if otel:  # the `otel` extra, checked when applied (ValueError, as for any bad option)
            from agenteval.api import _check_tracing
            from agenteval.runs import RunError

            try:
                _check_tracing()
            except RunError as exc:
                raise ValueError(str(exc)) from None
        self.otel = otel
        data, _, _ = _python_values({"name": name, "evaluators": list(evaluators), "cases": [{"id": "call", "expected": None}]})
        self._loaded = load_suite_data(data, Path(base_dir or Path.cwd()).resolve())
        self.name = name
        self.sample = float(sample)
        self.period = period
        self._store_spec = store
        self._expected = expected
        self._parameters = _parameters(function)
        self._random = random.Random(seed)
        self._queue: queue.Queue[Any] = queue.Queue(queue_size)
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(
            ("calls", "sampled", "dropped", "evaluated", "passed", "failed", "errored", "unsaved", "store_failures", "runs"), 0
        )
        self._last_problem: str | None = None
        self._originals: dict[str, Any] = {}
        for evaluator in self._loaded.suite.evaluators:
            if evaluator.type == "callable":
                evaluator._originals = self._originals  # type: ignore[attr-defined]
        self._worker: threading.Thread | None = None
        self._tracer: Any = None
        self._closed = False
        atexit.register(self._at_exit)

    # -- the caller's side: never raises, never waits ----------------------------------------------

    def wrap(self, function: Function) -> Function:
        """`function` with its calls sampled into this monitor (sync or async, as it is)."""
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def watched_async(*args: Any, **kwargs: Any) -> Any:
                answer = await function(*args, **kwargs)
                self.record(args, kwargs, answer)
                return answer

            watched_async.monitor = self  # type: ignore[attr-defined]
            return watched_async  # type: ignore[return-value]

        @functools.wraps(function)
        def watched(*args: Any, **kwargs: Any) -> Any:
            answer = function(*args, **kwargs)
            self.record(args, kwargs, answer)
            return answer

        watched.monitor = self  # type: ignore[attr-defined]
        return watched  # type: ignore[return-value]

    __call__ = wrap

    def record(self, args: tuple[Any, ...], kwargs: dict[str, Any], answer: Any) -> None:
        """Offer one call (its arguments and answer) for evaluation: sampled, then queued without
        waiting; dropped and counted when the queue is full. Never raises."""
        try:
            with self._lock:
                self._counts["calls"] += 1
                if self._closed or self._random.random() >= self.sample:
                    return
                self._counts["sampled"] += 1
            try:
                self._queue.put_nowait((args, kwargs, answer, _caller_span() if self.otel else None))
            except queue.Full:
                with self._lock:
                    self._counts["dropped"] += 1
                return
            if self._worker is None:
                self._start()
        except Exception:  # noqa: BLE001 - the application's call must never fail because of monitoring
            pass

    @property
    def stats(self) -> dict[str, Any]:
        """The counters: calls seen, sampled, dropped (queue full), evaluated (and their verdicts),
        unsaved (the store was down), store_failures, runs opened; and the last problem met."""
        with self._lock:
            return {**self._counts, "queued": self._queue.qsize(), "last_problem": self._last_problem}

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued call is evaluated and saved; False when `timeout` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self, timeout: float | None = CLOSE_SECONDS) -> bool:
        """Stop sampling, score what is queued (within `timeout`), close the run and the store.
        False when the worker did not finish in time (its run is then left open)."""
        with self._lock:
            if self._closed:
                return True
            self._closed = True
        worker = self._worker
        if worker is None:
            return True
        self._queue.put(_STOP)
        worker.join(timeout)
        return not worker.is_alive()

    def _at_exit(self) -> None:
        try:
            self.close(CLOSE_SECONDS)
        except Exception:  # noqa: BLE001 - at exit, nothing to report to
            pass

    def _start(self) -> None:
        with self._lock:
            if self._worker is not None:
                return
            self._worker = threading.Thread(target=self._serve, name=f"agenteval-monitor-{self.name}", daemon=True)
            self._worker.start()

    # -- the worker's side ---------------------------------------------------------------------------

    def _serve(self) -> None:
        from agenteval.process import Processes
        from agenteval.runner import Runner

        self._run = _Run(self)
        self._tracer = self._open_tracer()
        runner = Runner(self._loaded, "monitor", Processes(self._loaded.env_values))
        try:
            for result in runner.run(self._cases(), workers=1):
                self._finish(result)
        except Exception as exc:  # noqa: BLE001 - a bug here must not end the application
            self._problem(f"the monitor stopped: {type(exc).__name__}: {exc}")
        finally:
            self._run.close()
            if self._tracer is not None:
                warning = self._tracer.close()
                if warning:
                    self._problem(warning)

    def _open_tracer(self) -> Any:
        """otel=True: the run tracer (agenteval.tracing), or None (a collector that does not answer is the last problem)."""
        if not self.otel:
            return None
        from agenteval.tracing import CollectorUnreachable, run_tracer

        try:
            return run_tracer()
        except CollectorUnreachable as exc:
            self._problem(str(exc))
            return None

    def _cases(self) -> Iterator[Any]:
        """The queued calls as cases, until close(); an idle worker still starts each period's run."""
        while True:
            try:
                item = self._queue.get(timeout=_IDLE_POLL_SECONDS)
            except queue.Empty:
                self._run.rotate()
                continue
            if item is _STOP:
                self._queue.task_done()
                return
            self._run.rotate()
            *call, caller = item
            case = self._case(*call)
            if case is not None:  # else it was saved as an errored case already
                token = _enter(caller)  # the runner scores the case in this thread: its span joins the call's trace
                try:
                    yield case
                finally:
                    _leave(token)

    def _case(self, args: tuple[Any, ...], kwargs: dict[str, Any], answer: Any) -> Any:
        """The call as a case (its plain values; the originals kept for Python evaluators), or None
        when it cannot be one (counted, and saved as an errored case)."""
        from agenteval.suite.models import Case
        from agenteval.values import Originals, ValueNotPlain, plain_and_exact

        case_id = self._run.next_id()
        given = self._input(args, kwargs)
        try:
            reference = None if self._expected is None else self._expected(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the caller's lookup failed: this call's error
            self._errored(case_id, given, f"expected= raised {type(exc).__name__}: {exc}")
            return None
        try:
            values = {key: plain_and_exact(value, key)[0] for key, value in (("input", given), ("expected", reference), ("output", answer))}
        except (ValueNotPlain, RecursionError) as exc:
            self._errored(case_id, None, f"the call's values have no plain form: {exc}")
            return None
        self._originals[case_id] = Originals(given, reference, answer, {})
        return Case.model_validate({"id": case_id, **values})

    def _input(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call's arguments as a case input: the one argument whole, else a mapping by name."""
        if self._parameters is not None:
            try:
                bound = self._parameters.bind(*args, **kwargs)
                if len(bound.arguments) == 1 and not kwargs:
                    return next(iter(bound.arguments.values()))
                return dict(bound.arguments)
            except TypeError:
                pass
        if len(args) == 1 and not kwargs:
            return args[0]
        return {"args": list(args), **({"kwargs": kwargs} if kwargs else {})}

    def _errored(self, case_id: str, given: Any, message: str) -> None:
        from agenteval.results import CaseResult

        self._problem(message)
        self._finish(CaseResult(self._run.run_id, self.name, case_id, 0.0, "error", None, [], message, input=given))

    def _finish(self, result: CaseResult) -> None:
        """Count and save one evaluated call (the queue's item is then done)."""
        self._originals.pop(result.case_id, None)
        with self._lock:
            self._counts["evaluated"] += 1
            self._counts[{"pass": "passed", "fail": "failed"}.get(result.verdict, "errored")] += 1
        try:
            self._run.save(result)
            if self._tracer is not None:
                self._tracer.case(result)
        except Exception as exc:  # noqa: BLE001 - an exporter's bug must not stop the monitor
            self._problem(f"--otel: {type(exc).__name__}: {exc}")
        finally:
            self._queue.task_done()

    def _problem(self, message: str, counter: str | None = None) -> None:
        with self._lock:
            self._last_problem = message
            if counter is not None:
                self._counts[counter] += 1


class _Run:
    """The run results go to now: opened in the store on first use, rotated each period, closed
    with its summary. A store that fails is counted and tried again after RETRY_STORE_SECONDS."""

    def __init__(self, owner: Monitor) -> None:
        from agenteval.results import Summary

        self._owner = owner
        self._store: Store | None = None
        self._retry_at = 0.0
        self.run_id = ""
        self._summary = Summary()
        self._started = time.monotonic()
        self._started_at = datetime.now(timezone.utc)
        self._count = 0
        self._open_new()

    def next_id(self) -> str:
        self._count += 1
        return f"call-{self._count}"

    def rotate(self) -> None:
        period = self._owner.period
        if period is not None and time.monotonic() - self._started >= period:
            self.close()
            self._open_new()

    def _open_new(self) -> None:
        from agenteval.results import Summary

        stamp = datetime.now(timezone.utc)
        self.run_id = f"{stamp:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
        self._summary = Summary()
        self._started = time.monotonic()
        self._started_at = stamp
        self._opened = False

    def _ensure_open(self) -> Store | None:
        """The store with this run opened in it, or None (no store, or it is down)."""
        spec = self._owner._store_spec
        if spec is None:
            return None
        if self._store is None:
            if time.monotonic() < self._retry_at:
                return None
            try:
                from agenteval.stores import open_store

                self._store = spec if not isinstance(spec, str) else open_store(spec, Path.cwd())
            except Exception as exc:  # noqa: BLE001 - StoreError, a driver's own error: counted, retried later
                self._down(f"cannot open the store: {exc}")
                return None
        if not self._opened:
            from agenteval.api import redact
            from agenteval.stores import RunStart

            config = redact(self._owner._loaded.suite.model_dump(mode="json", exclude={"cases"}))
            config["monitor"] = {"sample": self._owner.sample, "period": self._owner.period}
            try:
                self._store.open_run(RunStart(self.run_id, self._owner.name, self._started_at, __version__, config))
            except Exception as exc:  # noqa: BLE001
                self._down(f"cannot start a run in the store: {exc}")
                return None
            self._opened = True
            with self._owner._lock:
                self._owner._counts["runs"] += 1
        return self._store

    def _down(self, message: str) -> None:
        self._owner._problem(message, "store_failures")
        store, self._store = self._store, None
        self._retry_at = time.monotonic() + RETRY_STORE_SECONDS
        if store is not None and isinstance(self._owner._store_spec, str):
            try:
                store.close()
            except Exception:  # noqa: BLE001
                pass

    def save(self, result: CaseResult) -> None:
        result.run_id = self.run_id
        self._summary.add(result)
        store = self._ensure_open()
        if store is None:
            if self._owner._store_spec is not None:
                with self._owner._lock:
                    self._owner._counts["unsaved"] += 1
            return
        try:
            store.save(result)
        except Exception as exc:  # noqa: BLE001 - ResultsWriteError, a lost connection
            with self._owner._lock:
                self._owner._counts["unsaved"] += 1
            self._down(f"cannot save a result: {exc}")
            self._opened = False

    def close(self) -> None:
        """Record the run's end and summary (when it has cases), then release the store."""
        if self._summary.total and self._ensure_open() is not None:
            report = {
                "run_id": self.run_id,
                "suite": self._owner.name,
                "agenteval_version": __version__,
                "started_at": self._started_at.isoformat(timespec="seconds"),
                "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "duration_s": time.monotonic() - self._started,
                "interrupted": False,
                "monitor": {key: value for key, value in self._owner.stats.items() if key != "last_problem"},
                **self._summary.to_dict(),
            }
            try:
                self._store.close_run(self.run_id, report)  # type: ignore[union-attr]
            except Exception as exc:  # noqa: BLE001
                self._down(f"cannot close the run in the store: {exc}")
        if self._store is not None and isinstance(self._owner._store_spec, str):
            try:
                self._store.close()
            except Exception:  # noqa: BLE001
                pass
            self._store = None
        self._opened = False


def _caller_span() -> Any:
    """The span the application's call ran in (otel=True), for the evaluation's span to join."""
    from opentelemetry import trace

    found = trace.get_current_span().get_span_context()
    return found if found.is_valid else None


def _enter(caller: Any) -> Any:
    if caller is None:
        return None
    from opentelemetry import context, trace

    return context.attach(trace.set_span_in_context(trace.NonRecordingSpan(caller)))


def _leave(token: Any) -> None:
    if token is not None:
        from opentelemetry import context

        context.detach(token)


def _parameters(function: Callable[..., Any] | None) -> inspect.Signature | None:
    if function is None:
        return None
    try:
        return inspect.signature(function)
    except (TypeError, ValueError):
        return None

