"""Talking to model endpoints: one HTTP client, pacing, retries and a response cache per run.

Heavy imports (httpx, jinja2) happen when the first request or template needs them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.endpoints.cache import CACHE_FILE, DEFAULT_DIR, CacheError, ResponseCache
from agenteval.endpoints.client import EndpointError, Endpoints, Reply
from agenteval.endpoints.settings import (
    Connection,
    EndpointRef,
    ModelEndpoint,
    Sampling,
    Transport,
    merged_settings,
)

__all__ = [
    "CacheError", "Connection", "EndpointError", "EndpointRef", "Endpoints", "ModelEndpoint", "Reply",
    "ResponseCache", "Sampling", "cache_path", "merged_settings", "open_endpoints",
]


def cache_folder(suite_dir: Path, cache_dir: Path | None) -> Path:
    """`--cache-dir DIR`, else `.agenteval/cache` next to the suite."""
    return cache_dir if cache_dir is not None else suite_dir / DEFAULT_DIR


def cache_path(suite_dir: Path, cache_dir: Path | None) -> Path:
    return cache_folder(suite_dir, cache_dir) / CACHE_FILE


def open_endpoints(
    suite_dir: Path, models: dict[str, ModelEndpoint] | None, prices: Any, cache_dir: Path | None = None,
    use_cache: bool = True, refresh: bool = False, environ: Any = None,
) -> Endpoints:
    """The run's endpoints: the suite's `models:` and `prices:`, with the response cache next to the
    suite (`suite_dir`) or in `cache_dir`. Takes the settings, not the suite, so endpoints stay below
    the suite loader; `environ` is the run's environment (None: this process's). Raises CacheError
    when an existing cache file is unusable."""
    cache = ResponseCache(cache_path(suite_dir, cache_dir)) if use_cache else None
    return Endpoints(cache, refresh, models, prices, environ)


def endpoint_workers(suite: Any) -> int:
    """Workers enough to keep every endpoint's `concurrency` busy (1 when the suite uses none)."""
    users = [config for config in (*_targets(suite), *suite.evaluators) if isinstance(config, Transport)]
    return min(max((_concurrency(config, suite.models) for config in users), default=1), 256)


def _targets(suite: Any) -> list[Any]:
    """The suite's targets: each of `targets:`, else the one `target:`."""
    targets = getattr(suite, "targets", None)
    return list(targets.values()) if targets else [suite.target]


def _concurrency(config: Transport, models: dict[str, ModelEndpoint]) -> int:
    name = getattr(config, "endpoint", None)
    if "concurrency" in config.model_fields_set or name not in models:
        return config.concurrency
    return models[name].concurrency
