"""Reading cases files: .jsonl line by line and .csv/.tsv row by row (validated once, streamed again
at run time, in flat memory), .json and .yaml whole. Every problem names file:line; a byte-order mark is accepted in each format."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import re

import orjson

from agenteval.suite.models import Case
from agenteval.suite.yaml_nodes import KeyPath, Lines, YamlSyntaxError, decode_utf8, load_yaml, not_utf8

CASE_FILE_TYPES = (".jsonl", ".json", ".yaml", ".yml", ".csv", ".tsv")
TABLE_TYPES = (".csv", ".tsv")
STREAMED_TYPES = (".jsonl", *TABLE_TYPES)
_BOM = b"\xef\xbb\xbf"


class CaseFileError(Exception):
    def __init__(self, message: str, line: int | None, key: KeyPath = ()) -> None:
        super().__init__(message)
        self.line = line
        self.key = key


class CasesChanged(Exception):
    """The cases file no longer holds what was validated: the run stops instead of trusting it."""


def fingerprint(raw: bytes) -> int:
    """32 bits a validated line must still hash to when the run reads it again (never 0: 0 marks a bad line).
    Its line end does not count (\\n, \\r\\n, or none at the end of the file). An edit goes unnoticed with a
    chance of one in four billion per changed line. (`marked_lines` computes it inline.)"""
    return hash(raw if raw[-1] == 10 and raw[-2] != 13 else raw.rstrip(b"\r\n") + b"\n") & 0xFFFFFFFF or 1


def marked_lines(handle: IO[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """(line number, fingerprint, line) of each non-blank line of a JSONL file; a BOM on line 1 is
    dropped. The fingerprint is computed inline: both reads of a file spend most of their own time here."""
    first = handle.readline().removeprefix(_BOM)
    if first and not first.isspace():
        yield 1, fingerprint(first), first
    for number, raw in enumerate(handle, start=2):
        if raw.isspace():  # (a line from the file is never empty)
            continue
        yield number, hash(raw if raw[-1] == 10 and raw[-2] != 13 else raw.rstrip(b"\r\n") + b"\n") & 0xFFFFFFFF or 1, raw


def new_fingerprints() -> array:
    return array("I")


def _jsonl_error(raw: bytes, number: int, exc: orjson.JSONDecodeError) -> CaseFileError:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as bad:
        return CaseFileError(not_utf8(raw, bad.start), number)
    return CaseFileError(f"invalid JSON: {exc}", number)


def read_whole(file: Path) -> tuple[list[Any], Lines, list[tuple[int | None, KeyPath, str]]]:
    """(records, line of each key path, structure problems) of a .json or .yaml cases file.
    Raises CaseFileError when the file cannot be read as a list of records at all."""
    data = file.read_bytes()
    if file.suffix.lower() == ".json":
        data = data.removeprefix(_BOM)
        try:
            records = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as bad:
                raise CaseFileError(not_utf8(data, bad.start), data.count(b"\n", 0, bad.start) + 1) from None
            raise CaseFileError(f"invalid JSON: {exc}", exc.lineno) from None
        if not isinstance(records, list):
            raise CaseFileError("a .json cases file holds a list of cases", 1)
        return records, {}, []
    try:
        records, lines, problems = load_yaml(decode_utf8(data))
    except YamlSyntaxError as exc:
        raise CaseFileError(str(exc), exc.line) from None
    if not isinstance(records, list):
        raise CaseFileError("a .yaml cases file holds a list of cases", 1)
    return records, lines, list(problems)


def streamed(file: Path) -> bool:
    """Read record by record (validated once, streamed again at run time), not held whole."""
    return file.suffix.lower() in STREAMED_TYPES


def records(file: Path, handle: IO[bytes]) -> Iterator[tuple[int, int, Any]]:
    """(line, fingerprint, record) of each record of a streamed cases file, in order. A record that
    cannot be read is a CaseFileError in its place; a file that cannot be read on (a table's header,
    bytes that are not UTF-8) raises CaseFileError."""
    if file.suffix.lower() in TABLE_TYPES:
        yield from table_rows(handle, "\t" if file.suffix.lower() == ".tsv" else ",")
        return
    loads, malformed = orjson.loads, orjson.JSONDecodeError
    for number, mark, raw in marked_lines(handle):
        try:
            yield number, mark, loads(raw)
        except malformed as exc:
            yield number, 0, _jsonl_error(raw, number, exc)


def table_rows(handle: IO[bytes], delimiter: str) -> Iterator[tuple[int, int, Any]]:
    """A CSV or TSV cases file, row by row: a header row naming case keys (`id`, `input`, `expected`,
    `output`, `tags`, `metadata`, `threshold`), or `input.NAME`, `expected.NAME`, `output.NAME` /
    `metadata.NAME` for one key of those mappings. A cell holding a JSON object or array is that value; any other cell is its text,
    and an empty cell leaves the key out. `tags` may also be comma-separated words."""
    import csv

    reader = csv.reader(_text_lines(handle), delimiter=delimiter)
    try:
        header = [name.strip() for name in next(reader, [])]
        columns = _columns(header)
        header_hash = hash(tuple(header))
        unknown = [i for i, (name, (_, key)) in enumerate(zip(header, columns)) if name and key is None and name not in Case.model_fields]
        if unknown:  # told once, at the header (both reads yield it, so the records after it keep their places); no row repeats it
            yield 1, 0, _unknown_columns([header[i] for i in unknown])
            columns = [("", None) if i in unknown else column for i, column in enumerate(columns)]
        start = reader.line_num + 1
        for row in reader:
            if not any(cell.strip() for cell in row):
                start = reader.line_num + 1
                continue
            mark = hash((header_hash, tuple(row))) & 0xFFFFFFFF or 1
            if len(row) > len(header):
                yield start, 0, CaseFileError(f"{len(row)} cells in a row under a header of {len(header)} columns", start)
            else:
                yield start, mark, _record(columns, row)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise CaseFileError(f"not a readable table: {exc}", reader.line_num or 1) from None


def _text_lines(handle: IO[bytes]) -> Iterator[str]:
    """The lines of a table file as text (split on \\n, \\r\\n and \\r only), or CaseFileError at the
    first line that is not UTF-8."""
    for number, raw in enumerate(handle, start=1):
        if number == 1:
            raw = raw.removeprefix(_BOM)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise CaseFileError(not_utf8(raw, bad.start), number) from None
        if "\r" in text.rstrip("\r\n"):  # old Mac line ends: \r alone
            yield from _LONE_CR.split(text)
        else:
            yield text


_LONE_CR = re.compile(r"(?<=\r)(?!\n)")


def _columns(header: list[str]) -> list[tuple[str, str | None]]:
    """(case key, key inside it or None) of each column; CaseFileError (line 1) for a header that names
    a column twice, or a key both whole (`input`) and by its parts (`input.q`)."""
    if not any(header):
        raise CaseFileError("a table of cases starts with a header row naming case keys (id, input, expected, ...)", 1)
    for name in dict.fromkeys(header):
        if name and header.count(name) > 1:
            raise CaseFileError(f"the header names the column {name!r} twice", 1)
    columns: list[tuple[str, str | None]] = []
    for name in header:
        scope, dot, key = name.partition(".")
        columns.append((scope, key) if dot and scope in _DOTTED and key else (name, None))
    for scope in _DOTTED:
        parts = [name for name, (owner, key) in zip(header, columns) if owner == scope and key is not None]
        if scope in header and parts:
            raise CaseFileError(
                f"the header has both a {scope!r} column and {', '.join(map(repr, parts))}: a cell of one would overwrite "
                f"or drop the other; use {scope!r} alone (a JSON object) or only {scope}.NAME columns", 1)
    return columns


_DOTTED = ("input", "expected", "output", "metadata")  # the case keys a column may give one key of: `expected.name`
_COLUMNS = ("id", "input", "expected", "output", "tags", "metadata", "threshold")


def _unknown_columns(unknown: list[str]) -> CaseFileError:
    """The header's columns that are no case key: a did-you-mean for the first, and the columns a table takes."""
    names = ", ".join(map(repr, unknown))
    return CaseFileError(f"the header's column{'s' if len(unknown) > 1 else ''} {names} {'are' if len(unknown) > 1 else 'is'} no case key"
                         f"{_column_hint(unknown[0])} (columns: {', '.join(_COLUMNS)}, and "
                         f"{', '.join(scope + '.NAME' for scope in _DOTTED)} for one key of those)", 1)


