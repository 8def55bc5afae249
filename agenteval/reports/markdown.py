"""The summary, dataset metrics and failures as GitHub-flavoured Markdown (a PR comment, a CI job summary)."""

from __future__ import annotations

import re
from typing import Any

from agenteval.reports.cell_table import cell_table, comparison_lines, gate_lines
from agenteval.reports.failures import Failure, evaluator_heading, headline
from agenteval.reports.numbers import counted, num, pct, smoke_words
from agenteval.reports.table import criterion_rows
from agenteval.reports.terminal import BIDI
from agenteval.reports.usage import usage_lines

FIELD_ROWS_SHOWN = 30
_SPECIAL = re.compile(r"([\\`*\[\]<>|~&]|(?<!\w)_|_(?!\w))")
# Line ends CommonMark honours (LF, CR, CRLF) and those other renderers and editors may (VT, FF,
# NEL, LINE and PARAGRAPH SEPARATOR): one space each, so data never starts a line of its own.
_LINE_ENDS = re.compile("\r\n|[\n\r\v\f\x85\u2028\u2029]")
# Other controls, and the bidirectional marks and overrides that would reverse the text after them
# in a PR comment as on a terminal (agenteval.reports.terminal.BIDI): shown as escapes.
_CONTROLS = re.compile(f"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f{BIDI}]")
# GitHub mentions (`@user`, `@org/team`; not `pass@k` nor an e-mail address, whose `@` follows a
# letter) and issue references (`#123`, `owner/repo#123`): in a PR comment or a step summary they
# would notify people and link issues. A zero-width space after the `@` or `#`, as Renovate writes
# them, and they read the same but link nothing.
_REFERENCES = re.compile(r"(?<![A-Za-z0-9_])@(?=\w)|#(?=\d)")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def md(text: str) -> str:
    """Plain text that Markdown shows as written: special characters escaped, on one line, and
    other control characters shown as escapes (`\\x1b`, `\\u202e`), so data can add no heading, row
    or markup, nor reorder what follows it; `@user` and `#123` are written `@&#8203;user` and
    `#&#8203;123`, so it mentions no one and links no issue."""
    text = _LINE_ENDS.sub(" ", text)
    text = _CONTROLS.sub(_escaped, text)
    text = _SPECIAL.sub(lambda match: "\\" + match.group(0), text)
    return _REFERENCES.sub(lambda match: match.group(0) + "&#8203;", text)


def code(text: str) -> str:
    """An inline code span holding `text` on one line, whatever backticks it contains."""
    text = _CONTROLS.sub(_escaped, _LINE_ENDS.sub(" ", text))
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"


