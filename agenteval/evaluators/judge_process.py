"""A long-lived judge process for `protocol: jsonl`: one JSON line in, one JSON line out.

One process per worker thread saves a process start (and an interpreter start-up) per case.
A line that does not begin with `{` is not an answer (a banner, a log line; it is kept for error
messages). The answer taken for a case is the first answer line the judge printed after the last
look at its stdout, which reads all there is just before that case's payload is sent. An extra
answer line (one too many for an earlier case) therefore never lands on the wrong case when:

- any of it was printed before that look: an answer line waiting then, whole or begun, is a
  protocol violation, and the case whose payload was due errors; or
- it echoes the payload's `case_id` (the helper in agenteval.judge does): an answer naming
  another case is refused.

What is left cannot be decided from the bytes: a judge that does not echo `case_id` and prints
an extra line only after the next payload was sent makes that line look exactly like the next
answer. Any violation, a death, a hang or an oversized answer stops the judge, and the next case
starts a fresh one.
"""

from __future__ import annotations

import time
from pathlib import Path

from agenteval.judge import PROTOCOL_ENV
from agenteval.process import (
    DEFAULT_MAX_OUTPUT_MB,
    PIPE_GRACE_S,
    TAIL_CHARS,
    ChildPipes,
    Processes,
    decode_json,
    kill_group,
    max_output_bytes,
    output_too_large,
    reap,
    stderr_tail,
)

CLOSE_WAIT_S = 2.0
"""At the end of a run, how long a judge may take to exit by itself once its stdin is closed."""


