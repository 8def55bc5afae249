"""The `agenteval` command: parse arguments, call the library, map outcomes to exit codes.

Heavy modules (pydantic models, rapidfuzz, rich) are imported inside the commands, so
`agenteval --help` and friends start fast.
"""

from __future__ import annotations

import atexit
import copy
import gc
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

app = typer.Typer(
    name="agenteval",
    help="Run eval suites over extraction pipelines and AI agents; results stream to JSONL.",
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

EXIT_CODES = (
    "Exit codes: 0 all cases passed (or the pass rate met --min-pass-rate); 1 some cases failed; "
    "2 invalid suite or command line (nothing ran); 3 some case could not be evaluated; 130 interrupted."
)


def _version(value: bool) -> None:
    if value:
        from agenteval.version import __version__

        typer.echo(f"agenteval {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Run eval suites over extraction pipelines and AI agents; results stream to JSONL."""


def _fail(message: str, code: int = 2) -> typer.Exit:
    from agenteval.reports.terminal import visible_lines  # a message may quote data: show it, never send it

    typer.echo(f"error: {visible_lines(message)}", err=True)
    return typer.Exit(code)


@app.command(epilog=EXIT_CODES, short_help="Run a suite and stream one JSON line per case.")
def run(
    suite: Annotated[
        Optional[Path], typer.Argument(metavar="SUITE.yaml|DIR", help="The suite YAML file, or a folder holding suite.yaml. Default: ./suite.yaml")
    ] = None,
    output: Annotated[
        Optional[str],
        typer.Option("-o", "--output", metavar="PATH|-", help="Results JSONL path, or - for stdout. Default: agenteval-results/<suite>-<time>-<run>.jsonl"),
    ] = None,
    predictions: Annotated[
        Optional[Path],
        typer.Option("--predictions", metavar="PREDS.jsonl", help="JSONL of {id, output} answers, matched by case id (replaces the target)."),
    ] = None,
    traces: Annotated[
        Optional[Path],
        typer.Option("--traces", metavar="SPANS.jsonl", help="OTLP/JSON trace export: each case's answer is its recorded trace, matched by its trace_id metadata or id (replaces the target)."),
    ] = None,
    traces_match: Annotated[
        str, typer.Option("--traces-match", metavar="HOW", help="How --traces finds a case's trace: trace_id, session_id or 'attribute NAME' (the case's metadata of that name, else its id).")
    ] = "trace_id",
    workers: Annotated[
        Optional[int], typer.Option("--workers", metavar="N", help="Cases in parallel. Default: 1 for in-process scoring, more when a command or judge runs.")
    ] = None,
    filters: Annotated[Optional[list[str]], typer.Option("--filter", metavar="GLOB", help="Only case ids matching this glob (repeatable).")] = None,
    tags: Annotated[Optional[list[str]], typer.Option("--tag", metavar="TAG", help="Only cases with this tag (repeatable: any of them).")] = None,
    min_pass_rate: Annotated[
        Optional[float], typer.Option("--min-pass-rate", metavar="RATE", help="Exit 0 when at least this fraction of cases passed (e.g. 0.95).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run: skip cases already in the results file.")] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Start again over an interrupted run's results file (a finished one is replaced anyway).")
    ] = False,
    shard: Annotated[Optional[str], typer.Option("--shard", metavar="I/N", help="Run shard I of N (1-based), e.g. 2/4.")] = None,
    first: Annotated[Optional[int], typer.Option("--first", metavar="N", help="A smoke run: only the first N selected cases, in file order.")] = None,
    sample: Annotated[
        Optional[int], typer.Option("--sample", metavar="N", help="A smoke run: N of the selected cases, drawn with a fixed seed, each tag keeping its share.")
    ] = None,
    sample_seed: Annotated[int, typer.Option("--sample-seed", metavar="S", help="Draw another --sample (default 0: the same cases every run).")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or tables; one summary line on stderr.")] = False,
    evaluators: Annotated[
        Optional[list[str]],
        typer.Option("--evaluator", metavar="NAME", help="Run only this evaluator (repeatable), e.g. the fast rule checks."),
    ] = None,
    executor: Annotated[
        str, typer.Option("--executor", metavar="local|ray", help="Where cases are scored: this process (local) or a Ray cluster.")
    ] = "local",
    ray_address: Annotated[
        Optional[str], typer.Option("--ray-address", metavar="ADDRESS", help="Ray cluster to join (auto, ray://host:10001). Default: start a local Ray instance.")
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", metavar="N", help="Cases per Ray task.")] = 64,
    show_failures: Annotated[
        int, typer.Option("--show-failures", metavar="N", help="Failing or errored cases listed after the tables, worst first (0: none).")
    ] = 10,
    junit: Annotated[Optional[Path], typer.Option("--junit", metavar="PATH", help="Also write a JUnit XML report (one testcase per case).")] = None,
    markdown: Annotated[
        Optional[Path], typer.Option("--markdown", metavar="PATH", help="Also write a Markdown report (appended to $GITHUB_STEP_SUMMARY when set).")
    ] = None,
    html: Annotated[Optional[Path], typer.Option("--html", metavar="PATH", help="Also write a self-contained HTML report.")] = None,
    repeat: Annotated[int, typer.Option("--repeat", metavar="N", help="Run each case N times; the summary shows the spread and flaky cases.")] = 1,
    cache_dir: Annotated[
        Optional[Path], typer.Option("--cache-dir", metavar="DIR", help="Response cache folder. Default: .agenteval/cache next to the suite.")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache.")] = False,
    refresh_cache: Annotated[bool, typer.Option("--refresh-cache", help="Send every request again and store the new responses.")] = False,
    store: Annotated[
        Optional[str], typer.Option("--store", metavar="URL", help="Save results in a SQL store instead of a JSONL file: sqlite:///runs.db or postgresql://USER@HOST/DB.")
    ] = None,
    otel: Annotated[bool, typer.Option("--otel", help="Emit OpenTelemetry spans: per case and evaluator, and in the GenAI conventions per model request, tool call and verdict (OTLP settings from OTEL_* variables).")] = False,
    env_files: Annotated[
        Optional[list[Path]],
        typer.Option("--env-file", metavar="PATH", help="Set variables from a NAME=value file the environment lacks (repeatable; a later file wins)."),
    ] = None,
    env_override: Annotated[bool, typer.Option("--env-override", help="Let --env-file values replace variables already set.")] = False,
    targets: Annotated[
        Optional[list[str]], typer.Option("--target", metavar="NAME", help="Only this target of the suite's `targets:` (repeatable).")
    ] = None,
    prompts: Annotated[
        Optional[list[str]], typer.Option("--prompt", metavar="NAME", help="Only this prompt of the suite's `prompts:` (repeatable).")
    ] = None,
    overrides: Annotated[
        Optional[list[str]],
        typer.Option("--set", metavar="KEY=VALUE", help="Override one key of the suite, e.g. --set target.model=gpt-4.1-mini (repeatable; VALUE is YAML)."),
    ] = None,
) -> None:
    """Run a suite: get each candidate answer, score it, stream one JSON line per case (and cell)."""
    from agenteval.execute import RunOptions, UsageError, execute
    from agenteval.reports.outputs import ReportError
    from agenteval.results import ResultsFileError

    try:
        options = RunOptions(
            suite=_suite_file(suite), output=output, predictions=predictions, traces=traces, traces_match=traces_match, workers=workers, filters=filters, tags=tags,
            min_pass_rate=min_pass_rate, resume=resume, overwrite=overwrite, shard=shard, first=first, sample=sample,
            sample_seed=sample_seed, quiet=quiet, evaluators=evaluators,
            executor=executor, ray_address=ray_address, batch_size=batch_size,
            show_failures=show_failures, junit=junit, markdown=markdown, html=html,
            repeat=repeat, cache_dir=cache_dir, cache=not no_cache, refresh_cache=refresh_cache, store=store, otel=otel,
            env_files=env_files or (), env_override=env_override, targets=targets, prompts=prompts, overrides=overrides,
        )
        code = execute(options)
    except (UsageError, ResultsFileError, ReportError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    raise typer.Exit(code)


def _suite_file(given: Path | None, command: str = "run") -> Path:
    """The suite `run` (or `validate`) was given: a file as it is; a folder (or nothing: the current
    one) by its suite.yaml, else a UsageError naming the suite files seen there, or in its folders."""
    from agenteval.execute import UsageError

    folder = Path(".") if given is None else given
    if given is not None and not folder.is_dir():
        return given  # a file (or a missing one: the loader says so, with its path)
    for name in ("suite.yaml", "suite.yml"):
        if (folder / name).is_file():
            return folder / name if given is not None else Path(name)
    where = "the current folder" if given is None else str(folder)
    for what, seen in (("suite files there", _suite_files(folder)), ("folders there that hold one", sorted(path.parent for path in folder.glob("*/suite.yaml")))):
        if seen:
            named = [str(path if given is not None else path.relative_to(folder)) for path in seen]
            more = f" and {len(named) - 5} more" if len(named) > 5 else ""
            raise UsageError(f"no suite.yaml in {where}; {what}: {', '.join(named[:5])}{more} (give one: agenteval {command} {named[0]})")
    raise UsageError(f"no suite.yaml in {where}, and no suite file there: give SUITE.yaml (`agenteval init` writes one)")


def _suite_files(folder: Path) -> list[Path]:
    """The YAML files in `folder` that look like suites (a top-level `cases:` or `evaluators:` key)."""
    import re

    looks = re.compile(rb"^(cases|evaluators):", re.MULTILINE)
    found = []
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
        try:
            with path.open("rb") as handle:
                head = handle.read(1 << 16)
        except OSError:
            continue
        if looks.search(head):
            found.append(path)
    return found


@app.command(epilog="Exit codes: 0 every suite is valid; 2 some suite has errors.", short_help="Validate suites without running them: every error at once.")
def validate(
    suites: Annotated[
        Optional[list[Path]], typer.Argument(metavar="SUITE.yaml|DIR...", help="Suite YAML files, or folders holding suite.yaml. Default: ./suite.yaml")
    ] = None,
) -> None:
    """Parse and validate suites without running anything; every problem is reported at once.
    Warnings (such as a target's missing API key, which run refuses to start without) do not fail it."""
    from agenteval.execute import UsageError
    from agenteval.reports.numbers import counted
    from agenteval.suite.loader import SuiteInvalid, load_suite

    if not suites:
        try:
            suites = [_suite_file(None, "validate")]
        except UsageError as exc:
            raise _fail(str(exc)) from None
    code = 0
    for given in suites:
        try:
            path = _suite_file(given, "validate")
            loaded = load_suite(path)
        except UsageError as exc:  # a folder without a suite.yaml
            typer.echo(f"{given}: {exc}\n{given}: 1 error", err=True)
            code = 2
            continue
        except SuiteInvalid as invalid:
            for problem in invalid.problems:
                typer.echo(problem.render(), err=True)
            errors = sum(problem.severity == "error" for problem in invalid.problems)
            typer.echo(f"{path}: {errors} error{'s' if errors != 1 else ''}", err=True)
            code = 2
            continue
        for warning in [*loaded.warnings, *_credential_warnings(loaded)]:
            typer.echo(warning.render(), err=True)
        evaluators = len(loaded.suite.evaluators)
        cases = loaded.case_count
        typer.echo(f"{path}: ok ({counted(cases)}, {counted(evaluators, 'evaluator')})")
    raise typer.Exit(code)


def _credential_warnings(loaded: Any) -> list[Any]:
    """What `agenteval run` would refuse to start without (a target's or a `models:` entry's missing
    key), told by validate as warnings: validate often runs where the secrets are not (CI checking a
    pull request)."""
    from dataclasses import replace

    return [
        replace(problem, severity="warning", message=f"{problem.message} (agenteval run will refuse to start until it is set)")
        for problem in loaded.credential_problems()
    ]


@app.command(short_help="Print a JSON Schema: suite, result line or judge reply.")
def schema(
    name: Annotated[str, typer.Argument(metavar="[suite|result|judge]", help="Which schema.")] = "suite",
) -> None:
    """Print a JSON Schema: the suite file, a result line, or a code_judge's output."""
    import orjson

    from agenteval.schema import SCHEMA_NAMES, schema as build

    if name not in SCHEMA_NAMES:
        raise _fail(f"unknown schema {name!r} (known: {', '.join(SCHEMA_NAMES)})")
    sys.stdout.write(orjson.dumps(build(name), option=orjson.OPT_INDENT_2).decode() + "\n")


@app.command(epilog="Exit codes as for run, so sharded runs can be gated on their combined results.", short_help="Tables and JUnit/Markdown/HTML reports of finished runs.")
def report(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS.jsonl...", help="Results JSONL files (e.g. the shards of one run).")],
    min_pass_rate: Annotated[Optional[float], typer.Option("--min-pass-rate", metavar="RATE", help="Exit 0 when at least this fraction passed.")] = None,
    fmt: Annotated[str, typer.Option("--format", metavar="table|json|markdown|junit|html", help="What to produce.")] = "table",
    output: Annotated[Optional[Path], typer.Option("-o", "--output", metavar="PATH", help="Write the report here instead of stdout.")] = None,
    show_failures: Annotated[int, typer.Option("--show-failures", metavar="N", help="Failing cases listed (table, markdown), worst first.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    store: Annotated[Optional[str], typer.Option("--store", metavar="URL", help="Read run ids (or `latest`) from this SQL store.")] = None,
    agreement: Annotated[
        bool, typer.Option("--agreement", help="How far each judged evaluator and criterion agrees with people's reviews (kappa, confusion table) instead of the summary.")
    ] = False,
    min_agreement: Annotated[
        Optional[float], typer.Option("--min-agreement", metavar="KAPPA", help="With --agreement: exit 1 when a reviewed evaluator or criterion agrees less (or has too few reviews).")
    ] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Instead of the tables, one summary line on stderr (as `run -q`).")] = False,
) -> None:
    """Summary, failures and reports (JUnit, Markdown, HTML) of finished runs, without re-running anything."""
    from agenteval.execute import exit_code
    from agenteval.reports.finished import report_results
    from agenteval.reports.outputs import ReportError
    from agenteval.results import ResultsFileError

    if min_pass_rate is not None and not 0 <= min_pass_rate <= 1:
        raise _fail(f"--min-pass-rate must be between 0 and 1, got {min_pass_rate}")
    if min_agreement is not None and not -1 <= min_agreement <= 1:
        raise _fail(f"--min-agreement is a kappa between -1 and 1, got {min_agreement}")
    if agreement or min_agreement is not None:
        raise typer.Exit(_report_agreement(results, store, "json" if as_json else fmt, min_agreement))
    shown = "json" if as_json else fmt
    quiet = quiet and shown == "table" and output is None  # (a report asked for is still written)
    try:
        sources, opened = _stored_runs(results, store)
        summary = report_results(sources, None if quiet else shown, output, show_failures, min_pass_rate)
    except (ResultsFileError, ReportError) as exc:
        raise _fail(str(exc)) from None
    if opened is not None:
        opened.close()
    if shown == "table" and output is None and not quiet:
        _mention_reviews([source for source in sources if isinstance(source, Path)])
    parts = list(summary.cells.values()) or [summary]  # a matrix run: each cell must pass the gate
    if summary.cells_not_kept:  # and the whole run when some cells were not kept apart
        parts.append(summary)
    codes = {exit_code(part.total, part.passed, part.verdicts["error"], min_pass_rate) for part in parts}
    raise typer.Exit(max(codes))  # 3 errored > 1 failed > 0


def _mention_reviews(results: list[Path]) -> None:
    """One line under the report when people have reviewed the run."""
    from agenteval.stores.reviews import ReviewError, read_reviews, reviews_path

    try:
        reviews = [review for path in results for review in read_reviews(reviews_path(path))]
    except ReviewError as exc:
        typer.echo(f"warning: {exc}", err=True)
        return
    if reviews:
        people = len({review["reviewer"] for review in reviews})
        wrong = sum("wrong" in review["verdicts"].values() for review in reviews)
        typer.echo(f"{len(reviews)} review{'s' if len(reviews) != 1 else ''} by {people} reviewer{'s' if people != 1 else ''}, "
                   f"{wrong} marking a verdict wrong: `agenteval report RESULTS.jsonl --agreement` says how far each judge agrees")


def _report_agreement(results: list[Path], store: str | None, fmt: str, minimum: float | None) -> int:
    """Print the agreement of every reviewed judge with people; 1 when one misses --min-agreement."""
    from agenteval.reports.agreement import agreement_json, agreement_text
    from agenteval.reports.inputs import ResultInputs
    from agenteval.results import ResultsFileError
    from agenteval.stores.reviews import ReviewError, agreements, below, key_of, read_reviews, reviews_path, stored_reviews

    if fmt not in ("table", "json"):
        raise _fail(f"--agreement prints a table or json, not {fmt!r}")
    try:
        sources, opened = _stored_runs(results, store)
        inputs = ResultInputs(sources, repetitions=True)  # (as `report` reads several files: each result once)
        latest: dict[tuple[Any, ...], dict[str, Any]] = {}  # each reviewer's latest review of a result, however often its file is given
        for source in dict.fromkeys(source.resolve() if isinstance(source, Path) else source for source in sources):
            for review in read_reviews(reviews_path(source)) if isinstance(source, Path) else stored_reviews(source):
                latest[(*key_of(review), review["reviewer"])] = review
        reviews = list(latest.values())
        found = agreements(inputs, reviews)
    except (ResultsFileError, ReviewError) as exc:
        raise _fail(str(exc)) from None
    if opened is not None:
        opened.close()
    if inputs.warning():
        typer.echo(f"warning: {inputs.warning()}", err=True)
    sys.stdout.write(agreement_json(found, len(reviews)) if fmt == "json" else agreement_text(found, len(reviews)))
    if minimum is None:
        return 0
    sys.stdout.flush()  # the figures, then why the gate failed
    reasons = below(found, minimum) if found else ["no reviewed evaluator or criterion to check"]
    for reason in reasons:
        typer.echo(f"agreement below --min-agreement {minimum:g}: {reason}", err=True)
    return 1 if reasons else 0


@app.command(epilog="Exit codes: 0 the gate passed; 1 it failed; 2 unreadable input, an unknown cell, or runs of two suites with no case id in common.", short_help="What changed between two runs, and a gate for CI.")
def compare(
    base: Annotated[Path, typer.Argument(metavar="BASE.jsonl", help="Results JSONL of the baseline run (with --cells alone: the run).")],
    new: Annotated[Optional[Path], typer.Argument(metavar="NEW.jsonl", help="Results JSONL of the new run.")] = None,
    fmt: Annotated[str, typer.Option("--format", metavar="table|json|markdown", help="What to print.")] = "table",
    max_regressions: Annotated[
        int, typer.Option("--max-regressions", metavar="N", help="Cases allowed to go from pass to not passing (failed, errored or missing).")
    ] = 0,
    tolerance: Annotated[
        Optional[float], typer.Option("--tolerance", metavar="DELTA", help="Fail when any case's score drops by more than this. Default: only drops that worsen the verdict.")
    ] = None,
    update_baseline: Annotated[bool, typer.Option("--update-baseline", help="When the gate passes, copy NEW over BASE.")] = False,
    store: Annotated[Optional[str], typer.Option("--store", metavar="URL", help="Read run ids (or `latest`) from this SQL store.")] = None,
    cells: Annotated[
        Optional[tuple[str, str]], typer.Option("--cells", metavar="A B", help="Compare cell A with cell B (e.g. gpt-a/terse gpt-b/terse) of one run (or A of BASE with B of NEW).")
    ] = None,
) -> None:
    """Per-case changes between two runs of a suite (or two cells of one run), and a gate for CI."""
    from agenteval.reports.compare import Gate, compare_command
    from agenteval.reports.outputs import ReportError
    from agenteval.results import ResultsFileError

    if max_regressions < 0:
        raise _fail(f"--max-regressions must be 0 or more, got {max_regressions}")
    if tolerance is not None and not tolerance >= 0:
        raise _fail(f"--tolerance must be 0 or more, got {tolerance}")
    try:
        if new is None and cells is None:
            raise _fail("give NEW.jsonl, or --cells A B to compare two cells of one run")
        sources, opened = _stored_runs([base] if new is None else [base, new], store)
        if opened is not None and update_baseline:
            raise _fail("--update-baseline copies results files; it does not apply to runs in a store")
        code = compare_command(sources[0], sources[1] if new is not None else None, fmt, Gate(max_regressions, tolerance), update_baseline, cells)
    except (ResultsFileError, ReportError) as exc:
        raise _fail(str(exc)) from None
    if opened is not None:
        opened.close()
    raise typer.Exit(code)


@app.command(short_help="Write a small working suite to start from.")
def init(
    directory: Annotated[Path, typer.Argument(metavar="[DIR]", help="Where to write the example suite.")] = Path("agenteval-example"),
    template: Annotated[
        str, typer.Option("--template", metavar="extraction|llm|agent", help="Fields from documents, a model's answers, or an agent's tool calls.")
    ] = "extraction",
) -> None:
    """Write a small working suite to start from: extraction (field checks and a Python judge),
    llm (text rules on a model's answers) or agent (tool calls and the reply)."""
    from agenteval.scaffold import ScaffoldExists, write_scaffold

    try:
        written = write_scaffold(directory, template)
    except ScaffoldExists as exc:
        raise _fail(str(exc)) from None
    for path in written:
        typer.echo(f"wrote {path}")
    typer.echo(f"next: agenteval run {directory / 'suite.yaml'}")


def _suite_store(suite: Path) -> Any:
    """The store a suite file names (`store:`), opened; None when there is no such file or key. A
    suite that does not load is left out with a warning: the viewer still shows the results files."""
    if not suite.is_file():
        return None
    import os

    from agenteval.stores import open_store
    from agenteval.suite.loader import SuiteInvalid, load_suite

    try:
        loaded = load_suite(suite)
    except SuiteInvalid as exc:
        more = len(exc.problems) - 1
        first = exc.problems[0].render() if exc.problems else "invalid"
        typer.echo(f"warning: {suite} does not load ({first}{f' and {more} more' if more else ''}); its store is not shown", err=True)
        return None
    if loaded.suite.store is None:
        return None
    return open_store(loaded.suite.store, loaded.base_dir, {**loaded.env_values, **os.environ})


def _stored_runs(items: list[Path], url: str | None) -> tuple[list[Any], Any]:
    """The results files as given; with --store, a name that is not a file is a run id there (or
    `latest`). Also the store opened, to close. Raises ResultsFileError (StoreError)."""
    if url is None:
        return list(items), None
    from agenteval.stores import StoredRun, open_store

    opened = open_store(url)
    return [item if item.is_file() else StoredRun(opened, opened.find_run(str(item))) for item in items], opened


@app.command(short_help="Runs over time: pass rate, mean score, trends.")
def history(
    store: Annotated[
        Optional[str], typer.Option("--store", metavar="URL|DIR", help="A SQL store URL, or a folder of JSONL runs. Default: agenteval-results/ and the current folder.")
    ] = None,
    suite: Annotated[Optional[str], typer.Option("--suite", metavar="NAME", help="Only runs of this suite.")] = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", help="The newest N runs (0: all).")] = 20,
    fmt: Annotated[str, typer.Option("--format", metavar="table|json|markdown", help="What to print.")] = "table",
) -> None:
    """Runs over time: pass rate, mean score, and per-evaluator and per-field trends."""
    from agenteval.execute import RESULTS_DIR
    from agenteval.stores import is_store_url
    from agenteval.reports.history import history_markdown, render_history
    from agenteval.stores.history import distinct, folder_runs, history_json

    if fmt not in ("table", "json", "markdown"):
        raise _fail(f"--format takes table, json or markdown, got {fmt!r}")
    if limit < 0:
        raise _fail(f"--limit must be 0 or more, got {limit}")
    if store is not None and is_store_url(store):
        from agenteval.results import ResultsFileError
        from agenteval.stores import open_store

        try:
            opened = open_store(store)
            runs = opened.history_rows(suite, limit)
        except ResultsFileError as exc:
            raise _fail(str(exc)) from None
        opened.close()
    elif store is not None:
        folder = Path(store)
        if not folder.is_dir():
            raise _fail(f"{folder} is not a folder of runs; give --store URL (a SQL store) or --store DIR")
        runs = folder_runs(folder, suite, limit)
    else:  # where runs are written by default, and where `-o results.jsonl` puts them
        runs = distinct(folder_runs(Path(RESULTS_DIR), suite, 0) + folder_runs(Path("."), suite, 0))  # (a run in both: once)
        runs.sort(key=lambda run: run["started_at"] or "")
        runs = runs[-limit:] if limit else runs
        if not runs:
            typer.echo(
                f"no runs yet in {RESULTS_DIR}/ or the current folder: `agenteval run SUITE.yaml` writes them to {RESULTS_DIR}/; "
                "for runs written with -o elsewhere give --store DIR (the folder of their .summary.json files) or --store URL",
                err=True,
            )
            if fmt == "table":
                return
    from agenteval.reports.outputs import stdout_reader_may_leave

    with stdout_reader_may_leave():
        if fmt == "json":
            sys.stdout.write(history_json(runs) + "\n")
        elif fmt == "markdown":
            sys.stdout.write(history_markdown(runs))
        else:
            from agenteval.reports.console import console

            render_history(runs, console(default_width=200))  # piped: COLUMNS, else 200
        sys.stdout.flush()


@app.command(epilog="Exit codes: 0 stopped (Ctrl+C) or exported; 2 a missing source, a busy port, a host refused, or the `view` extra not installed.",
             short_help="Browse runs in a local web app: review cases, see how far each judge agrees.")
def view(
    sources: Annotated[
        Optional[list[Path]], typer.Argument(metavar="[RESULTS.jsonl... | FOLDER]", help="Results files or folders of them. Default: agenteval-results and the store ./suite.yaml names.")
    ] = None,
    host: Annotated[str, typer.Option("--host", metavar="HOST", help="Address to listen on. Anything but loopback also needs --allow-remote.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="Port to listen on (0: a free one).")] = 0,
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="Let --host be an address other machines can reach (anyone with the URL can read the runs and write reviews).")] = False,
    no_open: Annotated[bool, typer.Option("--no-open", help="Print the URL without opening a browser.")] = False,
    export_dir: Annotated[Optional[Path], typer.Option("--export", metavar="DIR", help="Write the pages as static files into DIR (a CI artifact) and exit.")] = None,
    cases: Annotated[Optional[Path], typer.Option("--cases", metavar="CASES.jsonl|CASES.yaml", help="The cases file the case page's \"add to cases\" button writes to.")] = None,
    store: Annotated[Optional[str], typer.Option("--store", metavar="URL", help="Also show the runs of this SQL store (reviews of them are kept in it).")] = None,
) -> None:
    """Browse runs in a local web app: runs and trends, a run's cases x cells, a case with its
    answers and verdicts, two runs side by side; review verdicts and see how far each judge agrees."""
    from agenteval.execute import RESULTS_DIR
    from agenteval.results import ResultsFileError

    from agenteval.extras import installed
    from agenteval.view.runs import Runs, SourceError

    missing = [module for module in ("starlette", "uvicorn") if not installed(module)]  # the `view` extra (pages, server)
    if missing:
        raise _fail(f"agenteval view needs the `view` extra ({', '.join(missing)} not installed): pip install 'agenteval[view]'")
    folders = list(sources or ([] if store else [Path(RESULTS_DIR)]))
    opened = None
    try:
        if store is not None:
            from agenteval.stores import open_store

            opened = open_store(store)
        elif not sources:  # the default: ./agenteval-results, and the store ./suite.yaml names
            opened = _suite_store(Path("suite.yaml"))
            if opened is not None and not Path(RESULTS_DIR).exists():
                folders = []  # the suite keeps its runs in its store only
            elif not Path(RESULTS_DIR).exists():
                raise _fail(f"no runs here: no {RESULTS_DIR}/ in the current folder (`agenteval run SUITE.yaml` writes runs to "
                            f"{RESULTS_DIR}/ in the folder it runs in); name a results file or a folder of them, or give --store")
        runs = Runs(folders, opened)
        runs.all()
    except (SourceError, ResultsFileError) as exc:
        raise _fail(str(exc)) from None
    if export_dir is not None:
        from agenteval.view.export import ExportError, export

        try:
            written = export(runs, export_dir)
        except (ExportError, OSError) as exc:
            raise _fail(f"export to {export_dir} failed: {exc}") from None
        typer.echo(f"wrote {len(written)} files to {export_dir} (open {export_dir / 'index.html'})")
        return
    from agenteval.view.server import is_loopback, serve

    if not is_loopback(host):
        if not allow_remote:
            raise _fail(f"--host {host} is not a loopback address: anyone who can reach it and has the URL could read the runs; add --allow-remote to mean it")
        typer.echo(f"warning: listening on {host}: other machines can reach the viewer (the token in the URL still guards it)", err=True)
    if not 0 <= port <= 65535:
        raise _fail(f"--port must be between 0 and 65535, got {port}")
    try:
        serve(runs, host=host, port=port, open_browser=not no_open, cases_file=cases, echo=lambda line: typer.echo(line))
    except OSError as exc:
        raise _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        pass


import_app = typer.Typer(
    name="import", help="Turn a promptfoo or AgentV eval config, or recorded traces, into an agenteval suite.", no_args_is_help=True,
    rich_markup_mode=None, short_help="Turn a promptfoo or AgentV config, or recorded traces, into a suite.",
)
app.add_typer(import_app)
ROOT_HELP = "Files the config names are read from inside DIR only (symlinks resolved). Default: the config's folder."
IMPORT_EXIT = "Exit codes: 0 written and valid (keys not carried over are listed on stderr); 2 unreadable config, or the written suite is invalid."


def _import_command(tool: str, config: Path, out: Optional[Path], force: bool, model_outputs: Optional[Path] = None,
                    root: Optional[Path] = None, run_generators: bool = False) -> None:
    """Import, write, list what was not carried over (file:line: key: why), then validate what was written."""
    from agenteval.importers import ImportFailed, read_config

    out_dir = out if out is not None else config.parent / "agenteval"
    try:
        parsed, source = read_config(config, root)
        if tool == "promptfoo":
            from agenteval.importers.promptfoo import import_promptfoo

            say = (lambda line: typer.echo(line, err=True)) if run_generators else None
            imported = import_promptfoo(parsed, source, out_dir, model_outputs, say)
        else:
            from agenteval.importers.agentv import import_agentv

            imported = import_agentv(parsed, source, out_dir)
    except ImportFailed as exc:
        raise _fail(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - a config shape the importer did not foresee: one line, nothing written
        raise _fail(f"{config}: could not import ({type(exc).__name__}: {exc}); nothing was written") from None
    _write_imported(imported, config, out_dir, tool, force)


def _write_imported(imported: Any, config: Path, out_dir: Path, tool: str, force: bool) -> None:
    """Write an import, list what was not carried over (file:line: key: why), then validate what was written."""
    from agenteval.importers import ImportFailed
    from agenteval.importers.output import write_import
    from agenteval.reports.numbers import counted
    from agenteval.suite.loader import SuiteInvalid, load_suite

    try:
        written = write_import(imported, out_dir, config.name, tool, force)
    except ImportFailed as exc:
        raise _fail(str(exc)) from None
    for item in imported.listing():
        typer.echo(("note: " if item.note else "not carried over: ") + item.render().replace(item.file, str(config.parent / item.file), 1), err=True)
    for path in written:
        typer.echo(f"wrote {path}")
    code = 0
    for path in written[:len(imported.suites)]:
        try:
            loaded = load_suite(path)
        except SuiteInvalid as invalid:
            for problem in invalid.problems:
                typer.echo(problem.render(), err=True)
            code = 2
            continue
        cases, evaluators = loaded.case_count, len(loaded.suite.evaluators)
        typer.echo(f"{path}: ok ({counted(cases)}, {counted(evaluators, 'suite evaluator')})")
    if imported.predictions is not None:  # promptfoo's --model-outputs, as predictions (agenteval.importers.output)
        import shlex

        command = ["agenteval", "run", str(written[0]), "--predictions", str(out_dir / "predictions.jsonl"), *imported.predictions_options]
        typer.echo(f"score the model outputs: {shlex.join(command)}")
    missed = len(imported.not_carried)
    typer.echo(f"{missed} key{'s' if missed != 1 else ''} not carried over, {len(imported.notes)} note{'s' if len(imported.notes) != 1 else ''}", err=True)
    raise typer.Exit(code)


@import_app.command("promptfoo", epilog=IMPORT_EXIT, short_help="A promptfoo config as a suite; lists what is not carried over.")
def import_promptfoo_command(
    config: Annotated[Path, typer.Argument(metavar="promptfooconfig.yaml", help="The promptfoo config.")],
    out: Annotated[Optional[Path], typer.Option("-o", "--output", metavar="DIR", help="Where to write suite.yaml and cases.jsonl. Default: agenteval/ beside the config.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace suite and cases files already in DIR.")] = False,
    model_outputs: Annotated[Optional[Path], typer.Option("--model-outputs", metavar="FILE", help="promptfoo's model outputs JSON (a list of strings, or of objects with `output`), one per test in order: written as DIR/predictions.jsonl for `agenteval run --predictions`.")] = None,
    root: Annotated[Optional[Path], typer.Option("--root", metavar="DIR", help=ROOT_HELP)] = None,
    run_generators: Annotated[bool, typer.Option("--run-generators", help="Run the config's tests generators (file://gen.py:make_tests, file://gen.js) once, now, and write their tests as cases: code from the config's folder, so only for a config you trust.")] = False,
) -> None:
    """Write a promptfoo config as an agenteval suite (providers and prompts as its targets and prompts), list every key not carried over, validate."""
    _import_command("promptfoo", config, out, force, model_outputs, root, run_generators)


@import_app.command("agentv", epilog=IMPORT_EXIT, short_help="An AgentV eval file as a suite; lists what is not carried over.")
def import_agentv_command(
    config: Annotated[Path, typer.Argument(metavar="EVAL.yaml", help="The AgentV eval file.")],
    out: Annotated[Optional[Path], typer.Option("-o", "--output", metavar="DIR", help="Where to write suite.yaml and cases.jsonl. Default: agenteval/ beside the eval file.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace suite and cases files already in DIR.")] = False,
    root: Annotated[Optional[Path], typer.Option("--root", metavar="DIR", help=ROOT_HELP)] = None,
) -> None:
    """Write an AgentV eval file as an agenteval suite, list every key not carried over, validate."""
    _import_command("agentv", config, out, force, root=root)


@import_app.command("traces", epilog=IMPORT_EXIT, short_help="Recorded traces (OTLP/JSON) as cases to fill in; lists what could not be read.")
def import_traces_command(
    export: Annotated[Path, typer.Argument(metavar="SPANS.jsonl", help="The OTLP/JSON export (the collector's file exporter output, or one document).")],
    out: Annotated[Optional[Path], typer.Option("-o", "--output", metavar="DIR", help="Where to write suite.yaml and cases.jsonl. Default: agenteval/ beside the export.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace suite and cases files already in DIR.")] = False,
    match: Annotated[str, typer.Option("--match", metavar="HOW", help="One case per trace_id (default), per session_id, or per 'attribute NAME' value.")] = "trace_id",
    max_cases: Annotated[Optional[int], typer.Option("--max-cases", metavar="N", min=1, help="Only the first N traces, in file order.")] = None,
) -> None:
    """Write recorded traces as a suite: each case's input, the answer its trace observed as its `output`, and an empty `expected` to fill in."""
    from agenteval.importers import ImportFailed
    from agenteval.importers.traces import import_traces
    from agenteval.targets.traces import checked_match

    try:
        checked_match(match)
    except ValueError as exc:
        raise _fail(f"--match: {exc}") from None
    if not export.is_file():
        raise _fail(f"{export}: {'a folder' if export.is_dir() else 'no such file'}; give the OTLP/JSON export")
    try:
        imported = import_traces(export, match, max_cases)
    except ImportFailed as exc:
        raise _fail(str(exc)) from None
    _write_imported(imported, export, out if out is not None else export.parent / "agenteval", "traces", force)


feedback_app = typer.Typer(
    name="feedback", help="Human feedback beside the automatic scores.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(feedback_app)


@feedback_app.command(
    "add", epilog="Exit codes: 0 folded in; 2 bad feedback, an unknown case or an unreadable input (nothing changed).",
    short_help="Fold human reviews into a results file or a stored run.",
)
def feedback_add(
    files: Annotated[
        list[Path], typer.Argument(metavar="[RESULTS.jsonl] FEEDBACK.jsonl", help="The results file (none with --store), then the feedback.")
    ],
    store: Annotated[Optional[str], typer.Option("--store", metavar="URL", help="Fold into a run in this SQL store.")] = None,
    run_id: Annotated[str, typer.Option("--run", metavar="RUN_ID", help="The run in the store.")] = "latest",
    suite: Annotated[Optional[str], typer.Option("--suite", metavar="NAME", help="With --run latest: the newest run of this suite.")] = None,
    scale: Annotated[str, typer.Option("--scale", metavar="unit|binary|pass_fail|likert5|percent", help="How the scores read.")] = "unit",
) -> None:
    """Fold {case_id, criterion, score, note, reviewer} records into results as `human:<criterion>` evaluator results."""
    from typing import get_args

    from agenteval.evaluators.scales import ScaleName
    from agenteval.results import ResultsFileError
    from agenteval.stores.feedback import FeedbackError, fold_into_file, fold_into_store, read_feedback

    if scale not in get_args(ScaleName):
        raise _fail(f"--scale takes one of {', '.join(get_args(ScaleName))}, got {scale!r}")
    wanted = 1 if store else 2
    if len(files) != wanted:
        usage = "--store URL FEEDBACK.jsonl" if store else "RESULTS.jsonl FEEDBACK.jsonl"
        raise _fail(f"feedback add takes {usage}")
    try:
        feedback = read_feedback(files[-1], scale)  # type: ignore[arg-type]
        if store is None:
            written, where = fold_into_file(files[0], feedback), str(files[0])
        else:
            from agenteval.stores import open_store

            opened = open_store(store)
            try:
                found = opened.find_run(run_id, suite)
                written, where = fold_into_store(opened, found, feedback), f"run {found} in {opened.url}"
            finally:
                opened.close()
    except (FeedbackError, ResultsFileError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"{written} human result{'s' if written != 1 else ''} from {files[-1]} folded into {where}")


def _reviewed_run(results: Path, store: str | None) -> tuple[Any, list[dict[str, Any]], Any]:
    """The run (a results file, or with --store a run id or `latest` there), its reviews, and the store opened."""
    from agenteval.stores.reviews import read_reviews, reviews_path, stored_reviews

    sources, opened = _stored_runs([results], store)
    source = sources[0]
    reviews = read_reviews(reviews_path(source)) if isinstance(source, Path) else stored_reviews(source)
    return source, reviews, opened


@feedback_app.command(
    "export", epilog="Exit codes: 0 written; 2 an unreadable run or reviews file.",
    short_help="Print a run's reviews as JSONL, each reviewer's latest.",
)
def feedback_export(
    results: Annotated[Path, typer.Argument(metavar="RESULTS.jsonl|RUN_ID", help="The run whose reviews (RESULTS.reviews.jsonl beside it, or kept in --store) to export.")],
    store: Annotated[Optional[str], typer.Option("--store", metavar="URL", help="Read the run (an id, or `latest`) from this SQL store.")] = None,
) -> None:
    """Print a run's reviews as JSONL: each reviewer's latest review of each case and cell."""
    from agenteval.results import ResultsFileError
    from agenteval.stores.reviews import export_reviews

    try:
        _, reviews, opened = _reviewed_run(results, store)
    except ResultsFileError as exc:
        raise _fail(str(exc)) from None
    sys.stdout.buffer.write(export_reviews(reviews))
    if opened is not None:
        opened.close()


@feedback_app.command(
    "cases", epilog="Exit codes: 0 written; 2 an unreadable run or reviews file, an unknown case, or a cases file that cannot be written.",
    short_help="Write reviewed cases, with corrected answers, as suite cases.",
)
def feedback_cases(
    results: Annotated[Path, typer.Argument(metavar="RESULTS.jsonl|RUN_ID", help="The reviewed run (with --store, its id or `latest`).")],
    output: Annotated[Path, typer.Option("-o", "--output", metavar="CASES.jsonl|CASES.yaml", help="The cases file to add to (created when absent; no other file is written).")],
    case_ids: Annotated[Optional[list[str]], typer.Option("--case", metavar="ID", help="Also this case (repeatable); reviews marking the expected answer wrong are always taken.")] = None,
    store: Annotated[Optional[str], typer.Option("--store", metavar="URL", help="Read the run from this SQL store (e.g. the sampled calls `agenteval.monitor` saved).")] = None,
) -> None:
    """Write reviewed cases as suite cases: the cases given, and every case whose review marks the
    expected answer wrong, with the reviewer's corrected expected answer (replacing a case of the same id)."""
    from agenteval.results import ResultsFileError
    from agenteval.stores import read_source
    from agenteval.stores.reviews import cases_from_reviews, write_cases

    try:
        source, reviews, opened = _reviewed_run(results, store)
        cases = cases_from_reviews(read_source(source), reviews, set(case_ids or ()))
        missing = sorted(set(case_ids or ()) - {case["id"] for case in cases})
        if missing:
            raise _fail(f"{source} has no case {', '.join(map(repr, missing))}; nothing was written")
        if not cases:
            raise _fail(f"no case to write: give --case ID, or mark an expected answer wrong in a review of {source}")
        added, replaced = write_cases(output, cases)
    except ResultsFileError as exc:
        raise _fail(str(exc)) from None
    if opened is not None:
        opened.close()
    typer.echo(f"{added} case{'s' if added != 1 else ''} added, {replaced} corrected in {output}")


@app.command("evaluators", short_help="Every evaluator type, built-in or from a plugin.")
def list_evaluators() -> None:
    """Every evaluator type, built-in or from an installed plugin, with a one-line description."""
    from agenteval.evaluators import BUILT_IN_TYPES, registry
    from agenteval.evaluators.plugin_registry import declared_plugins, describe
    from agenteval.reports.outputs import stdout_reader_may_leave

    types = registry()
    packages = {plugin.type_name: plugin.package for plugin in declared_plugins()}
    width = max(map(len, types))
    lines = _hanging(sys.stdout, [(f"{name:<{width}}  ", describe(cls) + (
        "" if name in BUILT_IN_TYPES else f"  (plugin from {packages.get(name, 'an unknown package')})"
    )) for name, cls in types.items()])
    with stdout_reader_may_leave():
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()


def _hanging(stream: Any, rows: list[tuple[str, str]]) -> list[str]:
    """Each (name, text) as `name text`, one line each; on a terminal (or piped with COLUMNS set, as
    `report` reads it) a text too long for the width goes on over more lines, broken between words and
    indented under itself, so the names stay a column of their own (when 20 characters are left beside them)."""
    import shutil
    import textwrap

    from agenteval.reports.terminal import output_width

    width = output_width(stream, default=0)
    if width is None:
        width = shutil.get_terminal_size().columns
    if not width or width < max(len(name) for name, _ in rows) + 20:  # a pipe or a file (one line each, for grep), or too narrow
        return [name + text for name, text in rows]
    return [
        textwrap.fill(text, width, initial_indent=name, subsequent_indent=" " * len(name), break_long_words=False, break_on_hyphens=False)
        for name, text in rows
    ]


def _plain_argument_help() -> None:
    """typer writes an argument's Python type after its name (`RESULTS.jsonl... <list[Path]>`) and
    braces around it in the usage line; our metavars already say what to give, so show just them."""
    from typer.core import TyperArgument

    def usage_name(self: Any) -> str:
        name = self.display_name_raw
        name = name if self.nargs == 1 or "..." in name else f"{name}..."
        return name if self.required or name.startswith("[") else f"[{name}]"

    if hasattr(TyperArgument, "display_type_rich") and hasattr(TyperArgument, "_usage_display_name"):
        TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
        TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]


def _app_for(args: list[str]) -> typer.Typer:
    """The app holding only the command `args` start with: typer builds the options of every
    command it holds at each start (about 15 ms for them all), and a command line runs one. Any
    other line (no command, an option first, a name that is no command) gets the whole app, so the
    top-level help, --version and "No such command" with its suggestion are unchanged."""
    if not args:
        return app
    commands = [info for info in app.registered_commands if (info.name or info.callback.__name__.replace("_", "-")) == args[0]]
    groups = [info for info in app.registered_groups if info.typer_instance.info.name == args[0]]
    if not commands and not groups:
        return app
    narrowed = copy.copy(app)  # (the same settings and callback; the lists are replaced, not changed)
    narrowed.registered_commands, narrowed.registered_groups = commands, groups
    return narrowed


def main() -> None:
    from agenteval.evaluators.plugin_registry import PluginError

    # When the process ends, after every other exit handler (they run last first): the collector
    # would walk every object start-up and the command made once more, only to free the memory the
    # process gives back anyway (20-40 ms of every command). Objects are still finalized as the
    # interpreter clears its modules; files are closed by the commands themselves.
    atexit.register(gc.freeze)
    _plain_argument_help()
    try:
        _app_for(sys.argv[1:])(prog_name="agenteval")
    except PluginError as exc:  # a broken plugin stops only the commands that need evaluator types
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
