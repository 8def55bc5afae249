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
import threading
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
        shown = path if len(path) <= 120 else f"{path[:70].rsplit('.', 1)[0]}.….{path[-40:].split('.', 1)[-1]}"  # a cycle's path repeats 200 times
        super().__init__(f"{shown or 'the value'}: {what}")
        self.path = path
        self.what = what

    def within(self, key: str | int) -> ValueNotPlain:
        """The same problem seen from one level up (paths are built only when something fails)."""
        if isinstance(key, int):
            path = f"[{key}]{self.path}" if self.path.startswith(("[", ".")) or not self.path else f"[{key}].{self.path}"
        else:
            path = f"{key}{self.path}" if self.path.startswith("[") or not self.path else f"{key}.{self.path}"
        return ValueNotPlain(path, self.what)


class ExactNumber(float):
    """A `Decimal` as a float that remembers its exact digits, which the results line writes as
    they were (`12.50`, not `12.5`). Evaluators never see one (`floats` gives them plain floats:
    scoring code checks exact types)."""

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
    Raises ValueNotPlain for an object with no plain form, or nesting deeper than MAX_DEPTH,
    naming where (`path`, then the keys and indexes down to it)."""
    return convert(value, path)[0]


def convert(value: Any, path: str = "", check: bool = True) -> tuple[Any, bool]:
    """(`to_plain(value)`, whether it holds an ExactNumber): one walk for both. `check=False`: the
    caller knows `is_plain(value)` is False."""
    if check and is_plain(value):  # the usual value (parsed JSON, a dict of texts and numbers): nothing to build
        return value, False
    found = [False]
    try:
        return _plain(value, 0, found), found[0]
    except ValueNotPlain as exc:
        if not path:
            raise
        raise exc.within(path) from None


_LEAVES = frozenset((str, int, float, bool, type(None)))


def is_plain(value: Any, depth: int = 0) -> bool:
    """Whether `value` is plain as it is (`to_plain` would give it back unchanged): dicts with string
    keys, lists and JSON's leaves, nested at most MAX_DEPTH levels. A check that copies nothing,
    about half the cost of the conversion's walk; False sends a value through that walk."""
    kind = type(value)
    if kind is dict:
        if depth > MAX_DEPTH:
            return False
        depth += 1
        for key, item in value.items():
            if type(key) is not str or (type(item) not in _LEAVES and not is_plain(item, depth)):
                return False
        return True
    if kind is list:
        if depth > MAX_DEPTH:
            return False
        depth += 1
        for item in value:
            if type(item) not in _LEAVES and not is_plain(item, depth):
                return False
        return True
    return kind in _LEAVES


def _plain(value: Any, depth: int, found: list[bool]) -> Any:
    kind = type(value)
    if kind in _LEAVES:
        return value
    if depth > MAX_DEPTH:
        raise ValueNotPlain("", "it contains itself" if _reaches_itself(value) else f"nested deeper than {MAX_DEPTH} levels")
    if kind is dict:
        return _mapping(value, depth, found)
    if kind is list:
        return _sequence(value, depth, found)
    handler = _HANDLERS.get(kind)
    if handler is None:
        handler = _HANDLERS[kind] = _handler(kind)
    return handler(value, depth, found)


def _reaches_itself(value: Any) -> bool:
    """Whether `value` holds itself, looked for only once a value is nested past MAX_DEPTH (a cycle
    always is): a bounded walk over dicts, lists and tuples, so a deep acyclic value costs little."""
    stack, seen, budget = [value], set(), 100_000
    while stack and budget:
        budget -= 1
        current = stack.pop()
        children = current.values() if isinstance(current, dict) else current if isinstance(current, (list, tuple)) else ()
        for child in children:
            if child is value:
                return True
            if isinstance(child, (dict, list, tuple)) and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return False


