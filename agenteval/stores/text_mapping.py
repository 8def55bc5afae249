"""Text as SQL stores hold it, reversibly: PostgreSQL text cannot hold NUL, so every text value is
stored with one mapping, the same on both databases: a NUL becomes U+FFFD, and a U+FFFD or U+FFFF
already in the text gets a U+FFFF before it. Plain Python, so the core install (no sqlalchemy)
can import what shares it.
"""

from __future__ import annotations

import re
from typing import Any

NUL, REPLACEMENT, ESCAPE = "\x00", "\ufffd", "\uffff"
_STORED = re.compile("\uffff(.)|\ufffd", re.DOTALL)


def to_column(text: str) -> str:
    """Text as a column holds it: NUL as U+FFFD, and U+FFFD / U+FFFF escaped with U+FFFF."""
    if REPLACEMENT in text or ESCAPE in text:
        text = text.replace(ESCAPE, ESCAPE + ESCAPE).replace(REPLACEMENT, ESCAPE + REPLACEMENT)
    return text.replace(NUL, REPLACEMENT) if NUL in text else text


def from_column(text: str) -> str:
    """The text `to_column` was given."""
    if REPLACEMENT not in text and ESCAPE not in text:
        return text
    return _STORED.sub(lambda found: NUL if found.group(1) is None else found.group(1), text)


def json_to_column(value: Any) -> Any:
    """A JSON value with `to_column` applied to every string in it, keys included."""
    if isinstance(value, str):
        return to_column(value)
    if isinstance(value, dict):
        return {to_column(key) if isinstance(key, str) else key: json_to_column(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_to_column(item) for item in value]
    return value


def json_from_column(value: Any) -> Any:
    """The JSON value `json_to_column` was given."""
    if isinstance(value, str):
        return from_column(value)
    if isinstance(value, dict):
        return {from_column(key) if isinstance(key, str) else key: json_from_column(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_from_column(item) for item in value]
    return value
