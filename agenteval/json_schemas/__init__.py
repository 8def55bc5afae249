"""JSON Schema validation that no value can make unbounded, for json_schema and for the schemas
an MCP server sends (its tools' input and output schemas): the `jsonschema` library's validator
for the draft the schema names (else 2020-12), with its pattern, uniqueness and format keywords
replaced by bounded ones (keywords, formats), and a registry holding only the schema itself, so
a `$ref` to another document (a URL, a file) is never fetched or read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import orjson

from agenteval import patterns
from agenteval.json_schemas.formats import format_checker
from agenteval.json_schemas.keywords import bounded_class
from agenteval.limits import DEFAULT_LIMITS


def schema_validator(schema: Any, pattern_seconds: float = DEFAULT_LIMITS.pattern_seconds) -> Any:
    """A jsonschema validator for `schema`, bounded (see keywords); ValueError when the schema is invalid.

    Built once per distinct schema and bound: checking a schema against its metaschema takes
    milliseconds, and case-level evaluators repeat the same schema on every case. Its registry
    holds only the schema itself, so a `$ref` to another document is never fetched or read.
    """
    if not isinstance(schema, (dict, bool)):
        raise ValueError(f"a JSON Schema is an object (or true/false), got {type(schema).__name__}")
    return _validator(orjson.dumps(schema), pattern_seconds)


@lru_cache(maxsize=256)
def _validator(schema_json: bytes, pattern_seconds: float) -> Any:
    from jsonschema import SchemaError
    from jsonschema.validators import Draft202012Validator, validator_for
    from referencing import Registry

    schema = orjson.loads(schema_json)
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema, format_checker=_metaschema_formats(cls))
    except SchemaError as exc:
        raise ValueError(f"invalid JSON Schema at {exc.json_path}: {exc.message}") from None
    checker = format_checker()
    return bounded_class(cls, pattern_seconds, checker)(schema, registry=Registry(), format_checker=checker)


def _metaschema_formats(cls: Any) -> Any:
    """The metaschema's format checks, with `pattern`s checked by the engine that matches them
    (agenteval.patterns), so `^\\p{Letter}+$` (ECMA-262 allows it; Python's `re` does not) is valid."""
    from jsonschema import FormatChecker

    checker = FormatChecker(())
    checker.checkers = {**cls.FORMAT_CHECKER.checkers, "regex": (lambda instance: not isinstance(instance, str) or patterns.is_valid(instance), ())}
    return checker


def schema_problem(value: Any, schema: Any, pattern_seconds: float = DEFAULT_LIMITS.pattern_seconds) -> str | None:
    """The first way `value` breaks `schema` (`path: message`), or None; a schema that cannot be
    used (invalid, a `$ref` outside it, a pattern past `pattern_seconds`) says so."""
    from jsonschema.exceptions import best_match
    from referencing.exceptions import Unresolvable

    try:
        error = best_match(schema_validator(schema, pattern_seconds).iter_errors(value))
    except ValueError as exc:
        return f"the schema cannot be used: {exc}"
    except Unresolvable as exc:  # the registry holds only this schema: nothing else is fetched or read
        return f"the schema cannot be used: a $ref outside it ({exc})"
    except patterns.PatternTimeout as exc:
        return f"the schema's pattern took too long to check: {exc}"
    except RecursionError:
        return "the schema or the value nests too deeply to check"
    if error is None:
        return None
    where = "".join(f"[{part!r}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return f"{where.lstrip('.') or '(the whole value)'}: {error.message}"
