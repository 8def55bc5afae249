"""Building blocks shared by every config model."""

from __future__ import annotations

import shlex
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict


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
