"""`agenteval run`: select cases, stream results to disk, summarize, and pick the exit code."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

import orjson

from agenteval import __version__

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_ERRORED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
RESULTS_DIR = "agenteval-results"


class UsageError(Exception):
    """The command line or its inputs are invalid: exit 2, nothing runs."""


@dataclass
class RunOptions:
    suite: Path
    output: str | None = None
    predictions: Path | None = None
    workers: int | None = None
    filters: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    min_pass_rate: float | None = None
    resume: bool = False
    shard: str | None = None
    quiet: bool = False
    evaluators: list[str] = field(default_factory=list)
    executor: str = "local"
    ray_address: str | None = None
    batch_size: int = 64
    show_failures: int = 10  # --show-failures, --junit, --markdown, --html: agenteval.reports
    junit: Path | None = None
    markdown: Path | None = None
    html: Path | None = None
    repeat: int = 1  # --repeat N: each case N times (agenteval.repeats)
    cache_dir: Path | None = None  # --cache-dir: the response cache's folder (agenteval.endpoints)
    no_cache: bool = False
    refresh_cache: bool = False
    store: str | None = None  # --store URL: results go to a SQL store instead of a JSONL file (agenteval.stores)
    otel: bool = False  # --otel: a span per case and per evaluator (agenteval.tracing)


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` (1-based): this process runs every N-th case starting with the I-th."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"--shard takes I/N with 1 <= I <= N, e.g. 2/4; got {text!r}")
    return int(match.group(1)), int(match.group(2))


def case_selection(filters: list[str], tags: list[str], shard: tuple[int, int] | None) -> Any:
    """The run's --filter/--tag/--shard, decided case by case while the loader validates the cases."""
    from agenteval.suite.selection import Selection

    return Selection(tuple(filters), tuple(tags), shard)


def summary_path(results: Path) -> Path:
    name = results.name[: -len(".jsonl")] if results.name.endswith(".jsonl") else results.name
    return results.with_name(name + ".summary.json")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "suite"


def _default_output(suite_name: str, resume: bool, run_id: str) -> Path:
    """agenteval-results/<suite>-<time>-<run>.jsonl; with --resume, the newest run of this suite."""
    folder = Path(RESULTS_DIR)
    slug = _slug(suite_name)
    if resume:
        own = re.compile(re.escape(slug) + r"-\d{8}-\d{6}(-[0-9a-f]{6})?\.jsonl")
        runs = sorted(
            (path for path in folder.glob(f"{slug}-*.jsonl") if own.fullmatch(path.name)),
            key=lambda path: path.stat().st_mtime,
        )
        if not runs:
            raise UsageError(f"--resume found no earlier run of {suite_name!r} in {folder}/ (give -o)")
        return runs[-1]
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return folder / f"{slug}-{stamp}-{run_id[-6:]}.jsonl"


def _open_output(path: Path, resume: bool) -> tuple[IO[bytes], bool]:
    """The results file opened for appending and locked against a second run, and whether it is a
    regular file (`-o /dev/null` is not: no lock, no summary beside it). Raises UsageError."""
    import fcntl
    import stat

    if path.is_dir():
        raise UsageError(f"{path} is a directory; -o takes a file path (e.g. {path / 'results.jsonl'})")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("ab", buffering=0)  # unbuffered: a failed write leaves nothing behind to fail again
    except OSError as exc:
        raise UsageError(f"cannot write results to {path}: {exc.strerror or exc}") from None
    is_file = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    if not is_file:
        return handle, False
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise UsageError(f"{path} is being written by another agenteval run; wait for it, or give another -o") from None
    if not resume and os.fstat(handle.fileno()).st_size:
        handle.close()
        raise UsageError(f"{path} already has results; use --resume to continue it, or another -o")
    return handle, True


