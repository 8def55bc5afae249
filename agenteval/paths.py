"""Nested field paths: `invoice.line_items[0].amount`.

A path is compiled once (at suite load) into a tuple of keys and indexes, so resolving it per
case is a short loop. Missing and null stay distinct: `MISSING` means the value is absent.
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

_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")
_INDEX = re.compile(r"\[(\d+)\]")


def compile_path(path: str) -> Path | None:
    """Turn `a.b[0].c` into `("a", "b", 0, "c")`; None when the path is malformed."""
    if not path or path.strip() != path:
        return None
    keys: list[str | int] = []
    for part in path.split("."):
        match = _SEGMENT.fullmatch(part)
        if match is None:
            return None
        keys.append(match.group(1))
        keys.extend(int(index) for index in _INDEX.findall(match.group(2)))
    return tuple(keys)


def resolve(data: Any, path: Path) -> Any:
    """The value at `path` in `data`, or MISSING. Never raises."""
    value = data
    for key in path:
        if type(key) is int:
            if type(value) is not list or key >= len(value):
                return MISSING
        elif type(value) is not dict or key not in value:
            return MISSING
        value = value[key]
    return value
