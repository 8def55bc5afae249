"""What a `models:` entry may be, and how judges and simulated users ask one that is not OpenAI-compatible.

An entry without `type:` (or `type: openai`) is an OpenAI-compatible chat-completions endpoint,
as it always was, and model judges keep sending it chat completions themselves. An entry of any
other type is that model target's own configuration (`type: anthropic` is an `anthropic` target
without messages), and a judge, a claim-level judge or a simulated user naming it asks through
the target's `step()` (agenteval.agents.protocol), with no tools.

How a new model target joins `models:`: nothing here. Every target type in the registry
(`TYPES` in agenteval/targets/__init__.py) whose class has `step()` is a model type, read from that one
list; one with `embed()` also serves `semantic_similarity`; one with
`credential_problem(environ, models) -> str | None` (see `credential_problem` below) has its
missing credential refused before any case. What its `step()` should honour for judges
(`response_format`) is in agenteval.agents.protocol.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, ValidationInfo, model_validator
from pydantic_core import core_schema

from agenteval.config import ByType
from agenteval.endpoints.settings import ModelEndpoint

if TYPE_CHECKING:
    from agenteval.agents.protocol import EmbedReply, StepReply
    from agenteval.endpoints.client import Endpoints, Reply

CHAT = "openai"  # the type of an entry that says none: an OpenAI-compatible chat-completions endpoint

# A target's keys that say what to ask, not how to reach the model (with the tool loop's): not part of a `models:` entry.
_ANSWER_KEYS = frozenset({"endpoint", "messages", "tool_choice", "response_format", "parse_json"})


class ChatModel(ModelEndpoint):
    """A named endpoint under the suite's `models:`, referenced by `endpoint: NAME`."""

    type: Literal["openai"] | None = Field(
        None, description="The API the model speaks: openai (the default: any OpenAI-compatible chat-completions endpoint) "
        "or another model target type (anthropic, ...), whose keys it then takes.",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_endpoint(cls, data: Any) -> Any:
        """A ModelEndpoint built in Python (what `models:` held before it had types) is taken as its keys."""
        if isinstance(data, ModelEndpoint) and not isinstance(data, cls):
            return data.model_dump(exclude_unset=True)
        return data


@lru_cache(maxsize=1)
def model_types() -> dict[str, type]:
    """Every target type that can be asked a conversation (its class has `step()`), by type name;
    `openai` first. Read from the target registry, so a new model target is here when it is there
    (this imports every target type: for listings and messages; one type is asked by `is_model_type`)."""
    from agenteval.targets import TYPES

    return {CHAT: ChatModel, **{name: target_type(name) for name in TYPES if name != CHAT and is_model_type(name)}}


def is_model_type(kind: str) -> bool:
    """Whether `type: KIND` can be a `models:` entry, importing only that type's module."""
    from agenteval.targets import TYPES

    return kind == CHAT or (kind in TYPES and callable(getattr(target_type(kind), "step", None)))


def target_type(kind: str) -> type:
    from agenteval.targets import target_type as of

    return of(kind)


def target_types() -> list[str]:
    from agenteval.targets import TYPES

    return list(TYPES)


def embedding_types() -> list[str]:
    """The model types `semantic_similarity` can use: openai (its `/embeddings`) and each whose target has `embed()`."""
    return [name for name in model_types() if is_embedding_type(name)]


def is_embedding_type(kind: str) -> bool:
    """Whether a model of `type: KIND` serves `semantic_similarity`, importing only that type's module."""
    return kind == CHAT or (is_model_type(kind) and callable(getattr(target_type(kind), "embed", None)))


def entry_type(entry: Any) -> str:
    """The type of a `models:` entry (a loaded one or its raw mapping); `openai` when it says none."""
    kind = entry.get("type") if isinstance(entry, Mapping) else getattr(entry, "type", None)
    return kind if isinstance(kind, str) else CHAT


def is_chat(entry: Any) -> bool:
    return entry_type(entry) == CHAT


def type_problem(kind: str) -> str | None:
    """Why `type: KIND` cannot be a `models:` entry (a did-you-mean comes from the suite's problem rendering)."""
    if is_model_type(kind):
        return None
    if kind in target_types():
        return f"a {kind} target cannot be asked a conversation (it has no step()): a model type is one of {', '.join(model_types())}"
    return None


def _no_answer_keys(entry: Any) -> Any:
    from agenteval.agents.loop import ToolLoopFields

    given = sorted((_ANSWER_KEYS | set(ToolLoopFields.model_fields)) & entry.model_fields_set)
    if given:
        raise ValueError(
            f"`{given[0]}` says what a target asks, not how to reach a model: give it on the target or judge, not under `models:`"
        )
    return entry


def _tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, Mapping) else getattr(value, "type", None)
    return CHAT if kind is None else str(kind)


class _ByType(ByType):
    """One `models:` entry: chat completions, or the model target its `type` names (imported on
    first use), told apart by `type` (none: openai)."""

    discriminator = staticmethod(_tag)

    def member(self, data: Any) -> type | None:
        kind = _tag(data)
        return (ChatModel if kind == CHAT else target_type(kind)) if is_model_type(kind) else None

    def names(self) -> list[str]:
        return list(model_types())

    def choices(self) -> dict[str, core_schema.CoreSchema]:
        return {name: cls.__pydantic_core_schema__ for name, cls in model_types().items()}  # type: ignore[attr-defined]

    def validate(self, value: Any, info: ValidationInfo) -> Any:
        cls: Any = self.member(value)  # (a value that is no mapping is ChatModel's to refuse, or take: a ModelEndpoint)
        if cls is None:
            raise self.unknown(_tag(value), "_tag()")
        entry = cls.__pydantic_validator__.validate_python(value, context=info.context)
        return entry if cls is ChatModel else _no_answer_keys(entry)


