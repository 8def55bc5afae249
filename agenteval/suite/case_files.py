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

CASE_FILE_TYPES = (".jsonl", ".json", ".yaml", ".yml")
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
