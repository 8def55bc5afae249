"""`--executor ray`: score batches of cases as Ray tasks; the driver streams results to one file.

The driver reads, validates and selects cases exactly as a local run does, then sends them in
batches, with every file the suite names (see `plan_shipment`). Each task scores its batch with the same `Runner` a local run uses. A Ray worker process
keeps its runner between tasks, so evaluators are built once per process and `protocol: jsonl`
judges stay up. A result reaches the results file only when its whole batch comes back, so a
batch that Ray retries after a worker died is written once. At most a few batches per CPU are in
flight, which keeps the driver's memory flat.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.extras import MissingDependency
from agenteval.results import CaseResult
from agenteval.runs import RunError, RunSettings
from agenteval.suite.loader import LoadedSuite
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


def run_on_ray(
    source: Path | dict[str, Any],
    loaded: LoadedSuite,
    cases: Iterable[Case],
    run_id: str,
    settings: RunSettings,
    answers: Any = None,
    only: frozenset[str] | None = None,
    done: dict[str, set[tuple[str | None, str | None]]] | None = None,
) -> Iterator[CaseResult]:
    """Yield every case's result as its batch completes. `source` is the suite file, or the suite
    as data; the folder it is in, with every folder the suite names outside it, is shipped as each
    worker's working directory (`plan_shipment`). `answers` (from --predictions) is read here on the
    driver and travels with each batch, so the file need not exist on the cluster. Each case runs
    in the run's chosen cells, except those `done` (--resume) says it ran in. The workers are
    sent the run's settings (`RunSettings.shipped`): cache, --repeat, --set, and `workers`, the
    cases in parallel inside each task."""
    local = settings.ray_address is None
    ray = require_ray(local=local)
    started_here = not ray.is_initialized()
    base_dir = loaded.base_dir
    folder = "."  # where the suite's folder is in the worker's working directory
    if started_here:
        shipment = plan_shipment(loaded, cluster=not local)
        folder = shipment.folder
        _connect(
            ray, settings.ray_address,
            num_cpus=None if settings.ray_address else (os.cpu_count() or 1),
            runtime_env=shipment.runtime_env(local),
        )
    score = ray.remote(max_retries=TASK_RETRIES)(score_batch)
    capacity = max(1, int(ray.cluster_resources().get("CPU", 1))) * BATCHES_PER_CPU
    definition = source.name if isinstance(source, Path) else source
    shipped = _worker_settings(settings, base_dir, local)
    pending: list[Any] = []
    cells = [cell.names for cell in loaded.cells]
    try:
        batches = _batches(cases, settings.batch_size, answers, cells, done or {})
        while True:
            while len(pending) < capacity:
                batch = next(batches, None)
                if batch is None:
                    break
                pending.append(score.remote(definition, run_id, batch, only, shipped, folder, cells))
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


# -- what reaches the workers ----------------------------------------------------------------


@dataclass(frozen=True)
class Shipment:
    """What a run sends to its workers as Ray's runtime_env: `root` as the working directory, with
    the suite's folder at `folder` inside it and everything that is neither on the way to nor inside
    a shipped folder left out (`excludes`); modules the suite imports from this machine's own
    folders (PYTHONPATH, the current folder) as `py_modules`; the variables that env files (the
    suite's `env_file:`, `--env-file`) name, with this process's values, as `env_vars`. Their
    values are secrets: they are kept out of the repr, so no message or log line made from a
    Shipment shows one."""

    root: Path
    folder: str = "."
    excludes: tuple[str, ...] = ()
    py_modules: tuple[str, ...] = ()
    env_vars: dict[str, str] = field(default_factory=dict, repr=False)

    def runtime_env(self, local: bool) -> dict[str, Any]:
        excludes = WORKING_DIR_EXCLUDES + (LOCAL_EXCLUDES if local else []) + list(self.excludes)
        env: dict[str, Any] = {"working_dir": str(self.root), "excludes": excludes}
        if self.py_modules:
            env["py_modules"] = list(self.py_modules)
        if self.env_vars:
            env["env_vars"] = dict(self.env_vars)
        return env


def plan_shipment(loaded: LoadedSuite, cluster: bool) -> Shipment:
    """What the workers need of this machine's files, from what the suite names: the suite's folder;
    for each file a command (the target's, a code_judge's...) names by a relative path outside it,
    that file's folder (only the file when its folder holds the suite's own); for each `function:`
    module (a python evaluator's or target's, a `transform: {python: ...}`'s) found neither next to
    the suite nor installed but on PYTHONPATH or in the current folder, that module; each `env_file:`
    outside the suite's folder (the workers load the suite, which reads it). They travel as one
    working directory, their common ancestor, holding only them. The variables env files name go
    as `env_vars` (`_env_vars`): a cluster's workers do not have this process's environment.

    A command's absolute path to a file cannot be shipped (the command names this machine's copy):
    fine on a local instance, a RunError naming it for a cluster (`cluster`). Called before anything
    runs, so that error comes first; files that do not exist are the validator's to report."""
    base = _absolute(loaded.base_dir)
    needed: list[Path] = [base]
    modules: list[str] = []
    for owner, key, value in _references(loaded):
        if key == "command" and isinstance(value, list):
            for index, arg in _path_words(value):
                path = Path(arg)
                if path.is_absolute():
                    if cluster and index > 0 and (path.is_file() or path.is_dir()):
                        raise RunError(
                            f"--executor ray: {owner} runs {' '.join(map(str, value))!r}, whose {arg} is an absolute path "
                            "the cluster's workers may not have (Ray ships the suite's folder and what it names by relative "
                            f"paths); name it relative to the suite's folder ({_relative(path, base)})"
                        )
                    continue
                full = _absolute(base / path)
                if _inside(full, base) or not (full.is_file() or full.is_dir()):
                    continue
                needed.append(full if full.is_dir() or _inside(base, full.parent) else full.parent)
        elif key == "function" and isinstance(value, str):
            module = _module_from_here(value, base)
            if module is not None and str(module) not in modules:
                modules.append(str(module))
    env_files = _env_files(loaded)
    needed += [path for path in env_files if not _inside(path, base) and path.is_file()]
    root = Path(os.path.commonpath([str(path) for path in needed]))
    folder = base.relative_to(root).as_posix() or "."
    return Shipment(root, folder, tuple(_excludes(root, needed)), tuple(modules), _env_vars(env_files, loaded.env_values))