class PersistentJudge:
    def __init__(
        self, argv: list[str], cwd: Path, processes: Processes, max_output: int = max_output_bytes(DEFAULT_MAX_OUTPUT_MB),
        env: dict[str, str] | None = None,
    ) -> None:
        self._argv = argv
        self._env = env or {}  # the run's AGENTEVAL_RUN_ID and AGENTEVAL_SUITE (each case's come in its payload)
        self._cwd = cwd
        self._processes = processes
        self._max_output = max_output
        self._pipes: ChildPipes | None = None
        self._scanned = 0  # bytes at the start of the stdout buffer already known to hold no newline
        self._noise = bytearray()  # the tail of non-answer stdout lines since the last answer
        self._last_case: str | None = None

    def ask(self, payload: bytes, timeout: float, case_id: str | None = None) -> tuple[bytes | None, str | None]:
        """(the judge's answer line, None) or (None, what went wrong)."""
        deadline = time.monotonic() + timeout
        try:
            stray = self._leftover_answer(deadline)
            if stray is not None:
                self._stop()
                after = f"after its answer for case {self._last_case!r}" if self._last_case else "after its last answer"
                return None, (
                    f"judge printed an answer line nobody asked for, {after}: {_shown(stray)}; protocol jsonl "
                    "wants exactly one answer line per payload line, so the judge was restarted"
                )
            try:
                pipes = self._running()
            except (OSError, ValueError, InterruptedError) as exc:
                return None, f"judge could not start: {self._argv[0]}: {exc}"
            return self._exchange(pipes, payload + b"\n", timeout, deadline, case_id)
        except BaseException:
            self._stop()  # interrupted mid-exchange (Ctrl-C, SIGTERM): leave nothing running
            raise

    def _exchange(
        self, pipes: ChildPipes, line: bytes, timeout: float, deadline: float, case_id: str | None
    ) -> tuple[bytes | None, str | None]:
        found: list[bytes] = []

        def answered() -> bool:
            if not found:
                answer = self._next_answer(pipes)
                if answer is not None:
                    found.append(answer)
            return bool(found)

        pipes.send(line)
        in_time = pipes.pump(lambda: answered() or pipes.stdout_closed or pipes.overflowed or pipes.exited, deadline)
        if in_time and not found and not pipes.overflowed:  # it is ending: take in what it wrote first
            pipes.pump(lambda: answered() or pipes.stdout_closed, time.monotonic() + PIPE_GRACE_S)
        if found:
            other = _answered_case(found[0], case_id)
            if other is not None:
                self._stop()
                return None, (
                    f"judge answered for case {other!r} while judging case {case_id!r} (an answer line left over "
                    "from an earlier case?); the judge was restarted"
                )
            self._last_case = case_id
            self._noise.clear()
            return found[0], None
        if pipes.overflowed:  # its unfinished answer is not worth showing
            self._stop()
            return None, f"judge {output_too_large(self._max_output)}" + stderr_tail(pipes.stderr)
        tails = stderr_tail(self._noise + pipes.stdout, "stdout") + stderr_tail(pipes.stderr)
        if not in_time:
            self._stop()
            return None, f"judge timed out after {timeout:g}s" + tails
        pipes.pump(lambda: pipes.exited, time.monotonic() + PIPE_GRACE_S)
        exited = pipes.exited
        code = self._stop()
        problem = f"exited with code {code}" if exited else "closed its stdout"
        return None, f"judge {problem} before answering" + tails

    def _running(self) -> ChildPipes:
        if self._pipes is None:
            proc = self._processes.start(self._argv, self._cwd, {**self._env, PROTOCOL_ENV: "jsonl"})
            self._pipes = ChildPipes(proc, self._max_output)
            self._scanned = 0
            self._noise.clear()
        return self._pipes

    def _leftover_answer(self, deadline: float) -> bytes | None:
        """An answer line, whole or begun, that the judge printed since its last answer; a judge that
        ended is let go. Everything its stdout holds is read first (up to `deadline`)."""
        pipes = self._pipes
        if pipes is None:
            return None
        while True:
            held = len(pipes.stdout)
            pipes.collect()
            more = len(pipes.stdout) > held  # collect reads a bounded amount: a busy judge may have more
            stray = self._next_answer(pipes)
            if stray is not None or not more or time.monotonic() >= deadline:
                break
        if stray is None and _may_begin_answer(pipes.stdout):
            stray = bytes(pipes.stdout)  # an unfinished line that may end as an answer line
        if stray is None and (pipes.exited or pipes.stdout_closed or pipes.overflowed):
            self._stop()
        return stray

    def _next_answer(self, pipes: ChildPipes) -> bytes | None:
        """Take complete lines off stdout up to the first answer line; other lines go to the noise tail."""
        buffer = pipes.stdout
        while True:
            end = buffer.find(b"\n", self._scanned)
            if end < 0:
                self._scanned = len(buffer)
                return None
            line = bytes(buffer[: end + 1])
            del buffer[: end + 1]
            self._scanned = 0
            if line.lstrip().startswith(b"{"):
                return line
            if line.strip():
                self._noise += line
                del self._noise[: -4 * TAIL_CHARS]

    def _stop(self) -> int | None:
        """Kill the judge and its process group now; its exit code."""
        pipes, self._pipes = self._pipes, None
        if pipes is None:
            return None
        kill_group(pipes.proc)
        pipes.close()
        reap(pipes.proc)
        self._processes.forget(pipes.proc)
        return pipes.proc.returncode

    def close(self) -> None:
        """End of the run: the judge sees end-of-input and may exit by itself; what is left is killed."""
        pipes = self._pipes
        if pipes is None:
            return
        pipes.close_stdin()
        pipes.pump(lambda: pipes.exited, time.monotonic() + CLOSE_WAIT_S)
        self._stop()


def _answered_case(line: bytes, case_id: str | None) -> object | None:
    """The `case_id` the answer echoes when it is not the one asked; None when it matches or is absent."""
    if case_id is None or b'"case_id"' not in line:
        return None
    try:
        answer = decode_json(line)
    except ValueError:
        return None
    if isinstance(answer, dict) and "case_id" in answer and answer["case_id"] != case_id:
        return answer["case_id"]
    return None


def _may_begin_answer(unfinished: bytearray) -> bool:
    """Whether the start of a line (no newline yet) may turn out to be an answer line: it begins
    with `{`, or holds only blanks so far."""
    begun = unfinished.lstrip()
    return bool(unfinished) and (not begun or begun.startswith(b"{"))


def _shown(line: bytes) -> str:
    text = line.decode("utf-8", "replace").strip()
    return repr(text if len(text) <= 200 else text[:200] + "...")
