"""Where each trace of an export file is: read once, spans not held, each case reads its own trace.

The index keeps, per trace, the byte ranges of the documents holding its spans, its span count,
and the keys a case may name it by (its trace id, `session.id` / `gen_ai.conversation.id`, or any
attribute); a document that cannot be read is skipped and named, never the end of the file. A
large document holding several traces (one OTLP/JSON document of a whole export) is split by
trace into a temporary file as it is indexed, so each case reads its own trace, not the document.
"""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agenteval.traces.otlp import (
    MAX_DOCUMENT_BYTES, MAX_SPANS_PER_TRACE, Span, TraceError, hex_id, raw_spans, read_span, trace_id_of,
)

SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
"""Attributes `match: session_id` reads: OpenInference's and the GenAI conventions'."""
MAX_PROBLEMS = 20
"""Unreadable documents named in an error (the rest are counted)."""
SPLIT_BYTES = 1 << 20
"""A document larger than this holding several traces is split by trace when indexed (each case
then reads its trace, not the whole document again: linear, not quadratic, in the traces)."""


@dataclass(slots=True)
class TraceIndex:
    path: Path
    match: str  # trace_id, session_id, or attribute NAME
    # trace id -> (line, offset, length, split) of its documents: in the file, or (split) in `split_file`
    ranges: dict[str, list[tuple[int, int, int, bool]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # trace id -> spans
    keys: dict[str, list[str]] = field(default_factory=dict)  # key value -> trace ids, in file order
    max_document_bytes: int = MAX_DOCUMENT_BYTES  # the suite's `limits.trace_document_mb`
    problems: list[str] = field(default_factory=list)
    skipped: int = 0
    split_file: Any = None  # a temporary file: per trace, the spans of a large document that held several
    split_lock: Any = field(default_factory=threading.Lock)

    def trace_ids(self, key: str) -> list[str]:
        """The traces a case key names ([] for none)."""
        if self.match == "trace_id":
            try:
                key = hex_id(key, 16, "trace id")
            except TraceError:
                return []
            return [key] if key in self.ranges else []
        return self.keys.get(key, [])

    def spans(self, key: str, max_spans: int = MAX_SPANS_PER_TRACE) -> list[Span]:
        """Every span of the trace(s) `key` names, once each (a span exported twice, by a retry or
        two exports in one file, is read once: the first); TraceError when there is none, more than
        `max_spans` (the suite's `limits.trace_spans`), or a span of it that cannot be read."""
        ids = self.trace_ids(key)
        if not ids:
            raise TraceError(f"no trace with {self._key_name()} {key!r} in {self.path.name}{self._problems()}")
        count = sum(self.counts[trace_id] for trace_id in ids)
        if count > max_spans:
            raise TraceError(
                f"the trace with {self._key_name()} {key!r} has {count} spans, more than the {max_spans} "
                f"a trace may have to be read into an answer (limit `limits.trace_spans: {max_spans}`; raise it in the suite's `limits:` if this is expected)"
            )
        wanted = set(ids)
        spans, seen = [], set()
        with self.path.open("rb") as file:
            for number, offset, length, split in sorted({item for trace_id in ids for item in self.ranges[trace_id]}):
                document = orjson.loads(self._read(file, offset, length, split))
                positions = document.get("positions") if split else None  # where each span was in its document
                for position, raw in enumerate(raw_spans(document), 1):
                    position = positions[position - 1] if positions else position
                    try:
                        if trace_id_of(raw) not in wanted:
                            continue
                    except TraceError:
                        continue  # a span of no trace: named when the file was indexed
                    try:
                        span = read_span(raw)
                    except TraceError as exc:  # a span of this trace dropped unseen could pass a check it fails
                        name = raw.get("name")
                        shown = f" ({name[:100]!r})" if isinstance(name, str) and name else ""
                        raise TraceError(f"a span of the trace cannot be read: line {number}, span {position}{shown}: {exc}") from None
                    if (span.trace_id, span.span_id) not in seen:
                        seen.add((span.trace_id, span.span_id))
                        spans.append(span)
        return spans

    def _read(self, file: Any, offset: int, length: int, split: bool) -> bytes:
        if not split:
            file.seek(offset)
            return file.read(length)
        with self.split_lock:  # cases read their traces from threads
            self.split_file.seek(offset)
            return self.split_file.read(length)

    def _key_name(self) -> str:
        return self.match if self.match in ("trace_id", "session_id") else f"attribute {self.match.split(None, 1)[1]!r}"

    def _problems(self) -> str:
        if not self.problems:
            return ""
        more = f" and {self.skipped - len(self.problems)} more" if self.skipped > len(self.problems) else ""
        return f" ({self.skipped} part(s) of the file could not be read: {'; '.join(self.problems)}{more})"


def index_file(path: Path, match: str = "trace_id", max_document_bytes: int = MAX_DOCUMENT_BYTES) -> TraceIndex:
    """Index an OTLP/JSON export: one document, or JSONL of documents no longer than
    `max_document_bytes` each (OSError when unreadable)."""
    index = TraceIndex(path, match, max_document_bytes=max_document_bytes)
    attribute = match.split(None, 1)[1] if match.startswith("attribute ") else None
    names = SESSION_KEYS if match == "session_id" else (attribute,) if attribute else ()
    with path.open("rb") as file:
        first = file.read(4096).removeprefix(_BOM).lstrip()[:1]  # (after a byte-order mark and blank lines)
        file.seek(0)
        read_one = False
        for number, offset, text in _documents(file, index):
            try:
                document = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                if not read_one and first == b"{" and path.stat().st_size <= max_document_bytes:
                    whole = path.read_bytes()  # not JSONL, perhaps: one (pretty-printed) document
                    skip = len(_BOM) if whole.startswith(_BOM) else 0
                    try:
                        whole_document = orjson.loads(whole[skip:])
                    except orjson.JSONDecodeError:
                        whole_document = None
                    if whole_document is not None:
                        _add(index, 1, skip, len(whole) - skip, whole_document, names)
                        return index
                _problem(index, f"line {number}: not JSON ({exc})")
                read_one = True
                continue
            read_one = True
            _add(index, number, offset, len(text), document, names)
    return index


_BOM = b"\xef\xbb\xbf"


def _documents(file: Any, index: TraceIndex) -> Any:
    """(line number, offset, text) of each non-empty line; a line past the index's most is skipped, named."""
    offset, number = 0, 0
    most = index.max_document_bytes
    while True:
        line = file.readline(most + 1)
        if not line:
            return
        number += 1
        start = offset
        offset += len(line)
        if len(line) > most and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # skip the rest of the line without holding it
                line = file.readline(1 << 20)
                offset += len(line)
            _problem(index, f"line {number}: longer than {most / (1 << 20):g} MB, the most one document may be (`limits.trace_document_mb`)")
            continue
        if number == 1 and line.startswith(_BOM):  # a byte-order mark: the document begins after it
            line, start = line[len(_BOM):], start + len(_BOM)
        if line.strip():
            yield number, start, line


def _add(index: TraceIndex, number: int, offset: int, length: int, document: Any, names: tuple[str, ...]) -> None:
    try:
        found = raw_spans(document)
    except TraceError as exc:
        _problem(index, f"line {number}: {exc}")
        return
    by_trace: dict[str, list[int]] = {}  # trace id -> positions of its spans in the document
    for position, raw in enumerate(found, 1):
        try:
            trace_id = trace_id_of(raw)
        except TraceError as exc:
            _problem(index, f"line {number}, span {position}: {exc}")
            continue
        by_trace.setdefault(trace_id, []).append(position)
        index.counts[trace_id] = index.counts.get(trace_id, 0) + 1
        if index.match == "trace_id":
            continue
        attributes = raw.get("attributes")
        for item in attributes if isinstance(attributes, list) else ():
            if isinstance(item, dict) and item.get("key") in names and isinstance(item.get("value"), dict):
                value = next(iter(item["value"].values()), None)
                if isinstance(value, (str, int)) and not isinstance(value, bool):
                    traces = index.keys.setdefault(str(value), [])
                    if trace_id not in traces:
                        traces.append(trace_id)
    for trace_id, positions in by_trace.items():
        where = _split(index, found, positions) if length > SPLIT_BYTES and len(by_trace) > 1 else None
        index.ranges.setdefault(trace_id, []).append((number, *where, True) if where else (number, offset, length, False))


def _split(index: TraceIndex, found: list[Any], positions: list[int]) -> tuple[int, int] | None:
    """Write one trace's spans of a document to the index's split file: (offset, length), or None
    when they cannot be written (nesting past what orjson writes, a full disk: the document is read instead)."""
    try:
        text = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [found[position - 1] for position in positions]}]}],
                             "positions": positions})
    except orjson.JSONEncodeError:
        return None
    try:
        if index.split_file is None:
            index.split_file = tempfile.TemporaryFile(prefix="agenteval-traces-")
        file = index.split_file
        file.seek(0, 2)
        offset = file.tell()
        file.write(text)
    except OSError:  # no room for it (a full disk): the document is read instead, as it was
        return None
    return offset, len(text)


def _problem(index: TraceIndex, text: str) -> None:
    index.skipped += 1
    if len(index.problems) < MAX_PROBLEMS:
        index.problems.append(text)


