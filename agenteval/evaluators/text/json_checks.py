"""json_valid and json_schema: the candidate text is JSON, and that JSON satisfies a JSON Schema.

The schema is inline (`schema:`) or a .json/.yaml file next to the suite (`schema_file:`); it is
read and checked when the suite loads, with the `jsonschema` library (the draft the schema's
`$schema` names, else 2020-12), its pattern, uniqueness and format keywords replaced by bounded
ones (agenteval.json_schemas). Every violation is a miss that starts with its JSON path.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

import orjson
from pydantic import Field, StrictBool, ValidationInfo, field_validator, model_validator

from agenteval import patterns
from agenteval.evaluators.base import EvalContext, EvaluatorResult
from agenteval.evaluators.text.base import TextEvaluator, keep, read_suite_file
from agenteval.json_schemas import schema_validator


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> tuple[Any, str | None]:
    """(value, None) for a JSON document (RFC 8259: no NaN/Infinity, no trailing text), else (None, why)."""
    try:
        return orjson.loads(text), None
    except orjson.JSONDecodeError:
        pass  # orjson also refuses valid JSON it cannot hold (a lone surrogate escape, 1e400): ask json
    try:
        return json.loads(text, parse_constant=_no_constant), None
    except ValueError as exc:
        return None, str(exc)
    except RecursionError:
        return None, "nested too deeply to parse"


class JsonValid(TextEvaluator):
    """Passes when the candidate text parses as one JSON document."""

    type: Literal["json_valid"]
    type_name = "json_valid"

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        _, problem = parse_json(text)
        if problem is not None:
            return self.result(0.0, "fail", misses=[f"{self.where} (invalid JSON: {problem})"])
        return self.result(1.0, "pass", hits=[f"{self.where} is valid JSON"])


def load_schema_file(name: str, context: Any) -> Any:
    """A schema from a .json or .yaml file next to the suite; ValueError says what is wrong."""
    text = read_suite_file(name, context, "schema file")
    if name.lower().endswith((".yaml", ".yml")):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"schema file {name} is not valid YAML: {exc}".replace("\n", " ")) from None
    value, problem = parse_json(text)
    if problem is not None:
        raise ValueError(f"schema file {name} is not valid JSON: {problem}")
    return value


class JsonSchema(TextEvaluator):
    """Parses the candidate text as JSON and validates it; score 1 when valid, else 0 with every violation."""

    type: Literal["json_schema"]
    type_name = "json_schema"
    inline_schema: dict[str, Any] | StrictBool | None = Field(
        None, alias="schema", description="The JSON Schema, inline (an object, or true: anything valid, false: nothing valid)."
    )
    schema_file: str | None = Field(None, description="A .json or .yaml file holding the schema, relative to the suite file.")
    max_errors: int = Field(20, ge=1, description="Violations listed as misses (the rest are counted).")

    if TYPE_CHECKING:
        _schema: Any
        _validators: dict[float, Any]
        _unresolvable: type[Exception]

    @field_validator("inline_schema")
    @classmethod
    def _valid_inline(cls, schema: dict[str, Any] | bool | None) -> dict[str, Any] | bool | None:
        if schema is not None:
            schema_validator(schema)
        return schema

    @field_validator("schema_file")
    @classmethod
    def _valid_file(cls, name: str | None, info: ValidationInfo) -> str | None:
        if name is not None:
            schema_validator(load_schema_file(name, info.context))
        return name

    @model_validator(mode="after")
    def _one_schema(self) -> JsonSchema:
        if (self.inline_schema is None) == (self.schema_file is None):
            raise ValueError("give the schema inline (`schema`) or as `schema_file`, one of them")
        return self

    def model_post_init(self, context: Any) -> None:
        super().model_post_init(context)
        from referencing.exceptions import Unresolvable

        schema = self.inline_schema if self.schema_file is None else load_schema_file(self.schema_file, context)
        keep(self, _schema=schema, _validators={}, _unresolvable=Unresolvable)

    def __getstate__(self) -> dict[Any, Any]:
        """A validator holds local functions that cannot be pickled; it is rebuilt from the schema."""
        state = super().__getstate__()
        state["__dict__"] = {key: value for key, value in state["__dict__"].items() if key != "_validators"}
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        keep(self, _validators={})

    def validator(self, pattern_seconds: float) -> Any:
        """The validator for this schema with patterns bounded by `pattern_seconds` (one per suite's limits)."""
        found = self._validators.get(pattern_seconds)
        if found is None:
            found = self._validators[pattern_seconds] = schema_validator(self._schema, pattern_seconds)
        return found

    def score_text(self, text: str, ctx: EvalContext) -> EvaluatorResult:
        instance, problem = parse_json(text)
        if problem is not None:
            return self.result(0.0, "fail", misses=[f"{self.where} (invalid JSON: {problem})"])
        misses, count = [], 0
        try:
            for error in self.validator(ctx.limits.pattern_seconds).iter_errors(instance):
                count += 1
                if count <= self.max_errors:
                    misses.append(f"{error.json_path}: {error.message}")
        except self._unresolvable as exc:  # the registry holds only this schema: nothing else is fetched or read
            ref = getattr(exc, "ref", None) or str(exc)
            return self.error_result(
                f"json_schema {self.label!r}: the schema's $ref {ref!r} points outside the schema; "
                "other documents are never fetched or read (only references inside it, like '#/$defs/...', resolve)"
            )
        except patterns.PatternTimeout as exc:
            return self.error_result(f"json_schema {self.label!r}: {exc}")
        except RecursionError:
            return self.error_result(f"json_schema {self.label!r}: {self.where} is nested too deeply to validate")
        if not count:
            return self.result(1.0, "pass", hits=[f"{self.where} matches the schema"])
        if count > self.max_errors:
            misses.append(f"... and {count - self.max_errors} more")
        return self.result(0.0, "fail", misses=misses, reasoning=f"{count} schema violation(s)", details={"violations": count})
