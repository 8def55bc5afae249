"""A matrix run (several targets or prompts) cell by cell: the rows and lines every report shows.

Built once from the summary's `cells`, `comparisons` and each cell's `gate`, as plain strings, so
the terminal, Markdown and HTML say the same thing in the same words; each report escapes them in
its own way. A run of one cell has no `cells` in its summary, and every report stays as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agenteval.cells import cell_label
from agenteval.reports.numbers import num, pct

if TYPE_CHECKING:
    from agenteval.results import CaseResult

_ID, _NUM = "id", "num"


@dataclass(frozen=True, slots=True)
class CellTable:
    """`columns` are (header, kind): kind "id" for the cell label, "num" for every figure;
    `per_evaluator` the [start, stop) of the evaluators' and criteria's columns (a terminal too
    narrow for the whole table shows them in a table of their own)."""

    columns: list[tuple[str, str]]
    rows: list[list[str]]
    per_evaluator: tuple[int, int] = (0, 0)


def cells(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary's cells when the run has more than one, else []."""
    found = summary.get("cells")
    return found if isinstance(found, list) and len(found) > 1 else []


def result_cell(result: CaseResult) -> str:
    """The cell label of a result line: "" for the single unnamed cell."""
    return "" if result.target is None and result.prompt is None else cell_label(result.target, result.prompt)


def _ms(value: Any) -> str:
    return "n/a" if value is None else f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms"


def _usd(value: Any) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def cell_table(summary: dict[str, Any]) -> CellTable | None:
    """One row per cell: label, cases, pass rate, mean score, each evaluator's mean, each criterion's
    mean (an evaluator with `criteria`), then tokens and cost, each when some cell counted it (a command
    or python target counts none), latency p50/p95 when any cell timed its answers, and whether the
    cell met the gate. An evaluator a cell never ran shows "n/a"."""
    rows = cells(summary)
    if not rows:
        return None
    evaluators: dict[str, list[str]] = {}  # evaluator -> its criteria, in the order first seen
    for cell in rows:
        for name, stats in (cell.get("evaluators") or {}).items():
            known = evaluators.setdefault(name, [])
            for criterion in stats.get("criteria") or {}:
                if criterion not in known:
                    known.append(criterion)
    usages = [cell.get("usage") or {} for cell in rows]
    counted = any(usage.get("total_tokens") for usage in usages)
    priced = any(usage.get("total_cost_usd") is not None for usage in usages)
    timed = any((usage.get("latency_ms") or {}).get("p50") is not None for usage in usages)
    gated = any(cell.get("gate") for cell in rows)
    columns = [("cell", _ID), ("cases", _NUM), ("pass rate", _NUM), ("mean score", _NUM)]
    columns += [(name, _NUM) for name in evaluators]
    columns += [(f"{name}: {criterion}", _NUM) for name, criteria in evaluators.items() for criterion in criteria]
    per_evaluator = (4, len(columns))
    if counted:
        columns.append(("tokens", _NUM))
    if priced:
        columns.append(("cost", _NUM))
    if timed:
        columns += [("p50", _NUM), ("p95", _NUM)]
    if gated:
        columns.append(("gate", _NUM))
    table = []
    for cell, usage in zip(rows, usages):
        stats = cell.get("evaluators") or {}
        counts = cell.get("counts") or {}
        row = [str(cell.get("label", "")), str(counts.get("total", "n/a")), pct(cell.get("pass_rate")), num(cell.get("mean_score"))]
        row += [num(stats[name].get("mean_score")) if name in stats else "n/a" for name in evaluators]
        for name, criteria in evaluators.items():
            found = (stats.get(name) or {}).get("criteria") or {}
            row += [num(found[criterion].get("mean_score")) if criterion in found else "n/a" for criterion in criteria]
        if counted:
            tokens = usage.get("total_tokens")
            row.append("n/a" if tokens is None else str(tokens))
        if priced:
            row.append(_usd(usage.get("total_cost_usd")))
        if timed:
            latency = usage.get("latency_ms") or {}
            row += [_ms(latency.get("p50")), _ms(latency.get("p95"))]
        if gated:
            gate = cell.get("gate")
            row.append("n/a" if not gate else "passed" if gate.get("passed") else "FAILED")
        table.append(row)
    return CellTable(columns, table, per_evaluator)


def comparison_lines(summary: dict[str, Any]) -> list[tuple[str, bool]]:
    """Each comparison's `text` and whether it is significant: the significant ones first, each
    group in the summary's order."""
    found = summary.get("comparisons") if cells(summary) else None
    if not isinstance(found, list):
        return []
    groups = [comparison_group(item) for item in found if isinstance(item, dict)]
    return [line for group in groups if group[0][1] for line in group] + [line for group in groups if not group[0][1] for line in group]


def comparison_group(item: dict[str, Any]) -> list[tuple[str, bool]]:
    """A comparison's line, then one indented line per metric whose difference is significant and
    one naming the metrics without a detectable difference."""
    lines = [(str(item.get("text", "")), bool(item.get("significant")))]
    metrics = [metric for metric in item.get("metrics") or () if isinstance(metric, dict)]
    lines += [(f"  {metric.get('text', '')}", True) for metric in metrics if metric.get("significant")]
    quiet = [str(metric.get("name", "")) for metric in metrics if not metric.get("significant")]
    if quiet:
        lines.append((f"  no detectable difference in {', '.join(quiet)}", False))
    return lines


def gate_lines(summary: dict[str, Any]) -> list[str]:
    """`cell gpt-a/terse failed the gate: <reason>` for each cell that did."""
    lines = []
    for cell in cells(summary):
        gate = cell.get("gate")
        if gate and not gate.get("passed"):
            reason = gate.get("reason")
            lines.append(f"cell {cell.get('label', '')} failed the gate" + (f": {reason}" if reason else ""))
    return lines