def _previous_run(path: Path, suite_name: str, summary: Any) -> tuple[str | None, set[str]]:
    """The run id and finished case ids of an earlier run in `path`, counted into `summary` (--resume)."""
    from agenteval.results import read_results, repair_torn_tail

    if not path.exists():
        return None, set()
    repair_torn_tail(path)
    run_id, done = None, set()
    for result in read_results(path):
        if result.suite != suite_name:
            raise UsageError(f"{path} holds results of suite {result.suite!r}, not {suite_name!r}; --resume continues the same suite")
        run_id = run_id or result.run_id
        done.add(result.case_id)
        summary.add(result)
    return run_id, done


def _human_console(to_stderr: bool) -> Any:
    from rich.console import Console

    stream = sys.stderr if to_stderr else sys.stdout
    width = None if stream.isatty() else 120  # logs and pipes: wide enough for the tables
    return Console(stderr=to_stderr, highlight=False, width=width)


def _print_lines(lines: Iterable[str]) -> None:
    """Messages for people and editors: one unwrapped line each, on stderr."""
    for line in lines:
        print(line, file=sys.stderr)


def _wants_progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty() and not os.environ.get("CI")


def execute(options: RunOptions) -> int:
    from agenteval.process import Processes
    from agenteval.reports.outputs import run_reports
    from agenteval.reports.table import render_summary
    from agenteval.results import JsonlWriter, ResultsWriteError, Summary
    from agenteval.runner import Predictions, PredictionsError, Runner
    from agenteval.suite.loader import CasesChanged, SuiteInvalid, load_suite

    to_stdout = options.output == "-"
    console = _human_console(to_stderr=to_stdout)
    shard = parse_shard(options.shard) if options.shard else None
    if options.min_pass_rate is not None and not 0 <= options.min_pass_rate <= 1:
        raise UsageError(f"--min-pass-rate must be between 0 and 1, got {options.min_pass_rate}")
    if options.workers is not None and options.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {options.workers}")
    if options.resume and to_stdout:
        raise UsageError("--resume needs a results file, not -o -")
    _check_endpoint_options(options)
    _check_executor(options)

    try:
        loaded = load_suite(options.suite, case_selection(options.filters, options.tags, shard))
    except SuiteInvalid as invalid:
        _print_lines(problem.render() for problem in invalid.problems)
        return EXIT_INVALID
    _print_lines(warning.render() for warning in loaded.warnings)

    selected = loaded.selected  # None: every case; else len() and `in`, counted while validating
    selected_count = loaded.case_count if selected is None else len(selected)
    if not selected_count:
        raise UsageError(
            f"no case selected: the suite has {loaded.case_count} cases and none matches"
            + "".join(f" --filter {g}" for g in options.filters)
            + "".join(f" --tag {t}" for t in options.tags)
            + (f" --shard {options.shard}" if options.shard else "")
        )

    predictions = None
    if options.predictions is not None:
        try:
            predictions = Predictions(options.predictions)
        except PredictionsError as exc:
            raise UsageError(str(exc)) from None

    reports = run_reports(options)
    run_id = f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"
    tracer = _run_tracer(options.otel)  # --otel
    store = _open_store(options, loaded)  # None: the results go to a JSONL file
    output = (
        None if to_stdout or store is not None
        else Path(options.output) if options.output else _default_output(loaded.suite.name, options.resume, run_id)
    )
    summary = Summary(options.repeat)
    done: set[str] = set()
    handle, is_file = _open_output(output, options.resume) if output is not None else (None, False)
    if handle is not None and is_file and options.resume:
        try:
            previous_id, done = _previous_run(output, loaded.suite.name, summary)
        except BaseException:
            handle.close()
            raise
        run_id = previous_id or run_id
    if store is not None:
        run_id, done = _start_store_run(store, loaded, run_id, options.resume, (summary.add, reports.add))
    elif done:
        reports.add_file(output)

    todo_count = selected_count - (len(done) if selected is None else len(selected & done))
    workers = options.workers or _auto_workers(loaded)
    processes = Processes()
    only, skipped = _chosen_evaluators(loaded, options.evaluators)
    endpoints = _open_endpoints(loaded, options)
    runner = Runner(loaded, run_id, processes, predictions, only, endpoints=endpoints, repeat=options.repeat)
    cases = (case for case in loaded.iter_cases() if case.id not in done)  # iter_cases yields the selected ones
    started = time.perf_counter()
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    interrupted = False
    write_failure: str | None = None

    with ExitStack() as stack:
        stream: IO[bytes] = sys.stdout.buffer if handle is None else stack.enter_context(handle)
        if predictions is not None:
            stack.callback(predictions.close)
        stack.callback(endpoints.close)
        writer = JsonlWriter(stream, "results" if output is None else str(output))
        previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
        stack.callback(signal.signal, signal.SIGTERM, previous_term)
        progress = _progress(todo_count, options.quiet, stack)
        save = writer.write if store is None else store.save
        trace = (lambda result: None) if tracer is None else tracer.case
        if tracer is not None:
            stack.callback(tracer.close)
        results: Iterator[Any] = runner.run(cases, workers)
        if options.executor == "ray":
            from agenteval.ray_executor import RayOptions, run_on_ray

            ray_options = RayOptions(options.ray_address, options.batch_size, workers)
            results = run_on_ray(options.suite.resolve(), cases, run_id, ray_options, predictions, only)
        try:
            for result in results:
                save(result)
                summary.add(result)
                reports.add(result)
                progress(result)
                trace(result)
        except KeyboardInterrupt:
            interrupted = True
            processes.stop_all()
            results.close()  # type: ignore[attr-defined]
        except CasesChanged as exc:  # the cases file was edited mid-run: stop rather than run unvalidated cases
            interrupted = True
            processes.stop_all()
            _print_lines([f"error: {exc}"])
        except BrokenPipeError:  # the reader of `-o -` went away (e.g. `| head`)
            interrupted = True
            processes.stop_all()
            results.close()  # type: ignore[attr-defined]
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except ResultsWriteError as exc:  # disk full, file system gone read-only...
            write_failure = str(exc)
            processes.stop_all()
            results.close()  # type: ignore[attr-defined]

    report = {
        "run_id": run_id,
        "suite": loaded.suite.name,
        "agenteval_version": __version__,
        "started_at": started_at,
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "duration_s": time.perf_counter() - started,
        "interrupted": interrupted,
        "results_file": str(output) if output else None,
        "selected_cases": selected_count,
        "workers": workers,
        "evaluators_skipped": skipped,
        **summary.to_dict(),
        **_suite_limits(loaded, summary),
        "resolved_suite": redact(loaded.suite.model_dump(mode="json", exclude={"cases"}))
        | {"cases": str(loaded.cases_file) if loaded.cases_file else f"{loaded.case_count} inline cases"},
    }
    if store is not None:
        report["results_store"] = store.url
        write_failure = _close_store_run(store, run_id, report) or write_failure
    if output is not None and is_file:
        try:
            summary_path(output).write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
        except OSError as exc:
            write_failure = write_failure or f"cannot write {summary_path(output)}: {exc.strerror or exc}"
    if options.quiet:
        if not write_failure:  # quiet: the failure below is the one line
            _print_lines([_one_line(report)])
    else:
        render_summary(report, console)
        reports.render_failures(console)
        if skipped:
            console.print(f"skipped evaluators (--evaluator): {', '.join(skipped)}", markup=False, highlight=False)
        if output is not None and is_file:
            console.print(f"results: {output}  summary: {summary_path(output)}", markup=False, highlight=False, soft_wrap=True)
        elif store is not None:
            console.print(f"results: run {run_id} in {store.url}", markup=False, highlight=False, soft_wrap=True)
    reports.write(report)
    if write_failure and store is not None:
        _print_lines([f"error: {write_failure}; {_store_resume_hint(options, store)} continues the run"])
        return EXIT_INVALID
    if write_failure:
        _print_lines([
            f"error: {write_failure}; the run stopped with {summary.total} of {selected_count} cases on disk"
            + (f"; free space, then `agenteval run {options.suite} -o {output} --resume` continues" if is_file else "")
        ])
        return EXIT_INVALID
    if interrupted:
        if store is not None:
            _print_lines([
                f"interrupted: {summary.total} of {selected_count} cases are in {store.url} (run {run_id}); "
                f"{_store_resume_hint(options, store)} continues"
            ])
        elif output is None:
            _print_lines([f"interrupted after {summary.total} of {selected_count} cases"])
        else:
            _print_lines([
                f"interrupted: {summary.total} of {selected_count} cases are on disk; "
                f"`agenteval run {options.suite} -o {output} --resume` continues"
            ])
        return EXIT_INTERRUPTED
    code = exit_code(summary.total, summary.passed, summary.verdicts["error"], options.min_pass_rate)
    failed_limits = [check for check in report.get("suite_limits", []) if not check["passed"]]
    if failed_limits:
        from agenteval.evaluators.budgets import describe_limit

        _print_lines(f"suite limit not met: {describe_limit(check)}" for check in failed_limits)
    return EXIT_FAILED if failed_limits and code == EXIT_OK else code


