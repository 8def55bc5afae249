"""`agenteval run`: select cases, stream results to disk, summarize, and pick the exit code."""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from agenteval.api import (  # noqa: F401  (re-exported for the commands)
    EXIT_ERRORED,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    RESULTS_DIR,
    RunError as UsageError,
    exit_code,
    failed_limits,
    redact,
)
from agenteval.runs import RunSettings
from agenteval.stores.jsonl import summary_path


class RunOptions(RunSettings):
    """`agenteval run`'s options: the run's settings (RunSettings, where each is declared once) and
    what the command itself does around the run."""

    suite: Path
    quiet: bool = False
    show_failures: int = 10  # --show-failures, --junit, --markdown, --html: agenteval.reports
    junit: Path | None = None
    markdown: Path | None = None
    html: Path | None = None
    env_files: tuple[Path, ...] = ()  # --env-file: NAME=value files (agenteval.suite.env_files)
    env_override: bool = False  # --env-override: their values replace the process's own


def _human_console(to_stderr: bool) -> Any:
    from agenteval.reports.console import console

    return console(stderr=to_stderr)  # piped: COLUMNS, else 120


def _print_lines(lines: Iterable[str]) -> None:
    """Messages for people and editors: one unwrapped line each, on stderr, with control characters
    from the data (an escape sequence in a suite name, a case id, a target's stderr) shown as escapes."""
    from agenteval.reports.terminal import visible

    for line in lines:
        print(visible(line), file=sys.stderr)


def _wants_progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty() and not os.environ.get("CI")


def execute(options: RunOptions) -> int:
    """`agenteval run`: the Python API's run, with progress, reports, messages and an exit code."""
    from agenteval.reports.outputs import run_reports

    to_stdout = options.output == "-"
    if options.env_files:  # before the suite loads: its own `env_file:` and every `${NAME}` see them
        from agenteval.suite.env_files import EnvFileError, apply_env_files

        try:
            apply_env_files(options.env_files, override=options.env_override)
        except EnvFileError as exc:
            raise UsageError(f"--env-file {exc}") from None
    reports = run_reports(options)
    with _StdoutForResults(to_stdout) as results_stream:
        return _execute(options, reports, results_stream)


def _execute(options: RunOptions, reports: Any, results_stream: Any) -> int:
    from agenteval.api import run_suite
    from agenteval.results import ResultsWriteError
    from agenteval.suite.loader import CasesChanged, SuiteInvalid

    try:
        output = results_stream if results_stream is not None else options.output or ("auto" if options.store is None else None)
        run = run_suite(options.suite, options, output=output)
    except SuiteInvalid as invalid:
        _print_lines(problem.render() for problem in invalid.problems)
        return EXIT_INVALID
    _print_lines(warning.render() for warning in run.warnings)
    if run.resume_note:  # --resume without -o continues another run than the newest, or nothing
        _print_lines([run.resume_note])
    if run.otel_warning:  # --otel without a collector: the run goes on without spans
        _print_lines([run.otel_warning])
    os.environ.update(run.loaded.env_values)  # this process is the run's: in-process code (python targets) sees env_file too
    for result in run.previous_results():  # a resumed run's reports cover its earlier cases too
        reports.add(result)

    with ExitStack() as stack:
        gc.freeze()  # what start-up and loading built outlives the cases: the collector need not walk it case after case
        stack.callback(gc.unfreeze)  # (given back when the run ends: a program calling this again collects as before)
        if run.tracing:  # spans a collector refused: one line once the run is closed (callbacks run last first)
            stack.callback(lambda: _print_lines(filter(None, [run.otel_warning])))
        stack.callback(run.close)
        from agenteval.process import interrupt

        # SIGTERM, and Ctrl-C where Python's own handler has it (not where it is ignored), become KeyboardInterrupt,
        # held back while a child process is being started so that the run's cleanup finds the child
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signum == signal.SIGTERM or signal.getsignal(signum) is signal.default_int_handler:
                stack.callback(signal.signal, signum, signal.signal(signum, interrupt))
        progress = _progress(run.todo_count * options.repeat, options.quiet, stack)
        reader_gone = False
        try:
            for result in run:
                reports.add(result)
                progress(result)
        except KeyboardInterrupt:
            pass
        except CasesChanged as exc:  # the cases file was edited mid-run: stop rather than run unvalidated cases
            _print_lines([f"error: {exc}"])
        except BrokenPipeError:  # the reader of `-o -` went away (e.g. `| head`)
            os.dup2(os.open(os.devnull, os.O_WRONLY), results_stream.fileno())
            reader_gone = True
        except ResultsWriteError:  # disk full, file system gone read-only...: kept in run.write_failure
            pass
    report = run.summary
    _render(run, report, reports, options)
    reports.write(report)
    return _outcome(run, report, options, reader_gone)


