"""What a local run (agenteval.api) and a Ray worker (agenteval.ray_executor) both build: the
run's settings, the runner, the endpoints, and the errors they share.

It lives below both, so neither imports the other for it: the API starts Ray runs, and a worker
builds the very runner a local run builds from here. Heavy modules (the runner, endpoints) are
imported when first used.
"""

from __future__ import annotations

import difflib
import inspect
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

if TYPE_CHECKING:
    from agenteval.suite.loader import LoadedSuite

__all__ = ["RunError", "RunSettings", "make_runner", "open_endpoints", "parse_shard"]


class RunError(Exception):
    """An option or input of the run is invalid (a bad shard, a missing predictions file, a results
    file another run holds...): nothing ran."""


RunError.__module__ = "agenteval.api"  # where users import it from, and how tracebacks name it


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1-based): this process runs every N-th case starting with the I-th."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise RunError(f"--shard takes I/N with 1 <= I <= N, e.g. 2/4; got {text!r}")
    return int(match.group(1)), int(match.group(2))


MAX_WORKERS = 1024  # a thread each: far more than any machine overlaps usefully, far fewer than it can start


class RunSettings(BaseModel):
    """A run's options, declared once: `agenteval run` fills them from its command line,
    `run_suite` takes them (as keyword arguments or this object), and a Ray run ships them to its
    workers. Checked together when made: a bad value or combination is a RunError naming the option."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    output: Any = None  # a JSONL path, a binary stream, "auto", or None (see run_suite)
    store: Any = None  # a store URL or a Store
    predictions: Path | None = None  # --predictions: answers by case id in place of the target
    traces: Path | None = None  # --traces: each case's answer is its trace in this OTLP/JSON export, in place of the target
    traces_match: str = "trace_id"  # --traces-match: how a case names its trace (as a traces target's `match:`)
    workers: int | None = None  # None: auto_workers
    evaluators: tuple[str, ...] = ()  # --evaluator: only these
    filters: tuple[str, ...] = ()  # --filter GLOB
    tags: tuple[str, ...] = ()  # --tag
    shard: tuple[int, int] | None = None  # --shard I/N
    first: int | None = None  # --first N: a smoke run of the first N selected cases
    sample: int | None = None  # --sample N: a smoke run of N cases drawn with sample_seed, stratified by tag
    sample_seed: int = 0  # --sample-seed
    resume: bool = False
    overwrite: bool = False
    repeat: int = 1
    cache: bool = True
    cache_dir: Path | None = None  # default: .agenteval/cache next to the suite
    refresh_cache: bool = False
    executor: str = "local"  # local or ray
    ray_address: str | None = None
    batch_size: int = 64  # cases per Ray task
    base_dir: Path | None = None  # a suite given as data: its files are relative to this folder
    task: Any = None  # a Python function answering in place of the target (checked when it becomes one)
    max_concurrency: int | None = None  # task=: calls at once
    task_timeout: float | None = None  # task=: seconds per call
    targets: tuple[str, ...] = ()  # --target: the cells to run
    prompts: tuple[str, ...] = ()  # --prompt
    overrides: tuple[str, ...] = ()  # --set KEY=VALUE
    min_pass_rate: float | None = None  # the gate each cell must pass
    otel: bool = False  # --otel: OpenTelemetry spans of the run (agenteval.tracing)

    @classmethod
    def of(cls, settings: RunSettings | None = None, /, **options: Any) -> RunSettings:
        """`settings` with `options` changed (or the options alone): an unknown option is a
        TypeError with its likely name, a value of the wrong type a RunError naming the option."""
        unknown = [name for name in options if name not in RunSettings.model_fields]
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(RunSettings.model_fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"run_suite() got an unexpected keyword argument {unknown[0]!r}{hint}")
        values = {name: getattr(settings, name) for name in RunSettings.model_fields} if settings is not None else {}
        try:
            return RunSettings(**(values | options))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(map(str, error["loc"])) or "settings"
            raise RunError(f"{where}: {error['msg']} (got {error.get('input')!r})") from None

    @field_validator("evaluators", "filters", "tags", "targets", "prompts", "overrides", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,)
        return tuple(value) if isinstance(value, (list, tuple, set, frozenset)) or inspect.isgenerator(value) else value  # else: pydantic says what is wrong

    @field_validator("shard", mode="before")
    @classmethod
    def _shard(cls, value: Any) -> Any:
        return parse_shard(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> RunSettings:
        """The checks that need no file, server or cluster (those are run_suite's, in order)."""
        if self.workers is not None and self.workers < 1:
            raise RunError(f"--workers must be at least 1, got {self.workers}")
        if self.workers is not None and self.workers > MAX_WORKERS:
            raise RunError(f"--workers must be at most {MAX_WORKERS} (a thread each), got {self.workers}")
        if self.repeat < 1:
            raise RunError(f"--repeat must be at least 1, got {self.repeat}")
        for option, value in (("--first", self.first), ("--sample", self.sample)):
            if value is not None and value < 1:
                raise RunError(f"{option} must be at least 1, got {value}")
        if self.first is not None and self.sample is not None:
            raise RunError("--first takes the first cases and --sample draws some; give one")
        if self.sample_seed and self.sample is None:
            raise RunError("--sample-seed goes with --sample")
        if self.repeat > 1 and self.resume:
            raise RunError("--repeat cannot continue a run (--resume): start a new one")
        if not self.cache and (self.refresh_cache or self.cache_dir is not None):
            raise RunError("--no-cache goes with neither --refresh-cache nor --cache-dir")
        if self.executor not in ("local", "ray"):
            raise RunError(f"--executor takes local or ray, got {self.executor!r}")
        if self.batch_size < 1:
            raise RunError(f"--batch-size must be at least 1, got {self.batch_size}")
        if self.executor == "local" and self.ray_address:
            raise RunError("--ray-address goes with --executor ray")
        if self.executor == "ray" and (self.task is not None or self.max_concurrency is not None or self.task_timeout is not None):
            raise RunError("a Python task runs in this process: it goes with executor='local'")
        if self.resume and self.output is not None and not isinstance(self.output, (str, os.PathLike)):
            raise RunError("--resume needs a results file, not a stream (-o -)")
        if self.resume and self.overwrite:
            raise RunError("--resume continues the results file and --overwrite starts it again; give one")
        if self.task is not None and self.predictions is not None:
            raise RunError("task= and predictions= are two sources of answers; give one")
        if self.traces is not None and (self.predictions is not None or self.task is not None):
            raise RunError(f"--traces and {'--predictions' if self.predictions is not None else 'task='} are two sources of answers; give one")
        if self.traces_match != "trace_id":
            if self.traces is None:
                raise RunError("--traces-match goes with --traces")
            from agenteval.targets.traces import checked_match

            try:
                checked_match(self.traces_match)
            except ValueError as exc:
                raise RunError(f"--traces-match: {exc}") from None
        if self.task is None and (self.max_concurrency is not None or self.task_timeout is not None):
            raise RunError("max_concurrency= and task_timeout= go with task= (a suite's python target sets its own)")
        if self.min_pass_rate is not None and not 0 <= self.min_pass_rate <= 1:
            raise RunError(f"--min-pass-rate must be between 0 and 1, got {self.min_pass_rate}")
        if self.store is not None and not isinstance(self.store, str) and not callable(getattr(self.store, "save", None)):
            raise RunError(f"store= takes a URL such as sqlite:///runs.db, or a Store; got {type(self.store).__name__}")
        if self.store is not None and self.output is not None:
            raise RunError("--store and -o are two destinations for the results; give one")
        return self

    def shipped(self, cache_dir: Path | None = None) -> RunSettings:
        """What a Ray worker is sent: the settings without what stays on the driver (where results
        go, the predictions file, which travel with each batch) and, on one machine, with the
        driver's own cache folder."""
        update: dict[str, Any] = {"output": None, "store": None, "predictions": None, "task": None}
        if cache_dir is not None:
            update["cache_dir"] = cache_dir
        return self.model_copy(update=update)


def make_runner(
    loaded: LoadedSuite, run_id: str, processes: Any, answers: Any, only: frozenset[str] | None, endpoints: Any,
    settings: RunSettings,
) -> Any:
    """The runner that scores cases, for a local run and for each Ray worker alike."""
    from agenteval.runner import Runner

    traces = receiver = None
    if settings.traces is not None:
        from agenteval.targets.traces import TracesTarget

        traces = TracesTarget.given(settings.traces, settings.traces_match)
    elif getattr(loaded.suite, "traces", None) is not None and loaded.suite.traces.receive and answers is None:
        receiver = start_receiver(loaded)
    return Runner(
        loaded, run_id, processes, answers, only, endpoints=endpoints, repeat=settings.repeat, traces=traces, receiver=receiver,
    )


def start_receiver(loaded: LoadedSuite) -> Any:
    """The run's span receiver (`traces: {receive: true}`); RunError when its port cannot be had."""
    from agenteval.traces.receiver import SpanReceiver

    limits, settings = loaded.suite.limits, loaded.suite.traces
    try:
        return SpanReceiver(limits.receive_body_mb, limits.receive_mb, limits.trace_spans, settings.port)
    except OSError as exc:
        raise RunError(f"traces.receive: cannot listen on 127.0.0.1:{settings.port}: {exc.strerror or exc}") from None


def open_endpoints(loaded: LoadedSuite, settings: RunSettings, environ: Any = None) -> Any:
    """The run's HTTP client and response cache; keys and `${NAME}` are read from `environ` (the
    run's, see agenteval.process.Processes), else this process's environment. Raises CacheError."""
    from agenteval.endpoints import open_endpoints as open_

    suite: Any = loaded.suite
    return open_(
        loaded.base_dir, getattr(suite, "models", None), getattr(suite, "prices", None),
        settings.cache_dir, settings.cache, settings.refresh_cache, environ,
    )

