"""Run the user's commands (targets, judges) as real processes, without a shell.

Every process of a run is started in its own process group, so a timeout or Ctrl-C stops it
and anything it spawned. `Processes` tracks the live ones so an interrupted run leaves none.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

TAIL_CHARS = 2000


@dataclass(slots=True)
class ProcessResult:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    start_error: str | None = None
    duration_ms: float = 0.0

    def failure(self, what: str, timeout: float) -> str | None:
        """A one-line description of what went wrong, with the stderr tail; None if it went well."""
        if self.start_error:
            return f"{what} could not start: {self.start_error}"
        if self.timed_out:
            return f"{what} timed out after {timeout:g}s" + stderr_tail(self.stderr)
        if self.returncode:
            return f"{what} exited with code {self.returncode}" + stderr_tail(self.stderr)
        return None


def stderr_tail(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").strip()
    if not text:
        return ""
    if len(text) > TAIL_CHARS:
        text = "..." + text[-TAIL_CHARS:]
    return f"; stderr: {text}"


def decode_json(data: bytes) -> Any:
    """Parse JSON, also accepting the NaN/Infinity that Python's json.dumps writes. Raises ValueError."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def resolve_command(command: list[str]) -> list[str]:
    """`python`/`python3` and bare `.py` scripts run with the interpreter running agenteval."""
    argv = list(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    elif argv and argv[0].endswith(".py"):
        argv.insert(0, sys.executable)
    return argv


class Processes:
    """The processes one run has started; `stop_all` ends every one still alive."""

    def __init__(self) -> None:
        self._live: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._stopped = False

    def start(self, argv: list[str], cwd: Path, **popen: object) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._stopped:
                raise InterruptedError("the run is stopping")
            proc = subprocess.Popen(argv, cwd=cwd, start_new_session=True, **popen)  # type: ignore[call-overload]
            self._live.add(proc)
        return proc

    def forget(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._live.discard(proc)

    def run(
        self, argv: list[str], stdin: bytes, timeout: float, cwd: Path, env: dict[str, str] | None = None
    ) -> ProcessResult:
        started = time.perf_counter()
        try:
            proc = self.start(
                argv, cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={**os.environ, **env} if env else None,
            )
        except (OSError, ValueError, InterruptedError) as exc:
            return ProcessResult(None, b"", b"", start_error=f"{argv[0]}: {exc}")
        try:
            stdout, stderr = proc.communicate(stdin, timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(proc)
            stdout, stderr = proc.communicate()
            timed_out = True
        finally:
            self.forget(proc)
        elapsed = (time.perf_counter() - started) * 1000
        return ProcessResult(proc.returncode, stdout, stderr, timed_out, duration_ms=elapsed)

    def stop_all(self) -> None:
        with self._lock:
            self._stopped = True
            live = list(self._live)
        for proc in live:
            kill_group(proc)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
