"""Where candidate answers come from: one module per kind of target."""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from agenteval.targets.base import Answer
from agenteval.targets.command import CommandTarget
from agenteval.targets.recorded import RecordedTarget

TargetSpec = Annotated[Union[RecordedTarget, CommandTarget], Field(discriminator="type")]

__all__ = ["Answer", "CommandTarget", "RecordedTarget", "TargetSpec"]
