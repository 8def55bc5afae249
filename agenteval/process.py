"""Run the user's commands (targets, judges) as real processes, without a shell.

Every process of a run is started in its own process group, so a timeout or Ctrl-C stops it
and anything it spawned. `Processes` tracks the live ones so an interrupted run leaves none.
All pipe I/O goes through `ChildPipes`: non-blocking and bounded, in time (one deadline covers
writing the input and reading the answer) and in memory (stdout is capped, stderr keeps a tail).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

TAIL_CHARS = 2000
MIB = 1 << 20
DEFAULT_MAX_OUTPUT_MB = 16.0
MAX_ANSWER_DEPTH = 200
"""Deepest JSON nesting taken from a target or judge: the results writer nests it further."""
PIPE_GRACE_S = 0.5
"""How long pipes may still deliver once the process has exited or been killed: a leftover
child holding them open must not hold the case."""

_STDERR_KEPT = 16 * 1024
_CHUNK = 1 << 16
_EXIT_POLL_S = 0.05


@dataclass(slots=True)
class ProcessResult:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    start_error: str | None = None
    duration_ms: float = 0.0
    output_limit: int | None = None
    """Set (to the cap, in bytes) when stdout went beyond it and the process was stopped."""

    def failure(self, what: str, timeout: float) -> str | None:
        """A one-line description of what went wrong, with the stderr tail; None if it went well."""
        if self.start_error:
            return f"{what} could not start: {self.start_error}"
        if self.output_limit is not None:
            return f"{what} {output_too_large(self.output_limit)}" + stderr_tail(self.stderr)
        if self.timed_out:
            return f"{what} timed out after {timeout:g}s" + stderr_tail(self.stderr)
        if self.returncode:
            return f"{what} exited with code {self.returncode}" + stderr_tail(self.stderr)
        return None


def output_too_large(limit: int) -> str:
    return f"output larger than {limit / MIB:g} MiB"


def max_output_bytes(megabytes: float) -> int:
    return max(1, int(megabytes * MIB))


def stderr_tail(stderr: bytes | bytearray, label: str = "stderr") -> str:
    text = bytes(stderr[-4 * TAIL_CHARS :]).decode("utf-8", "replace").strip()
    if not text:
        return ""
    if len(text) > TAIL_CHARS:
        text = "..." + text[-TAIL_CHARS:]
    return f"; {label}: {text}"


class JSONTooDeep(ValueError):
    """Valid-looking JSON nested deeper than we can take (or than Python can parse)."""


def decode_json(data: bytes | bytearray, max_depth: int | None = None) -> Any:
    """Parse JSON, also accepting the NaN/Infinity that Python's json.dumps writes. Raises ValueError
    (JSONTooDeep for nesting beyond `max_depth`, or too deep to parse at all)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            value = json.loads(data, parse_int=_int_as_orjson_reads_it)
        except RecursionError:
            raise JSONTooDeep("JSON nested too deeply to parse") from None
    if max_depth is not None and _nesting_exceeds(value, data, max_depth):
        raise JSONTooDeep(f"JSON nested deeper than {max_depth} levels")
    return value