def _mapping(value: Mapping[Any, Any], depth: int, found: list[bool]) -> dict[str, Any]:
    plain: dict[str, Any] | None = None if type(value) is dict else {}  # a dict is copied only once something in it changes
    depth += 1
    for key, item in value.items():
        name = key if type(key) is str else _key(key)
        if type(item) in _LEAVES:
            inner = item
        else:
            try:
                inner = _plain(item, depth, found)
            except ValueNotPlain as exc:
                raise exc.within(name) from None
        if plain is None:
            if inner is item and name is key:
                continue
            plain = {}
            for earlier, kept in value.items():  # the items before this one, unchanged
                if earlier is key:
                    break
                plain[earlier] = kept
        plain[name] = inner
    return value if plain is None else plain  # type: ignore[return-value]


def _sequence(value: Any, depth: int, found: list[bool]) -> list[Any]:
    plain: list[Any] | None = None if type(value) is list else []  # a list is copied only once an item changes
    depth += 1
    for index, item in enumerate(value):
        if type(item) in _LEAVES:
            if plain is not None:
                plain.append(item)
            continue
        try:
            inner = _plain(item, depth, found)
        except ValueNotPlain as exc:
            raise exc.within(index) from None
        if plain is None:
            if inner is item:
                continue
            plain = value[:index]
        plain.append(inner)
    return value if plain is None else plain  # type: ignore[no-any-return]


def _key(key: Any) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, (str, int, uuid.UUID, PurePath)) and not isinstance(key, bool):
        return str(key)
    raise ValueNotPlain("", f"a mapping key of type {type(key).__name__} ({key!r}): keys must be strings or integers")


# -- one handler per type, chosen the first time the type is met ---------------------------------------


def _handler(kind: type) -> Any:
    """How values of `kind` become plain (the isinstance chain runs once per type, not per value)."""
    if issubclass(kind, bool):
        return lambda value, depth, found: bool(value)
    if issubclass(kind, Decimal):
        return _decimal
    if issubclass(kind, enum.Enum):
        return lambda value, depth, found: _plain(value.value, depth + 1, found)
    if issubclass(kind, int):
        return lambda value, depth, found: int(value)
    if issubclass(kind, float):
        return lambda value, depth, found: float(value)
    if issubclass(kind, str):
        return lambda value, depth, found: str(value)
    if issubclass(kind, datetime | date | time):
        return lambda value, depth, found: value.isoformat()
    if issubclass(kind, uuid.UUID | PurePath):
        return lambda value, depth, found: str(value)
    if issubclass(kind, Mapping):
        return _mapping
    if issubclass(kind, list | tuple):
        return _sequence
    if issubclass(kind, set | frozenset):
        return _set
    if hasattr(kind, "model_fields") and hasattr(kind, "model_dump"):  # a pydantic model
        return _model
    if dataclasses.is_dataclass(kind):
        return lambda value, depth, found: _mapping(
            {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}, depth, found
        )
    if kind.__module__ == "numpy":
        return _numpy_value
    return _opaque


def _model(value: Any, depth: int, found: list[bool]) -> Any:
    """A pydantic model's fields by name (not alias), extra fields included; a RootModel its root."""
    if getattr(type(value), "__pydantic_root_model__", False):
        return _plain(value.root, depth + 1, found)
    fields = value.__dict__  # pydantic keeps the field values here, by name
    extra = getattr(value, "__pydantic_extra__", None)
    return _mapping({**fields, **extra} if extra else fields, depth, found)


def _opaque(value: Any, depth: int, found: list[bool]) -> Any:
    kind = type(value)
    raise ValueNotPlain("", f"a {kind.__module__}.{kind.__qualname__} has no plain form "
                            "(give a mapping, list, string, number, boolean, pydantic model or dataclass)")


_HANDLERS: dict[type, Any] = {}


def _numpy_value(value: Any, depth: int, found: list[bool]) -> Any:
    """numpy scalars as Python numbers and arrays as nested lists (numpy is imported only here)."""
    import numpy

    if isinstance(value, numpy.ndarray):  # datetime64 items become datetimes, then text
        if value.ndim:
            return _sequence(value.tolist(), depth, found)
        value = value[()]  # a 0-d array (`np.array(1.0)`) is its one item, like a numpy scalar
        if not isinstance(value, numpy.generic):  # an object array's item: whatever it holds
            return _plain(value, depth + 1, found)
    if isinstance(value, numpy.generic):
        item = value.item()  # numpy.float64(nan) is float nan: NaN follows JSON NaN's rules
        if isinstance(item, bytes):
            raise ValueNotPlain("", f"a numpy bytes value ({item[:20]!r}) has no plain form (decode it to text)")
        return _plain(item, depth + 1, found)
    return _opaque(value, depth, found)