def _env_files(loaded: LoadedSuite) -> list[Path]:
    """The suite's `env_file:` files, absolute."""
    names = loaded.suite.env_file
    if names is None:
        return []
    base = _absolute(loaded.base_dir)
    return [_absolute(base / name) for name in ([names] if isinstance(names, str) else names)]


def _env_vars(suite_env_files: list[Path], run_values: dict[str, str]) -> dict[str, str]:
    """NAME -> the run's value for each variable an env file names: the suite's (read here for
    their names) and every file this process applied (`--env-file`; see
    agenteval.suite.env_files.NAMES_READ). The run's value is the one the driver's run uses: this
    process's environment's when it had the variable, else the suite file's (`run_values`, never
    put in os.environ). Names only; never logged."""
    from agenteval.suite import env_files

    names: dict[str, None] = dict.fromkeys(getattr(env_files, "NAMES_READ", ()))
    for path in suite_env_files:
        try:
            names.update(dict.fromkeys(env_files.read_env_file(path)))
        except env_files.EnvFileError:
            continue  # the loader reported it already; the worker's load reports it again
    environ = {**run_values, **os.environ}
    return {name: environ[name] for name in names if name in environ}


def _references(loaded: LoadedSuite) -> Iterator[tuple[str, str, Any]]:
    """(owner, key, value) of every `command` and `function` the suite's targets and evaluators give,
    composites' children and tool-call checks included, and of every `transform: {python:
    module:function}` (as a `function`), the suite's own too; case-level evaluators' too when the
    cases have any (a pass over the cases, only then)."""
    from pydantic import BaseModel

    from agenteval.evaluators import EvaluatorConfig
    from agenteval.evaluators.transform import PythonTransform

    roots: list[tuple[Any, str]] = [(loaded.suite.target, f"the {loaded.suite.target.type} target")]
    named_targets = getattr(loaded.suite, "targets", None)  # a suite comparing models names several
    if isinstance(named_targets, dict):
        roots += [(target, f"target {name!r}") for name, target in named_targets.items()]
    if loaded.suite.transform is not None:
        roots.append((loaded.suite.transform, "the suite's transform"))
    roots += [(evaluator, f"evaluator {evaluator.label!r}") for evaluator in loaded.suite.evaluators]
    cases = loaded.iter_cases() if loaded.case_evaluators else ()
    for case in cases:
        roots += [(evaluator, f"case {case.id!r}: evaluator {evaluator.label!r}") for evaluator in case.evaluators or ()]
    stack = list(reversed(roots))
    while stack:
        value, owner = stack.pop()
        if isinstance(value, PythonTransform):
            yield owner, "function", value.python
        elif isinstance(value, BaseModel):
            for name in type(value).model_fields:
                item = getattr(value, name, None)
                if name in ("command", "function"):
                    yield owner, name, item
                elif isinstance(item, (BaseModel, list, tuple, dict)):
                    stack.append((item, f"evaluator {item.label!r}" if isinstance(item, EvaluatorConfig) else owner))
        elif isinstance(value, (list, tuple, dict)):
            items = value.values() if isinstance(value, dict) else value
            stack.extend(
                (item, f"evaluator {item.label!r}" if isinstance(item, EvaluatorConfig) else owner)
                for item in items if isinstance(item, (BaseModel, list, tuple, dict))
            )