def table(header: list[str], rows: list[list[str]], right_from: int = 1, right_to: int | None = None) -> list[str]:
    """A GFM table; columns from `right_from` on (up to `right_to`) are numbers, aligned right."""
    right = range(right_from, len(header) if right_to is None else right_to)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("--:" if i in right else "---" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def summary_markdown(summary: dict[str, Any], failures: list[Failure], failing: int) -> str:
    """`failures` are the worst failing cases to list; `failing` is how many did not pass in all."""
    counts = summary["counts"]
    lines = [f"## agenteval: {md(summary.get('suite', ''))}" + (" (interrupted)" if summary.get("interrupted") else ""), ""]
    status = (
        f"**{counted(counts['total'])}: {counts['passed']} passed, {counts['failed']} failed, {counts['errored']} errored**"
        f" · pass rate **{pct(summary['pass_rate'])}** · mean score {num(summary['mean_score'])}"
    ) + md(smoke_words(summary))
    if summary.get("run_id"):
        status += f" · run {code(str(summary['run_id']))}"
    if "duration_s" in summary:
        status += f" · {summary['duration_s']:.2f} s"
    lines += [status, ""]

    lines += ["### Evaluators", ""]
    lines += table(
        ["evaluator", "type", "mean score", "pass", "partial", "fail", "error"],
        [
            [md(name), md(stats["type"]), num(stats["mean_score"]), *(str(stats["verdicts"].get(v, 0)) for v in ("pass", "partial", "fail", "error"))]
            for name, stats in summary["evaluators"].items()
        ],
        right_from=2,
    )
    scored = criterion_rows(summary)
    if scored:
        lines += ["", "### Scores per criterion", ""]
        lines += table(["evaluator", "criterion", "mean score", "pass", "partial", "fail"], [[md(value) for value in row] for row in scored], right_from=2)
    fields = [(name, path, stats) for name, paths in summary["fields"].items() for path, stats in paths.items()]
    if fields:
        fields.sort(key=lambda row: (row[2]["accuracy"] is None, row[2]["accuracy"] or 0.0))
        shown = fields[:FIELD_ROWS_SHOWN]
        title = "### Fields" + (f" (worst {len(shown)} of {len(fields)})" if len(fields) > len(shown) else "")
        lines += ["", title, ""]
        lines += table(
            ["evaluator", "field", "accuracy", "hits/scored", "mean score", "skipped"],
            [
                [md(name), md(path), pct(stats["accuracy"]), f"{stats['hits']}/{stats['scored']}", num(stats["mean_score"]), str(stats["skipped"])]
                for name, path, stats in shown
            ],
            right_from=2,
        )
    tags = summary.get("tags") or {}
    if tags:
        lines += ["", "### By tag", ""]
        lines += table(
            ["tag", "cases", "passed", "failed", "errored", "pass rate"],
            [[md(tag), str(row["total"]), str(row["passed"]), str(row["failed"]), str(row["errored"]), pct(row["pass_rate"])] for tag, row in tags.items()],
        )
    for name, metrics in summary["dataset_metrics"].items():
        lines += ["", f"### Dataset metrics: {md(name)}", ""]
        lines += table(
            ["attribute", "TP", "FP", "FN", "TN", "precision", "recall", "F1"],
            [
                [md(attribute), *(str(row[k]) for k in ("tp", "fp", "fn", "tn")), num(row["precision"]), num(row["recall"]), num(row["f1"])]
                for attribute, row in metrics["attributes"].items()
            ],
        )
        undefined = any(row[k] is None for row in metrics["attributes"].values() for k in ("precision", "recall", "f1"))
        lines += ["", f"macro-F1 **{num(metrics['macro_f1'])}**" + (" (n/a: undefined, its denominator is 0)" if undefined else "")]
    figures = usage_lines(summary)  # latency/tokens/cost, suite limits, --repeat spread: as the terminal shows them
    if figures:
        lines += ["", "### Usage, limits and repeats", "", *(f"- {md(line)}" for line in figures)]
    lines += cells_markdown(summary)
    lines += failures_markdown(failures, failing)
    return "\n".join(lines) + "\n"


def cells_markdown(summary: dict[str, Any]) -> list[str]:
    """A matrix run cell by cell: the cells table, the comparisons (significant ones in bold, first)
    and the cells that failed the gate; nothing for a run of one cell."""
    found = cell_table(summary)
    if found is None:
        return []
    lines = ["", "### Cells", ""]
    lines += table([md(header) for header, _ in found.columns], [[md(value) for value in row] for row in found.rows])
    comparisons = comparison_lines(summary)
    if comparisons:
        lines += ["", "### Comparisons", ""]
        for text, significant in comparisons:  # a metric's line is indented under its comparison: a nested item
            indent, said = ("  ", text[2:]) if text.startswith("  ") else ("", text)
            lines.append(f"{indent}- **{md(said)}**" if significant else f"{indent}- {md(said)}")
    failed = gate_lines(summary)
    if failed:
        lines += ["", "### Cells that failed the gate", "", *(f"- {md(line)}" for line in failed)]
    return lines


def failures_markdown(failures: list[Failure], failing: int) -> list[str]:
    if not failing:
        return []
    lines = ["", f"### Failures ({len(failures)} of {failing}, worst first)" if failures else f"### Failures ({failing})", ""]
    for failure in failures:
        lines.append(f"- **{md(headline(failure))}**")
        lines += [f"  - {md(note)}" for note in failure.notes]
        for misses in failure.evaluators:
            lines.append(f"  - {md(evaluator_heading(misses))}")
            lines += [f"    - {md(line)}" for line in misses.lines]
            if misses.more:
                lines.append(f"    - … and {misses.more} more")
    if failing > len(failures):
        lines += ["", f"… and {failing - len(failures)} more failing or errored cases."]
    return lines
