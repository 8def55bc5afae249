"""Building blocks shared by every config model."""

from __future__ import annotations

import shlex
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationInfo
from pydantic_core import PydanticKnownError, core_schema


class StrictModel(BaseModel):
    """Config models: unknown keys are errors and values are not coerced across types."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _split_command(value: Any) -> Any:
    return shlex.split(value) if isinstance(value, str) else value


Command = Annotated[
    list[str],
    BeforeValidator(_split_command, json_schema_input_type=list[str] | str),
]
"""A program and its arguments, as a list or one string split like a shell would (no shell runs)."""


class ByType:
    """A field holding one of several config classes told apart by `type` (evaluators, targets,
    `models:` entries), each class imported when the data first names its type, so a suite builds
    only the models it uses. Errors read as a discriminated union's would: a missing or unknown
    `type` is pydantic's own union error, and a ValidationError of the class joins the outer one,
    each error's location under this field's. The JSON schema is the union of every type."""

    discriminator: Any = "type"

    def member(self, data: Any) -> type[BaseModel] | None:
        """The class the mapping's `type` names, or None (also for messages about its keys)."""
        raise NotImplementedError

    def kept(self, value: Any) -> bool:
        """Whether a value built in Python is one of the classes, taken as it is."""
        raise NotImplementedError

    def names(self) -> list[str]:
        """Every type name, for the message about one that is not."""
        raise NotImplementedError

    def choices(self) -> dict[str, core_schema.CoreSchema]:
        """Each type's schema by its name: the union the JSON schema shows."""
        raise NotImplementedError

    def validate(self, value: Any, info: ValidationInfo) -> Any:
        if self.kept(value):
            return value
        if not isinstance(value, dict):
            raise PydanticKnownError("model_attributes_type")
        if "type" not in value:  # (the types there are, which pydantic's own error does not name)
            raise PydanticKnownError("union_tag_not_found", {"discriminator": "'type'", "expected_tags": self._expected()})
        cls = self.member(value)
        if cls is None:
            raise self.unknown(value["type"])
        return cls.__pydantic_validator__.validate_python(value, context=info.context)

    def unknown(self, tag: Any, discriminator: str = "'type'") -> PydanticKnownError:
        return PydanticKnownError("union_tag_invalid", {"discriminator": discriminator, "tag": str(tag), "expected_tags": self._expected()})

    def _expected(self) -> str:
        return ", ".join(repr(name) for name in self.names())

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.with_info_plain_validator_function(self.validate)

    def __get_pydantic_json_schema__(self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler) -> Any:
        return handler(core_schema.tagged_union_schema(self.choices(), discriminator=self.discriminator))  # type: ignore[arg-type]
