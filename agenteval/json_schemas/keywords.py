"""The JSON Schema keywords json_schema replaces, so that no answer can make validation unbounded.

jsonschema matches `pattern` and `patternProperties` (also inside `additionalProperties` and
`unevaluatedProperties`) with Python's `re`, which backtracks without limit, and checks
`uniqueItems` of objects pair by pair. These versions match through agenteval.patterns (each
search bounded by `limits.pattern_seconds`; past it, `PatternTimeout` stops the validation) and
find duplicates by hashing, in one pass. Everything else is the library's own keyword.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import ValidationError
from jsonschema.validators import extend
from referencing.jsonschema import lookup_recursive_ref

from agenteval import patterns

Keyword = Callable[[Any, Any, Any, Any], Iterator[ValidationError]]


def bounded_class(cls: Any, seconds: float, format_checker: Any) -> Any:
    """`cls` (a jsonschema validator class) with the pattern and uniqueness keywords bounded."""
    search = _searcher(seconds)
    keywords: dict[str, Keyword] = {
        "pattern": _pattern(search),
        "patternProperties": _pattern_properties(search),
        "additionalProperties": _additional_properties(search),
        "uniqueItems": _unique_items,
    }
    if "unevaluatedProperties" in cls.VALIDATORS:
        keywords["unevaluatedProperties"] = _unevaluated_properties(search)
    return extend(cls, {name: rule for name, rule in keywords.items() if name in cls.VALIDATORS}, format_checker=format_checker)


def _searcher(seconds: float) -> Callable[[str, str], bool]:
    def found(pattern: str, text: str) -> bool:
        """Whether `pattern` occurs in `text` (PatternTimeout past the bound; an invalid pattern matches nothing)."""
        try:
            compiled = patterns.compile(pattern)
        except patterns.PatternError:
            return False  # the metaschema does not check pattern syntax; re would raise, here it never matches
        return patterns.search(compiled, text, seconds) is not None

    return found


def _pattern(found: Callable[[str, str], bool]) -> Keyword:
    def pattern(validator: Any, expected: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not found(expected, instance):
            yield ValidationError(f"{instance!r} does not match {expected!r}")

    return pattern


def _pattern_properties(found: Callable[[str, str], bool]) -> Keyword:
    def patternProperties(validator: Any, by_pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:  # noqa: N802
        if not validator.is_type(instance, "object"):
            return
        for pattern, subschema in by_pattern.items():
            for key, value in instance.items():
                if found(pattern, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=pattern)

    return patternProperties


def _extras(found: Callable[[str, str], bool], instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The keys neither `properties` nor `patternProperties` of `schema` cover."""
    properties = schema.get("properties", {})
    by_pattern = schema.get("patternProperties", {})
    return [key for key in instance if key not in properties and not any(found(pattern, key) for pattern in by_pattern)]


def _additional_properties(found: Callable[[str, str], bool]) -> Keyword:
    def additionalProperties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:  # noqa: N802
        if not validator.is_type(instance, "object"):
            return
        extras = _extras(found, instance, schema)
        if validator.is_type(allowed, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], allowed, path=extra)
        elif not allowed and extras:
            names = ", ".join(repr(extra) for extra in sorted(extras, key=str))
            if "patternProperties" in schema:
                verb = "does" if len(extras) == 1 else "do"
                listed = ", ".join(repr(pattern) for pattern in sorted(schema["patternProperties"]))
                yield ValidationError(f"{names} {verb} not match any of the regexes: {listed}")
            else:
                yield ValidationError(f"Additional properties are not allowed ({names} {'was' if len(extras) == 1 else 'were'} unexpected)")

    return additionalProperties


def _unevaluated_properties(found: Callable[[str, str], bool]) -> Keyword:
    def unevaluatedProperties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:  # noqa: N802
        if not validator.is_type(instance, "object"):
            return
        evaluated = _evaluated_keys(found, validator, instance, schema)
        unevaluated = [
            key for key in instance
            if key not in evaluated and next(validator.descend(instance[key], allowed, path=key, schema_path=key), None) is not None
        ]
        if unevaluated:
            names = ", ".join(repr(key) for key in sorted(unevaluated, key=str))
            verb = "was" if len(unevaluated) == 1 else "were"
            if allowed is False:
                yield ValidationError(f"Unevaluated properties are not allowed ({names} {verb} unexpected)")
            else:
                yield ValidationError(f"Unevaluated properties are not valid under the given schema ({names} {verb} unevaluated and invalid)")

    return unevaluatedProperties


def _evaluated_keys(found: Callable[[str, str], bool], validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys some keyword of `schema` (or of a subschema that applies) evaluates, as JSON Schema 2019-09/2020-12 define it.

    The library's own walk (`find_evaluated_property_keys_by_schema`), with patterns bounded.
    """
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    for ref_keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
        ref = schema.get(ref_keyword)
        if ref is not None:
            resolver = validator._resolver
            resolved = lookup_recursive_ref(resolver) if ref_keyword == "$recursiveRef" else resolver.lookup(ref)
            inner = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated_keys(found, inner, instance, resolved.contents)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys |= {key for key, value in instance.items() if next(validator.descend(value, subschema), None) is None}
    for pattern in schema.get("patternProperties", {}):
        keys |= {key for key in instance if found(pattern, key)}
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys |= _evaluated_keys(found, validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if next(validator.descend(instance, subschema), None) is None:
                keys |= _evaluated_keys(found, validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(found, validator, instance, schema["if"])
            if "then" in schema:
                keys |= _evaluated_keys(found, validator, instance, schema["then"])
        elif "else" in schema:
            keys |= _evaluated_keys(found, validator, instance, schema["else"])
    return keys


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """uniqueItems in one pass: each item's JSON value as a hashable key (1 and 1.0 equal, true and 1 not)."""
    if not unique or not validator.is_type(instance, "array"):
        return
    seen: set[Any] = set()
    for item in instance:
        key = json_key(item)
        if key in seen:
            yield ValidationError(f"{_preview(instance)} has non-unique elements")
            return
        seen.add(key)


def json_key(value: Any) -> Any:
    """A hashable key equal for equal JSON values: numbers by value, objects whatever their key order."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, (int, float)):
        return ("n", value)  # 1 == 1.0 and hash(1) == hash(1.0)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, list):
        return ("a", tuple(json_key(item) for item in value))
    if isinstance(value, dict):
        return ("o", frozenset((key, json_key(item)) for key, item in value.items()))
    return ("z", None) if value is None else ("?", repr(value))


def _preview(instance: list[Any]) -> str:
    """The array as the library shows it, cut short: a 20,000-item answer should not make a 300 KB miss."""
    text = repr(instance)
    return text if len(text) <= 200 else text[:197] + "..."
