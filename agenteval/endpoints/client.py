"""One HTTP client per run, shared by every target and model judge that talks to an endpoint.

`Endpoints.send` is the only place a request leaves agenteval: it reads the cache, waits for a
slot at the endpoint's gate, retries what is worth retrying, and turns every failure into an
`EndpointError` whose message names the status and a body excerpt and never a secret. Worker
threads block in it while they wait, which is what lets `--workers` overlap slow endpoints.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from agenteval.endpoints.cache import ResponseCache, request_key
from agenteval.endpoints.pacing import Gate, parse_retry_after, retry_delay
from agenteval.endpoints.settings import (
    Connection,
    MissingEnvironment,
    ModelEndpoint,
    Transport,
    substitute_env,
)
from agenteval.process import decode_json
from agenteval.usage import Price

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}
EXCERPT_CHARS = 300
_REDACTED = "***"


class EndpointError(Exception):
    """A request that could not get a usable reply; the message is safe to show and store."""


@dataclass(slots=True)
class Reply:
    status: int
    data: Any
    latency_ms: float
    cached: bool = False
    attempts: int = 0


def excerpt(body: bytes | str, limit: int = EXCERPT_CHARS) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def redact(message: str, secrets: list[str]) -> str:
    for secret in secrets:
        if len(secret) >= 4:
            message = message.replace(secret, _REDACTED)
    return message


class Endpoints:
    """The run's HTTP client, response cache and per-endpoint gates."""

    def __init__(
        self,
        cache: ResponseCache | None = None,
        refresh: bool = False,
        models: dict[str, ModelEndpoint] | None = None,
        prices: dict[str, Price] | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.cache = cache
        self.refresh = refresh
        self.models = models or {}
        self.prices = prices or {}
        self._environ = environ
        self._clients: dict[tuple[bool, int], httpx.Client] = {}  # by "is https" and thread
        self._tls: Any = None
        self._gates: dict[tuple[Any, ...], Gate] = {}
        self._shared: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()
        self._rng = random.Random()

    def url(self, settings: Connection, path: str = "") -> str:
        """`base_url` (environment references resolved) joined with `path`."""
        base = self.resolve(settings.base_url or "")
        return base.rstrip("/") + path if path else base

    def resolve(self, text: str) -> str:
        try:
            return substitute_env(text, self._environ)
        except MissingEnvironment as exc:
            raise EndpointError(str(exc)) from None

    def send(
        self,
        settings: Transport,
        method: str,
        url: str,
        body: Any = None,
        *,
        params: dict[str, str] | None = None,
        cache: bool = False,
        variant: int = 0,
        json_reply: bool = True,
    ) -> Reply:
        """One request with retries. Raises EndpointError (after the retries, for retryable failures)."""
        identity = {"method": method, "json": body, "params": params}
        if cache:
            hit = self.cached(url, identity, variant)
            if hit is not None:
                return Reply(hit["status"], hit["data"], hit["latency_ms"], cached=True)
        headers, secrets = self._headers(settings)
        try:
            reply = self._send(settings, method, url, body, params, headers, json_reply)
        except EndpointError as exc:
            raise EndpointError(redact(str(exc), secrets)) from None
        if cache:
            self.remember(url, identity, {"status": reply.status, "data": reply.data, "latency_ms": reply.latency_ms}, variant)
        return reply

    def cached(self, url: str, identity: Any, variant: int = 0) -> dict[str, Any] | None:
        """The cached record of a request, unless there is no cache or it is being refreshed."""
        if self.cache is None or self.refresh:
            return None
        return self.cache.get(request_key(url, identity, variant))

    def remember(self, url: str, identity: Any, record: dict[str, Any], variant: int = 0) -> None:
        if self.cache is not None:
            self.cache.put(request_key(url, identity, variant), record)

    def shared(self, key: tuple[Any, ...], build: Callable[[], T]) -> T:
        """One object per key for the whole run (e.g. the embedding batcher that cases share)."""
        with self._lock:
            if key not in self._shared:
                self._shared[key] = build()
            return self._shared[key]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self.cache is not None:
            self.cache.close()

    def _send(
        self, settings: Transport, method: str, url: str, body: Any, params: dict[str, str] | None,
        headers: dict[str, str], json_reply: bool,
    ) -> Reply:
        import httpx

        client = self._http(url)
        gate = self._gate(settings, url)
        attempts = settings.retries + 1
        problem = ""
        for attempt in range(attempts):
            retry_after = None
            with gate.slot():
                started = time.perf_counter()
                try:
                    response = client.request(method, url, json=body, params=params, headers=headers, timeout=settings.timeout)
                except httpx.TimeoutException:
                    response, problem = None, f"timed out after {settings.timeout:g}s"
                except httpx.TransportError as exc:
                    response, problem = None, f"{type(exc).__name__}: {exc}"
                latency_ms = (time.perf_counter() - started) * 1000
            if response is not None:
                status = response.status_code
                if 200 <= status < 300:
                    try:
                        data = decode_json(response.content)
                    except (ValueError, RecursionError):
                        if not json_reply:
                            return Reply(status, response.text, latency_ms, attempts=attempt + 1)
                        problem = f"HTTP {status} with a body that is not JSON: {excerpt(response.content)!r}"
                    else:
                        return Reply(status, data, latency_ms, attempts=attempt + 1)
                else:
                    problem = f"HTTP {status}: {excerpt(response.content)!r}"
                    if status not in RETRY_STATUSES:
                        raise EndpointError(f"{method} {url}: {problem}")
                    if status in (429, 503):
                        retry_after = parse_retry_after(response.headers.get("retry-after"))
                        if retry_after is not None:
                            gate.hold(retry_after)
            if attempt + 1 < attempts:
                time.sleep(retry_delay(attempt, settings.backoff, retry_after, self._rng))
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        raise EndpointError(f"{method} {url}{tries}: {problem}")

    def _headers(self, settings: Transport) -> tuple[dict[str, str], list[str]]:
        headers, secrets = {}, []
        for name, template in settings.headers.items():
            value = self.resolve(template)
            headers[name] = value
            if value != template:
                secrets.append(value)
        if settings.api_key_env:
            environ = os.environ if self._environ is None else self._environ
            key = environ.get(settings.api_key_env)
            if not key:
                raise EndpointError(f"environment variable {settings.api_key_env} is not set (api_key_env)")
            headers["Authorization"] = f"Bearer {key}"
            secrets.append(key)
        return headers, secrets

    def _http(self, url: str) -> httpx.Client:
        """This thread's client for `url`'s scheme. One per worker thread: a shared client's connection
        pool is one lock that 32 threads queue on. Plain http skips loading CA certificates, and the
        https clients share one TLS context (loading it takes a third of a second)."""
        secure = url.startswith("https:")
        key = (secure, threading.get_ident())
        client = self._clients.get(key)
        if client is not None:
            return client
        import httpx

        with self._lock:
            if secure and self._tls is None:
                self._tls = httpx.create_ssl_context()
            verify = self._tls if secure else False
        # no redirects without TLS checks: a redirect to https must not land on the unverified client
        client = httpx.Client(limits=httpx.Limits(max_connections=64, max_keepalive_connections=8), follow_redirects=secure, verify=verify)
        with self._lock:
            self._clients[key] = client
        return client

    def _gate(self, settings: Transport, url: str) -> Gate:
        key = (urlsplit(url).netloc, settings.concurrency, settings.rate_limit)
        with self._lock:
            gate = self._gates.get(key)
            if gate is None:
                gate = self._gates[key] = Gate(settings.concurrency, settings.rate_limit)
            return gate
