"""A run's cases as a compact index the viewer filters, sorts and pages on the server.

One pass over a results JSONL keeps, per line, where it is in the file and the few figures a table
row needs, in columns (never the answer itself); a case opens by reading its one line again.
Filters and sorts are numpy operations over the columns, so a page of a 100,000-case run costs
milliseconds (benchmarks/bench_view.py). A file that grows (a run still writing) is read on from
where the index stopped, and a torn last line waits for its newline. A line that is not a result
is a problem shown on the page, never a crash.
"""

from __future__ import annotations

import gc
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Any

import numpy as np
import orjson

from agenteval.reports.cell_table import result_cell
from agenteval.results import CaseResult, case_from_dict

PAGE_SIZE = 50
CHUNK_BYTES = 1 << 20
"""Indexed at once by the background reader: the lock is held for a few tens of ms, so pages stay responsive."""
MARK_BYTES = 256
"""Of the file's beginning and of its end as indexed, kept to tell a rewritten or replaced file from one that grew."""
SORTS = ("file", "score", "-score", "latency", "-latency", "cost", "-cost")
VERDICTS = ("pass", "fail", "error", "partial")
_CODE = {name: code for code, name in enumerate(VERDICTS)}
_OTHER = len(VERDICTS)
_ABSENT = -1


class LineError(ValueError):
    """A line of the results file that cannot be read as a result (it changed shape, or was never one)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One result line, as the cases table shows it."""

    number: int
    offset: int
    case_id: str
    verdict: str
    score: float
    latency: float | None
    cost: float | None
    tags: tuple[str, ...]
    cell: str
    repetition: int


@dataclass
class Page:
    """One page of a filtered, sorted table of cases (grouped by case id, one column per cell)."""

    total: int  # case groups after filtering
    page: int
    pages: int
    groups: list[list[Row]]  # each: the rows of one case id (one per cell and repetition)
    cells: list[str]
    indexed: int = 0  # the results indexed when the page was cut (a page polls for more against it)


def _nan(value: Any) -> float:
    return float(value) if type(value) in (int, float) and value - value == 0 else float("nan")


