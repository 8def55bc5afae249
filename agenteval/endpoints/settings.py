"""How to reach an endpoint: the YAML keys shared by the `openai`/`http` targets and the model judges.

Keys are never literal secrets: `api_key_env` names an environment variable, and header values
may say `${NAME}`; both are read from the environment when a request is sent.

An OpenAI-compatible model that names no server goes to OpenAI, as OpenAI's SDK and other eval
tools do: `base_url` defaults to https://api.openai.com/v1, and a request there reads its key from
OPENAI_API_KEY unless `api_key_env` names another variable (`openai_defaults`). Any other server
without `api_key_env` is asked without a key: a local one takes none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from agenteval.config import StrictModel

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_SECRET_HEADERS = {"authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key"}

OPENAI_BASE_URL = "https://api.openai.com/v1"  # where an OpenAI-compatible model goes when neither `base_url` nor `endpoint:` says
OPENAI_HOST = "api.openai.com"  # the one server known to need a key: any other may be a local one that takes none
OPENAI_KEY_ENV = "OPENAI_API_KEY"  # the variable a request to OPENAI_HOST reads its key from unless `api_key_env` names another


class MissingEnvironment(Exception):
    """A request needs an environment variable that is not set."""


def substitute_env(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`${NAME}` (or `${NAME:-default}`) replaced from the environment; MissingEnvironment when unset.
    A value's line ends at either end are dropped (a `.env` file saved with CRLF line ends)."""
    if "${" not in text:
        return text
    env = os.environ if environ is None else environ

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name].strip("\r\n")
        if default is not None:
            return default
        raise MissingEnvironment(f"environment variable {name} is not set (used as ${{{name}}})")

    return _ENV_REFERENCE.sub(value, text)


def env_references(text: str) -> list[str]:
    return [match.group(1) for match in _ENV_REFERENCE.finditer(text)]


def substituted_values(text: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The values `${NAME}` references in `text` take from the environment (not their defaults):
    what error messages must never show."""
    env = os.environ if environ is None else environ
    return [env[name] for name in env_references(text) if name in env]


@lru_cache(maxsize=512)
def url_problem(url: str) -> str | None:
    """Why `url` cannot be requested (no http:// or https://, no host, malformed), or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as exc:
        return f"malformed URL ({exc})"
    if parts.scheme.lower() not in ("http", "https"):
        return "the URL must begin with http:// or https://"
    if not parts.hostname:
        return "the URL has no host"
    if any(ord(char) < 33 or char == "\x7f" for char in url):
        return "the URL holds a space or a control character"
    return None


def checked_url(url: str | None, key: str) -> str | None:
    """For validators: a literal URL that could never be requested is refused at load; one with
    `${NAME}` is checked when it is sent, after substitution."""
    if url is not None and not env_references(url):
        problem = url_problem(url)
        if problem:
            raise ValueError(f"{url!r}: {problem}")
    return url


def _refuse_literal_key(data: Any) -> Any:
    if isinstance(data, dict) and "api_key" in data:
        raise ValueError(
            "a literal `api_key` is not allowed in a suite (it would be committed and copied into results): "
            "put the key in an environment variable and name it with `api_key_env`"
        )
    return data


class Transport(StrictModel):
    """How requests are sent: credentials, patience, and how many at once."""

    api_key_env: str | None = Field(
        None, description="The NAME of the environment variable holding the API key (sent as a Bearer token); never the key itself."
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="Extra request headers; values may use `${NAME}` to read secrets from the environment."
    )
    timeout: float = Field(
        60.0, gt=0, le=3600, allow_inf_nan=False,
        description="Seconds one attempt may take, all of it: connecting, waiting and reading the whole reply.",
    )
    retries: int = Field(3, ge=0, le=20, description="Retries after a failed attempt (connection error, timeout, 429, 5xx).")
    backoff: float = Field(
        0.5, ge=0, le=60, allow_inf_nan=False,
        description="Seconds before the first retry; doubled each retry, with jitter. A Retry-After header (at most 60 s) wins.",
    )
    concurrency: int = Field(8, ge=1, le=512, description="Requests in flight to this endpoint at once (separate from --workers).")
    rate_limit: float | None = Field(
        None, ge=0.1, le=1_000_000, allow_inf_nan=False, description="Requests per minute to this endpoint (0.1 to 1,000,000)."
    )
    max_response_mb: float = Field(
        16.0, gt=0, le=1024, allow_inf_nan=False,
        description="Largest reply body read, in MiB (after decompression); a larger one is that case's error.",
    )
    cache: bool | None = Field(
        None, description="Keep responses in the suite's response cache. Default: on for judges, and for targets at temperature 0."
    )

    @model_validator(mode="before")
    @classmethod
    def _no_literal_key(cls, data: Any) -> Any:
        return _refuse_literal_key(data)

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                f"api_key_env takes the NAME of an environment variable (e.g. OPENAI_API_KEY), not a key: got {_masked(value)}"
            )
        return value

    @field_validator("headers")
    @classmethod
    def _no_literal_secret_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if name.lower() in _SECRET_HEADERS and not env_references(value):
                raise ValueError(
                    f"header {name!r} holds a literal secret: write it as `${{NAME}}` and set NAME in the environment"
                )
        return headers


class Connection(Transport):
    """An OpenAI-compatible API: where it is and which model to ask."""

    api_key_env: str | None = Field(
        None, description=(
            "The NAME of the environment variable holding the API key (sent as a Bearer token); never the key itself. "
            f"Default: {OPENAI_KEY_ENV} for {OPENAI_HOST}, none for any other server (a local one takes no key)."
        ),
    )
    base_url: str | None = Field(
        None, description=(
            f"The API root, e.g. http://localhost:11434/v1 (`${{NAME}}` / `${{NAME:-default}}` are read from the environment). "
            f"Default: {OPENAI_BASE_URL}."
        ),
    )
    model: str | None = Field(None, description="The model name sent with each request (`${NAME}` is read from the environment).")

    @field_validator("base_url")
    @classmethod
    def _a_url(cls, value: str | None) -> str | None:
        return checked_url(value, "base_url")


def _masked(value: str) -> str:
    return repr(value[:3] + "..." if len(value) > 6 else "...")


class Sampling(StrictModel):
    """Sampling options sent with chat requests (unset ones are left to the server)."""

    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature; 0 makes a target cacheable.")
    top_p: float | None = Field(None, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1, description="Upper bound on tokens in the reply.")
    seed: int | None = Field(None, description="Seed, for servers that support reproducible sampling.")
    stop: list[str] | None = Field(None, description="Stop sequences.")
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Anything else merged into the request body as is (e.g. tool_choice, top_k)."
    )