def _column_hint(name: str) -> str:
    from agenteval.suite.problems import did_you_mean

    scope, dot, _ = name.partition(".")
    return did_you_mean(f"{scope}.NAME", [f"{owner}.NAME" for owner in _DOTTED]) if dot else did_you_mean(name, list(_COLUMNS))


def _record(columns: list[tuple[str, str | None]], row: list[str]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for (name, key), cell in zip(columns, row):
        if cell == "" or not name:
            continue
        if key is None:
            record[name] = _cell(cell, name)
        else:
            record.setdefault(name, {})[key] = _cell(cell, name)
    return record


def _cell(cell: str, column: str) -> Any:
    stripped = cell.strip()
    if stripped[:1] in ("{", "["):
        try:
            return orjson.loads(stripped)
        except orjson.JSONDecodeError:
            pass
    if column == "tags":
        return [tag.strip() for tag in cell.split(",") if tag.strip()]
    return cell


def stream_validated(
    file: Path, fingerprints: array, chosen: Callable[[int], bool] | None, context: dict[str, Any] | None = None,
    shown: Path | None = None,
) -> Iterator[Case]:
    """The chosen cases (None: every case) of a validated streamed file (JSONL or a table), in
    order, built without validating them again.

    Each record must still hash to the fingerprint taken when it was validated; a file edited,
    replaced, cut or extended since then raises CasesChanged at the first record that differs
    (naming the file as `shown`, as validation's problems did).
    """
    position, build, loads = 0, Case.builder(context), orjson.loads
    name = file if shown is None else shown
    if file.suffix.lower() in TABLE_TYPES:  # cells are text that validation converts (`threshold`)
        build = lambda record: Case.model_validate(record, context=context)  # noqa: E731
    try:
        with file.open("rb") as handle:
            found = _marked(file, handle)
            for expected, (number, mark, raw) in zip(fingerprints, found):  # (fingerprints first: zip stops there without reading on)
                if mark != expected:
                    raise CasesChanged(f"{name}:{number}: {_CHANGED}")
                if chosen is None or chosen(position):
                    yield build(loads(raw) if type(raw) is bytes else raw)
                position += 1
            if position == len(fingerprints) and (extra := next(found, None)) is not None:
                raise CasesChanged(f"{name}:{extra[0]}: {_CHANGED}")
    except OSError as exc:
        raise CasesChanged(f"{name}: cannot read the cases file any more: {exc.strerror or exc}") from None
    except CaseFileError as exc:
        raise CasesChanged(f"{name}:{exc.line}: {_CHANGED} ({exc})") from None
    if position < len(fingerprints):
        raise CasesChanged(f"{name}: {_CHANGED} (it now ends after {position} of {len(fingerprints)} cases)")


def _marked(file: Path, handle: IO[bytes]) -> Iterator[tuple[int, int, Any]]:
    """(line, fingerprint, record) of a validated file: a JSONL line is parsed only when chosen."""
    if file.suffix.lower() in TABLE_TYPES:
        return table_rows(handle, "\t" if file.suffix.lower() == ".tsv" else ",")
    return marked_lines(handle)


_CHANGED = "the cases file changed after it was validated; the run stopped here (fix or restore it, then --resume)"


def streamed_ids(file: Path, fingerprints: array) -> Iterable[tuple[str, int, KeyPath]]:
    """(id, line, key prefix) of every case of a validated streamed file that has an id (an invalid one
    too, whose other problems are told with its duplicate id): for the exact duplicate check."""
    with file.open("rb") as handle:
        for position, (number, _, raw) in enumerate(_marked(file, handle)):
            if position >= len(fingerprints):
                break
            try:
                record = orjson.loads(raw) if isinstance(raw, bytes) else raw
            except orjson.JSONDecodeError:
                continue
            case_id = raw_id(record)
            if case_id is not None:
                yield case_id, number, ()


def raw_id(record: Any) -> str | None:
    """The id a record gives (as its case's id reads), valid or not; None when it has none."""
    case_id = record.get("id") if isinstance(record, dict) else None
    if type(case_id) is int:
        return str(case_id)
    return case_id if type(case_id) is str and case_id else None
