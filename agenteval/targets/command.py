"""command: run the system under test once per case, case input as JSON on stdin."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import Field

from agenteval.process import Processes, decode_json, resolve_command
from agenteval.config import Command, StrictModel
from agenteval.targets.base import Answer


class CommandTarget(StrictModel):
    """Runs `command` per case (no shell, cwd = the suite's folder); stdout is the answer, parsed as JSON when it is JSON."""

    type: Literal["command"]
    command: Command = Field(min_length=1)
    timeout: float = Field(60.0, gt=0, description="Seconds before the process is stopped and the case errors.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables for the command.")

    def answer(self, case_input: Any, base_dir: Path, processes: Processes) -> Answer:
        argv = resolve_command(self.command)
        payload = orjson.dumps(case_input, option=orjson.OPT_NON_STR_KEYS)
        done = processes.run(argv, payload, self.timeout, base_dir, self.env)
        failure = done.failure("target", self.timeout)
        if failure:
            return Answer(error=failure, duration_ms=done.duration_ms)
        return Answer(parse_stdout(done.stdout), duration_ms=done.duration_ms)


def parse_stdout(stdout: bytes) -> Any:
    """JSON when stdout is JSON, else the text with its trailing newline removed."""
    try:
        return decode_json(stdout)
    except ValueError:
        return stdout.decode("utf-8", "replace").rstrip("\r\n")
