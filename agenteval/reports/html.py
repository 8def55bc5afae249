"""One self-contained HTML file: charts and tables of the run, and every case, searchable.

Nothing loads from the network when the file is viewed: styles and the script are inline and the
charts are inline SVG. Per-case data is spooled to a temporary file while results stream, then
embedded gzip-compressed (the browser's DecompressionStream inflates it), each value cut to a
bounded size, so a report of 100,000 cases stays a file of a few megabytes.

A matrix run (several targets or prompts) adds the cells table and a comparison view: each case
with every cell's answer and verdict side by side. The view is built by the page from the same
case rows (each row names its cell), so the writer holds no more than before: a name per cell.
"""

from __future__ import annotations

import base64
import re
import tempfile
import zlib
from html import escape
from collections.abc import Sequence
from importlib import resources
from typing import IO, Any

import orjson

from agenteval.metrics import ratio
from agenteval.paths import MISSING
from agenteval.reports.cell_table import cell_table, comparison_lines, gate_lines, result_cell
from agenteval.reports.failures import FieldRow, field_rows
from agenteval.reports.numbers import num, pct, smoke_words
from agenteval.reports.spans import span_tree
from agenteval.reports.terminal import BIDI_PATTERN, bidi_escaped
from agenteval.reports.transcript import chat, transcript, verdict_marks
from agenteval.results import CaseResult

BINS = 10
OUTPUT_CHARS = 4000  # of a candidate answer, as JSON
DETAILS_CHARS = 2000  # of one evaluator's details
VALUE_CHARS = 300  # of one expected or actual field value
TEXT_CHARS = 500  # of a reasoning, a miss or an error
MISSES_KEPT = 50  # per evaluator
FIELD_BARS = 40
_CASE_VERDICTS = {"pass": 0, "fail": 1, "error": 2}
_EVALUATOR_VERDICTS = {"pass": 0, "partial": 1, "fail": 2, "error": 3}
_CHUNK = 3 * (1 << 18)  # base64 works on 3-byte groups
_SCALARS = (int, float, bool, type(None))
_STATUS = {"hit": 0, "miss": 1, "skipped": 2}
_TAG = re.compile("(<[^>]*>)")


def clip(value: Any, limit: int) -> Any:
    """The value itself when its JSON is short enough, else `{"$clip": the first `limit` characters}`."""
    kind = type(value)
    if kind in _SCALARS or (kind is str and len(value) * 6 + 2 <= limit):  # no escape is longer than \\uXXXX
        return value
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # nested past 254 levels, a lone surrogate, a long integer
        return {"$clip": _dumps(value).decode()[:limit]}
    return value if len(text) <= limit else {"$clip": text[:limit]}


def _dumps(value: Any, option: int = 0) -> bytes:
    """JSON of `value`, whatever it holds: what orjson refuses is written from a storable copy, with
    lone surrogates as `\\udXXX` escapes (agenteval.results.storable)."""
    try:
        return orjson.dumps(value, option=option)
    except orjson.JSONEncodeError:
        import json

        from agenteval.results import storable

        return json.dumps(storable(value)).encode()


def shown(value: float, digits: int) -> float:
    """A number rounded once, as the terminal, Markdown and JUnit print it (`f"{x:.3f}"`); the page
    prints it with `toFixed(digits)`, which then adds no second rounding (0.97949 stays 0.979)."""
    return round(value, digits)  # CPython rounds the exact binary value, as formatting does


def clip_text(text: str | None, limit: int = TEXT_CHARS) -> str | None:
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"


