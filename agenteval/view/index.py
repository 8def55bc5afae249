"""A run's cases as a compact index the viewer filters, sorts and pages on the server.

One pass over a results JSONL keeps, per line, where it is in the file and the few figures a table
row shows (never the answer itself); a case opens by reading its one line again. A file that grows
(a run still writing) is read on from where the index stopped, and a torn last line waits for its
newline. A line that is not a result is counted as a problem shown on the page, never a crash.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agenteval.reports.cell_table import result_cell
from agenteval.results import CaseResult, case_from_dict

PAGE_SIZE = 50
SORTS = ("file", "score", "-score", "latency", "-latency", "cost", "-cost")


@dataclass(slots=True)
class Row:
    """One result line, as the cases table needs it."""

    offset: int
    case_id: str
    verdict: str
    score: float
    latency: float | None
    cost: float | None
    tags: tuple[str, ...]
    cell: str
    repetition: int
    evaluators: tuple[tuple[str, str], ...]  # (name, verdict)


@dataclass
class Page:
    """One page of a filtered, sorted table of cases (grouped by case id, one column per cell)."""

    total: int  # case groups after filtering
    page: int
    pages: int
    groups: list[list[Row]]  # each: the rows of one case id (one per cell and repetition)
    cells: list[str]


@dataclass
class RunIndex:
    """The index of one results file; `refresh` reads what was appended since."""

    path: Path
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    position: int = 0
    run_id: str | None = None
    suite: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> None:
        with self._lock:
            try:
                size = self.path.stat().st_size
            except OSError as exc:
                self._problem(f"{self.path.name}: cannot read: {exc.strerror or exc}")
                return
            if size < self.position:  # rewritten (feedback folded in, --overwrite): start again
                self.rows, self.problems, self.position = [], [], 0
            if size == self.position:
                return
            with self.path.open("rb") as handle:
                handle.seek(self.position)
                data = handle.read(size - self.position)
            end = data.rfind(b"\n") + 1  # a torn last line waits for its newline
            offset = self.position
            for raw in data[:end].split(b"\n")[:-1]:
                if raw.strip():
                    self._add(offset, raw)
                offset += len(raw) + 1
            self.position += end

    def _add(self, offset: int, raw: bytes) -> None:
        try:
            data = orjson.loads(raw)
            if not isinstance(data, dict) or not isinstance(data.get("case_id"), str):
                raise ValueError("not a result line")
            if self.run_id is None:
                self.run_id, self.suite = str(data.get("run_id") or self.path.stem), str(data.get("suite") or "")
            usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
            self.rows.append(Row(
                offset, data["case_id"], str(data.get("verdict")), _number(data.get("score")) or 0.0,
                _number(usage.get("latency_ms")) if usage.get("latency_ms") is not None else _number(data.get("duration_ms")),
                _number(usage.get("cost_usd")), tuple(str(tag) for tag in data.get("tags") or ()),
                _cell(data), int(data.get("repetition") or 0),
                tuple((str(e.get("name")), str(e.get("verdict"))) for e in data.get("evaluator_results") or () if isinstance(e, dict)),
            ))
        except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError) as exc:
            self._problem(f"{self.path.name}: a line at byte {offset} is not a result ({exc}); it is left out")

    def _problem(self, text: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(text)

    def result(self, row: Row) -> CaseResult:
        """The whole result of one row, read again from the file."""
        with self.path.open("rb") as handle:
            handle.seek(row.offset)
            return case_from_dict(orjson.loads(handle.readline()))

    def lines_matching(self, text: str) -> set[int]:
        """Offsets of the lines whose input, answer, expected answer or misses contain `text` (any case)."""
        needle = text.lower()
        found: set[int] = set()
        with self.path.open("rb") as handle:
            offset = 0
            for raw in handle:
                if offset >= self.position:
                    break
                lowered = raw.lower()
                if needle.encode() in lowered or orjson.dumps(needle)[1:-1] in lowered:
                    try:
                        data = orjson.loads(raw)
                        parts = [data.get("input"), data.get("output"), data.get("expected"), data.get("case_id"),
                                 [e.get("misses") for e in data.get("evaluator_results") or () if isinstance(e, dict)]]
                        if needle in orjson.dumps(parts).decode().lower() or needle in _plain(parts).lower():
                            found.add(offset)
                    except (orjson.JSONDecodeError, TypeError, AttributeError):
                        pass
                offset += len(raw)
        return found

    def cells(self) -> list[str]:
        return list(dict.fromkeys(row.cell for row in self.rows))

    def evaluators(self) -> list[str]:
        return list(dict.fromkeys(name for row in self.rows[:1000] for name, _ in row.evaluators))

    def tags(self) -> list[str]:
        return sorted({tag for row in self.rows for tag in row.tags})

    def page(self, *, page: int = 1, verdict: str = "", tag: str = "", evaluator: str = "", cell: str = "", text: str = "",
             sort: str = "file", size: int = PAGE_SIZE) -> Page:
        """Filter rows, group them by case id (cases where cells disagree first), sort, and cut one page."""
        matching = self.lines_matching(text) if text else None
        groups: dict[str, list[Row]] = {}
        for row in self.rows:
            groups.setdefault(row.case_id, []).append(row)

        def keep(row: Row) -> bool:
            if cell and row.cell != cell:
                return False
            if tag and tag not in row.tags:
                return False
            if matching is not None and row.offset not in matching:
                return False
            if evaluator:
                verdicts = [v for name, v in row.evaluators if name == evaluator]
                if not verdicts:
                    return False
                if verdict and verdict != "notpass" and verdict not in verdicts:
                    return False
                if verdict == "notpass" and all(v == "pass" for v in verdicts):
                    return False
                return True
            if verdict == "notpass":
                return row.verdict != "pass"
            return not verdict or row.verdict == verdict

        kept = [[row for row in rows if keep(row)] for rows in groups.values()]
        kept = [rows for rows in kept if rows]
        disagree = lambda rows: len({row.verdict for row in rows}) > 1  # noqa: E731
        if sort != "file" and sort in SORTS:
            key = sort.lstrip("-")
            sign = -1 if sort.startswith("-") else 1
            value = {"score": lambda r: r.score, "latency": lambda r: r.latency, "cost": lambda r: r.cost}[key]
            present = [rows for rows in kept if any(value(r) is not None for r in rows)]
            absent = [rows for rows in kept if all(value(r) is None for r in rows)]
            present.sort(key=lambda rows: sign * min(value(r) for r in rows if value(r) is not None))
            kept = present + absent
        else:
            kept.sort(key=lambda rows: not disagree(rows))  # stable: file order within each part
        pages = max(1, -(-len(kept) // size))
        page = min(max(1, page), pages)
        return Page(len(kept), page, pages, kept[(page - 1) * size: page * size], self.cells())


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " ".join(_plain(item) for item in value.values())
    if isinstance(value, list):
        return " ".join(_plain(item) for item in value)
    return "" if value is None else str(value)


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and value - value == 0 else None


def _cell(data: dict[str, Any]) -> str:
    target, prompt = data.get("target"), data.get("prompt")
    if target is None and prompt is None:
        return ""
    return result_cell(CaseResult("", "", "", 0.0, "pass", target=target, prompt=prompt))