class _StdoutForResults:
    """`-o -`: the results go to a private copy of stdout while stdout itself points at stderr, so
    whatever an in-process evaluator or plugin prints cannot break the JSONL stream. Restored on exit."""

    def __init__(self, wanted: bool) -> None:
        self._wanted = wanted
        self._saved: int | None = None
        self.stream: Any = None

    def __enter__(self) -> Any:
        if not self._wanted:
            return None
        try:
            stdout_fd, stderr_fd = sys.stdout.fileno(), sys.stderr.fileno()
        except (AttributeError, OSError, ValueError):  # not real files (an embedding program): share stdout
            self.stream = sys.stdout.buffer
            return self.stream
        sys.stdout.flush()
        self._saved = os.dup(stdout_fd)
        os.dup2(stderr_fd, stdout_fd)
        self.stream = open(os.dup(self._saved), "wb")  # noqa: SIM115 - closed in __exit__
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self._saved is None:
            return
        sys.stdout.flush()
        try:
            self.stream.close()
        except BrokenPipeError:
            pass
        os.dup2(self._saved, sys.stdout.fileno())
        os.close(self._saved)


def _render(run: Any, report: dict[str, Any], reports: Any, options: RunOptions) -> None:
    if options.quiet:
        if not run.write_failure:  # quiet: the failure is the one line
            from agenteval.reports.numbers import one_line

            _print_lines([one_line(report)])
        return
    from agenteval.reports.table import render_summary
    from agenteval.reports.terminal import visible

    console = _human_console(to_stderr=options.output == "-")
    render_summary(report, console)
    reports.render_failures(console)
    if run.skipped_evaluators:
        skipped = ", ".join(visible(name) for name in run.skipped_evaluators)
        console.print(f"skipped evaluators (--evaluator): {skipped}", markup=False, highlight=False)
    stored = _stored_where(run)
    if stored:
        console.print(visible(stored), markup=False, highlight=False, soft_wrap=True)


def _stored_where(run: Any) -> str | None:
    from agenteval.stores.jsonl import JsonlStore

    store = run.store
    if isinstance(store, JsonlStore):
        return f"results: {store.path}  summary: {summary_path(store.path)}" if store.is_file else None
    return None if store is None else f"results: run {run.run_id} in {store.url}"


def _outcome(run: Any, report: dict[str, Any], options: RunOptions, reader_gone: bool = False) -> int:
    """Say how the run ended when it did not end normally; the exit code."""
    from agenteval.stores.jsonl import JsonlStore

    total, selected = report["counts"]["total"], run.selected_count
    sql = run.store is not None and not isinstance(run.store, JsonlStore)
    in_file = run.results_file is not None and run.store.is_file
    if run.write_failure and sql:
        _print_lines([f"error: {run.write_failure}; {_store_resume_hint(options, run.store)} continues the run"])
        return EXIT_INVALID
    if run.write_failure:
        _print_lines([
            f"error: {run.write_failure}; the run stopped with {total - run.write_lost} of {selected} cases on disk"
            + (f"; free space, then `agenteval run {options.suite} -o {run.results_file} --resume` continues" if in_file else "")
        ])
        return EXIT_INVALID
    if run.interrupted:
        if sql:
            _print_lines([
                f"interrupted: {total} of {selected} cases are in {run.store.url} (run {run.run_id}); "
                f"{_store_resume_hint(options, run.store)} continues"
            ])
        elif not in_file:
            why = ": the reader of the results on stdout went away" if reader_gone else ""
            _print_lines([f"interrupted after {total} of {selected} cases{why}"])
        else:
            _print_lines([
                f"interrupted: {total} of {selected} cases are on disk; "
                f"`agenteval run {options.suite} -o {run.results_file} --resume` continues"
            ])
        return EXIT_INTERRUPTED
    failing = [cell for cell in report.get("cells", ()) if not cell["gate"]["passed"]]
    if failing and options.quiet:  # say which cells fail the gate (the tables say it when shown)
        _print_lines(f"cell {cell['label']} did not pass: {cell['gate']['reason']}" for cell in failing)
    unmet = failed_limits(report)
    if unmet:
        from agenteval.evaluators.budgets import describe_limit

        _print_lines(f"suite limit not met: {describe_limit(check)}" for check in unmet)
    return run.exit_code(options.min_pass_rate)


def _store_resume_hint(options: RunOptions, store: Any) -> str:
    where = f" --store {store.url}" if options.store else ""
    return f"`agenteval run {options.suite}{where} --resume`"


def _progress(total: int, quiet: bool, stack: ExitStack) -> Any:
    if not _wants_progress(quiet):
        return lambda result: None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(  # running ━━━━╺━━━ 40/100 31 passed  elapsed 0:00:04  left 0:00:06
        TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("[green]{task.fields[passed]} passed"), TextColumn(" elapsed"), TimeElapsedColumn(),
        TextColumn(" left"), TimeRemainingColumn(), transient=True,
        console=_human_console(to_stderr=True),
    )
    stack.enter_context(bar)
    task = bar.add_task("running", total=total, passed=0)
    passed = done = 0
    shown = time.monotonic()

    def advance(result: Any) -> None:
        """Count the case; tell the bar at most 20 times a second (it redraws 10 times a second)."""
        nonlocal passed, done, shown
        passed += result.verdict == "pass"
        done += 1
        now = time.monotonic()
        if now - shown >= 0.05:
            bar.update(task, completed=done, passed=passed)
            shown = now

    return advance