def _open_store(options: RunOptions, loaded: Any) -> Any:
    """The SQL store of --store, or of the suite's `store:` unless -o names a file; None for JSONL."""
    if options.store is not None and options.output is not None:
        raise UsageError("--store and -o are two destinations for the results; give one")
    url, base_dir = (options.store, Path.cwd()) if options.store else (loaded.suite.store, loaded.base_dir)
    if url is None or (options.store is None and options.output is not None):
        return None
    from agenteval.stores import open_store

    return open_store(url, base_dir)


def _start_store_run(store: Any, loaded: Any, run_id: str, resume: bool, sinks: tuple[Any, ...]) -> tuple[str, set[str]]:
    """Record the run in the store, or with --resume continue the suite's newest run there: its
    saved cases are counted (into `sinks`) and skipped."""
    from agenteval.stores import RunStart

    config = redact(loaded.suite.model_dump(mode="json", exclude={"cases"}))
    try:
        run_id = store.open_run(RunStart(run_id, loaded.suite.name, datetime.now(timezone.utc), __version__, config), resume)
        done: set[str] = set()
        for result in store.read_run(run_id) if resume else ():
            done.add(result.case_id)
            for sink in sinks:
                sink(result)
    except BaseException:
        store.close()
        raise
    return run_id, done


