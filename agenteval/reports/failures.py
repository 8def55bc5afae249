"""Which cases failed and why, a few lines each: what a reader scrolls for after the tables.

A run never holds its results, so the collector keeps only the worst few failures seen so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from agenteval.cells import cell_label
from agenteval.evaluators.base import EvaluatorResult
from agenteval.paths import MISSING
from agenteval.results import CaseResult

MISSES_SHOWN = 5  # per evaluator, in the terminal and in Markdown
VALUE_WIDTH = 60  # characters of one expected or actual value
ANSWER_CHARS = 120  # of the answer, on its one line
REASONING_CHARS = 300  # of a judge's reasoning for one criterion
_RANK = {"error": 0, "fail": 1, "pass": 2}


@dataclass(slots=True)
class FieldRow:
    """One field of one evaluator: its status and both values (MISSING where absent)."""

    path: str
    status: str
    expected: Any = MISSING
    actual: Any = MISSING


def field_rows(evaluator: EvaluatorResult) -> list[FieldRow]:
    """Per-field rows from the shapes evaluators report them in.

    `field_accuracy` lists `details.fields` rows; judges often map `details.fields` by path;
    `field_confusion` (and its judge twin) keep `details.mismatches`.
    """
    details = evaluator.details or {}
    rows: list[FieldRow] = []
    listed = details.get("fields")
    if isinstance(listed, list):
        for row in listed:
            if isinstance(row, dict) and isinstance(row.get("path"), str):
                rows.append(FieldRow(row["path"], str(row.get("status", "")), row.get("expected", MISSING), row.get("actual", MISSING)))
    elif isinstance(listed, dict):
        missed = {miss_path(miss) for miss in evaluator.misses}
        for path, row in listed.items():
            if isinstance(row, dict):
                status = "miss" if path in missed else "hit" if path in evaluator.hits else ""
                rows.append(FieldRow(str(path), status, row.get("expected", MISSING), row.get("actual", MISSING)))
    mismatches = details.get("mismatches")
    if isinstance(mismatches, list):
        known = {row.path for row in rows}
        for row in mismatches:
            path = row.get("field", row.get("path")) if isinstance(row, dict) else None
            if isinstance(path, str) and path not in known and "expected_index" not in row:
                rows.append(FieldRow(path, "miss", row.get("expected", MISSING), row.get("actual", MISSING)))
    return rows


def miss_path(miss: str) -> str:
    """`invoice.total (type mismatch)` names the field `invoice.total`."""
    return miss.split(" (", 1)[0]


def show_value(value: Any, width: int = VALUE_WIDTH) -> str:
    """A value as JSON, cut to `width` characters; an absent value reads `nothing`. Never raises: a value
    orjson refuses (nested past 254 levels, a lone surrogate, a long integer) is shown by `_show_any`."""
    if value is MISSING:
        return "nothing"
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:
        text = _show_any(value, width)
    return text if len(text) <= width else text[: width - 1] + "…"


def _show_any(value: Any, width: int) -> str:
    """The first `width` or so characters of `value` as JSON, written without recursion (it may nest
    past any stack) and stopping once that much is written; a lone surrogate reads as its escape."""
    import json
    from itertools import islice

    parts: list[str] = []
    written = 0
    stack: list[Any] = [value]
    while stack and written <= width:
        node = stack.pop()
        if type(node) is _Token:
            text = node.text
        elif isinstance(node, dict):
            text = "{"
            entries = list(islice(node.items(), width))  # no more entries than characters are shown
            stack.append(_Token("}"))
            for position in range(len(entries) - 1, -1, -1):
                key, child = entries[position]
                stack.extend((child, _Token(_json_text(str(key), json) + ": ")))
                if position:
                    stack.append(_Token(", "))
        elif isinstance(node, (list, tuple)):
            text = "["
            entries = list(islice(node, width))
            stack.append(_Token("]"))
            for position in range(len(entries) - 1, -1, -1):
                stack.append(entries[position])
                if position:
                    stack.append(_Token(", "))
        elif isinstance(node, str):
            text = _json_text(node[: width + 1], json)
        elif isinstance(node, bool) or node is None:
            text = json.dumps(node)
        elif isinstance(node, int):
            text = str(node) if node.bit_length() < 1000 else f"<integer of about {int(node.bit_length() * 0.30103) + 1} digits>"
        elif isinstance(node, float):
            text = json.dumps(node)
        else:
            text = repr(type(node).__name__)
        parts.append(text)
        written += len(text)
    return "".join(parts)


class _Token:
    """Punctuation waiting on `_show_any`'s stack, told apart from the values around it."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _json_text(text: str, json: Any) -> str:
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


