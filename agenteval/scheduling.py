"""Running cases on threads that can neither hang a run nor keep it from stopping.

Two pieces, used by `agenteval.runner`:

- `Watchdog` holds each case's scoring deadline (`limits.case_seconds`). Past it, the thread
  scoring that case gets `CaseTimeout` raised in it (at its next Python instruction), so a
  runaway evaluator written in Python stops and the case becomes an error naming it.
- `CaseThreads` runs cases on daemon threads and hands results back to the caller's thread,
  which only waits (or, given `inline`, first tries each case itself: one a warm response cache
  answers at once costs less there than the hand-over to a thread). A thread that ignores
  `CaseTimeout` (stuck in a blocking call) is given up after a grace period: its case is recorded
  as timed out and a fresh thread takes its place.
  Because the threads are daemons and the caller never joins them, Ctrl-C and SIGTERM end a run
  at once whatever a case is doing; results that finished are handed over first. Each case runs
  in a copy of the caller's context as it was when the case was handed over (an application's
  OpenTelemetry span, so the case joins its trace, as on one thread).
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

GRACE_SECONDS = 2.0  # after CaseTimeout is raised in a thread, how long it has to stop before it is given up
_POLL_SECONDS = 0.2
_MOST_SKIPPED = 1024  # items run on threads between two tries in the caller's thread, at most


class CaseTimeout(BaseException):
    """Raised inside a thread whose case ran past its deadline. A BaseException, so that the
    `except Exception` around each evaluator does not swallow it."""


@dataclass(slots=True, eq=False)
class Slot:
    """One case being scored: its thread, its deadline and the evaluator it is in."""

    ident: int
    deadline: float
    evaluator: str = ""
    active: bool = True
    fired_at: float | None = None  # when CaseTimeout was raised in the thread


class Watchdog:
    """Deadlines of the cases being scored, checked by one daemon thread a few times a second."""

    def __init__(self, seconds: float, start: bool = True) -> None:
        self.seconds = seconds
        self._slots: set[Slot] = set()
        self._kept: dict[int, Slot] = {}  # thread ident -> its slot, reused case after case until it fires
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._started = False
        if start:  # now, not in the first case, so that case's time is its own
            self._start()

    def _start(self) -> None:
        """The watching thread (once). A run whose evaluators need no watching (`start=False`) starts
        it only if some case brings one that does (its own evaluators), at that case's first `begin`."""
        self._started = True
        threading.Thread(target=self._watch, name="agenteval-watchdog", daemon=True).start()

    def begin(self) -> Slot:
        """The calling thread's slot, armed with a fresh deadline. A thread keeps its slot from case
        to case (no allocation or locking per case); a slot that fired is retired by `end`."""
        ident = threading.get_ident()
        slot = self._kept.get(ident)
        if slot is None:
            slot = Slot(ident, time.monotonic() + self.seconds)
            with self._lock:
                if not self._started:
                    self._start()
                self._slots.add(slot)
                self._kept[ident] = slot
            return slot
        slot.evaluator = ""
        slot.deadline = time.monotonic() + self.seconds  # before `active`: the watcher never sees an old deadline armed
        slot.active = True
        return slot

    def end(self, slot: Slot) -> None:
        """The case is done: no CaseTimeout may reach its thread from now on (one raised but not
        yet delivered is withdrawn; one delivered while this runs is absorbed)."""
        while True:
            try:
                with self._lock:
                    slot.active = False
                    if slot.fired_at is not None:
                        self._slots.discard(slot)
                        if self._kept.get(slot.ident) is slot:
                            del self._kept[slot.ident]
                        raise_in_thread(slot.ident, None)
                return
            except CaseTimeout:
                continue

    def overdue(self, grace: float) -> list[Slot]:
        """Slots whose thread has ignored CaseTimeout for `grace` seconds."""
        now = time.monotonic()
        with self._lock:
            return [slot for slot in self._slots if slot.fired_at is not None and now - slot.fired_at > grace]

    def close(self) -> None:
        self._stopped.set()

    def _watch(self) -> None:
        while not self._stopped.wait(_POLL_SECONDS):
            now = time.monotonic()
            with self._lock:
                for slot in self._slots:
                    if slot.active and slot.fired_at is None and now > slot.deadline:
                        slot.fired_at = now
                        raise_in_thread(slot.ident, CaseTimeout)


