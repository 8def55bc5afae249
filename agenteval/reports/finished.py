"""`agenteval report`: any report format from finished results (shards included), nothing re-run."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from agenteval.repeats import INFERRED
from agenteval.reports.inputs import ResultInputs
from agenteval.reports.outputs import FORMATS, ReportError, Reports
from agenteval.results import Summary


def report_results(
    paths: Sequence[Path], fmt: str | None, output: Path | None, show_failures: int, min_pass_rate: float | None = None
) -> Summary:
    """Read every input once, feeding the summary and the report; duplicates are skipped with a warning.

    Results of a `--repeat N` run are each counted, and the summary's `repeats` is rebuilt from
    their `repetition` numbers as the run computed it.
    """
    if fmt is not None and fmt not in FORMATS:  # (None: no report, the summary's one line on stderr)
        raise ReportError(f"unknown --format {fmt!r} (known: {', '.join(FORMATS)})")
    if fmt == "html" and output is None and sys.stdout.isatty():  # a page of compressed data is no use on a screen
        raise ReportError("--format html writes a whole web page; give a file with -o PATH (e.g. -o report.html), or redirect stdout")
    reports = Reports(show_failures, [] if fmt is None else [(fmt, output)])
    inputs = ResultInputs(paths, repetitions=True)
    summary = Summary(INFERRED, inputs.cell_order())  # the suite's order, as the run printed it
    summary.min_pass_rate = min_pass_rate  # each cell's gate in a matrix run
    try:
        for result in inputs:
            summary.add(result)
            reports.add(result)
    except BaseException:
        reports.close()
        raise
    warning = inputs.warning()
    if warning:
        from agenteval.reports.terminal import visible

        print(f"warning: {visible(warning)}", file=sys.stderr)
    if not summary.total:
        reports.close()
        raise ReportError("no result lines in " + ", ".join(map(str, paths)))
    whole = {"suite": ", ".join(inputs.suites), "run_id": inputs.describe_runs(), **summary.to_dict()}
    reports.write(whole)
    if fmt is None:
        from agenteval.reports.numbers import one_line

        print(one_line(whole), file=sys.stderr)
    return summary
