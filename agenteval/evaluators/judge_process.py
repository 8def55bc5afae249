"""A long-lived judge process for `protocol: jsonl`: one JSON line in, one JSON line out.

One process per worker thread saves a process start (and an interpreter start-up) per case.
A judge that dies or hangs is stopped and started afresh for the next case.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from collections import deque
from pathlib import Path

from agenteval.judge import PROTOCOL_ENV
from agenteval.process import Processes, kill_group, stderr_tail

STDERR_LINES_KEPT = 40


class PersistentJudge:
    def __init__(self, argv: list[str], cwd: Path, processes: Processes) -> None:
        self._argv = argv
        self._cwd = cwd
        self._processes = processes
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: deque[bytes] = deque(maxlen=STDERR_LINES_KEPT)

    def ask(self, payload: bytes, timeout: float) -> tuple[bytes | None, str | None]:
        """(the judge's answer line, None) or (None, what went wrong)."""
        try:
            proc = self._running()
        except (OSError, InterruptedError) as exc:
            return None, f"judge could not start: {self._argv[0]}: {exc}"
        try:
            assert proc.stdin is not None
            proc.stdin.write(payload + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None, self._died(proc)
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.close()
            return None, f"judge timed out after {timeout:g}s" + self._stderr_tail()
        if line is None:
            return None, self._died(proc)
        return line, None

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._lines = queue.Queue()
        self._stderr.clear()
        proc = self._processes.start(
            self._argv, self._cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, PROTOCOL_ENV: "jsonl"},
        )
        threading.Thread(target=_pump_lines, args=(proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=_pump_tail, args=(proc.stderr, self._stderr), daemon=True).start()
        self._proc = proc
        return proc

    def _died(self, proc: subprocess.Popen[bytes]) -> str:
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self.close()
        return f"judge exited with code {code} before answering" + self._stderr_tail()

    def _stderr_tail(self) -> str:
        return stderr_tail(b"".join(self._stderr))

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            kill_group(proc)
            proc.wait()
        self._processes.forget(proc)


def _pump_lines(stream: object, lines: queue.Queue[bytes | None]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        if line.strip():
            lines.put(line)
    lines.put(None)


def _pump_tail(stream: object, tail: deque[bytes]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        tail.append(line)