class ModelEndpoint(Connection, Sampling):
    """A named endpoint under the suite's `models:`, referenced by `endpoint: NAME`."""


_ENDPOINT_KEYS = frozenset(ModelEndpoint.model_fields)  # (read per request: `model_fields` is a descriptor call each time)


class EndpointRef(StrictModel):
    """`endpoint: NAME` takes the settings of `models.NAME`; keys given here override them."""

    endpoint: str | None = Field(None, description="A model defined once under the suite's `models:`; keys given here override it.")

    @model_validator(mode="after")
    def _somewhere_to_send(self) -> EndpointRef:
        """A model to ask (`base_url` has a default: OpenAI's, or the target type's own)."""
        if self.endpoint is None and "model" in type(self).model_fields and not getattr(self, "model"):
            raise ValueError("no `model`: give it, or `endpoint: NAME` of a model under `models:`")
        return self


def endpoint_keys(entry: StrictModel) -> dict[str, Any]:
    """The endpoint keys a `models:` entry sets (not its `type`, nor a model target's own keys)."""
    return {key: value for key, value in entry.model_dump(exclude_unset=True).items() if key in _ENDPOINT_KEYS}


def merged_settings(config: StrictModel, models: dict[str, ModelEndpoint]) -> ModelEndpoint:
    """The named endpoint (if any) with the keys `config` sets explicitly laid over it, and OpenAI's
    base_url and key variable under both where they say none (`openai_defaults`). Raises ValueError."""
    return openai_defaults(given_settings(config, models))


def given_settings(config: StrictModel, models: dict[str, ModelEndpoint]) -> ModelEndpoint:
    """The named endpoint (if any) with the keys `config` sets explicitly laid over it: what the
    suite says, without defaults (`base_url` may be None). Raises ValueError."""
    name = getattr(config, "endpoint", None)
    base: dict[str, Any] = {}
    if name is not None:
        if name not in models:
            known = ", ".join(sorted(models)) or "none defined"
            raise ValueError(f"endpoint {name!r} is not defined under `models:` (known: {known})")
        base = endpoint_keys(models[name])
    own = {key: getattr(config, key) for key in config.model_fields_set if key in _ENDPOINT_KEYS}
    settings = ModelEndpoint.model_validate({**base, **own})
    if settings.model is not None and "${" in settings.model:  # `model: ${MODEL}`: read when the request is made
        try:
            settings.model = substitute_env(settings.model)
        except MissingEnvironment as exc:
            raise ValueError(f"model: {exc}") from None
    return settings


def openai_defaults(settings: ModelEndpoint) -> ModelEndpoint:
    """`settings` with base_url https://api.openai.com/v1 when it has none, and api_key_env
    OPENAI_API_KEY when the request goes to api.openai.com and names no variable (default_key_env)."""
    base_url = settings.base_url or OPENAI_BASE_URL
    key_env = settings.api_key_env or default_key_env(base_url, settings.headers)
    if base_url == settings.base_url and key_env == settings.api_key_env:
        return settings
    return settings.model_copy(update={"base_url": base_url, "api_key_env": key_env})


def default_key_env(base_url: str, headers: Mapping[str, str]) -> str | None:
    """The variable a request to `base_url` without `api_key_env` reads its key from: OPENAI_API_KEY
    for api.openai.com, unless an `Authorization` header of its own is given; None for any other
    server (asked without a key: a local one takes none)."""
    if any(name.lower() == "authorization" for name in headers):
        return None
    return OPENAI_KEY_ENV if url_host(base_url) == OPENAI_HOST else None


def url_host(url: str) -> str | None:
    """The host `url` names (lower case; `${NAME}` read from this process's environment), or None
    when it names none or cannot be read."""
    try:
        return urlsplit(substitute_env(url)).hostname
    except (MissingEnvironment, ValueError):
        return None


def unknown_endpoint_references(suite: Any) -> None:
    """ValueError naming the first `endpoint: NAME` (target or suite evaluator) that `models:` lacks."""
    import difflib

    targets = [(f"targets.{name}", target) for name, target in (getattr(suite, "targets", None) or {}).items()] or [("target", suite.target)]
    users = [*targets, *((f"evaluators[{i}]", e) for i, e in enumerate(suite.evaluators))]
    for where, config in users:
        name = getattr(config, "endpoint", None)
        if name is not None and name not in suite.models:
            close = difflib.get_close_matches(name, list(suite.models), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(sorted(suite.models)) or "none defined"
            raise ValueError(f"{where}.endpoint: {name!r} is not defined under `models:` (known: {known}){hint}")