class _Names:
    """Strings that repeat on every case (evaluator names, tags, field paths), stored once."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        found = self.index.get(name)
        if found is None:
            found = self.index[name] = len(self.index)
        return found

    def names(self) -> list[str]:
        return list(self.index)


class HtmlWriter:
    """Fed one result at a time; `write` produces the page.

    Each case has a short table row (parsed when the page opens) and a details line (parsed only
    when the case is opened), so a page of 100,000 cases opens without parsing every answer.
    """

    def __init__(self) -> None:
        self._rows = tempfile.TemporaryFile()
        self._details = tempfile.TemporaryFile()
        self._evaluators = _Names()
        self._tags = _Names()
        self._paths = _Names()
        self._cells = _Names()
        self._bins = [[0, 0, 0] for _ in range(BINS)]
        self._count = 0

    def add(self, result: CaseResult) -> None:
        self._rows.write((b"," if self._count else b"") + _dumps(self._row(result)))
        self._details.write(_dumps(self._detail(result), orjson.OPT_NON_STR_KEYS) + b"\n")
        self._count += 1
        slot = min(BINS - 1, max(0, int(result.score * BINS)))
        self._bins[slot][_CASE_VERDICTS[result.verdict]] += 1

    def _row(self, result: CaseResult) -> list[Any]:
        """[id, verdict, score, ms, tags, [evaluator, verdict, ...], miss text] and, for a result of
        a named cell (a matrix run), [..., cell, repetition]: arrays, not objects, because keys
        would repeat 100,000 times."""
        verdicts: list[int] = []
        misses: list[str] = []
        for evaluator in result.evaluator_results:
            verdicts += (self._evaluators(evaluator.name), _EVALUATOR_VERDICTS[evaluator.verdict])
            misses += (clip_text(miss) or "" for miss in evaluator.misses[:MISSES_KEPT])
        row = [
            result.case_id, _CASE_VERDICTS[result.verdict], shown(result.score, 3), shown(result.duration_ms, 1),
            [self._tags(tag) for tag in result.tags], verdicts, "\n".join(misses),
        ]
        label = result_cell(result)
        if label:
            row += (self._cells(label), result.repetition)
        return row

    def _detail(self, result: CaseResult) -> list[Any]:
        """[evaluators, output, error, input, expected, transcript, same, chat, spans]; an evaluator is [name, verdict,
        score, reasoning, misses, error, field cells, details, misses count, criteria reasoning],
        every value cut to a bounded size. Input and expected live here, not in the table rows, so
        the page still opens without parsing them; `transcript` is the answer's trajectory as chat
        turns (agenteval.reports.transcript) or null; `same` is 1 when the expected is the candidate
        itself (stored once, as the candidate); `chat` is a played tool loop's or conversation's answer
        as [entries, end, verdict marks] (agenteval.reports.transcript.chat), the transcript then null;
        `spans` an answer read from a trace as [trace id, span rows] (agenteval.reports.spans) or null."""
        evaluators = []
        for evaluator in result.evaluator_results:
            fields = [self._field_cell(row) for row in field_rows(evaluator)]
            details = evaluator.details
            if details and isinstance(details.get("fields"), list):
                details = {key: value for key, value in details.items() if key != "fields"}  # shown as `fields`
            evaluators.append([
                self._evaluators(evaluator.name), _EVALUATOR_VERDICTS[evaluator.verdict], shown(evaluator.score, 3),
                clip_text(evaluator.reasoning), [clip_text(miss) for miss in evaluator.misses[:MISSES_KEPT]],
                clip_text(evaluator.error), fields, clip(details, DETAILS_CHARS) if details else None,
                len(evaluator.misses), _criteria_reasoning(details),
            ])
        output = clip(result.output, OUTPUT_CHARS)
        same = _same(result.expected, result.output)  # most passing cases: stored once, as the candidate
        live = chat(result.output, clip)
        if live is not None:
            live.append(verdict_marks(result.evaluator_results, result.output, _EVALUATOR_VERDICTS))
        return [
            evaluators, output, clip_text(result.error, 2000), clip(result.input, OUTPUT_CHARS),
            None if same else clip(result.expected, OUTPUT_CHARS), None if live else transcript(result.output, clip),
            1 if same else 0, live, span_tree(result.output),
        ]

    def _field_cell(self, row: FieldRow) -> list[Any]:
        """[path, code, expected?, actual?]: code = status (0 hit, 1 miss, 2 skipped, 3 other)
        + 4 when there is an expected value + 8 when there is an actual one + 16 when the actual
        equals the expected and is not repeated (most hits)."""
        code = _STATUS.get(row.status, 3)
        cell: list[Any] = [self._paths(row.path), code]
        if row.expected is not MISSING:
            code |= 4
            cell.append(clip(row.expected, VALUE_CHARS))
        if row.actual is not MISSING:
            code |= 8
            if code & 4 and type(row.actual) is type(row.expected) and row.actual == row.expected:
                code |= 16
            else:
                cell.append(clip(row.actual, VALUE_CHARS))
        cell[1] = code
        return cell

    def write(self, out: IO[bytes], summary: dict[str, Any]) -> None:
        """The page: static sections rendered here, the cases table by the inline script."""
        types = {name: stats["type"] for name, stats in summary.get("evaluators", {}).items()}
        out.write(unreordered(page_head(summary, self._bins, matrix=len(self._cells.index) > 1)).encode())
        out.write(b'<script id="agenteval-data" type="application/gzip;base64">\n')
        self._write_data(out, types, [cell.get("label") for cell in summary.get("cells") or () if isinstance(cell, dict)])
        out.write(b"\n</script>\n<script>\n")
        out.write(_asset("report.js").encode())
        out.write(b"</script>\n</body>\n</html>\n")

    def _write_data(self, out: IO[bytes], types: dict[str, str], order: Sequence[Any] = ()) -> None:
        """gzip + base64 of: one line of JSON {evaluators, types, tags, paths, [cells, order,] cases}, then
        one details line per case; `cells` (the cell labels, as the rows number them) and `order` (their
        indexes in the suite's order, as the summary lists the cells) only in a matrix run."""
        names = self._evaluators.names()
        found: dict[str, Any] = {
            "evaluators": names, "types": [types.get(name, "") for name in names],
            "tags": self._tags.names(), "paths": self._paths.names(),
        }
        if self._cells.index:
            found["cells"] = self._cells.names()
            listed = [self._cells.index[label] for label in order if label in self._cells.index]
            found["order"] = list(dict.fromkeys(listed + list(range(len(found["cells"])))))  # cells the summary does not list: last
        head = orjson.dumps(found)
        packer = zlib.compressobj(6, zlib.DEFLATED, 31)
        pending = b""

        def emit(data: bytes, final: bool = False) -> None:
            nonlocal pending
            pending += data
            cut = len(pending) if final else len(pending) - len(pending) % 3
            if cut:
                out.write(base64.b64encode(pending[:cut]))
                pending = pending[cut:]

        emit(packer.compress(head[:-1] + b',"cases":['))
        for spool, after in ((self._rows, b"]}\n"), (self._details, b"")):
            spool.seek(0)
            while chunk := spool.read(_CHUNK):
                emit(packer.compress(chunk))
            emit(packer.compress(after))
        emit(packer.flush(), final=True)

    def close(self) -> None:
        self._rows.close()
        self._details.close()


def _same(expected: Any, output: Any) -> bool:
    """The expected answer is the candidate, value for value and type for type (1 is not 1.0 nor true)."""
    if expected is None or type(expected) is not type(output):
        return False
    try:
        return orjson.dumps(expected, option=orjson.OPT_NON_STR_KEYS) == orjson.dumps(output, option=orjson.OPT_NON_STR_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return False


def _criteria_reasoning(details: Any) -> list[list[Any]] | None:
    """[[criterion, raw score, reasoning], ...] from a judge's `details.criteria` (llm_judge): the
    judge's own words, shown in view rather than inside the details JSON."""
    criteria = details.get("criteria") if isinstance(details, dict) else None
    if not isinstance(criteria, dict):
        return claim_rows(details)
    found = [
        [str(name), clip(entry.get("raw_score", entry.get("score")), VALUE_CHARS), clip_text(entry["reasoning"])]
        for name, entry in criteria.items()
        if isinstance(entry, dict) and isinstance(entry.get("reasoning"), str) and entry["reasoning"]
    ]
    return found or None


def claim_rows(details: Any) -> list[list[Any]] | None:
    """[[claim, verdict, "quote"], ...] from a claim-level judge's `details.claims` (or `chunks`,
    context_precision's), shown like a rubric's criteria: every claim with its verdict and evidence."""
    found = details.get("claims", details.get("chunks")) if isinstance(details, dict) else None
    if not isinstance(found, list):
        return None
    rows = [
        [clip_text(str(entry.get("claim", f"chunk {entry.get('chunk')}"))), str(entry.get("verdict")),
         clip_text(f"“{entry['evidence']}”" if isinstance(entry.get("evidence"), str) and entry["evidence"] else "")]
        for entry in found[:CLAIMS_SHOWN] if isinstance(entry, dict)
    ]
    return rows or None


CLAIMS_SHOWN = 200


def _asset(name: str) -> str:
    return resources.files("agenteval.reports").joinpath("assets", name).read_text(encoding="utf-8")


def unreordered(page: str) -> str:
    """A page with each bidirectional mark, override or isolate in its text shown as an escape
    (`\\u202e`), as every report shows it, so no value reorders what follows it on screen. The
    tags, attributes included, keep the data as it is (a form's values, a link): every value in
    the page was escaped, so each `<` and `>` in it is the markup's own."""
    if not BIDI_PATTERN.search(page):  # (the usual page)
        return page
    return "".join(part if part.startswith("<") else bidi_escaped(part) for part in _TAG.split(page))


def page_head(summary: dict[str, Any], bins: list[list[int]], matrix: bool = False) -> str:
    """Everything above the cases data: header, counts, charts and tables; with `matrix` (the
    results name their cells), the cells table, the comparison view and a cell column."""
    counts = summary["counts"]
    suite = summary.get("suite", "")
    facts = [f"run {summary['run_id']}"] if summary.get("run_id") else []
    if summary.get("started_at"):
        facts.append(f"started {summary['started_at']}")
    if "duration_s" in summary:
        facts.append(f"{summary['duration_s']:.2f} s")
    if summary.get("agenteval_version"):
        facts.append(f"agenteval {summary['agenteval_version']}")
    if summary.get("interrupted"):
        facts.append("interrupted")
    if smoke_words(summary):
        facts.append(smoke_words(summary).strip(" ()"))
    cards = "".join(
        f'<div class="card {css}"><b id="count-{key}">{value}</b><span>{label}</span></div>'
        for key, value, label, css in (
            ("total", counts["total"], "cases", ""),
            ("passed", counts["passed"], "passed", "pass"),
            ("failed", counts["failed"], "failed", "fail"),
            ("errored", counts["errored"], "errored", "error"),
            ("pass-rate", pct(summary["pass_rate"]), "pass rate", ""),
            ("mean-score", num(summary["mean_score"]), "mean score", ""),
        )
    )
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>agenteval: {escape(suite)}</title>\n<style>\n{_asset('report.css')}</style>\n</head>\n<body>\n"
        f'<header><h1>{escape(suite)}</h1><p class="facts">{escape(" · ".join(facts))}</p></header>\n'
        f'<section class="cards">{cards}</section>\n'
        f'<section class="charts">{_histogram_section(bins)}{_evaluator_section(summary)}{_field_section(summary)}{_tag_section(summary)}</section>\n'
        f"{_usage_section(summary)}{_criteria_section(summary)}{_cells_section(summary)}{_dataset_section(summary)}"
        f"{_comparison_section() if matrix else ''}{_cases_section(matrix)}"
    )


def _histogram_section(bins: list[list[int]]) -> str:
    if not any(map(sum, bins)):
        return ""
    return f'<div class="chart"><h2>Score distribution</h2>{histogram_svg(bins)}</div>'


def histogram_svg(bins: list[list[int]]) -> str:
    """Cases per score bin, stacked by verdict (pass, fail, error)."""
    width, height, left, bottom = 460, 190, 34, 26
    tallest = max((sum(counts) for counts in bins), default=0) or 1
    step = (width - left) / len(bins)
    parts = [f'<svg class="histogram" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="score distribution">']
    parts.append(f'<text x="{left - 6}" y="12" class="axis" text-anchor="end">{tallest}</text>')
    parts.append(f'<text x="{left - 6}" y="{height - bottom}" class="axis" text-anchor="end">0</text>')
    for index, counts in enumerate(bins):
        x = left + index * step
        y = height - bottom
        low, high = index / len(bins), (index + 1) / len(bins)
        tip = f"score {low:.1f}–{high:.1f}: {counts[0]} pass, {counts[1]} fail, {counts[2]} error"
        parts.append(f"<g><title>{tip}</title>")
        for count, css in zip(counts, ("pass", "fail", "error")):
            if count:
                bar = (height - bottom - 8) * count / tallest
                y -= bar
                parts.append(f'<rect class="{css}" x="{x + 2:.1f}" y="{y:.1f}" width="{step - 4:.1f}" height="{bar:.1f}"/>')
        parts.append("</g>")
        parts.append(f'<text x="{x + step / 2:.1f}" y="{height - 8}" class="axis" text-anchor="middle">{low:.1f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def bars_svg(rows: list[tuple[str, float | None, str]], css: str = "bar") -> str:
    """Horizontal bars: (label, fraction or None, text after the bar)."""
    width, row_height, label_width, bar_width = 480, 22, 160, 130
    height = row_height * len(rows) + 4
    parts = [f'<svg class="bars" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">']
    for index, (label, fraction, text) in enumerate(rows):
        y = index * row_height + 4
        short = label if len(label) <= 26 else label[:25] + "…"
        parts.append(f"<g><title>{escape(label)}: {escape(text)}</title>")
        parts.append(f'<text x="{label_width - 6}" y="{y + 13}" text-anchor="end">{escape(short)}</text>')
        parts.append(f'<rect class="track" x="{label_width}" y="{y + 2}" width="{bar_width}" height="14"/>')
        if fraction is not None:
            parts.append(f'<rect class="{css}" x="{label_width}" y="{y + 2}" width="{bar_width * fraction:.1f}" height="14"/>')
        parts.append(f'<text x="{label_width + bar_width + 6}" y="{y + 13}">{escape(text)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _evaluator_section(summary: dict[str, Any]) -> str:
    rows = []
    for name, stats in summary["evaluators"].items():
        passed = stats["verdicts"].get("pass", 0)
        rate = ratio(passed, stats["count"])
        rows.append((name, rate, f"{pct(rate)} pass, mean {num(stats['mean_score'])}"))
    if not rows:
        return ""
    return f'<div class="chart" id="evaluator-chart"><h2>Evaluators (pass rate)</h2>{bars_svg(rows)}</div>'


def _field_section(summary: dict[str, Any]) -> str:
    rows = [
        (f"{name} · {path}" if len(summary["fields"]) > 1 else path, stats["accuracy"], f"{pct(stats['accuracy'])} ({stats['hits']}/{stats['scored']})")
        for name, paths in summary["fields"].items() for path, stats in paths.items()
    ]
    if not rows:
        return ""
    rows.sort(key=lambda row: (row[1] is None, row[1] or 0.0))
    note = f'<p class="note">worst {FIELD_BARS} of {len(rows)} fields</p>' if len(rows) > FIELD_BARS else ""
    return f'<div class="chart" id="field-chart"><h2>Field accuracy</h2>{bars_svg(rows[:FIELD_BARS])}{note}</div>'


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _dataset_section(summary: dict[str, Any]) -> str:
    parts = []
    for name, metrics in summary["dataset_metrics"].items():
        rows = [
            [attribute, *(str(row[k]) for k in ("tp", "fp", "fn", "tn")), num(row["precision"]), num(row["recall"]), num(row["f1"])]
            for attribute, row in metrics["attributes"].items()
        ]
        parts.append(
            f'<div class="metrics"><h3>{escape(name)} <span class="note">macro-F1 {num(metrics["macro_f1"])}</span></h3>'
            + _table(["attribute", "TP", "FP", "FN", "TN", "precision", "recall", "F1"], rows) + "</div>"
        )
    if not parts:
        return ""
    return '<section id="dataset-metrics"><h2>Dataset metrics</h2><p class="note">n/a: undefined, its denominator is 0</p>' + "".join(parts) + "</section>\n"


def _usage_section(summary: dict[str, Any]) -> str:
    """Latency/tokens/cost, suite limits and the --repeat spread, in the terminal's words."""
    from agenteval.reports.usage import usage_lines

    figures = usage_lines(summary)
    if not figures:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in figures)
    return f'<section id="usage"><h2>Usage, limits and repeats</h2><ul>{items}</ul></section>\n'


def _criteria_section(summary: dict[str, Any]) -> str:
    """Each criterion's mean score and verdicts (agenteval.reports.table.criterion_rows)."""
    from agenteval.reports.table import criterion_rows

    rows = criterion_rows(summary)
    if not rows:
        return ""
    return ('<section id="criteria"><h2>Scores per criterion</h2>'
            + _table(["evaluator", "criterion", "mean score", "pass", "partial", "fail"], rows) + "</section>\n")


def _tag_section(summary: dict[str, Any]) -> str:
    tags = summary.get("tags") or {}
    if not tags:
        return ""
    rows = [[tag, str(row["total"]), str(row["passed"]), str(row["failed"]), str(row["errored"]), pct(row["pass_rate"])] for tag, row in tags.items()]
    return '<div class="chart" id="tags"><h2>By tag</h2>' + _table(["tag", "cases", "passed", "failed", "errored", "pass rate"], rows) + "</div>"


def _cells_section(summary: dict[str, Any]) -> str:
    """The cells table, the comparisons in words (significant ones first) and the cells that failed the gate."""
    found = cell_table(summary)
    if found is None:
        return ""
    parts = ['<section id="cells"><h2>Cells</h2>', _table([header for header, _ in found.columns], found.rows)]
    comparisons = comparison_lines(summary)
    if comparisons:
        items = "".join(
            f'<li class="{"significant" if significant else "noise"}{" metric" if text.startswith("  ") else ""}">{escape(text.strip())}</li>'
            for text, significant in comparisons
        )
        parts.append(f'<h3>Comparisons</h3><ul id="comparisons">{items}</ul>')
    failed = gate_lines(summary)
    if failed:
        parts.append('<ul id="gate-failures">' + "".join(f'<li class="case-error">{escape(line)}</li>' for line in failed) + "</ul>")
    return "".join(parts) + "</section>\n"


def _comparison_section() -> str:
    return """<section id="comparison">
<h2>Side by side</h2>
<p class="note">Each case with every cell's verdict and answer; cases where the cells' verdicts differ come first.</p>
<div class="controls">
<label><input id="disagree-only" type="checkbox"> only cases where the cells disagree</label>
<span id="comparison-count" role="status">loading…</span>
</div>
<table id="comparison-table"><thead></thead><tbody></tbody></table>
<div class="pager"><button id="comparison-prev" type="button">‹ previous</button><span id="comparison-page"></span><button id="comparison-next" type="button">next ›</button></div>
</section>
"""


def _cases_section(matrix: bool = False) -> str:
    cell_filter = '<select id="cell" aria-label="cell"><option value="">all cells</option></select>\n' if matrix else ""
    cell_column = "<th>cell</th>" if matrix else ""
    return f"""<section id="cases">
<h2>Cases</h2>
<div class="controls">
<input id="search" type="search" placeholder="search case id or miss" aria-label="search">
<select id="verdict" aria-label="verdict"><option value="">all verdicts</option><option value="notpass">not passing</option><option value="pass">pass</option><option value="fail">fail</option><option value="error">error</option></select>
<select id="tag" aria-label="tag"><option value="">all tags</option></select>
<select id="evaluator" aria-label="evaluator"><option value="">any evaluator</option></select>
{cell_filter}<select id="sort" aria-label="sort"><option value="">file order</option><option value="low">lowest score</option><option value="high">highest score</option><option value="slow">slowest</option></select>
<span id="case-count" role="status">loading…</span>
</div>
<table id="case-table"><thead><tr><th>case</th>{cell_column}<th>verdict</th><th>score</th><th>tags</th><th>did not pass</th><th>ms</th></tr></thead><tbody></tbody></table>
<div class="pager"><button id="prev" type="button">‹ previous</button><span id="page"></span><button id="next" type="button">next ›</button></div>
<noscript>The cases table needs JavaScript.</noscript>
</section>
"""