@dataclass
class RunIndex:
    """The index of one results file; `refresh` reads what was appended since."""

    path: Path
    problems: list[str] = field(default_factory=list)
    position: int = 0
    run_id: str | None = None
    suite: str | None = None
    complete: bool = False  # the run has finished (its summary is written): a last line without a newline is whole

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self.reading: threading.Thread | None = None
        self._reset()

    def _reset(self) -> None:
        self.offsets = array("q")
        self.groups = array("q")  # the case id's number, per row
        self.verdicts = array("b")
        self.scores = array("d")
        self.latencies = array("d")
        self.costs = array("d")
        self.cell_codes = array("q")
        self.repetitions = array("q")
        self.tag_codes: list[tuple[int, ...]] = []
        self.case_ids: list[str] = []
        self.case_numbers: dict[str, int] = {}
        self.case_rows: list[list[int]] = []
        self.cell_names: list[str] = []
        self._cells: dict[tuple[Any, Any], int] = {}
        self.tag_names: list[str] = []
        self._tags: dict[str, int] = {}
        self._tag_sets: dict[tuple[int, ...], tuple[int, ...]] = {}
        self.evaluator_verdicts: dict[str, array] = {}
        self.problems = []
        self.position = 0
        self._head = self._tail = b""  # the file's first and last bytes indexed (up to MARK_BYTES): a rewrite changes them
        self._identity: tuple[int, int] | None = None  # the file's device and inode: a file put in its place has others

    def __len__(self) -> int:
        return len(self.offsets)

    def refresh(self, chunk: int | None = None) -> bool:
        """Index what was appended since the last call (at most `chunk` bytes of it); True when
        the index has caught up with the file."""
        with self._lock:
            try:
                stat = self.path.stat()
            except OSError as exc:
                self._problem(f"{self.path.name}: cannot read: {exc.strerror or exc}")
                return True
            size, identity = stat.st_size, (stat.st_dev, stat.st_ino)
            if self.position and S_ISREG(stat.st_mode) and (size < self.position or identity != self._identity or not self._same_ends()):
                self._reset()  # rewritten (feedback folded in, --overwrite) or replaced by another file: start again
            self._identity = identity  # (what is no file keeps the rows read so far: reading it fails, and says so)
            if size == self.position:
                return True
            wanted = size - self.position if chunk is None else min(chunk, size - self.position)
            with self.path.open("rb") as handle:
                handle.seek(self.position)
                data = handle.read(wanted)
            at_end = self.position + len(data) == size
            end = data.rfind(b"\n") + 1  # a torn last line waits for its newline
            if end == 0 and wanted < size - self.position:  # one line longer than the chunk: read it whole
                return self._unlocked_whole_line(size)
            final = self.complete and at_end and end < len(data)  # a finished run's last line, saved without its newline
            self._index(data if final else data[:end], final)
            return self.position >= size or end == 0

    def _same_ends(self) -> bool:
        """Whether the file still begins and ends (at the indexed position) with the bytes indexed there."""
        try:
            with self.path.open("rb") as handle:
                head = handle.read(len(self._head))
                handle.seek(self.position - len(self._tail))
                return head == self._head and handle.read(len(self._tail)) == self._tail
        except OSError:
            return True  # (cannot tell: reading it fails, and says so)

    def _unlocked_whole_line(self, size: int) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(self.position)
            line = handle.readline()
        if line.endswith(b"\n"):
            self._index(line)
        return self.position >= size

    def _index(self, data: bytes, final: bool = False) -> None:
        """Index whole lines of `data` (with `final`, its last part too: a line without its newline)."""
        offset = self.position
        if offset == 0 and data.startswith(b"\xef\xbb\xbf"):  # a byte-order mark, as `report` reads past it
            data, offset = data[3:], 3
            self.position = 3
            self._head = b"\xef\xbb\xbf"
        collecting = gc.isenabled()
        gc.disable()  # the collector would walk every object kept so far, again and again
        try:
            parts = data.split(b"\n")
            for raw in parts if final else parts[:-1]:
                if raw.strip():
                    self._add(offset, raw)
                offset += len(raw) + 1
        finally:
            if collecting:
                gc.enable()
        if len(self._head) < MARK_BYTES:
            self._head = (self._head + data)[:MARK_BYTES]
        self._tail = (self._tail + data)[-MARK_BYTES:]
        self.position += len(data)

    def follow(self, wait: float) -> None:
        """Index the file in a background thread, a chunk at a time (pages are served meanwhile from
        what is indexed), waiting up to `wait` seconds for it to catch up."""
        with self._lock:
            if self.reading is not None and self.reading.is_alive():
                thread = self.reading
            else:
                thread = self.reading = threading.Thread(target=self._catch_up, name=f"index {self.path.name}", daemon=True)
                thread.start()
        thread.join(wait)

    def _catch_up(self) -> None:
        try:
            while not self.refresh(CHUNK_BYTES):
                time.sleep(0.002)  # let a request waiting for the lock (and the interpreter) in
        except Exception as exc:  # noqa: BLE001 - said on the page, not lost in the server's log
            text = f"{self.path.name}: reading stopped at byte {self.position}: {type(exc).__name__}: {exc}"
            with self._lock:
                if text not in self.problems:  # (each request tries again: said once)
                    self._problem(text)

    @property
    def caught_up(self) -> bool:
        return self.reading is None or not self.reading.is_alive()

    def locked(self) -> Any:
        """Hold while reading the columns: indexing appends to them."""
        return self._lock

    def _add(self, offset: int, raw: bytes) -> None:
        try:
            data = orjson.loads(raw)
            case_id = data["case_id"]
            if type(case_id) is not str:
                raise ValueError("case_id is not a string")
            if type(data.get("verdict")) is not str:
                raise ValueError("verdict is not a text")
            usage = data.get("usage")
            usage = usage if type(usage) is dict else {}
            tags = data.get("tags") or ()
            if type(tags) not in (list, tuple) or any(type(tag) is not str for tag in tags):
                raise ValueError("tags is not a list of texts")
            evaluators = data.get("evaluator_results") or ()
            if type(evaluators) not in (list, tuple) or any(type(item) is dict and type(item.get("name")) is not str for item in evaluators):
                raise ValueError("evaluator_results is not a list of results with a name")
            cell_key = (data.get("target"), data.get("prompt"))
            if any(part is not None and type(part) is not str for part in cell_key):
                raise ValueError("target or prompt is not a text")
        except (orjson.JSONDecodeError, ValueError, TypeError, KeyError, AttributeError) as exc:  # (checked before anything is indexed)
            self._problem(f"{self.path.name}: the line at byte {offset} is not a result ({type(exc).__name__}: {exc}); it is left out")
            return
        if self.run_id is None:
            self.run_id, self.suite = str(data.get("run_id") or self.path.stem), str(data.get("suite") or "")
        number = len(self.offsets)
        group = self.case_numbers.get(case_id)
        if group is None:
            group = self.case_numbers[case_id] = len(self.case_ids)
            self.case_ids.append(case_id)
            self.case_rows.append([])
        self.case_rows[group].append(number)
        cell = self._cells.get(cell_key)
        if cell is None:
            cell = self._cells[cell_key] = len(self.cell_names)
            self.cell_names.append(_cell_label(*cell_key))
        codes = []
        for tag in tags:
            code = self._tags.get(tag)
            if code is None:
                code = self._tags[tag] = len(self.tag_names)
                self.tag_names.append(str(tag))
            codes.append(code)
        key = tuple(codes)
        self.tag_codes.append(self._tag_sets.setdefault(key, key))
        for evaluator in evaluators:
            if type(evaluator) is not dict:
                continue
            column = self.evaluator_verdicts.get(evaluator["name"])
            if column is None:
                column = self.evaluator_verdicts[evaluator["name"]] = array("b")
            if len(column) < number:
                column.extend([_ABSENT] * (number - len(column)))
            if len(column) == number:
                column.append(_code(evaluator.get("verdict")))
        self.offsets.append(offset)
        self.groups.append(group)
        self.verdicts.append(_CODE.get(data["verdict"], _OTHER))
        self.scores.append(_nan(data.get("score")))
        latency = usage.get("latency_ms")
        self.latencies.append(_nan(latency if latency is not None else data.get("duration_ms")))
        self.costs.append(_nan(usage.get("cost_usd")))
        self.cell_codes.append(cell)
        self.repetitions.append(data.get("repetition") if type(data.get("repetition")) is int else 0)

    def _problem(self, text: str) -> None:
        if len(self.problems) < 20:
            self.problems.append(text)

    def row(self, number: int) -> Row:
        latency, cost = self.latencies[number], self.costs[number]
        return Row(
            number, self.offsets[number], self.case_ids[self.groups[number]], _verdict(self.verdicts[number]), self.scores[number],
            None if latency != latency else latency, None if cost != cost else cost,
            tuple(self.tag_names[code] for code in self.tag_codes[number]), self.cell_names[self.cell_codes[number]], self.repetitions[number],
        )

    def rows_of(self, case_id: str) -> list[Row]:
        with self._lock:
            group = self.case_numbers.get(case_id)
            return [] if group is None else [self.row(number) for number in self.case_rows[group]]

    def all_rows(self) -> list[Row]:
        with self._lock:
            return [self.row(number) for number in range(len(self))]

    def result(self, row: Row) -> CaseResult:
        """The whole result of one row, read again from the file."""
        with self.path.open("rb") as handle:
            handle.seek(row.offset)
            raw = handle.readline()
        try:
            result = case_from_dict(orjson.loads(raw))
        except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError) as exc:
            raise LineError(f"{self.path.name}: the line of case {row.case_id!r} is not a result: {exc}") from None
        if result.case_id != row.case_id:  # (the file was rewritten since it was indexed: never another case's answer)
            raise LineError(f"{self.path.name} changed since it was read: reload the page")
        return result

    def results_order(self, not_passing: bool) -> list[tuple[str, str, int]]:
        """Each result's case id, cell and repetition in file order (only those that did not pass, with `not_passing`)."""
        with self._lock:
            passed = _CODE["pass"]
            return [
                (self.case_ids[self.groups[n]], self.cell_names[self.cell_codes[n]], self.repetitions[n])
                for n in range(len(self)) if not not_passing or self.verdicts[n] != passed
            ]

    def cells(self) -> list[str]:
        return list(self.cell_names)

    def evaluators(self) -> list[str]:
        return list(self.evaluator_verdicts)

    def tags(self) -> list[str]:
        return sorted(self.tag_names)

    def counts(self) -> dict[str, Any]:
        """Verdict counts of the rows, and per evaluator: while a run is being written it has no summary."""
        with self._lock:
            return self._counts()

    def _counts(self) -> dict[str, Any]:
        verdicts = np.frombuffer(self.verdicts, dtype=np.int8) if len(self) else np.zeros(0, dtype=np.int8)
        found = {name: int(np.count_nonzero(verdicts == code)) for code, name in enumerate(VERDICTS)}
        evaluators = {}
        for name, column in self.evaluator_verdicts.items():
            values = np.frombuffer(column, dtype=np.int8) if len(column) else np.zeros(0, dtype=np.int8)
            present = values[values != _ABSENT]
            evaluators[name] = {"count": int(present.size), "verdicts": {v: int(np.count_nonzero(present == c)) for c, v in enumerate(VERDICTS) if np.any(present == c)}}
        scores = np.frombuffer(self.scores, dtype=np.float64) if len(self) else np.zeros(0)
        return {"verdicts": found, "evaluators": evaluators, "mean_score": float(np.nanmean(scores)) if scores.size and not np.all(np.isnan(scores)) else None}

    def lines_matching(self, text: str) -> np.ndarray:
        """Row numbers whose input, answer, expected answer, case id or misses contain `text` (any
        case), streaming the file: only lines holding the bytes are parsed."""
        needle = text.lower()
        encoded = [needle.encode(), orjson.dumps(needle)[1:-1]]
        plain = needle.isascii()  # (bytes.lower folds ASCII letters only: other text is compared as text)
        offsets = np.frombuffer(self.offsets, dtype=np.int64) if len(self) else np.zeros(0, dtype=np.int64)
        found = []
        offset = 0
        with self.path.open("rb") as handle:
            for raw in handle:
                start, offset = offset, offset + len(raw)
                if start >= self.position:
                    break
                if plain:
                    lowered = raw.lower()
                    if not any(part in lowered for part in encoded):
                        continue
                elif b"\\u" not in raw and needle not in raw.decode(errors="replace").lower():  # (a line with \u escapes is read below)
                    continue
                number = int(np.searchsorted(offsets, start))
                if number >= offsets.size or offsets[number] != start:
                    continue  # a line the index left out
                try:
                    line = orjson.loads(raw)
                    parts = [line.get("input"), line.get("output"), line.get("expected"), line.get("case_id"),
                             [e.get("misses") for e in line.get("evaluator_results") or () if isinstance(e, dict)]]
                except (orjson.JSONDecodeError, AttributeError):
                    continue
                if needle in _plain(parts).lower() or needle in orjson.dumps(parts, option=orjson.OPT_NON_STR_KEYS).decode().lower():
                    found.append(number)
        return np.asarray(found, dtype=np.int64)

    def mask(self, *, verdict: str = "", tag: str = "", evaluator: str = "", cell: str = "", text: str = "") -> np.ndarray:
        """Which rows pass the filters."""
        n = len(self)
        keep = np.ones(n, dtype=bool)
        verdicts = np.frombuffer(self.verdicts, dtype=np.int8)[:n] if n else np.zeros(0, dtype=np.int8)
        if evaluator:
            column = self.evaluator_verdicts.get(evaluator)
            values = np.full(n, _ABSENT, dtype=np.int8)
            if column is not None and len(column):
                values[: len(column)] = np.frombuffer(column, dtype=np.int8)[:n]
            keep &= values != _ABSENT
            verdicts = values
        if verdict == "notpass":
            keep &= verdicts != _CODE["pass"]
        elif verdict:
            keep &= verdicts == _CODE.get(verdict, _OTHER)
        if cell:
            code = self.cell_names.index(cell) if cell in self.cell_names else -1
            keep &= np.frombuffer(self.cell_codes, dtype=np.int64)[:n] == code
        if tag:
            code = self._tags.get(tag)
            with_tag = np.fromiter((code in codes for codes in self.tag_codes[:n]), dtype=bool, count=n) if code is not None else np.zeros(n, dtype=bool)
            keep &= with_tag
        if text:
            matching = np.zeros(n, dtype=bool)
            matching[self.lines_matching(text)] = True
            keep &= matching
        return keep

    def page(self, *, page: int = 1, verdict: str = "", tag: str = "", evaluator: str = "", cell: str = "", text: str = "",
             sort: str = "file", size: int = PAGE_SIZE) -> Page:
        """Filter rows, group them by case id (cases where cells disagree first, unless sorted), sort, cut one page."""
        with self._lock:
            return self._page(page, verdict, tag, evaluator, cell, text, sort, size)

    def _page(self, page: int, verdict: str, tag: str, evaluator: str, cell: str, text: str, sort: str, size: int) -> Page:
        n = len(self)
        keep = self.mask(verdict=verdict, tag=tag, evaluator=evaluator, cell=cell, text=text)
        groups = np.frombuffer(self.groups, dtype=np.int64)[:n] if n else np.zeros(0, dtype=np.int64)
        kept_rows = np.flatnonzero(keep)
        kept_groups = groups[kept_rows]
        order_groups, first = np.unique(kept_groups, return_index=True)
        order_groups = order_groups[np.argsort(first, kind="stable")]  # file order of each case's first kept row
        if order_groups.size and sort in SORTS and sort != "file":
            column = {"score": self.scores, "latency": self.latencies, "cost": self.costs}[sort.lstrip("-")]
            values = np.frombuffer(column, dtype=np.float64)[:n][kept_rows]
            best = np.full(len(self.case_ids), np.inf)
            np.fmin.at(best, kept_groups, values if not sort.startswith("-") else -values)
            keyed = best[order_groups]
            order_groups = order_groups[np.argsort(keyed, kind="stable")]  # nan (no figure) sorts last as inf
        elif order_groups.size:
            verdicts = np.frombuffer(self.verdicts, dtype=np.int8)[:n][kept_rows].astype(np.int64)
            low = np.full(len(self.case_ids), 99)
            high = np.full(len(self.case_ids), -1)
            np.minimum.at(low, kept_groups, verdicts)
            np.maximum.at(high, kept_groups, verdicts)
            disagree = (low != high)[order_groups]
            order_groups = np.concatenate([order_groups[disagree], order_groups[~disagree]])
        total = int(order_groups.size)
        pages = max(1, -(-total // size))
        page = min(max(1, page), pages)
        shown = order_groups[(page - 1) * size: page * size]
        kept_set = keep
        found = [[self.row(number) for number in self.case_rows[int(group)] if kept_set[number]] for group in shown]
        return Page(total, page, pages, found, self.cells(), len(self))


def _code(verdict: Any) -> int:
    return _CODE.get(verdict, _OTHER) if type(verdict) is str else _OTHER


def _verdict(code: int) -> str:
    return VERDICTS[code] if 0 <= code < len(VERDICTS) else "other"


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " ".join(_plain(item) for item in value.values())
    if isinstance(value, list):
        return " ".join(_plain(item) for item in value)
    return "" if value is None else str(value)


def cell_label(target: Any, prompt: Any) -> str:
    """The label a result's cell has in the index (what `Row.cell` holds)."""
    return _cell_label(target, prompt)


def _cell_label(target: Any, prompt: Any) -> str:
    if target is None and prompt is None:
        return ""
    return result_cell(CaseResult("", "", "", 0.0, "pass", target=target, prompt=prompt))
