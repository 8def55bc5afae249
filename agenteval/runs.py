"""What a local run (agenteval.api) and a Ray worker (agenteval.ray_executor) both build: the
runner, the endpoints, and the settings and errors they share.

It lives below both, so neither imports the other for it: the API starts Ray runs, and a worker
builds the very runner a local run builds from here. Heavy modules (the runner, endpoints) are
imported when first used.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agenteval.suite.loader import LoadedSuite

__all__ = ["EndpointSettings", "RunError", "make_runner", "open_endpoints"]


class RunError(Exception):
    """An option or input of the run is invalid (a bad shard, a missing predictions file, a results
    file another run holds...): nothing ran."""


RunError.__module__ = "agenteval.api"  # where users import it from, and how tracebacks name it


@dataclass(frozen=True, slots=True)
class EndpointSettings:
    """How targets and model judges reach their endpoints: the response cache, and repeats."""

    cache: bool = True
    cache_dir: Path | None = None  # default: .agenteval/cache next to the suite
    refresh_cache: bool = False
    repeat: int = 1


def make_runner(
    loaded: LoadedSuite, run_id: str, processes: Any, answers: Any, only: frozenset[str] | None, endpoints: Any,
    settings: EndpointSettings,
) -> Any:
    """The runner that scores cases, for a local run and for each Ray worker alike."""
    from agenteval.runner import Runner

    return Runner(loaded, run_id, processes, answers, only, endpoints=endpoints, repeat=settings.repeat)


def open_endpoints(loaded: LoadedSuite, settings: EndpointSettings, environ: Any = None) -> Any:
    """The run's HTTP client and response cache; keys and `${NAME}` are read from `environ` (the
    run's, see agenteval.process.Processes), else this process's environment. Raises CacheError."""
    from agenteval.endpoints import open_endpoints as open_

    suite: Any = loaded.suite
    return open_(
        loaded.base_dir, getattr(suite, "models", None), getattr(suite, "prices", None),
        settings.cache_dir, settings.cache, settings.refresh_cache, environ,
    )
