"""Reading cases files: .jsonl line by line (validated once, streamed again at run time), .json and
.yaml whole. Every problem names file:line; a byte-order mark is accepted in each format."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from agenteval.suite.models import Case
from agenteval.suite.yaml_nodes import KeyPath, Lines, YamlSyntaxError, decode_utf8, load_yaml, not_utf8

CASE_FILE_TYPES = (".jsonl", ".json", ".yaml", ".yml", ".csv", ".tsv")
TABLE_TYPES = (".csv", ".tsv")
_BOM = b"\xef\xbb\xbf"


class CaseFileError(Exception):
    def __init__(self, message: str, line: int | None, key: KeyPath = ()) -> None:
        super().__init__(message)
        self.line = line
        self.key = key


class CasesChanged(Exception):
    """The cases file no longer holds what was validated: the run stops instead of trusting it."""


def jsonl_lines(handle: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(line number, line) for each non-blank line of a JSONL file; a BOM on line 1 is dropped."""
    for number, raw in enumerate(handle, start=1):
        if number == 1:
            raw = raw.removeprefix(_BOM)
        if raw and not raw.isspace():
            yield number, raw


def fingerprint(raw: bytes) -> int:
    """32 bits a validated line must still hash to when the run reads it again (never 0: 0 marks a bad line).
    An edit goes unnoticed with a chance of one in four billion per changed line."""
    return hash(raw.rstrip(b"\r\n")) & 0xFFFFFFFF or 1


def new_fingerprints() -> array:
    return array("I")


def parse_jsonl(raw: bytes, number: int) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise CaseFileError(not_utf8(raw, bad.start), number) from None
        raise CaseFileError(f"invalid JSON: {exc}", number) from None


def read_whole(file: Path) -> tuple[list[Any], Lines, list[tuple[int | None, KeyPath, str]]]:
    """(records, line of each key path, structure problems) of a .json or .yaml cases file.
    Raises CaseFileError when the file cannot be read as a list of records at all."""
    data = file.read_bytes()
    if file.suffix.lower() in TABLE_TYPES:
        return read_table(data, "\t" if file.suffix.lower() == ".tsv" else ",")
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


def read_table(data: bytes, delimiter: str) -> tuple[list[Any], Lines, list[tuple[int | None, KeyPath, str]]]:
    """A CSV or TSV cases file: a header row naming case keys (`id`, `input`, `expected`, `output`,
    `tags`, `metadata`, `threshold`), or `input.NAME` / `metadata.NAME` for one key of those
    mappings. A cell holding a JSON object or array is that value; any other cell is its text, and
    an empty cell leaves the key out. `tags` may also be comma-separated words."""
    import csv
    import io

    text = decode_utf8(data.removeprefix(_BOM))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    records: list[Any] = []
    lines: Lines = {}
    problems: list[tuple[int | None, KeyPath, str]] = []
    try:
        header = [name.strip() for name in next(reader, [])]
        if not any(header):
            raise CaseFileError("a table of cases starts with a header row naming case keys (id, input, expected, ...)", 1)
        for name, count in {name: header.count(name) for name in header}.items():
            if count > 1:
                raise CaseFileError(f"the header names the column {name!r} twice", 1)
        start = reader.line_num + 1
        for row in reader:
            if not any(cell.strip() for cell in row):
                start = reader.line_num + 1
                continue
            index = len(records)
            lines[(index,)] = start
            if len(row) > len(header):
                problems.append((start, (index,), f"{len(row)} cells in a row under a header of {len(header)} columns"))
            record: dict[str, Any] = {}
            for name, cell in zip(header, row):
                if cell == "" or not name:
                    continue
                value = _cell(cell, name)
                scope, dot, key = name.partition(".")
                if dot and scope in ("input", "metadata") and key:
                    holder = record.setdefault(scope, {})
                    if isinstance(holder, dict):
                        holder[key] = value
                    lines[(index, scope, key)] = start
                else:
                    record[name] = value
                lines[(index, scope if dot else name)] = start
            records.append(record)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise CaseFileError(f"not a readable table: {exc}", reader.line_num or 1) from None
    return records, lines, problems


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
    file: Path, fingerprints: array, chosen: Callable[[int], bool], context: dict[str, Any] | None = None
) -> Iterator[Case]:
    """The chosen cases of a validated JSONL file, in order, built without validating them again.

    Each line must still hash to the fingerprint taken when it was validated; a file edited,
    replaced, cut or extended since then raises CasesChanged at the first line that differs.
    """
    position, build = 0, Case.builder(context)
    try:
        with file.open("rb") as handle:
            for number, raw in jsonl_lines(handle):
                if position >= len(fingerprints) or fingerprint(raw) != fingerprints[position]:
                    raise CasesChanged(f"{file}:{number}: {_CHANGED}")
                if chosen(position):
                    yield build(orjson.loads(raw))
                position += 1
    except OSError as exc:
        raise CasesChanged(f"{file}: cannot read the cases file any more: {exc.strerror or exc}") from None
    if position < len(fingerprints):
        raise CasesChanged(f"{file}: {_CHANGED} (it now ends after {position} of {len(fingerprints)} cases)")


_CHANGED = "the cases file changed after it was validated; the run stopped here (fix or restore it, then --resume)"


def jsonl_ids(file: Path, fingerprints: array) -> Iterable[tuple[str, int, KeyPath]]:
    """(id, line, key prefix) of every valid case of a validated JSONL file: for the exact duplicate check."""
    with file.open("rb") as handle:
        for position, (number, raw) in enumerate(jsonl_lines(handle)):
            if position < len(fingerprints) and fingerprints[position]:
                case_id = orjson.loads(raw)["id"]
                yield (str(case_id) if type(case_id) is int else case_id), number, ()
