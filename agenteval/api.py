"""The Python API: `run_suite` runs a suite, `evaluate` scores answers held in memory.

`agenteval run` is this API plus a terminal: the command prints what a `SuiteRun` reports and
turns its summary into an exit code. Nothing here prints, exits, installs signal handlers or
changes process-wide state; problems are exceptions (`SuiteInvalid` lists every problem of a
suite, `RunError` names a bad option or input) and warnings are data (`SuiteRun.warnings`).

    run = agenteval.run_suite("suite.yaml", output="results.jsonl")
    for result in run:             # one CaseResult per case, as it finishes (already saved)
        print(result.case_id, result.verdict, result.score)
    run.summary["pass_rate"]       # what <results>.summary.json holds

A pipeline's own values (pydantic models, dataclasses, Decimals, numpy numbers, dates...) are
converted once where they enter (agenteval.values); a function can be the target (`task=`), an
evaluator can be a Python callable, and `aevaluate` / `async for` fit an asyncio program
(docs/python-api.md).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agenteval.runs import RunError, RunSettings, make_runner, open_endpoints
from agenteval.version import __version__

if TYPE_CHECKING:
    from agenteval.evaluators.base import EvaluatorConfig
    from agenteval.results import CaseResult, Summary
    from agenteval.stores.base import Store
    from agenteval.suite.loader import LoadedSuite
    from agenteval.suite.models import Case
    from agenteval.suite.problems import Problem

__all__ = [
    "RESULTS_DIR", "FinishedRun", "RunError", "RunSettings", "SuiteRun", "aevaluate", "evaluate", "evaluator", "exit_code",
    "load_run", "run_suite",
]

RESULTS_DIR = "agenteval-results"  # where output="auto" puts results files
EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_ERRORED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def run_suite(
    suite: str | os.PathLike[str] | Mapping[str, Any], settings: RunSettings | None = None, **options: Any,
) -> SuiteRun:
    """Validate a suite and prepare its run; iterate the returned `SuiteRun` to run the cases.

    The options are `RunSettings`' fields, given as keyword arguments (`output=`, `workers=`...),
    as a `RunSettings`, or both (the keywords change the object's). `suite` is a suite file, or a
    suite as data (a mapping with the YAML's keys) whose files are relative to `base_dir`
    (default: the current folder). Results are saved to `store` (a URL such as
    `sqlite:///runs.db`, or a `Store`), else to `output` (a JSONL path, a binary stream, or
    "auto": `agenteval-results/<suite>-<time>-<run>.jsonl`), else to the suite's own `store:`,
    else nowhere (only yielded). `resume` continues the run in that file or store, skipping its
    finished cases. A results file that holds a finished run is replaced when the new run ends
    (readers never see a mix); one that holds an interrupted run is refused (RunError's sibling
    StoreError) unless `resume` or `overwrite`. The other options are `agenteval run`'s (see
    `agenteval run --help`).

    Raises SuiteInvalid (every problem of the suite), RunError (a bad option or input),
    StoreError (a store or results file that cannot be opened) and TypeError (an unknown option).

    `task` is a Python function (sync or async) that answers each case in place of the suite's
    target: at most `max_concurrency` calls at once (default 8), each within `task_timeout`
    seconds (default 60). A suite given as data may hold Python objects: evaluators that are
    callables (see `evaluate`) and cases whose values are the pipeline's own types.

    A suite with `targets:` and `prompts:` runs every case in each (target, prompt) cell; `targets`
    and `prompts` choose cells by name (`--target`, `--prompt`), `overrides` are `--set KEY=VALUE`
    changes to the suite, and `min_pass_rate` is the gate each cell must pass (`--min-pass-rate`).
    """
    from agenteval.results import Summary
    from agenteval.runner import Predictions, PredictionsError
    from agenteval.suite.loader import load_suite, load_suite_data
    from agenteval.suite.selection import Selection

    settings = RunSettings.of(settings, **options)
    _check_executor(settings)
    if settings.otel:
        _check_tracing()
    selection = Selection(settings.filters, settings.tags, settings.shard, settings.first, settings.sample, settings.sample_seed)
    originals: dict[str, Any] | None = None
    exact: dict[str, tuple[Any, Any, Any]] | None = None
    if isinstance(suite, Mapping):
        suite, originals, exact = _python_values(suite)
        if settings.executor == "ray" and _holds_python_objects(suite):
            raise RunError("evaluators given as Python objects run in this process: they go with executor='local'")
        if settings.overrides:
            from agenteval.suite.overrides import OverrideError, apply_overrides

            try:
                suite = apply_overrides(dict(suite), settings.overrides)
            except OverrideError as exc:
                raise RunError(str(exc)) from None
            settings = settings.model_copy(update={"overrides": ()})  # applied: Ray workers are sent the suite as data
        loaded = load_suite_data(suite, Path(settings.base_dir or Path.cwd()).resolve(), selection)
    else:
        loaded = load_suite(Path(suite), selection, settings.overrides)
    _use_task(loaded, settings)
    _hand_originals(loaded, originals)
    from agenteval.suite.matrix import CellChoiceError

    try:
        loaded.choose_cells(settings.targets, settings.prompts)
    except CellChoiceError as exc:
        raise RunError(str(exc)) from None
    _check_credentials(loaded, settings)
    if settings.executor == "ray":
        from agenteval.ray_executor import plan_shipment

        plan_shipment(loaded, cluster=settings.ray_address is not None)  # every file the suite names can reach the workers
    if not (loaded.case_count if loaded.selected is None else len(loaded.selected)):
        from agenteval.reports.numbers import counted

        shard = settings.shard
        raise RunError(
            f"no case selected: the suite has {counted(loaded.case_count)} and none matches"
            + "".join(f" --filter {g}" for g in settings.filters)
            + "".join(f" --tag {t}" for t in settings.tags)
            + (f" --shard {shard[0]}/{shard[1]}" if shard else "")
        )
    only, skipped = chosen_evaluators(loaded, list(settings.evaluators))

    answers = None
    if settings.predictions is not None:
        from agenteval.suite.matrix import suite_cells

        try:
            answers = Predictions(Path(settings.predictions))
        except PredictionsError as exc:
            raise RunError(str(exc)) from None
        try:  # every line names a cell the suite has (one not chosen with --target/--prompt is fine)
            answers.check_cells(cell.names for cell in suite_cells(loaded.suite))
        except PredictionsError as exc:
            answers.close()
            raise RunError(str(exc)) from None

    _check_traces(loaded, settings)
    run_id = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    cells = loaded.cells
    summary = Summary(settings.repeat, [] if _single_cell(cells) else [cell.names for cell in cells])
    summary.min_pass_rate = settings.min_pass_rate
    try:
        destination, note = _destination(loaded, settings, run_id)
        if settings.resume and destination is None:
            raise RunError("--resume continues a run in a results file or a store: give output= or store=")
        done: dict[str, set[tuple[str | None, str | None]]] = {}
        if destination is not None:
            selection = {
                "filters": settings.filters, "tags": settings.tags, "shard": settings.shard, "evaluators": only, "repeat": settings.repeat,
                "first": settings.first, "sample": settings.sample, "seed": settings.sample_seed,
            }
            run_id, done = _start(destination, loaded, run_id, settings.resume, summary, selection)
    except BaseException:
        if answers is not None:
            answers.close()
        raise
    source = {key: value for key, value in suite.items() if key != "cases"} if isinstance(suite, Mapping) else loaded.path
    run = SuiteRun(
        loaded, settings, source=source, run_id=run_id, store=destination, summary=summary, done=done,
        answers=answers, only=only, skipped=skipped, exact=exact,
    )
    run.resume_note = note
    if settings.otel:
        run._start_tracing()
    return run


def _check_tracing() -> None:
    """otel=True without the `otel` extra: a RunError naming the install, before any file is opened."""
    from agenteval.extras import MissingDependency, require

    try:
        for module in ("opentelemetry.sdk.trace", "opentelemetry.semconv._incubating.attributes.gen_ai_attributes"):
            require(module, "--otel")
    except MissingDependency as exc:
        raise RunError(str(exc)) from None


def _check_traces(loaded: LoadedSuite, settings: RunSettings) -> None:
    """`--traces FILE` names a file; `traces: {receive: true}` receives in this process."""
    if settings.traces is not None and not Path(settings.traces).is_file():
        where = "a folder" if Path(settings.traces).is_dir() else "no such file"
        raise RunError(f"--traces {settings.traces}: {where} (give the OTLP/JSON export, e.g. the collector's file exporter output)")
    receiving = loaded.suite.traces is not None and loaded.suite.traces.receive
    if receiving and settings.executor == "ray" and settings.traces is None and settings.predictions is None:
        raise RunError("traces: {receive: true} receives spans in this process: it goes with --executor local")
    if receiving and loaded.suite.traces.port:  # a port that cannot be had stops the run before its results file starts
        import socket

        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", loaded.suite.traces.port))
            except OSError as exc:
                raise RunError(f"traces.receive: cannot listen on 127.0.0.1:{loaded.suite.traces.port}: {exc.strerror or exc}") from None


def _use_task(loaded: LoadedSuite, settings: RunSettings) -> None:
    """`task=`: the Python function becomes the suite's target."""
    if settings.task is None:
        return
    if loaded.suite.targets is not None:
        raise RunError("task= answers in place of the suite's target: give a suite with one `target:`, not `targets:`")
    from agenteval.targets.python import DEFAULT_MAX_CONCURRENCY, DEFAULT_TIMEOUT, PythonTarget

    try:
        loaded.suite.target = PythonTarget.of(
            settings.task,
            DEFAULT_MAX_CONCURRENCY if settings.max_concurrency is None else settings.max_concurrency,
            DEFAULT_TIMEOUT if settings.task_timeout is None else settings.task_timeout,
        )
    except (TypeError, ValueError) as exc:
        raise RunError(str(exc)) from None


def _check_credentials(loaded: LoadedSuite, settings: RunSettings) -> None:
    """SuiteInvalid naming what to set when a `models:` entry's credential is missing, or a chosen
    target's (its `credential_problem`, agenteval.agents.protocol) unless its replies are cached and a
    cache exists to replay them from, or the answers are read from a file (`--predictions`: no target
    is asked); LoadedSuite.credential_problems."""
    from agenteval.suite.loader import SuiteInvalid

    problems = loaded.credential_problems(
        settings.cache_dir, settings.cache and not settings.refresh_cache, targets=settings.predictions is None)
    if problems:
        raise SuiteInvalid(problems)


def _readable(store: Store | None) -> bool:
    """Whether a run's results can be read back from where they were saved (not a stream)."""
    if store is None:
        return False
    from agenteval.stores.jsonl import JsonlStore

    return not isinstance(store, JsonlStore) or store.is_file


def _smoke(loaded: LoadedSuite) -> dict[str, Any]:
    """A smoke run says so in its summary: `{"smoke": {"first": 3, "of": 8}}` (or sample, seed, of)."""
    smoke = loaded.index.selection.smoke
    return {"smoke": {**smoke, "of": loaded.index.sampled_from}} if smoke is not None else {}


def _single_cell(cells: list[Any]) -> bool:
    """A run of the one unnamed target without prompts: result lines and summaries name no cell."""
    return len(cells) == 1 and cells[0].names == (None, None)


def evaluate(
    cases: Iterable[Mapping[str, Any] | Case],
    evaluators: Iterable[Mapping[str, Any] | EvaluatorConfig | Callable[..., Any] | Any],
    *,
    task: Callable[..., Any] | None = None,
    max_concurrency: int | None = None,
    task_timeout: float | None = None,
    name: str = "evaluate",
    workers: int | None = None,
    base_dir: str | os.PathLike[str] | None = None,
    store: str | Store | None = None,
    output: str | os.PathLike[str] | IO[bytes] | None = None,
    otel: bool = False,
) -> SuiteRun:
    """Score answers held in memory: each case has `id`, `input`, `expected` and the candidate
    answer as `output` (or `task`, a function sync or async, answers from `input`); evaluators are
    configs as the YAML writes them (dicts), typed configs (e.g. `FieldAccuracy(...)`), or Python
    objects: a callable `(ctx) -> bool | float | dict | EvaluatorResult` or an object with
    `evaluate(ctx)` (see `evaluator()`). Values may be the pipeline's own types (pydantic models,
    dataclasses, Decimals, numpy numbers, dates; docs/python-api.md). Nothing is written unless
    `store` or `output` says where; `otel=True` traces the run as `--otel` does. Iterate the result,
    or read its `summary`.

        run = agenteval.evaluate(
            [{"id": "1", "expected": {"total": 10}, "output": {"total": 10}}],
            [{"type": "field_accuracy", "fields": [{"path": "total"}]}],
        )
        [result.verdict for result in run]  # ['pass']

    Raises SuiteInvalid when a case or an evaluator is invalid, or a value has no plain form
    (every problem at once, naming the case and where in it).
    """
    data = {"name": name, "evaluators": list(evaluators), "cases": list(cases)}  # run_suite converts each once (_python_values)
    if workers is None:
        workers = None if task is not None else 1  # a task's calls overlap: max_concurrency workers
    return run_suite(
        data, workers=workers, base_dir=base_dir, cache=False, task=task, max_concurrency=max_concurrency,
        task_timeout=task_timeout, store=store, output=output, otel=otel,
    )


async def aevaluate(*args: Any, **kwargs: Any) -> SuiteRun:
    """`evaluate` for an asyncio program: takes the same arguments, runs every case without
    blocking the event loop and returns the finished run (read its `summary`). Cancelling the
    awaiting task stops the run, keeping every finished case."""
    run = evaluate(*args, **kwargs)
    await run.asummary()
    return run


def evaluator(
    check: Any, *, name: str | None = None, weight: float = 1.0, min_score: float | None = None, timeout: float = 60.0,
) -> EvaluatorConfig:
    """A Python callable `(ctx) -> bool | float | dict | EvaluatorResult`, or an object with
    `evaluate(ctx)` (sync or async), as an evaluator with a name, weight, pass mark and time limit
    (`evaluate()` takes the bare callable too, named after it)."""
    from agenteval.evaluators.callable import CallableEvaluator

    return CallableEvaluator.of(check, name=name, weight=weight, min_score=min_score, timeout=timeout)


def _as_data(item: Any) -> Any:
    """A typed config or case as the mapping it was validated from (pydantic models dump to it)."""
    dump = getattr(item, "model_dump", None)
    return dump(mode="json", exclude_unset=True) | _type_of(item) if dump is not None else item


def _evaluator_data(item: Any) -> Any:
    """A suite's evaluator as the loader takes it: a mapping, a typed config's mapping, or the
    CallableEvaluator of a Python object (kept as an object: it holds the callable)."""
    from agenteval.evaluators.base import EvaluatorConfig
    from agenteval.evaluators.callable import CallableEvaluator

    if isinstance(item, CallableEvaluator):
        return item
    if isinstance(item, EvaluatorConfig):
        return _as_data(item)
    if isinstance(item, Mapping) or isinstance(item, (str, bytes, int, float)) or item is None:
        return item  # validation says what is wrong with a non-mapping
    if callable(item) or callable(getattr(item, "evaluate", None)):
        return CallableEvaluator.of(item)
    return item


def _case_data(case: Any) -> Any:
    """A case as a mapping; a Case model's own values kept as they are (its Python objects too)."""
    if isinstance(case, Mapping):
        return case
    from agenteval.suite.models import Case

    if isinstance(case, Case):
        return {key: getattr(case, key) for key in case.model_fields_set}
    return case


_CASE_VALUES = ("input", "expected", "output", "metadata")


def _python_values(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, tuple[Any, Any, Any]] | None]:
    """A suite given as data with every Python value in its cases converted once (agenteval.values):
    (the data, each changed case's originals by id, each case's exact input, expected and output
    where a Decimal keeps digits a float does not). Raises SuiteInvalid naming each case and path that
    cannot be converted."""
    from agenteval.suite.loader import IN_MEMORY, SuiteInvalid
    from agenteval.suite.problems import Problem
    from agenteval.values import Originals, ValueNotPlain, is_plain, plain_and_exact

    data = dict(data)
    if isinstance(data.get("evaluators"), (list, tuple)):
        data["evaluators"] = [_evaluator_data(item) for item in data["evaluators"]]
    cases = data.get("cases")
    if not isinstance(cases, (list, tuple)):
        return data, None, None
    problems: list[Problem] = []
    originals: dict[str, Any] = {}
    exact: dict[str, tuple[Any, Any, Any]] = {}
    converted: list[Any] = []
    for index, case in enumerate(cases):
        unplain = None  # the first value known to need converting (those before it are plain)
        if type(case) is dict and "evaluators" not in case:
            for key in _CASE_VALUES:
                if not is_plain(case.get(key)):
                    unplain = key
                    break
            else:  # the usual case (parsed JSON): kept as it is, nothing to convert (validation reads it, never changes it)
                converted.append(case)
                continue
        case = _case_data(case)
        if not isinstance(case, Mapping):
            converted.append(case)  # the loader names the problem
            continue
        record = dict(case)
        case_id = record.get("id")
        shown = f"case {case_id!r}: " if isinstance(case_id, (str, int)) and not isinstance(case_id, bool) else f"case {index + 1}: "
        changed = False
        exact_forms: dict[str, Any] = {}
        for key in _CASE_VALUES[_CASE_VALUES.index(unplain):] if unplain is not None else _CASE_VALUES:
            if key not in record:
                continue
            try:
                plain, exact_form = plain_and_exact(record[key], key, check=key != unplain)
            except ValueNotPlain as exc:
                problems.append(Problem(Path(IN_MEMORY), None, ("cases", index, key), f"{shown}`{exc.path}`: {exc.what}"))
                continue
            except RecursionError:
                problems.append(Problem(Path(IN_MEMORY), None, ("cases", index, key), f"{shown}`{key}` contains itself"))
                continue
            if plain is not record[key]:
                changed = True
                record[key] = plain
            if exact_form is not None:
                exact_forms[key] = exact_form
        if isinstance(record.get("evaluators"), (list, tuple)):
            record["evaluators"] = [_evaluator_data(item) for item in record["evaluators"]]
        if changed and isinstance(case_id, (str, int)) and not isinstance(case_id, bool):
            key_id = str(case_id)
            originals[key_id] = Originals(*(case.get(key) if key != "metadata" else case.get(key, {}) for key in _CASE_VALUES))
            if exact_forms.keys() - {"metadata"}:  # the results line writes these three
                exact[key_id] = (exact_forms.get("input"), exact_forms.get("expected"), exact_forms.get("output"))
        converted.append(record)
    if problems:
        raise SuiteInvalid(problems)
    data["cases"] = converted
    return data, originals or None, exact or None