def _close_store_run(store: Any, run_id: str, report: dict[str, Any]) -> str | None:
    """Save the summary and disconnect; what went wrong, if anything."""
    from agenteval.results import ResultsWriteError

    try:
        store.close_run(run_id, report)
    except ResultsWriteError as exc:
        return str(exc)
    finally:
        store.close()
    return None


def _store_resume_hint(options: RunOptions, store: Any) -> str:
    where = f" --store {store.url}" if options.store else ""
    return f"`agenteval run {options.suite}{where} --resume`"


def _run_tracer(enabled: bool) -> Any:
    """--otel: what turns each result into spans (agenteval.tracing), or None."""
    if not enabled:
        return None
    from agenteval.extras import MissingDependency
    from agenteval.tracing import run_tracer

    try:
        return run_tracer()
    except MissingDependency as exc:
        raise UsageError(str(exc)) from None


def exit_code(total: int, passed: int, errored: int, min_pass_rate: float | None) -> int:
    """3 when any case could not be evaluated; else 0 when all passed (or the pass rate is met); else 1."""
    if errored:
        return EXIT_ERRORED
    if passed == total:
        return EXIT_OK
    if min_pass_rate is not None and total and passed / total >= min_pass_rate:
        return EXIT_OK
    return EXIT_FAILED


_SECRET_KEY = re.compile(r"(?i)(api[_-]?key|token|secret|passw(or)?d|authorization|credential)")


