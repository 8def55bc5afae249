"""Values a run can use: the check an answer passes where it enters a run (agenteval.answers),
and that a tool's result or a conversation's message passes before it is sent to a model.

Three things in a JSON-like value would break scoring, storing or sending it: nesting deeper than
the limit (every reader and writer of results recurses), a lone surrogate in a string or key (half
of a UTF-16 pair: not Unicode text, and not writable as UTF-8), and an integer beyond the float
range (every numeric comparison goes through a float). NaN, Infinity and subnormal numbers pass.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import orjson

_FLOAT_MAX = sys.float_info.max
_FAST_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
_ORJSON_DEPTH = 254  # the deepest nesting orjson writes: an answer it writes is no deeper
_PATH_PARTS_SHOWN = 6
_KEY_CHARS_SHOWN = 40


def problem(value: Any, max_depth: int | None = None) -> str | None:
    """Why `value` cannot be an answer, in one line naming its JSON path; None when it can.

    orjson refuses exactly what is checked here (surrogates, integers beyond 64 bits, nesting
    beyond 254 levels), so one C-speed dump settles almost every answer without a Python walk.
    """
    if value is None or type(value) in (float, bool):
        return None
    try:
        dumped = orjson.dumps(value, option=_FAST_OPTIONS, default=_any_other)
    except orjson.JSONEncodeError:
        return _walk(value, max_depth)
    if max_depth is None or max_depth >= _ORJSON_DEPTH or dumped.count(b"[") + dumped.count(b"{") <= max_depth:
        return None  # (brackets inside strings only over-count)
    wrapped = value
    for _ in range(_ORJSON_DEPTH - max_depth):  # orjson now refuses exactly what nests past max_depth
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped, option=_FAST_OPTIONS, default=_any_other)
    except orjson.JSONEncodeError:
        return _walk(value, max_depth)
    return None


def unsendable_text(text: str | None, what: str) -> str | None:
    """Why `text` cannot be said on in a conversation (a lone surrogate, e.g. an emoji cut off
    mid-token, is not Unicode text and cannot be sent), or None. Shared by the conversation driver
    and the simulated user, below both."""
    if text is None or text.isascii():
        return None
    found = problem(text)
    return None if found is None else f"{what} {found.removeprefix('answer ').replace(' at `answer`', '')}"


def _any_other(value: Any) -> None:
    """Objects orjson does not know (a Python pipeline's own types) are not what is checked here."""
    return None


def _walk(value: Any, max_depth: int | None) -> str | None:
    """The first problem met in a depth-first walk (iterative: the value may nest past any stack)."""
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, str):
            if not _is_text(node):
                return f"answer holds a lone surrogate at {_path(where)} ({_surrogate(node)}: half of a UTF-16 pair, e.g. an emoji cut off mid-token), which is not Unicode text"
        elif isinstance(node, int) and not isinstance(node, bool):
            if not -_FLOAT_MAX <= node <= _FLOAT_MAX:
                return f"answer holds an integer beyond the float range at {_path(where)} (about {_digits(node)} digits; numbers must stay within ±1.8e308)"
        elif isinstance(node, (dict, list, tuple)):
            depth += 1
            if max_depth is not None and depth > max_depth:
                return f"answer nested deeper than {max_depth} levels (at {_path(where)})"
            if isinstance(node, dict):
                for key, child in node.items():
                    if type(key) is str and not _is_text(key):
                        return f"answer holds a lone surrogate in a key at {_path((where, key))} ({_surrogate(key)}: half of a UTF-16 pair), which is not Unicode text"
                    stack.append((child, depth, (where, key)))
            else:
                for index in range(len(node) - 1, -1, -1):
                    stack.append((node[index], depth, (where, index)))
    return None


def _is_text(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate(text: str) -> str:
    for char in text:
        if "\ud800" <= char <= "\udfff":
            return f"U+{ord(char):04X}"
    return "?"


def _digits(number: int) -> int:
    return int(abs(number).bit_length() * 0.30103) + 1  # str() of a long int is slow, and capped at 4300 digits


def _quoted(name: str) -> str:
    """A key as JSON writes it, on one line, a lone surrogate as its escape."""
    return json.dumps(name, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")


def _path(where: Any) -> str:
    """`answer.a.b[2]` from the walk's (parent, key) links; long paths keep their first parts."""
    parts: list[Any] = []
    while where is not None:
        where, key = where
        parts.append(key)
    parts.reverse()
    text = "answer"
    for key in parts[:_PATH_PARTS_SHOWN]:
        if type(key) is int:
            text += f"[{key}]"
        else:
            name = str(key)[:_KEY_CHARS_SHOWN]
            text += f".{name}" if name.isidentifier() else f"[{_quoted(name)}]"
    if len(parts) > _PATH_PARTS_SHOWN:
        text += f"… ({len(parts)} levels)"
    return f"`{text}`"