def _path_words(argv: list[Any]) -> Iterator[tuple[int, str]]:
    """(index, word) of a command's words that may name a file: each word, and the VALUE of `--opt=VALUE`."""
    for index, arg in enumerate(argv):
        if not isinstance(arg, str) or not arg or "://" in arg or "\0" in arg:
            continue
        if arg.startswith("-"):
            _, equals, value = arg.partition("=")
            if equals and value:
                yield index, value
            continue
        yield index, arg


def _module_from_here(reference: str, base: Path) -> Path | None:
    """The file or package folder of the module of `module:function` when the workers would not
    find it: not next to the suite (shipped with it), not installed, but importable here from
    PYTHONPATH or the current folder."""
    from agenteval.functions import suite_module_file

    module = reference.partition(":")[0]
    if not module or suite_module_file(module, base) is not None:
        return None
    try:
        spec = importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        location = Path(next(iter(spec.submodule_search_locations)))
    elif spec.has_location and spec.origin:
        location = Path(spec.origin)
    else:
        return None
    here = {_absolute(Path(entry)) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry}
    if "" in sys.path or os.getcwd() in sys.path:
        here.add(_absolute(Path.cwd()))
    return location if _absolute(location.parent) in here else None


def _excludes(root: Path, needed: list[Path]) -> list[str]:
    """Ray `excludes` patterns (anchored at `root`) for everything under `root` that is neither a
    needed path, inside one, nor a folder on the way to one: only those folders are listed."""
    wanted = {path.relative_to(root).parts for path in needed}
    wanted = {parts for parts in wanted if not any(parts[:i] in wanted for i in range(len(parts)))}
    if () in wanted:
        return []
    on_the_way = {parts[:i] for parts in wanted for i in range(1, len(parts))}
    excludes: list[str] = []
    stack: list[tuple[str, ...]] = [()]
    while stack:
        parts = stack.pop()
        for entry in sorted(root.joinpath(*parts).iterdir()):
            child = parts + (entry.name,)
            if child in on_the_way:
                stack.append(child)
            elif child not in wanted and not entry.name.endswith((" ", "\t")):  # such a name cannot be a pattern: shipped
                excludes.append("/" + "/".join(_GLOB_SPECIAL.sub(r"\\\g<0>", part) for part in child))
    return excludes


