"""A pipeline's Python values as the plain values evaluators read, converted once where they enter.

Evaluators see what JSON can say: dicts with string keys, lists, strings, numbers, booleans and
None. A Python pipeline holds pydantic models, dataclasses, `Decimal`s, numpy scalars and arrays,
dates, enums, UUIDs, paths, tuples and sets. `to_plain` turns each into the value JSON would
carry (the table in docs/python-api.md), so scoring code stays pure and sees one kind of value.
A `Decimal` becomes an `ExactNumber`, a float that keeps its digits for the results line; the
evaluators are handed `floats(...)` of the same value (plain floats: scoring code checks exact types),
and the results line the exact form. Anything else is a `ValueNotPlain` naming where it is, never a
silent "absent".
"""

from __future__ import annotations

import dataclasses
import enum
import math
import uuid
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import PurePath
from typing import Any

MAX_DEPTH = 200  # as deep as an answer from a target may be (agenteval.limits)


class ValueNotPlain(ValueError):
    """A value with no plain form: its path and what it is."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path or 'the value'}: {what}")
        self.path = path


class ExactNumber(float):
    """A `Decimal` as a float (every comparison treats it as a number) that remembers its exact
    digits, which the results line writes as they were (`12.50`, not `12.5`)."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, value: Decimal) -> ExactNumber:
        number = super().__new__(cls, float(value))
        number.text = str(value)  # JSON's number grammar: `12.50`, `1E+3`, `-0`
        return number

    def __repr__(self) -> str:
        return f"ExactNumber({self.text})"

    def __reduce__(self) -> Any:  # pickled (Ray) as the Decimal it came from
        return (ExactNumber, (Decimal(self.text),))


def to_plain(value: Any, path: str = "") -> Any:
    """`value` with every pipeline type replaced by its plain form (see the module docstring).
    Plain values come back as they are (the same objects when nothing inside needed converting).
    Raises ValueNotPlain for an object with no plain form, or nesting deeper than MAX_DEPTH."""
    return _plain(value, path, 0)


_LEAVES = (str, int, float, bool, type(None))


def _plain(value: Any, path: str, depth: int) -> Any:
    kind = type(value)
    if kind in _LEAVES:
        return value
    if depth > MAX_DEPTH:
        raise ValueNotPlain(path, f"nested deeper than {MAX_DEPTH} levels")
    if kind is dict:
        return _mapping(value, path, depth)
    if kind is list:
        return _sequence(value, path, depth)
    return _converted(value, path, depth)


def _mapping(value: Mapping[Any, Any], path: str, depth: int) -> dict[str, Any]:
    plain: dict[str, Any] = {}
    same = type(value) is dict
    for key, item in value.items():
        name = _key(key, path)
        inner = _plain(item, f"{path}.{name}" if path else name, depth + 1)
        same = same and name is key and inner is item
        plain[name] = inner
    return value if same else plain  # type: ignore[return-value]


def _sequence(value: Any, path: str, depth: int) -> list[Any]:
    plain = [_plain(item, f"{path}[{index}]", depth + 1) for index, item in enumerate(value)]
    if type(value) is list and all(new is old for new, old in zip(plain, value)):
        return value  # type: ignore[no-any-return]
    return plain


def _key(key: Any, path: str) -> str:
    if type(key) is str:
        return key
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, (str, int, uuid.UUID, PurePath)) and not isinstance(key, bool):
        return str(key)
    raise ValueNotPlain(path, f"a mapping key of type {type(key).__name__} ({key!r}): keys must be strings or integers")


def _converted(value: Any, path: str, depth: int) -> Any:
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, Decimal):
        return _decimal(value, path)
    if isinstance(value, enum.Enum):
        return _plain(value.value, path, depth + 1)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return _mapping(value, path, depth)
    if isinstance(value, list | tuple):
        return _sequence(value, path, depth)
    if isinstance(value, set | frozenset):
        return _sequence(_ordered(value), path, depth)
    model_dump = getattr(value, "model_dump", None)
    if model_dump is not None and hasattr(type(value), "model_fields"):  # a pydantic model
        fields = {name: getattr(value, name) for name in type(value).model_fields}  # by name, not alias
        return _mapping({**fields, **(getattr(value, "__pydantic_extra__", None) or {})}, path, depth)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _mapping({field.name: getattr(value, field.name) for field in dataclasses.fields(value)}, path, depth)
    numpy = _numpy_value(value, path, depth)
    if numpy is not _NOT_NUMPY:
        return numpy
    raise ValueNotPlain(path, f"a {type(value).__module__}.{type(value).__qualname__} has no plain form "
                              "(give a mapping, list, string, number, boolean, pydantic model or dataclass)")


_NOT_NUMPY: Any = object()


def _numpy_value(value: Any, path: str, depth: int) -> Any:
    """numpy scalars as Python numbers and arrays as lists, without importing numpy for others."""
    if type(value).__module__ != "numpy":
        return _NOT_NUMPY
    import numpy

    if isinstance(value, numpy.ndarray):  # nested lists; datetime64 items become datetimes, then text
        return _sequence(value.tolist(), path, depth)
    if isinstance(value, numpy.generic):
        item = value.item()  # numpy.float64(nan) is float nan: NaN follows JSON NaN's rules
        if isinstance(item, bytes):
            raise ValueNotPlain(path, f"a numpy bytes value ({item[:20]!r}) has no plain form (decode it to text)")
        return _plain(item, path, depth + 1)
    return _NOT_NUMPY


def _decimal(value: Decimal, path: str) -> float:
    """A finite Decimal keeps its digits (ExactNumber); NaN and infinities are the floats JSON NaN
    and Infinity read as; one beyond the float range is refused, as such an integer is."""
    if not value.is_finite():
        return math.nan if value.is_nan() else float(value)
    number = float(value)
    if math.isinf(number):
        raise ValueNotPlain(path, f"a Decimal beyond the float range ({str(value)[:20]}...): numbers must stay within ±1.8e308")
    return ExactNumber(value)


def floats(value: Any) -> Any:
    """`value` (a `to_plain` result) with every ExactNumber as the plain float it equals: what
    evaluators read. The same object when it holds none."""
    kind = type(value)
    if kind is ExactNumber:
        return float(value)
    if kind is dict:
        changed = {key: floats(item) for key, item in value.items()}
        return value if all(changed[key] is item for key, item in value.items()) else changed
    if kind is list:
        items = [floats(item) for item in value]
        return value if all(new is old for new, old in zip(items, value)) else items
    return value


def has_exact(value: Any) -> bool:
    """Whether a `to_plain` result holds an ExactNumber (then its results line differs from `floats`)."""
    kind = type(value)
    if kind is ExactNumber:
        return True
    if kind is dict:
        return any(has_exact(item) for item in value.values())
    if kind is list:
        return any(has_exact(item) for item in value)
    return False


def _ordered(items: set[Any] | frozenset[Any]) -> list[Any]:
    """A set's items in a stable order (sorted when they compare), so results are reproducible."""
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)
