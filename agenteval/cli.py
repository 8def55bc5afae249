"""The `agenteval` command: parse arguments, call the library, map outcomes to exit codes.

Heavy modules (pydantic models, rapidfuzz, rich) are imported inside the commands, so
`agenteval --help` and friends start fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

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
        from agenteval import __version__

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
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@app.command(epilog=EXIT_CODES)
def run(
    suite: Annotated[Path, typer.Argument(metavar="SUITE.yaml", help="The suite YAML file.")],
    output: Annotated[
        Optional[str],
        typer.Option("-o", "--output", metavar="PATH|-", help="Results JSONL path, or - for stdout. Default: agenteval-results/<suite>-<time>.jsonl"),
    ] = None,
    predictions: Annotated[
        Optional[Path],
        typer.Option("--predictions", metavar="PREDS.jsonl", help="JSONL of {id, output} answers, matched by case id (replaces the target)."),
    ] = None,
    workers: Annotated[
        Optional[int], typer.Option("--workers", metavar="N", help="Cases in parallel. Default: 1 for in-process scoring, more when a command or judge runs.")
    ] = None,
    filters: Annotated[Optional[list[str]], typer.Option("--filter", metavar="GLOB", help="Only case ids matching this glob (repeatable).")] = None,
    tags: Annotated[Optional[list[str]], typer.Option("--tag", metavar="TAG", help="Only cases with this tag (repeatable: any of them).")] = None,
    min_pass_rate: Annotated[
        Optional[float], typer.Option("--min-pass-rate", metavar="RATE", help="Exit 0 when at least this fraction of cases passed (e.g. 0.95).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run: skip cases already in the results file.")] = False,
    shard: Annotated[Optional[str], typer.Option("--shard", metavar="I/N", help="Run shard I of N (1-based), e.g. 2/4.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or tables; one summary line on stderr.")] = False,
    evaluators: Annotated[
        Optional[list[str]],
        typer.Option("--evaluator", metavar="NAME", help="Run only this evaluator (repeatable), e.g. the fast rule checks."),
    ] = None,
) -> None:
    """Run a suite: get each candidate answer, score it, stream one JSON line per case."""
    from agenteval.execute import RunOptions, UsageError, execute
    from agenteval.results import ResultsFileError

    options = RunOptions(
        suite=suite, output=output, predictions=predictions, workers=workers, filters=filters or [], tags=tags or [],
        min_pass_rate=min_pass_rate, resume=resume, shard=shard, quiet=quiet, evaluators=evaluators or [],
    )
    try:
        code = execute(options)
    except (UsageError, ResultsFileError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    raise typer.Exit(code)


@app.command(epilog="Exit codes: 0 every suite is valid; 2 some suite has errors.")
def validate(
    suites: Annotated[list[Path], typer.Argument(metavar="SUITE.yaml...", help="Suite YAML files.")],
) -> None:
    """Parse and validate suites without running anything; every problem is reported at once."""
    from agenteval.suite.loader import SuiteInvalid, load_suite

    code = 0
    for path in suites:
        try:
            loaded = load_suite(path)
        except SuiteInvalid as invalid:
            for problem in invalid.problems:
                typer.echo(problem.render(), err=True)
            errors = sum(problem.severity == "error" for problem in invalid.problems)
            typer.echo(f"{path}: {errors} error{'s' if errors != 1 else ''}", err=True)
            code = 2
            continue
        for warning in loaded.warnings:
            typer.echo(warning.render(), err=True)
        evaluators = len(loaded.suite.evaluators)
        typer.echo(f"{path}: ok ({len(loaded.entries)} cases, {evaluators} evaluator{'s' if evaluators != 1 else ''})")
    raise typer.Exit(code)


@app.command()
def schema(
    name: Annotated[str, typer.Argument(metavar="[suite|result|judge]", help="Which schema.")] = "suite",
) -> None:
    """Print a JSON Schema: the suite file, a result line, or a code_judge's output."""
    import orjson

    from agenteval.schema import SCHEMA_NAMES, schema as build

    if name not in SCHEMA_NAMES:
        raise _fail(f"unknown schema {name!r} (known: {', '.join(SCHEMA_NAMES)})")
    sys.stdout.write(orjson.dumps(build(name), option=orjson.OPT_INDENT_2).decode() + "\n")


@app.command(epilog="Exit codes as for run, so sharded runs can be gated on their combined results.")
def report(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS.jsonl...", help="Results JSONL files (e.g. the shards of one run).")],
    min_pass_rate: Annotated[Optional[float], typer.Option("--min-pass-rate", metavar="RATE", help="Exit 0 when at least this fraction passed.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of tables.")] = False,
) -> None:
    """Summary tables and dataset metrics of finished runs."""
    import orjson
    from rich.console import Console

    from agenteval.execute import exit_code
    from agenteval.report import render_summary
    from agenteval.results import ResultsFileError, Summary, read_results

    summary = Summary()
    suites: list[str] = []
    try:
        for path in results:
            for result in read_results(path):
                summary.add(result)
                if result.suite not in suites:
                    suites.append(result.suite)
    except ResultsFileError as exc:
        raise _fail(str(exc)) from None
    if not summary.total:
        raise _fail("no result lines in " + ", ".join(map(str, results)))
    data = {"suite": ", ".join(suites), **summary.to_dict()}
    if as_json:
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        render_summary(data, Console(highlight=False))
    raise typer.Exit(exit_code(summary.total, summary.passed, summary.verdicts["error"], min_pass_rate))


@app.command(epilog="Exit codes: 0 no regression; 1 some case regressed; 2 unreadable input.")
def compare(
    base: Annotated[Path, typer.Argument(metavar="BASE.jsonl", help="Results JSONL of the baseline run.")],
    new: Annotated[Path, typer.Argument(metavar="NEW.jsonl", help="Results JSONL of the new run.")],
    min_delta: Annotated[float, typer.Option("--min-delta", metavar="DELTA", help="Ignore score changes of at most this much.")] = 1e-9,
) -> None:
    """Per-case regressions and improvements between two runs."""
    from rich.console import Console

    from agenteval.report import compare as compare_runs, render_comparison
    from agenteval.results import ResultsFileError, read_results

    try:
        outcome = compare_runs(read_results(base), read_results(new), min_delta)
    except ResultsFileError as exc:
        raise _fail(str(exc)) from None
    render_comparison(outcome, Console(highlight=False))
    raise typer.Exit(1 if outcome.regressions else 0)


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(metavar="[DIR]", help="Where to write the example suite.")] = Path("agenteval-example"),
) -> None:
    """Write a small working suite (cases, field checks, a Python judge) to start from."""
    from agenteval.scaffold import ScaffoldExists, write_scaffold

    try:
        written = write_scaffold(directory)
    except ScaffoldExists as exc:
        raise _fail(str(exc)) from None
    for path in written:
        typer.echo(f"wrote {path}")
    typer.echo(f"next: agenteval run {directory / 'suite.yaml'}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