def raise_in_thread(ident: int, exception: type[BaseException] | None) -> None:
    """Raise `exception` in thread `ident` at its next Python instruction (None withdraws one)."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(exception) if exception is not None else None
    )


class _Worker:
    def __init__(self) -> None:
        self.given_up = False
        self.lock = threading.Lock()


class CaseThreads(Generic[Item, Result]):
    """`run(item)` for each item on up to `workers` daemon threads (one started with each of the first
    items that go to a thread), at most a few items ahead; results are yielded in the caller's thread
    as they finish. `on_given_up(item)` makes the result of an item whose thread was given up (see
    `Watchdog.overdue`). `before_threads()` is called in the caller's thread once, before the first
    item goes to a thread (none may: `inline` answers all)."""

    def __init__(
        self, run: Callable[[Item], Result], workers: int, watchdog: Watchdog | None,
        on_given_up: Callable[[Item, Slot], Result], inline: Callable[[Item], Result | None] | None = None,
        before_threads: Callable[[], None] | None = None,
    ) -> None:
        self._run = run
        self._inline = inline  # the item's result if it can be had at once in the caller's thread, else None
        self._before_threads = before_threads
        self._workers = workers
        self._watchdog = watchdog
        self._on_given_up = on_given_up
        self._todo: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[tuple[Any, Any]] = queue.SimpleQueue()
        # thread ident -> its worker and item; each change is one dict operation (atomic), and giving a
        # thread up re-checks its entry under the worker's lock, which the thread's own removal also holds
        self._running: dict[int, tuple[_Worker, Item]] = {}
        self._stopping = False

    def results(self, items: Iterable[Item]) -> Iterator[Result]:
        items = iter(items)
        in_flight = started = 0
        inline, skip, backoff = self._inline, 0, 1
        try:
            while True:
                while in_flight < self._workers * 2:
                    item = next(items, _END)
                    if item is _END:
                        break
                    if inline is not None:
                        # Try the item in this thread first (a warm cache answers at once: handing it to a
                        # thread would cost more than the answer). After a miss, try again only after
                        # 1, 2, 4... up to 1,024 more items, so a cold run wastes almost nothing.
                        if skip:
                            skip -= 1
                        else:
                            result = inline(item)
                            if result is not None:
                                backoff = 1
                                yield result
                                for kind, value in self._waiting():  # what the threads finished meanwhile
                                    if kind == "error":
                                        raise value
                                    in_flight -= 1
                                    yield value
                                continue
                            skip, backoff = backoff, min(2 * backoff, _MOST_SKIPPED)
                    if self._before_threads is not None:
                        self._before_threads()
                        self._before_threads = None
                    self._todo.put((contextvars.copy_context(), item))  # (the caller's context: an application's span, say)
                    in_flight += 1
                    if started < self._workers:  # a thread per item until there are `workers`: the first case starts at once
                        self._start_worker()
                        started += 1
                if not in_flight:
                    return
                try:
                    kind, value = self._done.get(timeout=_POLL_SECONDS)
                except queue.Empty:
                    for result in self._give_up_overdue():
                        in_flight -= 1
                        yield result
                    continue
                if kind == "error":
                    raise value
                in_flight -= 1
                yield value
        except KeyboardInterrupt:
            yield from self._finished()  # hand over what is done before stopping
            raise
        finally:
            self._stop()

    def _finished(self) -> Iterator[Result]:
        return (value for kind, value in self._waiting() if kind == "result")

    def _waiting(self) -> Iterator[tuple[str, Any]]:
        """What the threads have finished, without waiting for more."""
        while True:
            try:
                yield self._done.get_nowait()
            except queue.Empty:
                return

    def _start_worker(self) -> None:
        worker = _Worker()
        threading.Thread(target=self._serve, args=(worker,), name="agenteval-case", daemon=True).start()

    def _serve(self, worker: _Worker) -> None:
        ident = threading.get_ident()
        while True:
            given = self._todo.get()
            if given is _END:
                return
            context, item = given
            self._running[ident] = (worker, item)
            try:
                outcome: tuple[str, Any] = ("result", context.run(self._run, item))  # as if run where it was handed over
            except BaseException as exc:  # noqa: BLE001 - a bug in the runner: re-raised in the caller's thread
                outcome = ("error", exc)
            with worker.lock:
                if worker.given_up:  # its case was recorded as timed out; this thread is spare now
                    return
                self._running.pop(ident, None)
                self._done.put(outcome)

    def _give_up_overdue(self) -> list[Result]:
        if self._watchdog is None:
            return []
        given_up = []
        for slot in self._watchdog.overdue(GRACE_SECONDS):
            running = self._running.get(slot.ident)
            if running is None:
                continue
            worker, item = running
            with worker.lock:
                if worker.given_up or self._running.get(slot.ident) is not running:
                    continue
                worker.given_up = True
                self._running.pop(slot.ident, None)
            self._watchdog.end(slot)
            given_up.append(self._on_given_up(item, slot))
            self._start_worker()
        return given_up

    def _stop(self) -> None:
        """Let idle threads end; busy ones are daemons and are never waited for."""
        if self._stopping:
            return
        self._stopping = True
        while True:
            try:
                self._todo.get_nowait()
            except queue.Empty:
                break
        for _ in range(self._workers + len(self._running)):
            self._todo.put(_END)


_END: Any = object()
