"""Nested field paths: `invoice.line_items[0].amount`.

A path is compiled once (at suite load) into a tuple of keys and indexes, so resolving it per
case is a short loop. Missing and null stay distinct: `MISSING` means the value is absent.

The lodash spellings work too: a dotted number (`items.0.amount`) indexes a list and is a key
of an object (`{"0": ...}`), and a path may start with an index (`[0].amount`) when the answer
itself is a list.

A key that holds a dot or a bracket is written quoted in brackets: `['net.amount']` or
`invoice["a.b"][0]` (a backslash escapes the quote or a backslash inside). A quoted key is always
a key, never an index: `['0']` is the key "0" of an object.
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


_NUMBER = re.compile(r"0|[1-9]\d*", re.ASCII)
_NAME = re.compile(r"[^.\[\]]+")
_INDEX = re.compile(r"\[(\d+)\]", re.ASCII)
_PLAIN = re.compile(r"[^.\[\]'\"\\\s](?:[^.\[\]'\"\\]*[^.\[\]'\"\\\s])?")


def compile_path(path: str) -> Path | None:
    """Turn `a.b[0]['c.d']` into `("a", "b", 0, "c.d")`; None when the path is malformed."""
    if not path or path.strip() != path:
        return None
    keys: list[str | int] = []
    at, end = 0, len(path)
    name_due = not path.startswith("[")  # a name comes first and after each dot; brackets may follow anything
    while at < end:
        if name_due:
            match = _NAME.match(path, at)
            if match is None:
                return None  # `a..b`, `a.`, `a.[0]`
            name = match.group()
            keys.append(NumberKey(name) if _NUMBER.fullmatch(name) else name)
            at, name_due = match.end(), False
        elif path[at] == "[":
            at = _bracket(path, at, keys)
            if at < 0:
                return None
        elif path[at] == "." and at + 1 < end:
            at, name_due = at + 1, True
        else:
            return None  # `[0]x`: an index runs straight into a key; or a trailing dot
    return tuple(keys)


def _bracket(path: str, at: int, keys: list[str | int]) -> int:
    """Read `[12]`, `['key']` or `["key"]` at `at` into `keys`; the index after it, or -1."""
    quote = path[at + 1 : at + 2]
    if quote not in ("'", '"'):
        match = _INDEX.match(path, at)
        if match is None:
            return -1
        keys.append(int(match.group(1)))
        return match.end()
    key: list[str] = []
    at += 2
    while at < len(path):
        char = path[at]
        if char == "\\" and at + 1 < len(path):
            key.append(path[at + 1])
            at += 2
        elif char == quote:
            if path[at + 1 : at + 2] != "]":
                return -1
            keys.append("".join(key))
            return at + 2
        else:
            key.append(char)
            at += 1
    return -1  # the quote is never closed


def format_path(keys: Path) -> str:
    """A path's keys written back as a path that compiles to them (keys with dots quoted)."""
    parts: list[str] = []
    for key in keys:
        if type(key) is int:
            parts.append(f"[{key}]")
        elif type(key) is NumberKey or (_PLAIN.fullmatch(key) and not _NUMBER.fullmatch(key)):
            parts.append(f".{key}" if parts else key)
        else:
            quoted = key.replace("\\", "\\\\").replace("'", "\\'")
            parts.append(f"['{quoted}']")
    return "".join(parts)


def dotted_key(data: Any, keys: Path, budget: int = 256) -> Path | None:
    """When `keys` resolves to MISSING in `data` only because `data` has a literal key with a dot
    (`{"a.b": 1}` for the path `a.b`): the keys that reach it, else None. A dotted path then stands
    for a quoted one, which would otherwise be skipped or counted as rightly empty without a word."""
    if sum(1 for key in keys if type(key) is not int) < 2:
        return None
    steps = [budget]  # lookups left: the search stays small whatever the data

    def search(value: Any, at: int, found: tuple[str | int, ...], joined_any: bool) -> Path | None:
        if at == len(keys):
            return found if joined_any else None
        steps[0] -= 1
        if steps[0] < 0:
            return None
        key = keys[at]
        if type(value) is dict and type(key) is not int:
            parts = [str(key)]
            for stop in range(at + 1, len(keys)):
                if type(keys[stop]) is int:
                    break
                parts.append(str(keys[stop]))
                literal = ".".join(parts)
                if literal in value:
                    hit = search(value[literal], stop + 1, (*found, literal), True)
                    if hit is not None:
                        return hit
        step = resolve(value, (key,))
        return None if step is MISSING else search(step, at + 1, (*found, key), joined_any)

    return search(data, 0, (), False)


def dotted_key_problem(path: str, keys: Path | None, expected: Any) -> str | None:
    """Why `path` reads as absent on `expected` although `expected` has its dotted key, or None:
    a message for a miss (or a load-time problem) instead of a silent skip."""
    if keys is None or resolve(expected, keys) is not MISSING:
        return None
    literal = dotted_key(expected, keys)
    if literal is None:
        return None
    key = next(key for key in literal if type(key) is str and "." in key)
    return f"the expected answer has the key {key!r}, but the path {path} reads it as nested keys; quote it: {format_path(literal)}"


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