ModelEntry = Annotated[Any, _ByType()]
"""One `models:` entry, by its `type`."""


# --- asking a model target ---------------------------------------------------------------------

def use_problem(entry: Any, name: str, needs: str) -> str | None:
    """Why `endpoint: NAME` (its entry) cannot serve a user that `needs` one of: `step` (a judge or
    simulated user), `embed` (semantic_similarity) or a target type (a target reaching it by name)."""
    kind = entry_type(entry)
    if needs == "step" or not is_model_type(kind):
        return None
    if needs == "embed":
        if is_embedding_type(kind):
            return None
        return f"{name!r} is a model of type {kind}, which has no embeddings: semantic_similarity needs a model of type {' or '.join(embedding_types())}"
    # an entry as written (a mapping), or validated (a model); anything else is refused by validation, not here
    typed = "type" in entry if isinstance(entry, Mapping) else "type" in getattr(entry, "model_fields_set", ())
    if not typed or kind == needs:
        return None
    return f"{name!r} is a model of type {kind}: a target of type {needs} needs a model under `models:` of type {needs} (or one without `type:`)"


def credential_problem(entry: Any, environ: Mapping[str, str], models: Mapping[str, Any]) -> str | None:
    """What to set for a `models:` entry or a target to reach its model (its own
    `credential_problem(environ, models)`), or None. Read at load of every `models:` entry
    (agenteval.suite.loader) and as a run starts of each chosen target (agenteval.api), there
    unless `replies_cached` and a cache file exists: a replay needs no credential."""
    check = getattr(entry, "credential_problem", None)  # (an OpenAI-compatible `models:` entry has none: a local server takes no key)
    return check(environ, models) if callable(check) else None


def replies_cached(target: Any, models: Mapping[str, Any]) -> bool:
    """Whether a target's replies go to the response cache: its `cache`, else temperature 0, each
    from `endpoint: NAME`'s entry when the target does not set it."""
    named = models.get(getattr(target, "endpoint", None) or "")

    def key(name: str) -> Any:
        own = getattr(target, name, None)
        return own if named is None or name in target.model_fields_set else getattr(named, name, own)

    cache = key("cache")
    return cache if cache is not None else key("temperature") == 0


def judge_target(entry: Any, config: Any) -> Any:
    """The target that asks `entry`'s model for `config` (a judge, a simulated user or
    semantic_similarity): the entry with the endpoint keys `config` sets laid over it, cached
    unless `cache: false` (as chat-completions judges and users are). Sampling keys are sent only
    when given (chat-completions judges default to temperature 0; not every vendor's API has one)."""
    own = {
        key: getattr(config, key) for key in getattr(config, "model_fields_set", ())
        if key in ModelEndpoint.model_fields and key in type(entry).model_fields and key != "type"
    }
    merged = entry.model_copy(update=own)
    if getattr(merged, "cache", True) is None:
        merged = merged.model_copy(update={"cache": True})
    return merged


class _HeldEndpoints:
    """The run's endpoints as a judge's step sees them: a fresh reply is not stored until the judge
    has read it (`keep_all`), so only a usable reply is cached, whatever the target's API."""

    def __init__(self, endpoints: Endpoints, fresh: bool) -> None:
        self._endpoints = endpoints
        self._fresh = fresh
        self.replies: list[Reply] = []

    def send(self, *args: Any, keep: bool = True, fresh: bool = False, **kwargs: Any) -> Reply:
        reply = self._endpoints.send(*args, keep=False, fresh=fresh or self._fresh, **kwargs)
        self.replies.append(reply)
        return reply

    def keep_all(self) -> None:
        for reply in self.replies:
            self._endpoints.keep(reply)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._endpoints, name)


@lru_cache(maxsize=64)
def _takes_response_format(cls: type) -> bool:
    try:
        return "response_format" in inspect.signature(cls.step).parameters
    except (TypeError, ValueError):
        return False


def ask_model(
    target: Any, endpoints: Endpoints, messages: list[dict[str, Any]], *, usable: Callable[[str | None], bool] | None = None,
    response_format: dict[str, Any] | None = None, variant: int = 0, base_dir: Path | None = None,
) -> StepReply:
    """One `step()` of `target` without tools. With `usable`, a fresh reply is cached only when
    `usable(content)` says so, and a cached one it refuses is asked for again (as
    agenteval.endpoints.chat.complete does for chat completions). `response_format` is passed to a
    step() that takes it; another target's judge relies on the prompt that states the format."""
    from agenteval.targets.base import TargetRun

    extra = {"response_format": response_format} if response_format is not None and _takes_response_format(type(target)) else {}
    reply: StepReply | None = None
    for fresh in (False, True):
        held = _HeldEndpoints(endpoints, fresh)
        run = TargetRun(base_dir or Path.cwd(), None, held, variant)  # type: ignore[arg-type]
        reply = target.step(messages, None, run, **extra)
        if reply.error is not None or usable is None or usable(reply.content):
            if reply.error is None:
                held.keep_all()
            return reply
        if not any(one.cached for one in held.replies):
            return reply
    assert reply is not None
    return reply


def embed_texts(target: Any, endpoints: Endpoints, texts: list[str], base_dir: Path | None = None) -> EmbedReply:
    """The embeddings of `texts` from a model target with `embed()` (it caches as its API allows)."""
    from agenteval.targets.base import TargetRun

    return target.embed(texts, TargetRun(base_dir or Path.cwd(), None, endpoints))  # type: ignore[arg-type]
