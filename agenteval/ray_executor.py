"""`--executor ray`: score batches of cases as Ray tasks; the driver streams results to one file.

The driver reads, validates and selects cases exactly as a local run does, then sends them in
batches. Each task scores its batch with the same `Runner` a local run uses. A Ray worker process
keeps its runner between tasks, so evaluators are built once per process and `protocol: jsonl`
judges stay up. A result reaches the results file only when its whole batch comes back, so a
batch that Ray retries after a worker died is written once. At most a few batches per CPU are in
flight, which keeps the driver's memory flat.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.api import EndpointSettings, RunError
from agenteval.extras import MissingDependency
from agenteval.results import CaseResult
from agenteval.suite.models import Case
from agenteval.targets import Answer

# Never shipped to the cluster with the suite folder: results, caches, environments, VCS.
WORKING_DIR_EXCLUDES = ["agenteval-results/", ".git/", ".venv/", "venv/", "__pycache__/", "*.pyc"]
# A local instance's workers use the driver's response cache in place, so no copy of it is shipped;
# a cluster's workers get the suite folder's cache (e.g. one committed beside an example) with it.
LOCAL_EXCLUDES = [".agenteval/"]
BATCHES_PER_CPU = 2
TASK_RETRIES = 3
PROBE_TIMEOUT_S = 5.0  # for the cluster's port to answer at all, before Ray's own minutes of retries
ADDRESS_FORMS = "auto, HOST:PORT (the head node's GCS port, 6379 by default) or ray://HOST:10001"


def require_ray(local: bool = True) -> Any:
    """The ray module. For a local instance, Ray is told to bind to the loopback address only
    (before its first import: it reads the setting then)."""
    if local:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise MissingDependency("--executor ray needs Ray: pip install 'agenteval[ray]'") from None
    return ray


def check_address(address: str | None) -> None:
    """Before anything runs (no results file yet): the cluster `--ray-address` names exists, answers
    and lets this process in. Raises RunError with one line saying why not. Without an address a
    local instance is started at run time; an already connected process is left as it is."""
    if address is None:
        return
    ray = require_ray(local=False)
    if ray.is_initialized():
        return
    text = address.strip()
    if text.startswith("ray://"):
        host_port = text.removeprefix("ray://").rstrip("/")
    elif "://" in text:
        raise RunError(f"--ray-address takes {ADDRESS_FORMS}, not a URL: got {address!r}")
    else:
        from ray._private.services import canonicalize_bootstrap_address_or_die

        try:
            host_port = canonicalize_bootstrap_address_or_die(text)
        except ValueError:
            raise RunError(f"--ray-address takes {ADDRESS_FORMS}; got {address!r}") from None
        except ConnectionError:
            raise RunError(
                f"--ray-address {address}: no Ray cluster is running on this machine "
                "(start one with `ray start --head`, or leave out --ray-address for a local instance)"
            ) from None
    _probe(address, host_port)
    _connect(ray, text)
    ray.shutdown()


def _probe(address: str, host_port: str) -> None:
    """The cluster's port accepts a connection (Ray itself retries an unreachable one for minutes)."""
    host, _, port = host_port.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RunError(f"--ray-address takes {ADDRESS_FORMS}; got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise RunError(f"--ray-address {address}: no Ray cluster answers at {host}:{port} ({why})") from None


_AUTH_REFUSED = ("unauthenticated", "invalidauthtoken", "authentication token")


def _connect(ray: Any, address: str | None, **options: Any) -> None:
    """ray.init with agenteval's logging settings; a refusal as one RunError line (token
    authentication named, with what to set). Joining a cluster, Ray's own retry messages (one a
    second, from its C++ core, straight to stderr) are held back: the one line says it all."""
    try:
        with _held_stderr(address is not None) as held:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR", **options)
    except Exception as exc:  # Ray raises ConnectionError, ValueError, RuntimeError, AuthenticationError...
        ray.shutdown()
        where = f"the Ray cluster at {address}" if address else "a local Ray instance"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        causes = [exc, exc.__cause__, exc.__context__]
        said = " ".join([first, held.text, *(str(cause) for cause in causes if cause is not None)]).lower()
        if any(type(cause).__name__ == "AuthenticationError" for cause in causes) or any(word in said for word in _AUTH_REFUSED):
            raise RunError(
                f"{where} asks for a token (Ray token authentication): set RAY_AUTH_MODE=token and the cluster's "
                "token as RAY_AUTH_TOKEN (or its file as RAY_AUTH_TOKEN_PATH) in the environment"
            ) from None
        raise RunError(f"cannot connect to {where}: {type(exc).__name__}: {first[:300]}") from None


@dataclass
class _Held:
    text: str = ""  # what was written to stderr (its first MiB), once the block is left


@contextmanager
def _held_stderr(hold: bool) -> Iterator[_Held]:
    """File descriptor 2 pointed at a temporary file for the duration (C++ writes bypass sys.stderr)."""
    held = _Held()
    if not hold:
        yield held
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield held
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            held.text = sink.read(1 << 20).decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class RayOptions:
    address: str | None = None  # None: start a local Ray instance on this machine's cores
    batch_size: int = 64
    workers: int = 1  # cases in parallel inside each task (for targets and judges that wait)
    endpoints: EndpointSettings = EndpointSettings()  # cache and --repeat, as the local run has them


def run_on_ray(
    source: Path | dict[str, Any],
    base_dir: Path,
    cases: Iterable[Case],
    run_id: str,
    options: RayOptions,
    answers: Any = None,
    only: frozenset[str] | None = None,
) -> Iterator[CaseResult]:
    """Yield every case's result as its batch completes. `source` is the suite file, or the suite
    as data; `base_dir` (its folder) becomes each worker's working directory. `answers` (from
    --predictions) is read here on the driver and travels with each batch, so the file need not
    exist on the cluster."""
    local = options.address is None
    ray = require_ray(local=local)
    started_here = not ray.is_initialized()
    if started_here:
        _connect(
            ray, options.address,
            num_cpus=None if options.address else (os.cpu_count() or 1),
            runtime_env={"working_dir": str(base_dir), "excludes": WORKING_DIR_EXCLUDES + (LOCAL_EXCLUDES if local else [])},
        )
    score = ray.remote(max_retries=TASK_RETRIES)(score_batch)
    capacity = max(1, int(ray.cluster_resources().get("CPU", 1))) * BATCHES_PER_CPU
    definition = source.name if isinstance(source, Path) else source
    settings = _worker_settings(options.endpoints, base_dir, local)
    pending: list[Any] = []
    try:
        batches = _batches(cases, options.batch_size, answers)
        while True:
            while len(pending) < capacity:
                batch = next(batches, None)
                if batch is None:
                    break
                pending.append(score.remote(definition, run_id, batch, only, options.workers, settings))
            if not pending:
                return
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield from ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref)  # raises KeyboardInterrupt in the task, which stops its processes
        if started_here:
            ray.shutdown()