_GLOB_SPECIAL = re.compile(r"[\\*?\[\]]")


def _absolute(path: Path) -> Path:
    """`path` made absolute and normalized without following symlinks: a link inside a shipped
    folder is shipped as what it points to."""
    return Path(os.path.normpath(path.absolute()))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _relative(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path, base)
    except ValueError:  # another drive
        return str(path)


def _worker_settings(settings: RunSettings, base_dir: Path, local: bool) -> RunSettings:
    """The settings the workers get. On this machine, they share the driver's response cache
    (SQLite takes writers from several processes); on a cluster each worker uses the cache in its
    copy of the suite folder."""
    if not (local and settings.cache):
        return settings.shipped()
    from agenteval.endpoints import cache_folder

    return settings.shipped(cache_dir=cache_folder(base_dir, settings.cache_dir).resolve())


_Names = tuple[str | None, str | None]
_BatchItem = tuple[Case, dict[_Names, Answer] | None, frozenset[_Names]]


def _batches(
    cases: Iterable[Case], size: int, answers: Any, cells: list[_Names], done: dict[str, set[_Names]]
) -> Iterator[list[_BatchItem]]:
    """Batches of (case, its --predictions answers by cell or None, the cells it already ran in)."""
    batch: list[_BatchItem] = []
    for case in cases:
        ran = frozenset(done.get(case.id, ()))
        given = None if answers is None else {names: answers.answer(case.id, *names) for names in cells if names not in ran}
        batch.append((case, given, ran))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _BatchAnswers:
    """The answers that came with a batch, in the shape the runner asks `--predictions` for."""

    def __init__(self, batch: list[_BatchItem]) -> None:
        self._answers = {
            (case.id, names): answer for case, given, _ in batch for names, answer in (given or {}).items()
        }

    def answer(self, case_id: str, target: str | None = None, prompt: str | None = None) -> Answer:
        return self._answers[case_id, (target, prompt)]


# One runner per Ray worker process and run: built on the first batch, reused for the rest.
_RUNNERS: dict[str, Any] = {}


def score_batch(
    definition: str | dict[str, Any],
    run_id: str,
    batch: list[_BatchItem],
    only: frozenset[str] | None,
    settings: RunSettings,
    folder: str = ".",
    cells: list[_Names] | None = None,
) -> list[CaseResult]:
    """Runs inside a Ray worker, whose working directory holds the suite's folder at `folder`:
    scores the batch with the runner a local run builds (agenteval.runs.make_runner)."""
    runner = _RUNNERS.get(run_id)
    if runner is None:
        from agenteval.process import Processes
        from agenteval.runs import make_runner, open_endpoints

        loaded = _load_in(folder, definition, settings.overrides)
        loaded.keep_cells(cells or [(None, None)])
        endpoints = open_endpoints(loaded, settings)
        runner = _RUNNERS[run_id] = make_runner(loaded, run_id, Processes(), None, only, endpoints, settings)
    runner.predictions = _BatchAnswers(batch) if any(given is not None for _, given, _ in batch) else None
    runner.done = {case.id: set(ran) for case, _, ran in batch if ran}
    try:
        return list(runner.score((case for case, _, _ in batch), settings.workers or 1))
    finally:
        runner.endpoints.close_cache()  # the worker's writes folded into the cache file (agenteval.endpoints)


def _load_in(folder: str, definition: str | dict[str, Any], overrides: tuple[str, ...] = ()) -> LoadedSuite:
    """The suite's definition, loaded from the suite's folder: a suite file's name and a suite as
    data's files are relative to it. The working directory is the worker's again afterwards (the
    run itself uses the loaded suite's absolute folder)."""
    from agenteval.suite.loader import load_definition

    here = Path.cwd()
    os.chdir(here / folder)
    try:
        return load_definition(Path(definition).resolve() if isinstance(definition, str) else definition, overrides)
    finally:
        os.chdir(here)