def _int_as_orjson_reads_it(text: str) -> int | float:
    """An integer beyond 64 bits becomes a float, as orjson reads it (and as it can write it back).
    Beyond the float range it stays an exact int: reading never fails on a number (an answer holding
    one is refused where answers enter, agenteval.answers); past Python's 4,300 digits it is a ValueError."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits is too long to read") from None
    if -(1 << 63) <= value < (1 << 64):
        return value
    try:
        return float(value)
    except OverflowError:
        return value


def _nesting_exceeds(value: Any, data: bytes | bytearray, limit: int) -> bool:
    # Counting brackets is C-speed and settles almost every answer without walking it.
    if type(value) not in (dict, list) or data.count(b"[") + data.count(b"{") <= limit:
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        for child in node.values() if type(node) is dict else node:
            if type(child) is dict or type(child) is list:
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False


def resolve_command(command: list[str]) -> list[str]:
    """`python`/`python3` and bare `.py` scripts run with the interpreter running agenteval."""
    argv = list(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    elif argv and argv[0].endswith(".py"):
        argv.insert(0, sys.executable)
    return argv


class _Held:
    """An interrupt held back while the main thread starts a child process (see `Processes.start`)."""

    starting = 0
    pending = False


_held = _Held()


def interrupt(signum: int, frame: Any) -> None:
    """The run's handler for SIGINT and SIGTERM: KeyboardInterrupt, at once, or, while the main thread
    is starting a child process, as soon as the child is tracked (signal handlers run in the main thread)."""
    if _held.starting:
        _held.pending = True
        return
    raise KeyboardInterrupt


class Processes:
    """The processes one run has started; `stop_all` ends every one still alive. `env` is what the
    run adds to this process's environment (a suite's `env_file:`): its programs inherit both."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.environ: Mapping[str, str] = ChainMap(dict(env), os.environ) if env else os.environ  # what `${NAME}` reads
        self._live: set[subprocess.Popen[bytes]] = set()
        self._shared: dict[str, Any] = {}  # run-wide resources with a `close()` (the MCP sessions)
        self._lock = threading.Lock()
        self._stopped = False

    def shared(self, key: str, make: Callable[[], Any]) -> Any:
        """A run-wide resource made on first use (e.g. the MCP sessions); `stop_all` closes it."""
        with self._lock:
            if self._stopped:
                raise InterruptedError("the run is stopping")
            found = self._shared.get(key)
            if found is None:
                found = self._shared[key] = make()
            return found

    def start(self, argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start with three pipes, in a new session. The child inherits the run's environment plus `env`.
        An interrupt (`interrupt`) arriving while the child is being started waits until it is tracked,
        so `stop_all` finds it: raised inside Popen after the fork, it would leave the child running."""
        main = threading.current_thread() is threading.main_thread()
        if main:
            _held.starting += 1
        try:
            with self._lock:
                if self._stopped:
                    raise InterruptedError("the run is stopping")
                proc = subprocess.Popen(
                    argv, cwd=cwd, start_new_session=True,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    env={**self.environ, **env} if env or self.environ is not os.environ else None,
                )
                self._live.add(proc)
        finally:
            if main:
                _held.starting -= 1
                if _held.pending and not _held.starting:
                    _held.pending = False
                    raise KeyboardInterrupt
        return proc

    def forget(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._live.discard(proc)

    def run(
        self, argv: list[str], stdin: bytes, timeout: float, cwd: Path, env: dict[str, str] | None = None,
        max_output: int = max_output_bytes(DEFAULT_MAX_OUTPUT_MB),
    ) -> ProcessResult:
        """One exchange: `stdin` in, stdout and stderr out, all within `timeout` seconds.

        The answer counts once the process itself has exited; what it left running in its group
        is killed. An interrupted run (Ctrl-C, SIGTERM) kills the group before unwinding.
        """
        started = time.perf_counter()
        try:
            proc = self.start(argv, cwd, env)
        except (OSError, ValueError, InterruptedError) as exc:
            return ProcessResult(None, b"", b"", start_error=f"{argv[0]}: {exc}")
        pipes = ChildPipes(proc, max_output)
        try:
            in_time = _exchange(pipes, stdin, time.monotonic() + timeout)
        except BaseException:
            kill_group(proc)
            raise
        finally:
            pipes.close()
            reap(proc)
            self.forget(proc)
        elapsed = (time.perf_counter() - started) * 1000
        if pipes.overflowed:  # the output is not an answer: keep no copy of it
            return ProcessResult(proc.returncode, b"", bytes(pipes.stderr), duration_ms=elapsed, output_limit=max_output)
        return ProcessResult(proc.returncode, bytes(pipes.stdout), bytes(pipes.stderr), not in_time, duration_ms=elapsed)

    def stop_all(self) -> None:
        with self._lock:
            self._stopped = True
            shared, self._shared = list(self._shared.values()), {}
        for resource in shared:
            resource.close()
        with self._lock:
            live = list(self._live)
        for proc in live:
            kill_group(proc)


def _exchange(pipes: ChildPipes, stdin: bytes, deadline: float) -> bool:
    """Feed stdin and collect the output until the process exits; False if the deadline came first."""
    pipes.send(stdin, then_close=True)
    in_time = pipes.pump(lambda: pipes.exited or pipes.overflowed, deadline)
    if in_time and not pipes.overflowed:
        pipes.pump(lambda: pipes.outputs_closed, time.monotonic() + PIPE_GRACE_S)
    kill_group(pipes.proc)  # on time: only leftovers of its group; else the process too
    if not in_time or pipes.overflowed:
        pipes.pump(lambda: pipes.exited and pipes.outputs_closed, time.monotonic() + PIPE_GRACE_S)
    return in_time


class ChildPipes:
    """Non-blocking I/O with one child: feed its stdin, collect its stdout (capped) and a stderr tail.

    `pump` serves every pipe at once until a condition holds or a deadline passes, so a child that
    does not read its input, floods its output or hands its pipes to another process cannot block.
    `exited` is seen without reaping the child, so its process group id stays safe to signal.
    """

    def __init__(self, proc: subprocess.Popen[bytes], max_output: int) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.max_output = max_output
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.exited = False
        self.overflowed = False
        self._reading: set[Any] = {proc.stdout, proc.stderr}
        self._pending = memoryview(b"")
        self._close_after_send = False
        self._selector = selectors.DefaultSelector()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            os.set_blocking(stream.fileno(), False)
        self._selector.register(proc.stdout, selectors.EVENT_READ, self._read_stdout)
        self._selector.register(proc.stderr, selectors.EVENT_READ, self._read_stderr)
        self._exit_fd = _exit_notifier(proc.pid)
        if self._exit_fd is not None:
            self._selector.register(self._exit_fd, selectors.EVENT_READ, self._on_exit)

    @property
    def outputs_closed(self) -> bool:
        """Both stdout and stderr are at end-of-file (or no longer read)."""
        return not self._reading

    @property
    def stdout_closed(self) -> bool:
        return self.proc.stdout not in self._reading

    def send(self, data: bytes, then_close: bool = False) -> None:
        """Queue `data` for the child's stdin (written by `pump`); close stdin once it is written."""
        stdin = self.proc.stdin
        assert stdin is not None
        if stdin.closed:
            return
        self._pending = memoryview(data)
        self._close_after_send = then_close
        if data:
            self._selector.register(stdin, selectors.EVENT_WRITE, self._write_stdin)
        elif then_close:
            stdin.close()

    def close_stdin(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            if self._pending:
                self._selector.unregister(stdin)
                self._pending = memoryview(b"")
            stdin.close()

    def pump(self, until: Callable[[], bool], deadline: float) -> bool:
        """Serve the pipes until `until()` holds (True) or `deadline` (time.monotonic) passes (False)."""
        while not until():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if self._exit_fd is None and not self.exited:
                remaining = min(remaining, _EXIT_POLL_S)
            elif not self._selector.get_map():
                return until()  # nothing left that could change
            for key, _ in self._selector.select(remaining):
                key.data()
            if self._exit_fd is None and not self.exited:
                self.exited = exit_code(self.proc) is not None
        return True

    def collect(self) -> None:
        """Take in what the child has already written (a pipe's worth per stream), without waiting."""
        for _ in range(16):
            ready = [key for key, events in self._selector.select(0) if events & selectors.EVENT_READ]
            if not ready:
                return
            for key in ready:
                key.data()

    def close(self) -> None:
        self._selector.close()
        if self._exit_fd is not None:
            os.close(self._exit_fd)
            self._exit_fd = None
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def _write_stdin(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            written = os.write(stdin.fileno(), self._pending)
        except BlockingIOError:
            return
        except OSError:  # the child closed its stdin or died: it gets no more input
            written = len(self._pending)
            self._close_after_send = True
        self._pending = self._pending[written:]
        if not self._pending:
            self._selector.unregister(stdin)
            if self._close_after_send:
                stdin.close()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        chunk = self._read(self.proc.stdout)
        if chunk is not None:
            self.stdout += chunk
            if len(self.stdout) > self.max_output:
                self.overflowed = True
                self._stop_reading(self.proc.stdout)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        chunk = self._read(self.proc.stderr)
        if chunk is not None:
            self.stderr += chunk
            if len(self.stderr) > 2 * _STDERR_KEPT:
                del self.stderr[:-_STDERR_KEPT]

    def _read(self, stream: Any) -> bytes | None:
        try:
            chunk = os.read(stream.fileno(), _CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            chunk = b""
        if not chunk:
            self._stop_reading(stream)
            return None
        return chunk

    def _stop_reading(self, stream: Any) -> None:
        self._selector.unregister(stream)
        self._reading.discard(stream)

    def _on_exit(self) -> None:
        assert self._exit_fd is not None
        self._selector.unregister(self._exit_fd)
        self.exited = True


def _exit_notifier(pid: int) -> int | None:
    """A descriptor that becomes readable when the process exits (Linux pidfd), else None (we poll)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return pidfd_open(pid)
    except OSError:
        return None


def exit_code(proc: subprocess.Popen[bytes]) -> int | None:
    """The child's exit code (negative: the signal that ended it), None while it runs. Unlike
    `proc.poll()` it leaves the child unreaped (WNOWAIT), so its process group id stays safe to
    signal: `kill_group` still reaches what the child left running."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        status = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped already
        return proc.poll()
    if status is None:
        return None
    return -status.si_status if status.si_code in (os.CLD_KILLED, os.CLD_DUMPED) else status.si_status


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group of a child we started (a no-op once it is reaped)."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def reap(proc: subprocess.Popen[bytes]) -> None:
    """Collect the exit status of a child that has exited or been killed, waiting briefly at most."""
    try:
        proc.wait(timeout=PIPE_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