def _decimal(value: Decimal, depth: int, found: list[bool]) -> float:
    """A finite Decimal keeps its digits (ExactNumber); NaN and infinities are the floats JSON NaN
    and Infinity read as; one beyond the float range is refused, as such an integer is."""
    if not value.is_finite():
        return math.nan if value.is_nan() else float(value)
    number = float(value)
    if math.isinf(number):
        raise ValueNotPlain("", f"a Decimal beyond the float range ({str(value)[:20]}...): numbers must stay within ±1.8e308")
    found[0] = True
    return ExactNumber(value)


def _set(value: set[Any] | frozenset[Any], depth: int, found: list[bool]) -> list[Any]:
    """A set's items in a stable order, so results are reproducible: sorted when they compare, else
    by `repr`; items whose comparison and `repr` both raise are ordered by their plain forms."""
    ordered = _ordered(value)
    if ordered is not None:
        return _sequence(ordered, depth, found)
    try:
        plain = [_plain(item, depth + 1, found) for item in value]
    except ValueNotPlain as exc:  # named at the set: its items have no index
        raise ValueNotPlain(exc.path, f"an item of a set: {exc.what}") from None
    return sorted(plain, key=lambda item: (type(item).__name__, repr(item)))


def _ordered(items: set[Any] | frozenset[Any]) -> list[Any] | None:
    """The items sorted, else sorted by `repr`; None when neither works (the items' own `__lt__`
    and `__repr__` may raise anything)."""
    for key in (None, repr):
        try:
            return sorted(items, key=key)
        except Exception:  # noqa: BLE001, S112 - a pipeline object's comparison or repr failing is data here
            continue
    return None


def floats(value: Any) -> Any:
    """`value` (a `to_plain` result) with every ExactNumber as the plain float it equals: what
    evaluators read. The same object when it holds none; a container is copied only once one of its
    items changes (one pass, in order)."""
    kind = type(value)
    if kind is ExactNumber:
        return float(value)
    if kind is not dict and kind is not list:
        return value
    copy: Any = None
    for key, item in value.items() if kind is dict else enumerate(value):
        inner = type(item)
        if inner is ExactNumber:
            new = float(item)
        elif inner is dict or inner is list:
            new = floats(item)
            if new is item:
                continue
        else:
            continue
        if copy is None:
            copy = kind(value)
        copy[key] = new
    return value if copy is None else copy


def plain_and_exact(value: Any, path: str = "", check: bool = True) -> tuple[Any, Any]:
    """(what evaluators read: plain, with floats; what the results line writes: with each Decimal's
    digits, or None when that is the same). Raises ValueNotPlain. `check`: as for `convert`."""
    plain, exact = convert(value, path, check)
    return (floats(plain), plain) if exact else (plain, None)


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


# -- the originals: what Python-object evaluators see -------------------------------------------
# Evaluators written in YAML read the plain values; an evaluator given as a Python object reads the
# pipeline's own objects (a pydantic model, a Decimal). The API keeps each case's originals beside
# its plain form, and a python target hands the answer it got to the evaluators of the same case
# through the thread that runs the case (a case's answer and scoring always share one thread).


@dataclasses.dataclass(frozen=True, slots=True)
class Originals:
    """A case's values as the caller gave them (before `to_plain`)."""

    input: Any
    expected: Any
    output: Any
    metadata: Any


_ANSWER = threading.local()


def remember_answer(case_id: str, plain: Any, answer: Any) -> None:
    """The answer a python target returned for `case_id`, before conversion (`plain`: after)."""
    _ANSWER.value = (case_id, plain, answer)


def original_answer(case_id: str, plain: Any) -> tuple[bool, Any]:
    """(True, the answer a python target returned on this thread for `case_id` as `plain`), else (False, None)."""
    held = getattr(_ANSWER, "value", None)
    return (True, held[2]) if held is not None and held[0] == case_id and held[1] is plain else (False, None)