def redact(data: Any) -> Any:
    """The resolved suite as written to the summary, without secrets: every value of an `env`
    mapping, and string values under keys that name a credential (`api_key`, `token`...)."""
    if isinstance(data, dict):
        return {
            key: {name: "<redacted>" for name in value} if key == "env" and isinstance(value, dict)
            else "<redacted>" if isinstance(value, str) and _SECRET_KEY.search(str(key)) and not str(key).endswith("_env")
            else redact(value)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [redact(item) for item in data]
    return data


def _one_line(report: dict[str, Any]) -> str:
    counts = report["counts"]
    rate = report["pass_rate"]
    return (
        f"{report['suite']}: {counts['total']} cases, {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['errored']} errored, pass rate {'n/a' if rate is None else f'{rate:.1%}'}"
    )


def _check_executor(options: RunOptions) -> None:
    if options.executor not in ("local", "ray"):
        raise UsageError(f"--executor takes local or ray, got {options.executor!r}")
    if options.batch_size < 1:
        raise UsageError(f"--batch-size must be at least 1, got {options.batch_size}")
    if options.executor == "local":
        if options.ray_address:
            raise UsageError("--ray-address goes with --executor ray")
        return
    from agenteval.extras import MissingDependency
    from agenteval.ray_executor import require_ray

    try:
        require_ray(local=options.ray_address is None)
    except MissingDependency as exc:
        raise UsageError(str(exc)) from None


def _chosen_evaluators(loaded: Any, names: list[str]) -> tuple[frozenset[str] | None, list[str]]:
    """(names to run, or None for all; the suite's evaluators left out). Unknown names exit 2."""
    if not names:
        return None, []
    import difflib

    known = [evaluator.label for evaluator in loaded.suite.evaluators]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"--evaluator {name}: the suite has no evaluator of that name{hint} (known: {', '.join(known)})")
    return frozenset(names), [name for name in known if name not in names]


def _auto_workers(loaded: Any) -> int:
    """In-process scoring runs fastest inline; commands and judges wait on processes, so overlap them."""
    from agenteval.evaluators.code_judge import CodeJudge
    from agenteval.targets import CommandTarget

    from agenteval.endpoints import endpoint_workers

    waits = isinstance(loaded.suite.target, CommandTarget) or any(
        isinstance(e, CodeJudge) for e in loaded.suite.evaluators
    )
    return max(min(8, (os.cpu_count() or 2) * 2) if waits else 1, endpoint_workers(loaded.suite))


def _check_endpoint_options(options: RunOptions) -> None:
    if options.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {options.repeat}")
    if options.repeat > 1 and options.resume:
        raise UsageError("--repeat cannot continue a run (--resume): start a new one")
    if options.no_cache and (options.refresh_cache or options.cache_dir is not None):
        raise UsageError("--no-cache goes with neither --refresh-cache nor --cache-dir")


def _open_endpoints(loaded: Any, options: RunOptions) -> Any:
    from agenteval.endpoints import CacheError, open_endpoints

    try:
        return open_endpoints(loaded, options.cache_dir, not options.no_cache, options.refresh_cache)
    except CacheError as exc:
        raise UsageError(str(exc)) from None


def _suite_limits(loaded: Any, summary: Any) -> dict[str, Any]:
    """`suite_limits` for the report: the run-wide thresholds of latency/token_usage/cost evaluators."""
    from agenteval.evaluators.budgets import check_suite_limits

    checks = check_suite_limits(loaded.suite.evaluators, summary.usage.to_dict())
    return {"suite_limits": checks} if checks else {}


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _progress(total: int, quiet: bool, stack: ExitStack) -> Any:
    if not _wants_progress(quiet):
        return lambda result: None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("[green]{task.fields[passed]} passed"), TimeRemainingColumn(), transient=True,
        console=_human_console(to_stderr=True),
    )
    stack.enter_context(bar)
    task = bar.add_task("running", total=total, passed=0)
    passed = 0

    def advance(result: Any) -> None:
        nonlocal passed
        passed += result.verdict == "pass"
        bar.update(task, advance=1, passed=passed)

    return advance
