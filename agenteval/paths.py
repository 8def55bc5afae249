"""Nested field paths: `invoice.line_items[0].amount`.

A path is compiled once (at suite load) into a tuple of keys and indexes, so resolving it per
case is a short loop. Missing and null stay distinct: `MISSING` means the value is absent.

The lodash spellings work too: a dotted number (`items.0.amount`) indexes a list and is a key
of an object (`{"0": ...}`), and a path may start with an index (`[0].amount`) when the answer
itself is a list.
"""

from __future__ import annotations

import re
from typing import Any

Path = tuple[str | int, ...]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()


class NumberKey(str):
    """A dotted number (`items.0`): the key "0" of an object, or index 0 of a list."""

    __slots__ = ("index",)

    def __new__(cls, text: str) -> NumberKey:
        key = super().__new__(cls, text)
        key.index = int(text)
        return key


_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)", re.ASCII)
_LEADING_INDEXES = re.compile(r"(?:\[\d+\])+", re.ASCII)
_INDEX = re.compile(r"\[(\d+)\]", re.ASCII)
_NUMBER = re.compile(r"0|[1-9]\d*", re.ASCII)


def compile_path(path: str) -> Path | None:
    """Turn `a.b[0].c` into `("a", "b", 0, "c")`; None when the path is malformed."""
    if not path or path.strip() != path:
        return None
    keys: list[str | int] = []
    leading = _LEADING_INDEXES.match(path)
    if leading is not None:
        keys.extend(int(index) for index in _INDEX.findall(leading.group()))
        rest = path[leading.end() :]
        if not rest:
            return tuple(keys)
        if not rest.startswith("."):
            return None  # `[0]x`: an index runs straight into a key
        path = rest[1:]
    for part in path.split("."):
        match = _SEGMENT.fullmatch(part)
        if match is None:
            return None
        name = match.group(1)
        keys.append(NumberKey(name) if _NUMBER.fullmatch(name) else name)
        keys.extend(int(index) for index in _INDEX.findall(match.group(2)))
    return tuple(keys)


def resolve(data: Any, path: Path) -> Any:
    """The value at `path` in `data`, or MISSING. Never raises."""
    value = data
    for key in path:
        if type(key) is int:
            if type(value) is not list or key >= len(value):
                return MISSING
            value = value[key]
        elif type(value) is dict:
            if key not in value:
                return MISSING
            value = value[key]
        elif type(key) is NumberKey and type(value) is list and key.index < len(value):
            value = value[key.index]
        else:
            return MISSING
    return value
