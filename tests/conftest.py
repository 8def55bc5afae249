"""Shared helpers: the real CLI as a subprocess, real files in tmp dirs."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import textwrap
import os
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

# A shell without job control starts background commands with SIGINT ignored, and every process
# they start inherits that: the runs these tests interrupt with SIGINT (Ctrl-C) would never see
# it. A handler here (reset to the default in each child at exec) gives them Ctrl-C back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# GNU readline (which pytest imports) exports LINES and COLUMNS of a terminal it did not find (80 x
# 24) into the process's environment, though not into os.environ: every command a test starts
# would then print its tables 80 wide, as a user's COLUMNS=80 asks. Tests set COLUMNS when they mean it.
for _name in ("COLUMNS", "LINES"):
    if _name not in os.environ:
        os.environ[_name] = ""
        del os.environ[_name]  # unsetenv: gone from what children inherit

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCHEMAS = ROOT / "schemas"


def pytest_configure(config: pytest.Config) -> None:
    """Compile agenteval's modules once, before the workers start: the tests start thousands of
    agenteval processes, and where PYTHONDONTWRITEBYTECODE is set (as on some CI machines) each would
    compile from source every module it imports (about 0.25 s of CPU a process), where an installed
    copy, or any environment without that setting, reads them from the bytecode cache."""
    import compileall

    if not hasattr(config, "workerinput"):  # (the controller, or a run without pytest-xdist)
        compileall.compile_dir(ROOT / "agenteval", quiet=2)


def run_cli(*args: str | Path, cwd: Path | None = None, timeout: float = 120, input: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """`agenteval ARGS` in a fresh process, as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "agenteval", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, input=input,
    )


# A pytest started by a test (the plugin's, as a team runs it) without the third-party plugins the
# dev extra happens to install: langsmith's (pulled in by langchain-core) alone costs a pytest
# process about 0.7 s of CPU at start, hypothesis's and anyio's another 0.3 s; none is ours to test.
CHILD_PYTEST_ENV = {
    **os.environ,
    "PYTEST_ADDOPTS": " ".join(filter(None, [os.environ.get("PYTEST_ADDOPTS"), "-p no:langsmith_plugin -p no:hypothesispytest -p no:anyio"])),
}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@contextlib.contextmanager
def refused_url() -> Iterator[str]:
    """`http://127.0.0.1:PORT/v1` where nothing listens, for as long as the block lasts: a socket bound
    to PORT and never listening, so a connection is refused and no other test (on any pytest-xdist
    worker) can start a server there meanwhile, as one could on the port of a server just closed."""
    import socket

    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/v1"


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """`handler` behind a real HTTP server on 127.0.0.1 (a daemon thread per request) while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def example_port():
    """The examples' stand-in servers listen on the suites' default port, 127.0.0.1:11434: tests that
    start one (on any pytest-xdist worker) take turns, holding a lock file for the test's length."""
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / "agenteval-tests-port-11434.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield 11434
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def cli():
    return run_cli


# Peak memory of a child as `wait4` reports it includes what the child held between fork and
# exec: the whole pytest process. Measuring children start from this small launcher instead,
# which forks the real command and writes its peak RSS (MB) to the file named in its first argument.
MEASURE = [sys.executable, "-c", (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss / 1024))\n"
    "code = os.waitstatus_to_exitcode(status)\n"
    "sys.exit(code if code >= 0 else 128 - code)\n"
)]


def stop_processes_of(ray_tmp: Path) -> None:
    """Stop a Ray head node started for a test: every process whose command line names its (unique)
    temp folder, SIGTERM then SIGKILL, and remove the folder."""
    import shutil
    import signal
    import subprocess
    import time

    for attempt in range(2):
        found = subprocess.run(["pgrep", "-f", str(ray_tmp)], capture_output=True, text=True).stdout.split()
        for pid in found:
            try:
                os.kill(int(pid), signal.SIGTERM if attempt == 0 else signal.SIGKILL)
            except ProcessLookupError:
                pass
        if found:
            time.sleep(1)
    shutil.rmtree(ray_tmp, ignore_errors=True)


# What changes from one `agenteval run` to the next, put in place of itself in what a run prints
# and in what an example's README shows alike: the run id, the wall time, an evaluator's mean ms,
# and the slowest cases.
RUN_VOLATILE = [
    (r"\brun \d{8}T\d{6}Z-[0-9a-f]+", "run <id>"),
    (r"  in [0-9.]+s$", "  in <time>"),
    (r"│ +[0-9.]+ │$", "│ <ms> │"),
    (r"^slowest: .*$", "slowest: <cases>"),
]


def assert_same_run_output(printed: list[str], shown: list[str], latency_within: float = 0.0) -> None:
    """`printed` and `shown` are the same run output (normalized_run_output); with `latency_within`,
    the target's latency figures may differ by that many ms (a replay with tools measures the tools'
    own time again)."""
    printed, printed_ms = _latencies_apart(normalized_run_output(printed))
    shown, shown_ms = _latencies_apart(normalized_run_output(shown))
    assert printed == shown
    assert len(printed_ms) == len(shown_ms) and all(abs(a - b) <= latency_within for a, b in zip(printed_ms, shown_ms)), (printed_ms, shown_ms)


def _latencies_apart(lines: list[str]) -> tuple[list[str], list[float]]:
    """`lines` with the figures of the target's latency line taken out, and the figures."""
    figures: list[float] = []
    kept = []
    for line in lines:
        if line.startswith("target: latency "):
            figures = [float(found) for found in re.findall(r"([0-9.]+) ms", line)]
            line = re.sub(r"[0-9.]+ ms", "<ms>", line)
        kept.append(line)
    return kept, figures


def normalized_run_output(lines: list[str]) -> list[str]:
    """`lines` with trailing spaces dropped and RUN_VOLATILE's parts replaced by their placeholders."""
    text = "".join(line.rstrip() + "\n" for line in lines)
    for volatile, placeholder in RUN_VOLATILE:
        text = re.sub(volatile, placeholder, text, flags=re.M)
    return text.splitlines()