def _holds_python_objects(data: Mapping[str, Any]) -> bool:
    from agenteval.evaluators.callable import CallableEvaluator

    def callable_in(items: Any) -> bool:
        return isinstance(items, (list, tuple)) and any(isinstance(item, CallableEvaluator) for item in items)

    cases = data.get("cases")
    return callable_in(data.get("evaluators")) or (
        isinstance(cases, (list, tuple)) and any(isinstance(case, Mapping) and callable_in(case.get("evaluators")) for case in cases)
    )


def _hand_originals(loaded: LoadedSuite, originals: dict[str, Any] | None) -> None:
    """Give the python target and the Python evaluators the caller's own objects for each case."""
    if originals is None:
        return
    target = loaded.suite.target
    if target.type == "python":
        target._originals = originals  # type: ignore[union-attr]
    for evaluator in [*loaded.suite.evaluators, *(e for case in loaded.cases or () for e in case.evaluators or ())]:
        if evaluator.type == "callable":
            evaluator._originals = originals  # type: ignore[attr-defined]


def _type_of(config: Any) -> dict[str, Any]:
    type_name = getattr(type(config), "type_name", None)
    return {"type": type_name} if type_name else {}


class _ReadableRun:
    """What a run offers to a notebook once it is finished, a live one (SuiteRun) or one read again
    (`load_run`): its results again, as plain dicts or a pandas DataFrame, and a short repr."""

    run_id: str

    @property
    def summary(self) -> dict[str, Any]:
        raise NotImplementedError

    def results(self) -> Iterator[CaseResult]:
        raise NotImplementedError

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every result as a plain dict (a results line's keys; evaluator results as dicts)."""
        if not self._fresh_results():
            return [result.to_dict() for result in self.results()]
        from dataclasses import fields

        from agenteval.evaluators.base import EvaluatorResult
        from agenteval.results import CaseResult

        # Results decoded from their lines on this call share nothing, so their fields are taken as they are:
        # what `to_dict()` gives, without its deep copy (a tenth of the time).
        keys, inner = [item.name for item in fields(CaseResult)], [item.name for item in fields(EvaluatorResult)]
        rows = []
        for result in self.results():
            row = {key: getattr(result, key) for key in keys}
            row["evaluator_results"] = [{key: getattr(item, key) for key in inner} for item in result.evaluator_results]
            rows.append(row)
        return rows

    def _fresh_results(self) -> bool:
        """Whether `results()` decodes new objects from lines on every call (then nothing in them is shared)."""
        return False

    def to_dataframe(self) -> Any:
        """A pandas DataFrame, one row per result: case_id, target, prompt, repetition, verdict,
        score, error, duration_ms, input, expected, output, then each evaluator's score as
        `score.<name>`. Needs pandas: `pip install 'agenteval[pandas]'`."""
        from agenteval.extras import require

        pandas = require("pandas", "to_dataframe()")
        rows = []
        for result in self.results():
            row = {key: getattr(result, key) for key in _FRAME_COLUMNS}
            row.update((f"score.{item.name}", item.score) for item in result.evaluator_results)
            rows.append(row)
        return pandas.DataFrame(rows, columns=None if rows else list(_FRAME_COLUMNS))

    def _describe(self, state: str, report: dict[str, Any] | None) -> str:
        """`<Kind run_id of 'suite': counts, pass rate (state)>`, from the summary once there is one."""
        from agenteval.reports.numbers import counted

        counts = report["counts"] if report is not None else self._live_counts()
        total, passed = counts["total"], counts["passed"]
        rate = f"{passed / total:.1%}" if total else "n/a"
        suite = report["suite"] if report is not None else self._suite_name()
        return (
            f"<{type(self).__name__} {self.run_id} of {suite!r}: {counted(total)}, {passed} passed, {counts['failed']} failed, "
            f"{counts['errored']} errored, pass rate {rate} ({state})>"
        )

    def _live_counts(self) -> dict[str, int]:
        raise NotImplementedError

    def _suite_name(self) -> str:
        raise NotImplementedError


_FRAME_COLUMNS = (
    "case_id", "target", "prompt", "repetition", "verdict", "score", "error", "duration_ms", "input", "expected", "output",
)


class SuiteRun(_ReadableRun):
    """A run in progress. Iterate it once for each case's result as it finishes (saved before it is
    yielded); `summary` runs whatever is left and returns the run's summary; `results()` reads
    every result again once it is finished; `close()` (or leaving a `with` block) stops early,
    keeping every finished case. Not thread-safe."""

    def __init__(
        self,
        loaded: LoadedSuite,
        settings: RunSettings,
        *,
        source: Path | dict[str, Any],
        run_id: str,
        store: Store | None,
        summary: Summary,
        done: dict[str, set[tuple[str | None, str | None]]],
        answers: Any = None,
        only: frozenset[str] | None = None,
        skipped: list[str] | None = None,
        exact: dict[str, tuple[Any, Any, Any]] | None = None,
    ) -> None:
        from agenteval.process import Processes

        self.loaded = loaded
        self.settings = settings
        self._source = source  # what Ray workers load the suite's definition from
        self.run_id = run_id
        self.store = store
        selected, cells = loaded.selected, loaded.cells
        self.selected_count = (loaded.case_count if selected is None else len(selected)) * len(cells)  # cases x cells
        chosen = {cell.names for cell in cells}
        self.resumed_count = sum(
            len(ran & chosen) for case_id, ran in done.items() if selected is None or case_id in selected
        )
        self.skipped_evaluators = skipped or []
        self.workers = settings.workers or auto_workers(loaded)
        self.interrupted = False
        self.write_failure: str | None = None  # the results could not be saved: why
        self.write_lost = 0  # finished cases the failed write could not keep (counted in the summary, not in the file)
        self._summary = summary
        self._done = done
        self._answers = answers
        self._only = only
        self._processes = Processes(loaded.env_values)  # a suite's `env_file:` reaches the run, never os.environ
        self._endpoints: Any = None
        self._results: Iterator[CaseResult] | None = None  # the runner's (or Ray's) results
        self._saving: Iterator[CaseResult] | None = None  # the same, saved and counted: what iterating yields
        self._finished = False
        self._report: dict[str, Any] | None = None
        self._started = time.perf_counter()
        self._started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._exact_cases = exact  # case id -> (input, expected, output) holding Decimal digits
        self._target_exact: dict[tuple[str, int], Any] | None = None  # a python target's answers holding Decimal digits
        # A run saved nowhere it can be read back from (no destination, a stream) keeps its results
        # here for `results()`, as the lines a results file would hold (its cases were given in
        # memory, or its caller chose to keep no file).
        self._kept: list[bytes] | None = [] if not _readable(store) else None
        self._tracer: Any = None  # otel=True: turns each result into spans (agenteval.tracing)
        self.otel_warning: str | None = None  # otel=True: no collector answered, or some spans could not be exported
        self.resume_note: str | None = None  # resume without output: which run it continues, when not simply the newest

    def __repr__(self) -> str:
        state = "interrupted" if self.interrupted else "finished" if self._report is not None or self._finished else (
            "running" if self._results is not None else None
        )
        if state is None:  # what it will run, not counts of nothing
            from agenteval.reports.numbers import counted

            return f"<SuiteRun {self.run_id} of {self._suite_name()!r}: {counted(self.todo_count)} to run (not started)>"
        return self._describe(state, self._report)  # never runs or closes anything

    def _live_counts(self) -> dict[str, int]:
        verdicts = self._summary.verdicts
        return {"total": self._summary.total, "passed": verdicts["pass"], "failed": verdicts["fail"], "errored": verdicts["error"]}

    def _suite_name(self) -> str:
        return self.loaded.suite.name

    def _fresh_results(self) -> bool:
        from agenteval.stores.jsonl import JsonlStore

        return self._kept is not None or isinstance(self.store, JsonlStore)

    def results(self) -> Iterator[CaseResult]:
        """Every result of the run, read again: from its results file or store (a resumed run's
        earlier cases too), or as kept in memory for a run saved nowhere. Runs the cases not yet
        run first, as `summary` does."""
        self.summary
        if self._kept is not None:
            from agenteval.process import decode_json
            from agenteval.results import case_from_dict

            return (case_from_dict(decode_json(line)) for line in self._kept)
        assert self.store is not None
        return self.store.read_run(self.run_id)

    @property
    def warnings(self) -> list[Problem]:
        """What the suite's validation warned about (the run goes on)."""
        return self.loaded.warnings

    @property
    def todo_count(self) -> int:
        """Selected cases this run still has to score (an earlier run's are skipped with resume)."""
        return self.selected_count - self.resumed_count

    @property
    def results_file(self) -> Path | None:
        """The JSONL file the results go to, if they go to a file."""
        from agenteval.stores.jsonl import JsonlStore

        store = self.store
        return store.path if isinstance(store, JsonlStore) else None

    def previous_results(self) -> Iterator[CaseResult]:
        """With resume: the results the earlier run left, read back from the file or store."""
        if self.store is None or not self.resumed_count:
            return iter(())
        return self.store.read_run(self.run_id)

    @property
    def tracing(self) -> bool:
        """Whether the run's spans go to an OpenTelemetry collector (otel=True and one answered)."""
        return self._tracer is not None

    def _start_tracing(self) -> None:
        from agenteval.tracing import CollectorUnreachable, run_tracer

        try:
            self._tracer = run_tracer()
        except CollectorUnreachable as exc:  # the run goes on without spans: one warning says so
            self.otel_warning = f"warning: {exc}; the run goes on without spans"

    def __iter__(self) -> Iterator[CaseResult]:
        if self._results is not None or self._report is not None:
            raise RuntimeError("a SuiteRun is iterated once")
        self._results = self._start_results()
        self._saving = self._saved(self._results)
        return self._saving

    def _saved(self, results: Iterator[CaseResult]) -> Iterator[CaseResult]:
        from agenteval.results import ResultsWriteError, dump_line
        from agenteval.stores.jsonl import JsonlStore

        save = None if self.store is None else self.store.save
        trace = None if self._tracer is None else self._tracer.case
        keep = None if self._kept is None else self._kept.append
        count = self._summary.add
        target = self.loaded.suite.target
        self._target_exact = target._exact if target.type == "python" else None  # type: ignore[union-attr]
        exact = self._exact_line if self._exact_cases is not None or self._target_exact is not None else None
        digits = isinstance(self.store, JsonlStore)  # a JSONL line keeps a Decimal's digits; a SQL column the float
        try:
            for result in results:
                line = result if exact is None else exact(result)
                if save is not None:
                    save(line if digits else result)
                if trace is not None:
                    trace(result)
                count(result)
                if keep is not None:
                    keep(dump_line(line))  # as bytes: no objects for the garbage collector to walk
                yield result
            self._finished = True
        except ResultsWriteError as exc:
            self.write_failure = str(exc)
            self.write_lost = exc.lost
            raise
        finally:
            if not self._finished:  # an exception, Ctrl-C, or the caller stopped iterating
                self._stop()

    def _exact_line(self, result: CaseResult) -> CaseResult:
        """The result as its line is written: input, reference and answer with a Decimal's own digits
        (agenteval.values.ExactNumber) where the case or the python target had some."""
        from dataclasses import replace

        held = self._exact_cases.get(result.case_id) if self._exact_cases is not None else None
        given, reference, answer = held if held is not None else (None, None, None)
        if self._target_exact is not None:  # the python target answers, not the case's recorded output
            answer = self._target_exact.pop((result.case_id, result.repetition), None)
        changes = {}
        if answer is not None and result.error is None:
            changes["output"] = answer
        if given is not None:
            changes["input"] = given
        if reference is not None:
            changes["expected"] = reference
        return replace(result, **changes) if changes else result  # (one copy of the result, not one per value)

    def __aiter__(self) -> AsyncIterator[CaseResult]:
        """Each case's result as it finishes, for an asyncio program: the same run as iterating
        (the cases run on a thread; results are handed to the event loop). Cancelling the task
        that iterates stops the run, keeping every finished case; the run is then closed."""
        return self._async_results()

    async def asummary(self) -> dict[str, Any]:
        """`summary` without blocking the event loop: runs the cases not yet run, then closes."""
        if self._report is None:
            if self._results is None:
                async for _ in self:
                    pass
            import asyncio

            await asyncio.get_running_loop().run_in_executor(None, self.close)
        return self.summary

    async def _async_results(self) -> AsyncIterator[CaseResult]:
        import asyncio
        import threading

        loop = asyncio.get_running_loop()
        handed: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        iterator = iter(self)  # raises here, in the caller, if the run was iterated already
        driver_ident: list[int] = []

        def hand(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(handed.put_nowait, (kind, value))
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

        def drive() -> None:
            driver_ident.append(threading.get_ident())
            try:
                for result in iterator:
                    hand("result", result)
                hand("end", None)
            except _Stopped:
                hand("end", None)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the awaiting task
                hand("error", exc)

        driver = threading.Thread(target=drive, name="agenteval-run", daemon=True)
        driver.start()
        finished = False
        try:
            while True:
                kind, value = await handed.get()
                if kind == "result":
                    yield value
                elif kind == "error":
                    finished = True
                    raise value
                else:
                    finished = True
                    return
        finally:
            if not finished:  # cancelled, or the caller stopped iterating: stop the run where it is
                if _stop_thread(driver, driver_ident):
                    self.close()
                else:  # stuck in a call that never returns to Python: the summary is left unwritten
                    self.interrupted = True

    def _stop(self) -> None:
        self.interrupted = True
        self._processes.stop_all()
        if self.loaded.suite.target.type == "python":
            self.loaded.suite.target.cancel_calls()  # type: ignore[union-attr]
        if self._results is not None:
            self._results.close()  # type: ignore[attr-defined]

    def _start_results(self) -> Iterator[CaseResult]:
        from agenteval.endpoints import CacheError

        try:
            self._endpoints = open_endpoints(self.loaded, self.settings, self._processes.environ)
        except CacheError as exc:
            raise RunError(str(exc)) from None
        done, chosen = self._done, {cell.names for cell in self.loaded.cells}
        cases = self.loaded.iter_cases()  # the selected ones (without --resume: each of them)
        if done:
            cases = (case for case in cases if not chosen <= done.get(case.id, set()))
        if self.settings.executor == "ray":
            from agenteval.ray_executor import run_on_ray

            shipped = self.settings.model_copy(update={"workers": self.workers})
            return run_on_ray(self._source, self.loaded, cases, self.run_id, shipped, self._answers, self._only, done)
        target = self.loaded.suite.target
        if target.type == "python" and self._answers is None and self.settings.repeat == 1:
            from agenteval.targets.base import TargetRun

            from agenteval.run_context import RunContext

            context = RunContext(self.run_id, self.loaded.suite.name)  # each call's case is added (Prefetch)
            run = TargetRun(self.loaded.base_dir, self._processes, self._endpoints, context=context)
            prefetch = target.prefetching(cases, run)  # type: ignore[union-attr]
            if prefetch is not None:  # an async function: its calls run on the event loop alone
                runner = make_runner(self.loaded, self.run_id, self._processes, prefetch, self._only, self._endpoints, self.settings)
                return runner.run(prefetch.cases(), self.workers if _scoring_waits(self.loaded) else 1)
        runner = make_runner(self.loaded, self.run_id, self._processes, self._answers, self._only, self._endpoints, self.settings)
        runner.done = done
        return runner.run(cases, self.workers)

    @property
    def summary(self) -> dict[str, Any]:
        """The run's summary (counts, pass rate, per-evaluator and per-field figures, usage), as
        written beside the results; runs the cases not yet run first."""
        if self._report is None:
            if self._results is None:
                for _ in self:
                    pass
            self.close()
        assert self._report is not None
        return self._report

    def exit_code(self, min_pass_rate: float | None = None) -> int:
        """`agenteval run`'s exit code for this run: 0 passed, 1 failed, 3 errored, 130 interrupted.
        In a matrix run each cell must pass the gate (`min_pass_rate`, default the run's own)."""
        report = self.summary
        if self.interrupted:
            return EXIT_INTERRUPTED
        code = gated_exit_code(report, self.settings.min_pass_rate if min_pass_rate is None else min_pass_rate)
        return EXIT_FAILED if failed_limits(report) and code == EXIT_OK else code

    def close(self) -> None:
        """Stop (if cases remain), save the summary and release files, processes and connections.
        A failure to save is kept in `write_failure`."""
        if self._report is not None:
            return
        if self._saving is not None:
            self._saving.close()  # runs its `finally` if it had started
        if not self._finished and (self._results is not None or self.todo_count > 0):
            self._stop()
        self._processes.stop_all()
        if self._tracer is not None:  # flush the spans; a collector that refused some says so
            self.otel_warning = self._tracer.close()
        for resource in (self._answers, self._endpoints):
            if resource is not None:
                resource.close()
        self._report = self._build_summary()
        if self.store is not None:
            from agenteval.results import ResultsWriteError

            try:
                self.store.close_run(self.run_id, self._report)
            except ResultsWriteError as exc:
                if self.write_failure is None:
                    self.write_failure, self.write_lost = str(exc), exc.lost
            finally:
                self.store.close()

    def __enter__(self) -> SuiteRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build_summary(self) -> dict[str, Any]:
        from agenteval.stores.jsonl import JsonlStore

        loaded, summary = self.loaded, self._summary
        results_file = self.results_file
        report = {
            "run_id": self.run_id,
            "suite": loaded.suite.name,
            "agenteval_version": __version__,
            "started_at": self._started_at,
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "duration_s": time.perf_counter() - self._started,
            "interrupted": self.interrupted,
            "results_file": str(results_file) if results_file else None,
            "selected_cases": self.selected_count,
            **_smoke(loaded),
            "workers": self.workers,
            "evaluators_skipped": self.skipped_evaluators,
            **summary.to_dict(),
        }
        if _has_limits(loaded):  # latency, token_usage and cost evaluators also set run-wide limits
            from agenteval.evaluators.budgets import check_suite_limits

            checks = check_suite_limits(loaded.suite.evaluators, summary.usage.to_dict())
            if checks:
                report["suite_limits"] = checks
        report["resolved_suite"] = redact(loaded.suite.model_dump(mode="json", exclude={"cases"})) | {
            "cases": str(loaded.cases_file) if loaded.cases_file else f"{loaded.case_count} inline cases"
        }
        if self.store is not None and not isinstance(self.store, JsonlStore):
            report["results_store"] = self.store.url
        return report


def load_run(source: str | os.PathLike[str], run_id: str = "latest", *, suite: str | None = None) -> FinishedRun:
    """A finished run read again: a results JSONL file (with the `.summary.json` beside it), or a
    run in a SQL store given by its URL (`run_id`, or "latest": the newest, of `suite` if given).
    Raises StoreError (a file or store that cannot be read, an unknown run)."""
    from agenteval.stores import StoredRun, is_store_url, open_store
    from agenteval.stores.base import StoreError

    text = os.fspath(source)
    if is_store_url(text):
        opened = open_store(text)
        try:
            found = opened.find_run(run_id, suite)
            summary = opened.summary(found)
        except BaseException:
            opened.close()
            raise
        return FinishedRun(StoredRun(opened, found), summary)
    path = Path(text)
    if not path.is_file():
        raise StoreError(f"{path}: no such results file")
    from agenteval.stores.jsonl import summary_path

    try:
        summary = json.loads(summary_path(path).read_text("utf-8"))
    except (OSError, ValueError):
        summary = None  # killed before its summary was written: counted from the results
    return FinishedRun(path, summary if isinstance(summary, dict) else None)


class FinishedRun(_ReadableRun):
    """A finished run read again (`load_run`): `summary`, `results()` (streamed from the file or
    store each time), `to_dicts()` and `to_dataframe()`."""

    def __init__(self, source: Path | Any, summary: dict[str, Any] | None) -> None:
        self.source = source  # a results file, or a StoredRun
        if summary is None:
            summary = self._count()
        self._report = summary
        self.run_id = str(summary.get("run_id"))

    @property
    def summary(self) -> dict[str, Any]:
        """The run's summary as it was written (counted from the results when none was)."""
        return self._report

    def results(self) -> Iterator[CaseResult]:
        from agenteval.stores import read_source

        return read_source(self.source)

    def close(self) -> None:
        """Release the store's connections (a results file holds none)."""
        store = getattr(self.source, "store", None)
        if store is not None:
            store.close()

    def __repr__(self) -> str:
        return self._describe("read", self._report)

    def _count(self) -> dict[str, Any]:
        from agenteval.results import Summary

        summary, first = Summary(), None
        for result in self.results():
            first = first or result
            summary.add(result)
        named = {"run_id": first.run_id, "suite": first.suite} if first is not None else {"run_id": None, "suite": None}
        return named | summary.to_dict()


class _Stopped(BaseException):
    """Raised in the thread that drives a run iterated with `async for` when its task is cancelled:
    the run stops as it does on Ctrl-C (finished cases kept). Raised only by agenteval (its module
    name lets it through an evaluator's error handling)."""


_STOP_WAIT_SECONDS = 5.0


def _stop_thread(driver: Any, ident: list[int]) -> bool:
    """End the driving thread's iteration (at its next Python instruction; it waits in short
    slices) and wait a moment for it, so the run is stopped before the caller goes on."""
    from agenteval.scheduling import raise_in_thread

    if ident and driver.is_alive():
        raise_in_thread(ident[0], _Stopped)
        driver.join(_STOP_WAIT_SECONDS)
    return not driver.is_alive()


def _scoring_waits(loaded: LoadedSuite) -> bool:
    """Whether scoring itself waits (on processes, servers or Python code of the caller's), so the
    answers of a prefetching target are scored on the run's workers rather than inline."""
    from agenteval.endpoints import endpoint_workers

    waiting = ("code_judge", "python", "callable", "llm_judge", "semantic_similarity", "composite")
    evaluators = [*loaded.suite.evaluators, *(e for case in loaded.cases or () for e in case.evaluators or ())]
    return any(e.type in waiting for e in evaluators) or endpoint_workers(loaded.suite) > 1


def _has_limits(loaded: LoadedSuite) -> bool:
    """Whether some evaluator sets run-wide limits (budgets: latency, token_usage, cost)."""
    return any(hasattr(evaluator, "suite_limits") for evaluator in loaded.suite.evaluators)


def failed_limits(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The run-wide limits the summary says were not met."""
    return [check for check in summary.get("suite_limits", []) if not check["passed"]]


# -- the pieces `run_suite` is made of (RunSettings, make_runner, open_endpoints: agenteval.runs,
# which Ray workers use too) ------------------------------------------------------------------------------


def _check_executor(settings: RunSettings) -> None:
    """--executor ray: Ray is installed, and the cluster `ray_address` names answers and lets us in,
    before any results file exists."""
    if settings.executor != "ray":
        return
    from agenteval.extras import MissingDependency
    from agenteval.ray_executor import check_address, require_ray

    try:
        require_ray()
    except MissingDependency as exc:
        raise RunError(str(exc)) from None
    check_address(settings.ray_address)


def _destination(loaded: LoadedSuite, settings: RunSettings, run_id: str) -> tuple[Store | None, str | None]:
    """Where the results go: `store`, else `output`, else the suite's `store:`, else (output="auto")
    a new file in agenteval-results/ (with resume, the run `_resumed` chooses, and its note), else nowhere."""
    from agenteval.stores import Store, open_store
    from agenteval.stores.jsonl import JsonlStore

    output, store, resume, overwrite = settings.output, settings.store, settings.resume, settings.overwrite
    if isinstance(store, Store):
        from agenteval.stores.base import checked_store

        return checked_store(store), None
    if store is not None:
        return open_store(store, Path.cwd(), {**loaded.env_values, **os.environ}), None
    if output is not None and output != "auto":
        return JsonlStore(Path(output), overwrite=overwrite) if isinstance(output, (str, os.PathLike)) else JsonlStore(stream=output), None
    if loaded.suite.store is not None:
        return open_store(loaded.suite.store, loaded.base_dir, {**loaded.env_values, **os.environ}), None  # (env_file's values too)
    if output == "auto" and resume:
        path, note = _resumed(loaded.suite.name)
        return JsonlStore(path), note
    if output == "auto":
        return JsonlStore(_default_output(loaded.suite.name, run_id)), None
    return None, None


def _start(
    store: Store, loaded: LoadedSuite, run_id: str, resume: bool, summary: Summary, selection: dict[str, Any],
) -> tuple[str, dict[str, set[tuple[str | None, str | None]]]]:
    """Record the run in the store, or with `resume` continue the newest run there: its saved cases
    are counted into `summary` and skipped. A resume whose suite, cases or selection differ from
    the run's is refused, naming what changed (agenteval.resume)."""
    from agenteval.resume import differences, fingerprint
    from agenteval.stores import RunStart
    from agenteval.stores.jsonl import JsonlStore

    config = redact(loaded.suite.model_dump(mode="json", exclude={"cases"}))
    try:
        cells = tuple(cell.names for cell in loaded.cells)
        identity = fingerprint(loaded, config, **selection)
        start = RunStart(run_id, loaded.suite.name, datetime.now(timezone.utc), __version__, config, cells, identity)
        run_id = store.open_run(start, resume)
        changed = differences(store.recorded_fingerprint(run_id), identity) if resume else []
        if changed:
            again = "--overwrite" if isinstance(store, JsonlStore) else "a new run (without --resume)"
            raise RunError(
                f"--resume: the run in {store.url} began with another suite or selection; changed since: {'; '.join(changed)}. "
                f"Resume with the suite and options it began with, or start again ({again})"
            )
        done: dict[str, set[tuple[str | None, str | None]]] = {}
        for result in store.read_run(run_id) if resume else ():
            done.setdefault(result.case_id, set()).add((result.target, result.prompt))
            summary.add(result)
    except BaseException:
        store.close()
        raise
    return run_id, done


SLUG_BYTES = 120  # of the suite's name in a file name (its time and run follow; a file system takes 255)


def _slug(name: str) -> str:
    """The suite's name as part of a file name: letters and digits of any script, `_`, `.` and `-`
    (no separator, control character or leading dot), at most SLUG_BYTES bytes of UTF-8."""
    import unicodedata

    slug = re.sub(r"[^\w.-]+", "-", unicodedata.normalize("NFC", name)).strip("-.")
    cut = slug.encode()[:SLUG_BYTES].decode(errors="ignore").rstrip("-.")  # whole characters only
    return cut or "suite"


def _default_output(suite_name: str, run_id: str) -> Path:
    """agenteval-results/<suite>-<time>-<run>.jsonl, the time the run id's (UTC)."""
    return Path(RESULTS_DIR) / f"{_slug(suite_name)}-{run_id[:8]}-{run_id[9:15]}-{run_id[-6:]}.jsonl"  # one clock reading for both


def _resumed(suite_name: str) -> tuple[Path, str | None]:
    """The run of this suite in agenteval-results/ that --resume without -o continues: the newest
    unfinished one, else the newest (finished: nothing is left to run); with a note unless it is
    simply the newest run and unfinished."""
    from agenteval.stores.jsonl import _unfinished

    folder = Path(RESULTS_DIR)
    slug = _slug(suite_name)
    own = re.compile(re.escape(slug) + r"-\d{8}-\d{6}(-[0-9a-f]{6})?\.jsonl")
    runs = sorted((path for path in folder.glob(f"{slug}-*.jsonl") if own.fullmatch(path.name)), key=lambda path: -path.stat().st_mtime)
    if not runs:
        raise RunError(f"--resume found no earlier run of {suite_name!r} in {folder}/ (give -o)")
    for path in runs:
        why = _unfinished(path)
        if why is not None and path == runs[0]:
            return path, None
        if why is not None:
            return path, f"note: --resume continues {path}, which is unfinished ({why}); the newest run of {suite_name!r}, {runs[0]}, is finished"
    return runs[0], f"note: --resume found no unfinished run of {suite_name!r}; the newest, {runs[0]}, is finished: nothing is left to run"


def chosen_evaluators(loaded: LoadedSuite, names: list[str]) -> tuple[frozenset[str] | None, list[str]]:
    """(names to run, or None for all; the suite's evaluators left out). Unknown names: RunError."""
    if not names:
        return None, []
    import difflib

    known = [evaluator.label for evaluator in loaded.suite.evaluators]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise RunError(f"--evaluator {name}: the suite has no evaluator of that name{hint} (known: {', '.join(known)})")
    return frozenset(names), [name for name in known if name not in names]


def auto_workers(loaded: LoadedSuite) -> int:
    """In-process scoring runs fastest inline; commands and judges wait on processes, so overlap them."""
    from agenteval.endpoints import endpoint_workers

    specs = [cell.spec for cell in loaded.cells]
    waits = any(spec.type == "command" for spec in specs) or any(e.type == "code_judge" for e in loaded.suite.evaluators)
    if any(spec.type == "python" for spec in specs):  # a function's calls overlap up to its max_concurrency
        return max(*(spec.max_concurrency for spec in specs if spec.type == "python"), endpoint_workers(loaded.suite))
    return max(min(8, (os.cpu_count() or 2) * 2) if waits else 1, endpoint_workers(loaded.suite))


def exit_code(total: int, passed: int, errored: int, min_pass_rate: float | None) -> int:
    """3 when any case could not be evaluated; else 0 when all passed (or the pass rate is met); else 1."""
    if errored:
        return EXIT_ERRORED
    if passed == total:
        return EXIT_OK
    if min_pass_rate is not None and total and passed / total >= min_pass_rate:
        return EXIT_OK
    return EXIT_FAILED


def gated_exit_code(summary: dict[str, Any], min_pass_rate: float | None) -> int:
    """`exit_code` of a summary: of each cell in a matrix run (the worst), else of the whole run."""
    parts = [cell["counts"] for cell in summary["cells"]] if summary.get("cells") else [summary["counts"]]
    if summary.get("cells_not_kept"):  # results of cells past those kept: the whole run is gated too
        parts.append(summary["counts"])
    codes = {exit_code(counts["total"], counts["passed"], counts["errored"], min_pass_rate) for counts in parts}
    return EXIT_ERRORED if EXIT_ERRORED in codes else EXIT_FAILED if EXIT_FAILED in codes else EXIT_OK


_SECRET_KEY = re.compile(r"(?i)(api[_-]?key|token|secret|passw(or)?d|authorization|credential)")
# `scheme://user:PASSWORD@`: the password, unless it is only a `${NAME}` reference (not a secret).
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@\[\]]*:)(?!\$\{\w+\}@)[^\s@]*@")


def redact(data: Any) -> Any:
    """The resolved suite as written to the summary, without secrets: every value of an `env`
    mapping, string values under keys that name a credential (`api_key`, `token`...), and the
    password of any URL in a string (`store: postgresql://user:PASSWORD@host/db`) as `***`."""
    if isinstance(data, dict):
        return {
            key: {name: "<redacted>" for name in value} if key == "env" and isinstance(value, dict)
            else "<redacted>" if isinstance(value, str) and _SECRET_KEY.search(str(key)) and not str(key).endswith("_env")
            else redact(value)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [redact(item) for item in data]
    if isinstance(data, str) and "://" in data:
        return _URL_PASSWORD.sub(r"\1***@", data)
    return data