def _worker_settings(settings: EndpointSettings, base_dir: Path, local: bool) -> EndpointSettings:
    """On this machine, workers share the driver's response cache (SQLite takes writers from several
    processes); on a cluster each worker uses the cache in its copy of the suite folder."""
    if not (local and settings.cache):
        return settings
    from dataclasses import replace

    from agenteval.endpoints import cache_folder

    return replace(settings, cache_dir=cache_folder(base_dir, settings.cache_dir).resolve())


def _batches(cases: Iterable[Case], size: int, answers: Any) -> Iterator[list[tuple[Case, Answer | None]]]:
    batch: list[tuple[Case, Answer | None]] = []
    for case in cases:
        batch.append((case, None if answers is None else answers.answer(case.id)))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _BatchAnswers:
    """The answers that came with a batch, in the shape the runner asks `--predictions` for."""

    def __init__(self, batch: list[tuple[Case, Answer | None]]) -> None:
        self._answers = {case.id: answer for case, answer in batch if answer is not None}

    def answer(self, case_id: str) -> Answer:
        return self._answers[case_id]


# One runner per Ray worker process and run: built on the first batch, reused for the rest.
_RUNNERS: dict[str, Any] = {}


def score_batch(
    definition: str | dict[str, Any],
    run_id: str,
    batch: list[tuple[Case, Answer | None]],
    only: frozenset[str] | None,
    workers: int,
    settings: EndpointSettings,
) -> list[CaseResult]:
    """Runs inside a Ray worker, whose working directory is the suite's folder: scores the batch
    with the runner a local run builds (agenteval.api.make_runner)."""
    runner = _RUNNERS.get(run_id)
    if runner is None:
        from agenteval.api import make_runner, open_endpoints
        from agenteval.process import Processes
        from agenteval.suite.loader import load_definition

        loaded = load_definition(Path(definition).resolve() if isinstance(definition, str) else definition)
        endpoints = open_endpoints(loaded, settings)
        runner = _RUNNERS[run_id] = make_runner(loaded, run_id, Processes(), None, only, endpoints, settings)
    runner.predictions = _BatchAnswers(batch) if any(answer is not None for _, answer in batch) else None
    try:
        return list(runner.score((case for case, _ in batch), workers))
    finally:
        runner.endpoints.close_cache()  # the worker's writes folded into the cache file (agenteval.endpoints)
