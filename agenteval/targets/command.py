"""command: run the system under test once per case, case input as JSON on stdin.

The wall time of each answer (process start to exit) is its `usage.latency_ms`, as an http
target's request time is, so latency percentiles and `latency` limits cover command targets too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Literal

import orjson
from pydantic import BeforeValidator, Field

from agenteval.config import Command, StrictModel
from agenteval.process import (
    DEFAULT_MAX_OUTPUT_MB,
    MAX_ANSWER_DEPTH,
    JSONTooDeep,
    decode_json,
    max_output_bytes,
    resolve_command,
)
from agenteval.targets.base import Answer, TargetRun
from agenteval.usage import usage_record

REDACTED = "***"
MIN_REDACTED_CHARS = 4
"""Shorter env values (`1`, `on`) are flags, not secrets: masking them would garble messages."""


def _env_value(value: Any) -> Any:
    if not isinstance(value, str):  # the message never shows the value: it may be a secret
        # pydantic turns a ValueError (not a TypeError) into a validation error
        raise ValueError(f"must be a string (quote it in YAML), not {type(value).__name__}")  # noqa: TRY004
    return value


EnvValue = Annotated[str, BeforeValidator(_env_value)]


class CommandTarget(StrictModel):
    """Runs `command` per case (no shell, cwd = the suite's folder); stdout is the answer, parsed as JSON when it is JSON."""

    type: Literal["command"]
    command: Command = Field(min_length=1)
    timeout: float = Field(60.0, gt=0, description="Seconds before the process is stopped and the case errors.")
    env: dict[str, EnvValue] = Field(
        default_factory=dict,
        description="Extra environment variables for the command, on top of agenteval's own (which it inherits).",
    )
    max_output_mb: float = Field(
        DEFAULT_MAX_OUTPUT_MB, gt=0, description="Stdout larger than this (MiB) stops the command; the case errors."
    )

    def answer(self, case: Any, run: TargetRun) -> Answer:
        from agenteval.endpoints.settings import MissingEnvironment, substitute_env, substituted_values

        environ = run.processes.environ  # the run's: the process's own and the suite's `env_file:`
        try:  # `${NAME}` in the command and its env values is read from the environment
            argv = [substitute_env(word, environ) if "${" in word else word for word in resolve_command(self.command)]
            env = {name: substitute_env(value, environ) if "${" in value else value for name, value in self.env.items()}
        except MissingEnvironment as exc:
            return Answer(error=f"command target: {exc}")
        secrets = [*env.values(), *(value for word in self.command if isinstance(word, str) for value in substituted_values(word, environ))]
        payload = orjson.dumps(case.input, option=orjson.OPT_NON_STR_KEYS)
        if run.context is not None:  # AGENTEVAL_RUN_ID, AGENTEVAL_CASE_ID...: the suite's own `env` wins
            env = {**run.context.environment(), **env}
        done = run.processes.run(argv, payload, self.timeout, run.base_dir, env, max_output_bytes(self.max_output_mb))
        failure = done.failure("target", self.timeout)
        if failure:  # no answer, so no latency of one (a timeout would pose as the slowest answer)
            return Answer(error=redact(failure, secrets), duration_ms=done.duration_ms)
        usage = usage_record(done.duration_ms)
        try:
            return Answer(parse_stdout(done.stdout, run.answer_depth), duration_ms=done.duration_ms, usage=usage)
        except JSONTooDeep as exc:
            return Answer(error=f"target printed {exc}", duration_ms=done.duration_ms, usage=usage)


def parse_stdout(stdout: bytes, max_depth: int = MAX_ANSWER_DEPTH) -> Any:
    """JSON when stdout is JSON, else the text with its trailing newline removed. Raises JSONTooDeep."""
    try:
        return decode_json(stdout, max_depth)
    except JSONTooDeep:
        raise
    except ValueError:
        return stdout.decode("utf-8", "replace").rstrip("\r\n")


def redact(message: str, secrets: Iterable[str]) -> str:
    """The message with every `env` value masked: a program may print them in its stderr."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_REDACTED_CHARS:
            message = message.replace(secret, REDACTED)
    return message