def miss_lines(evaluator: EvaluatorResult) -> list[str]:
    """Each miss, with the expected and actual value when the evaluator reported them for that field."""
    by_path = {row.path: row for row in field_rows(evaluator)}
    lines = []
    for miss in evaluator.misses:
        row = by_path.get(miss_path(miss))
        if row is None or (row.expected is MISSING and row.actual is MISSING):
            lines.append(miss)
        else:
            lines.append(f"{miss}: expected {show_value(row.expected)}, got {show_value(row.actual)}")
    return lines


def one_line(text: str, width: int) -> str:
    """`text` with its runs of whitespace (line breaks too) as one space, cut to `width` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def answer_line(output: Any, width: int = ANSWER_CHARS) -> str | None:
    """A text answer on one line, quoted as a JSON string (so text holding JSON never reads like an
    object), as the HTML report shows it first: the answer itself when it is text, or the `content`
    of a model's or an agent's answer; None for a structured answer (its field misses show the
    values that matter) or none at all."""
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        output = output["content"]
    return show_value(" ".join(output.split()), width) if isinstance(output, str) else None


JSON_TEXT_HINT = (
    "the answer is a string holding JSON; parse it with `transform: {python: \"json:loads\"}` or have the target return an object"
)


def holds_json(output: Any) -> bool:
    """Whether a text answer is a JSON object or array written as a string."""
    if not isinstance(output, str) or output.lstrip()[:1] not in ("{", "["):
        return False
    try:
        return isinstance(orjson.loads(output), (dict, list))
    except orjson.JSONDecodeError:
        return False


def criteria_lines(evaluator: EvaluatorResult) -> list[str]:
    """A judge's words per criterion (`details.criteria` of llm_judge and its kind): `name (score):
    reasoning`, each on one line; [] when the evaluator gave none."""
    criteria = (evaluator.details or {}).get("criteria")
    if not isinstance(criteria, dict):
        return []
    lines = []
    for name, entry in criteria.items():
        if isinstance(entry, dict) and isinstance(entry.get("reasoning"), str) and entry["reasoning"].strip():
            score = entry.get("raw_score", entry.get("score"))
            shown = f" ({score:g})" if type(score) in (int, float) else ""
            lines.append(one_line(f"{name}{shown}: {entry['reasoning']}", REASONING_CHARS))
    return lines


@dataclass(slots=True)
class EvaluatorMisses:
    name: str
    type: str
    verdict: str
    score: float
    lines: list[str]
    more: int = 0  # misses left out


@dataclass(slots=True)
class Failure:
    """A failing or errored case, reduced to what its report lines need."""

    case_id: str
    suite: str
    verdict: str
    score: float
    duration_ms: float
    error: str | None
    evaluators: list[EvaluatorMisses] = field(default_factory=list)
    answer: str | None = None  # the answer on one line (`answer_line`)
    hint: str | None = None  # what to change when the misses come from how the answer is given

    @property
    def notes(self) -> list[str]:
        """The lines every report shows before the evaluators: `answer: ...`, `hint: ...`."""
        return [f"{label}: {text}" for label, text in (("answer", self.answer), ("hint", self.hint)) if text is not None]

    @property
    def key(self) -> tuple[int, float, str]:
        return failure_key(self.verdict, self.score, self.case_id)


def failure_key(verdict: str, score: float, case_id: str) -> tuple[int, float, str]:
    """Worst first: errors, then the lowest scores; ties by case id, so the order is stable."""
    return _RANK.get(verdict, 1), score, case_id


def describe(result: CaseResult, misses_shown: int = MISSES_SHOWN) -> Failure:
    """The case's error, and per evaluator that did not pass: its misses (or error, or reasoning)."""
    evaluators = []
    looked_up = False  # some evaluator that did not pass looked for fields in the answer
    for evaluator in result.evaluator_results:
        if evaluator.verdict == "pass":
            continue
        looked_up = looked_up or bool(field_rows(evaluator))
        if evaluator.error:
            lines = [f"error: {evaluator.error}"]
        else:  # the misses, else the judge's words: per criterion when it gave them, else its reasoning
            lines = miss_lines(evaluator) or criteria_lines(evaluator) or (
                [one_line(evaluator.reasoning, REASONING_CHARS)] if evaluator.reasoning else [])
        evaluators.append(EvaluatorMisses(
            evaluator.name, evaluator.type, evaluator.verdict, evaluator.score,
            lines[:misses_shown], max(0, len(lines) - misses_shown),
        ))
    shown = result.case_id  # in a matrix run, with its cell: the same case fails in each cell on its own
    if result.target is not None or result.prompt is not None:
        shown = f"{shown} [{cell_label(result.target, result.prompt)}]"
    hint = JSON_TEXT_HINT if looked_up and holds_json(result.output) else None
    return Failure(
        shown, result.suite, result.verdict, result.score, result.duration_ms, result.error, evaluators, answer_line(result.output), hint,
    )


class FailureCollector:
    """The worst `limit` failing or errored cases seen so far, and how many did not pass in all."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._kept: list[Failure] = []
        self._cutoff: tuple[int, float, str] | None = None  # no better than the worst kept: not worth describing

    def add(self, result: CaseResult) -> None:
        if result.verdict == "pass":
            return
        self.total += 1
        if not self.limit or (self._cutoff is not None and failure_key(result.verdict, result.score, result.case_id) >= self._cutoff):
            return
        self._kept.append(describe(result))
        if len(self._kept) >= 2 * self.limit:  # trim in batches: amortized O(log n) per failure
            self._kept = self.worst()
            self._cutoff = self._kept[-1].key

    def worst(self) -> list[Failure]:
        return sorted(self._kept, key=lambda failure: failure.key)[: self.limit]

    @property
    def left_out(self) -> int:
        return self.total - min(self.total, self.limit)


def headline(failure: Failure) -> str:
    """`FAIL inv-004 (score 0.714)`, or for an errored case its error."""
    label = "ERROR" if failure.verdict == "error" else "FAIL"
    text = f"{label} {failure.case_id} (score {failure.score:.3f})"
    return f"{text}: {failure.error}" if failure.error else text


def evaluator_heading(misses: EvaluatorMisses) -> str:
    return f"{misses.name} ({misses.type}, {misses.verdict}, {misses.score:.3f})"


def render_failures(collector: FailureCollector, console: Any) -> None:
    """The terminal section after the tables, like pytest's short test summary; data is shown via
    `visible`, so an escape sequence in a case id, a miss or an error is printed, never obeyed."""
    from rich.text import Text

    from agenteval.reports.terminal import visible

    if not collector.limit or not collector.total:
        return
    shown = collector.worst()
    console.print(Text(f"Failures ({len(shown)} of {collector.total}, worst first)", style="bold"))
    for failure in shown:
        style = "magenta" if failure.verdict == "error" else "red"
        console.print(Text(visible(headline(failure)), style=style), soft_wrap=True)
        for note in failure.notes:
            console.print(Text("  " + visible(note), style="dim"), soft_wrap=True)
        for misses in failure.evaluators:
            console.print(Text("  " + visible(evaluator_heading(misses))), soft_wrap=True)
            for line in misses.lines:
                console.print(Text("    " + visible(line)), soft_wrap=True)
            if misses.more:
                console.print(Text(f"    ... and {misses.more} more"), soft_wrap=True)
    if collector.left_out:
        console.print(Text(f"... and {collector.left_out} more failing or errored cases (--show-failures N shows more)"))
