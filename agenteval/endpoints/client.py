"""One HTTP client per run, shared by every target and model judge that talks to an endpoint.

`Endpoints.send` is the only place a request leaves agenteval: it reads the cache, waits for a
slot at the endpoint's gate, retries what is worth retrying, and turns every failure into an
`EndpointError` whose message names the status and a body excerpt and never a secret. It is also
the one place replies enter: a secret a server echoes is `***` before anything reads or stores it. Worker
threads block in it while they wait, which is what lets `--workers` overlap slow endpoints.

Everything a server controls is bounded: one attempt takes at most `timeout` seconds in all (a
watchdog closes the connection of a reply still arriving then), a body larger than
`max_response_mb` is refused, a Retry-After is capped (agenteval.endpoints.pacing), and any
exception of the HTTP stack (a corrupt gzip body, a redirect loop, a malformed URL) is one
request's error, never the run's.

`send(..., model_call=ModelCall(provider, model, operation))` marks a request as a model call: while
`--otel` traces, it gets a `gen_ai` client span in the OpenTelemetry GenAI conventions
(agenteval.endpoints.spans), cached replays included (`agenteval.cache_hit`). A module for another
vendor's API gets its spans by passing one, with its `gen_ai.provider.name` (`aws.bedrock`,
`gcp.gemini`, `azure.ai.openai`...); nothing else is needed where its replies are read by
`spans.read_response`, else it passes `read=`.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import random
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import parse_qsl, quote, urlsplit

import orjson

from agenteval.endpoints.cache import ResponseCache, request_key
from agenteval.endpoints.pacing import Gate, parse_retry_after, retry_delay
from agenteval.endpoints.spans import ModelCall, model_span
from agenteval.endpoints.settings import (
    Connection,
    MissingEnvironment,
    ModelEndpoint,
    Transport,
    merged_settings,
    substitute_env,
    substituted_values,
    url_problem,
)
from agenteval.process import decode_json
from agenteval.usage import Price

if TYPE_CHECKING:
    import httpx

    from agenteval.endpoints import plain_http

T = TypeVar("T")
RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504, 529}  # 529: Anthropic's "overloaded"
EXCERPT_CHARS = 300
MIB = 1 << 20
_REDACTED = "***"
_NO_HEADERS: Mapping[str, str] = {}  # a 2xx reply's headers: nothing reads them


class EndpointError(Exception):
    """A request that could not get a usable reply; the message is safe to show and store."""


class NotCached(BaseException):
    """Raised by a request made under `cache_only()` whose reply is not in the response cache, before
    anything is sent. A BaseException, so that no target or evaluator takes it for its own failure:
    it ends the attempt to answer the case from the cache alone (agenteval.runner), which then runs
    the case as usual."""


_this_thread = threading.local()


class cache_only:  # noqa: N801 - used as a function: `with cache_only():`
    """In this thread, until the block ends: every request is answered from the response cache, or
    raises NotCached instead of being sent."""

    def __enter__(self) -> None:
        _this_thread.cache_only = True

    def __exit__(self, *exc: object) -> None:
        _this_thread.cache_only = False


class _Retryable(Exception):
    """An attempt that failed in a way another attempt may not (a timeout, a dropped connection)."""


class RequestAuth(Protocol):
    """Credentials an API computes per attempt over the exact bytes sent (AWS SigV4, a refreshed
    Entra ID token), for the vendor modules' requests; read only when a request is sent, never for
    a cached reply."""

    def headers(self, method: str, url: str, content: bytes) -> dict[str, str]:
        """The headers to add to this attempt; raises EndpointError when there are no credentials."""
        ...

    def secrets(self) -> list[str]:
        """The credential values read so far, to redact from every message and reply."""
        ...


_ADDRESS_FIELDS = ("base_url", "url")  # a transport's fields that may read secrets (`${NAME}`) into its address

# Whether an error reply may succeed when sent again: (status, body, response headers) -> bool.
RetryRule = Callable[[int, bytes, Mapping[str, str]], bool]


@dataclass(slots=True)
class Reply:
    status: int
    data: Any
    latency_ms: float
    cached: bool = False
    attempts: int = 0
    key: str | None = None  # the cache key of a fresh reply that may be kept (Endpoints.keep)


def excerpt(body: bytes | str, limit: int = EXCERPT_CHARS) -> str:
    text = _text(body)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _text(body: bytes | str) -> str:
    return body.decode("utf-8", "replace") if isinstance(body, bytes) else body


def _forms(secret: str) -> set[str]:
    """A secret as it may appear in a message: as is, without line ends, and escaped the ways
    Python reprs, JSON and URLs escape it (an h11 error shows `b'Bearer sk-...\\r'`)."""
    forms = {secret, secret.strip()}
    for form in list(forms):
        forms.add(form.encode("unicode_escape").decode("ascii"))
        forms.add(repr(form.encode("utf-8"))[2:-1])
        forms.add(json.dumps(form)[1:-1])
        forms.add(quote(form, safe=""))
        forms.add(quote(form))
    return {form for form in forms if len(form) >= 4}


_CREDENTIAL_NAME = re.compile(r"(?i)key|token|secret|passw|auth|sig|credential|session")


def _url_secrets(value: str) -> list[str]:
    """What a `${NAME}` read into a URL must not show: a whole URL read from a variable is where
    requests go, not a secret, so only its password and the values of query parameters named like
    credentials (`?api_key=`, `&token=`) are; any other part read into a URL stays hidden whole."""
    try:
        parts = urlsplit(value)
    except ValueError:
        return [value]
    if not (parts.scheme and parts.netloc):
        return [value]
    hidden = [parts.password] if parts.password else []
    hidden += [item for name, item in parse_qsl(parts.query, keep_blank_values=False) if _CREDENTIAL_NAME.search(name)]
    if parts.fragment:
        hidden.append(parts.fragment)
    return hidden


def redact(message: str, secrets: list[str]) -> str:
    for form in _reply_forms(tuple(secrets))[0] if secrets else ():
        message = message.replace(form, _REDACTED)
    return message


@lru_cache(maxsize=64)
def _reply_forms(secrets: tuple[str, ...]) -> tuple[list[str], tuple[bytes, ...]]:
    """Every form of the secrets, longest first, and each as orjson writes it inside a JSON string."""
    forms = sorted({form for secret in secrets if len(secret.strip()) >= 4 for form in _forms(secret)}, key=len, reverse=True)
    return forms, tuple({orjson.dumps(form)[1:-1] for form in forms})


def redact_reply(data: Any, secrets: list[str]) -> Any:
    """A decoded reply with every form of each secret in its strings (values and keys) as `***`:
    a server that echoes the key it was sent passes it to no answer, result, report or cache file.
    Walks without recursion (a reply may be nested as deep as it is allowed to) and changes the
    freshly decoded containers in place. The usual reply holds no secret: one dump of it, where a
    string holding a form holds that form as written (JSON escapes character by character), says
    so without the walk."""
    if not secrets:
        return data
    forms, written = _reply_forms(tuple(secrets))
    if not forms:
        return data
    try:
        dumped = orjson.dumps(data)
    except (orjson.JSONEncodeError, TypeError):  # (an integer past 64 bits, a key that is not text: the walk decides)
        dumped = None
    if dumped is not None and not any(form in dumped for form in written):
        return data

    def clean(text: str) -> str:
        if not any(form in text for form in forms):
            return text
        for form in forms:
            text = text.replace(form, _REDACTED)
        return text

    if isinstance(data, str):
        return clean(data)
    stack = [data]
    while stack:
        container = stack.pop()
        if isinstance(container, list):
            for index, item in enumerate(container):
                if isinstance(item, str):
                    container[index] = clean(item)
                elif isinstance(item, (list, dict)):
                    stack.append(item)
        elif isinstance(container, dict):
            if any(isinstance(key, str) and clean(key) != key for key in container):
                items = [(clean(key) if isinstance(key, str) else key, value) for key, value in container.items()]
                container.clear()
                container.update(items)
            for key, value in container.items():
                if isinstance(value, str):
                    container[key] = clean(value)
                elif isinstance(value, (list, dict)):
                    stack.append(value)
    return data


def _header_problem(value: str) -> bool:
    """True when `value` cannot be sent as an HTTP header value (not ASCII, a line break, a control character)."""
    return not value.isascii() or any(ord(char) < 32 and char != "\t" or char == "\x7f" for char in value)


class _Watchdog:
    """Shuts the socket of a reply still arriving at its attempt's deadline: `timeout` bounds the
    whole attempt, not each read (a server that drips one byte a second would otherwise hold a case
    for as long as it likes). One thread for the run; watching a reply costs a heap push. A finished
    attempt's entry stays in the heap until it is swept: whenever the heap has doubled since the last
    sweep (and holds at least COMPACT_AT), so it holds about what is in flight, not every request of
    the last `timeout` seconds."""

    COMPACT_AT = 4096

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Watch]] = []
        self._ready = threading.Condition()
        self._count = itertools.count()
        self._thread: threading.Thread | None = None
        self._sweep_at = self.COMPACT_AT

    def watch(self, deadline: float, sock: socket.socket | None) -> _Watch:
        entry = _Watch(sock)
        with self._ready:
            if len(self._heap) >= self._sweep_at:
                self._heap = [item for item in self._heap if not item[2].done]
                heapq.heapify(self._heap)
                self._sweep_at = max(self.COMPACT_AT, 2 * len(self._heap))
            heapq.heappush(self._heap, (deadline, next(self._count), entry))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agenteval-http-deadlines", daemon=True)
                self._thread.start()
            elif self._heap[0][2] is entry:
                self._ready.notify()
        return entry

    def _run(self) -> None:
        with self._ready:
            while True:
                while self._heap and self._heap[0][2].done:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._ready.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._ready.wait(wait)
                    continue
                _, _, entry = heapq.heappop(self._heap)
                entry.expire()


class _Watch:
    __slots__ = ("done", "fired", "sock")

    def __init__(self, sock: socket.socket | None) -> None:
        self.sock = sock
        self.done = False
        self.fired = False

    def expire(self) -> None:
        sock = self.sock
        if self.done:
            return
        self.fired = True
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the read blocked on it in the worker thread
        except (OSError, AttributeError, ValueError):
            pass

    def cancel(self) -> None:
        self.done = True
        self.sock = None  # the heap keeps the entry until its deadline; not the socket


def _socket_of(response: Any) -> socket.socket | None:
    """The socket an httpx reply arrives on (what the watchdog shuts at the deadline)."""
    try:
        stream = response.extensions.get("network_stream")
        return stream.get_extra_info("socket") if stream is not None else None
    except (AttributeError, ValueError):
        return None


class Endpoints:
    """The run's HTTP client, response cache and per-endpoint gates."""

    def __init__(
        self,
        cache: ResponseCache | None = None,
        refresh: bool = False,
        models: dict[str, ModelEndpoint] | None = None,
        prices: dict[str, Price] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.cache = cache
        self.refresh = refresh
        self.models = models or {}
        self.prices = prices or {}
        self._environ = environ
        self._clients: dict[tuple[bool, int], httpx.Client] = {}  # by "is https" and thread
        self._connections: dict[tuple[plain_http.Target, int], Any] = {}  # http.client connections, by host and thread
        self._plain: bool | None = None  # False with a proxy set: every request goes through httpx (None: not asked yet)
        self._targets: dict[str, plain_http.Target | None] = {}  # url -> where the plain path sends it (None: httpx)
        self._tls: Any = None
        self._gates: dict[tuple[Any, ...], Gate] = {}
        self._shared: dict[tuple[Any, ...], Any] = {}
        self._lock = threading.Lock()
        self._rng = random.Random()
        self._watchdog = _Watchdog()
        self._closed = False
        self._hidden: set[str] = set()  # secrets made at run time (an OAuth token), redacted like keys

    @property
    def environ(self) -> Mapping[str, str]:
        """The run's environment: what `${NAME}` and credentials are read from."""
        return self._env()

    def url(self, settings: Connection, path: str = "") -> str:
        """`base_url` (environment references resolved) joined with `path`."""
        base = self.resolve(settings.base_url or "")
        return base.rstrip("/") + path if path else base

    def resolve(self, text: str) -> str:
        try:
            return substitute_env(text, self._environ)
        except MissingEnvironment as exc:
            raise EndpointError(str(exc)) from None

    def secrets(self, settings: Transport) -> list[str]:
        """Every value that must not reach a message: the API key, and whatever `${NAME}` reads from
        the environment into headers, `base_url` or `url`."""
        found = []
        for template in settings.headers.values():
            found.extend(substituted_values(template, self._environ))
        declared = type(settings).model_fields  # (only those its class has: a getattr default would raise and catch per request)
        for template in (getattr(settings, name) for name in _ADDRESS_FIELDS if name in declared):
            if template:
                found.extend(part for value in substituted_values(template, self._environ) for part in _url_secrets(value))
        if settings.api_key_env:
            key = self._env().get(settings.api_key_env)
            if key:
                found.append(key)
        found.extend(self._hidden)
        return found

    def hide(self, secret: str) -> None:
        """Redact `secret` from every message and reply from now on (a credential made at run time,
        such as an OAuth access token, that no environment variable holds)."""
        with self._lock:
            self._hidden = {*self._hidden, secret}

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
        check: Callable[[Any], None] | None = None,
        keep: bool = True,
        fresh: bool = False,
        auth: RequestAuth | None = None,
        retryable: RetryRule | None = None,
        cache_as: str | None = None,
        model_call: ModelCall | None = None,
    ) -> Reply:
        """One request with retries. Raises EndpointError (after the retries, for retryable failures).

        With `cache`, a stored reply is returned instead of sending; a fresh reply is stored when
        `keep` (else the caller stores it with `keep(reply)` once it has found it usable). `check`
        raises EndpointError for data that is unusable: such a reply is never stored, and a stored
        one that fails it (written by an older version) is fetched again, as every one is when `fresh`.
        `auth` signs each attempt (its credentials are read only when a request is sent); `retryable`
        is a vendor's own rule for which error replies to retry (default: RETRY_STATUSES); `cache_as`
        is the URL the cache knows the request by when another address reaches the same service.
        `model_call`: the request is a model call, traced as one (see the module docstring)."""
        identity = {"method": method, "json": body, "params": params}
        key = request_key(cache_as or url, identity, variant) if cache else None
        secrets = self.secrets(settings)
        span = model_span(model_call, url, body, lambda text: redact(text, secrets))  # None unless --otel traces a model call
        try:
            reply = self._reply(settings, method, url, body, params, key, check, json_reply, fresh, secrets, auth, retryable)
        except BaseException as exc:
            if span is not None:
                span.fail(str(exc) if isinstance(exc, EndpointError) else type(exc).__name__)
            raise
        if span is not None:
            span.reply(reply.data, reply.cached)
        if keep:
            self.keep(reply)
        return reply

    def _reply(
        self, settings: Transport, method: str, url: str, body: Any, params: dict[str, str] | None, key: str | None,
        check: Callable[[Any], None] | None, json_reply: bool, fresh: bool, secrets: list[str],
        auth: RequestAuth | None, retryable: RetryRule | None,
    ) -> Reply:
        """`send` without the span and the keeping: the cached reply, or a fresh one, redacted and checked."""
        try:
            if key is not None and not fresh:
                hit = self._cached_record(key)
                if hit is not None and _passes(check, hit["data"]):  # (one an older version stored may hold a secret)
                    return Reply(hit["status"], redact_reply(hit["data"], secrets), hit["latency_ms"], cached=True)
            if getattr(_this_thread, "cache_only", False):
                raise NotCached
            problem = url_problem(url)
            if problem:
                raise EndpointError(f"{method} {url}: {problem}")
            headers = self._headers(settings)
            reply = self._send(settings, method, url, body, params, headers, json_reply, auth, retryable, secrets)
            reply.data = redact_reply(reply.data, secrets)  # where every reply enters: before any reader or the cache
            reply.key = key
            if check is not None:
                check(reply.data)
        except EndpointError as exc:
            raise EndpointError(redact(str(exc), secrets)) from None
        return reply

    def keep(self, reply: Reply) -> None:
        """Store a fresh reply that its caller found usable (a no-op for a cached one or without a cache)."""
        if reply.key is not None and not reply.cached and self.cache is not None:
            self.cache.put(reply.key, {"status": reply.status, "data": reply.data, "latency_ms": reply.latency_ms})

    def cached(self, url: str, identity: Any, variant: int = 0) -> dict[str, Any] | None:
        """The cached record of a request, unless there is no cache or it is being refreshed."""
        return self._cached_record(request_key(url, identity, variant))

    def _cached_record(self, key: str) -> dict[str, Any] | None:
        """A stored record of the shape this version writes, else None (a miss)."""
        if self.cache is None or self.refresh:
            return None
        record = self.cache.get(key)
        if not isinstance(record, dict) or type(record.get("status")) is not int or "data" not in record:
            return None
        latency = record.get("latency_ms")
        if type(latency) not in (int, float) or not math.isfinite(latency) or latency < 0:
            return None
        return record

    def remember(self, url: str, identity: Any, record: dict[str, Any], variant: int = 0) -> None:
        if self.cache is not None:
            self.cache.put(request_key(url, identity, variant), record)

    def shared(self, key: tuple[Any, ...], build: Callable[[], T]) -> T:
        """One object per key for the whole run (e.g. the embedding batcher that cases share)."""
        with self._lock:
            if key not in self._shared:
                self._shared[key] = build()
            return self._shared[key]

    def close_cache(self) -> None:
        """Fold the cache's WAL into its file and close it now; it reopens on the next use. A Ray
        worker calls it after each batch, so what it stored is in the one file when the run ends."""
        if self.cache is not None:
            self.cache.close()

    def close(self) -> None:
        """Close every client and the cache. Worker threads a stopped run left behind may still be
        sending: the clients are taken under the lock, and a thread that asks for one afterwards
        gets an error instead of a new client."""
        with self._lock:
            self._closed = True
            clients = [*self._clients.values(), *self._connections.values()]
            self._clients.clear()
            self._connections.clear()
        for client in clients:
            try:
                client.close()
            except Exception:  # noqa: BLE001, S110 - closing must never fail the run
                pass
        if self.cache is not None:
            self.cache.close()

    def _send(
        self, settings: Transport, method: str, url: str, body: Any, params: dict[str, str] | None,
        headers: dict[str, str], json_reply: bool, auth: RequestAuth | None = None, retryable: RetryRule | None = None,
        secrets: list[str] | None = None,
    ) -> Reply:
        gate = self._gate(settings, url)
        attempts = settings.retries + 1
        problem = ""
        for attempt in range(attempts):
            retry_after = None
            with gate.slot():
                started = time.perf_counter()
                try:
                    status, content, reply_headers = self._attempt(settings, method, url, body, params, headers, auth, secrets)
                except _Retryable as exc:
                    status, problem = 0, str(exc)
                latency_ms = (time.perf_counter() - started) * 1000
            if status:
                if 200 <= status < 300:
                    try:
                        data = decode_json(content)
                    except (ValueError, RecursionError):
                        if not json_reply:
                            return Reply(status, content.decode("utf-8", "replace"), latency_ms, attempts=attempt + 1)
                        problem = f"HTTP {status} with a body that is not JSON: {excerpt(redact(_text(content), secrets or []))!r}"
                    else:
                        return Reply(status, data, latency_ms, attempts=attempt + 1)
                else:
                    problem = f"HTTP {status}: {excerpt(redact(_text(content), secrets or []))!r}"  # (redacted whole: a cut key would not match)
                    if not (retryable(status, content, reply_headers) if retryable is not None else status in RETRY_STATUSES):
                        raise EndpointError(f"{method} {url}: {problem}")
                    if status in (429, 503):
                        retry_after = parse_retry_after(reply_headers.get("retry-after"))
                        if retry_after is not None:
                            gate.hold(retry_after)
            if attempt + 1 < attempts:
                time.sleep(retry_delay(attempt, settings.backoff, retry_after, self._rng))
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        raise EndpointError(f"{method} {url}{tries}: {problem}")

    def _attempt(
        self, settings: Transport, method: str, url: str, body: Any,
        params: dict[str, str] | None, headers: dict[str, str], auth: RequestAuth | None = None, secrets: list[str] | None = None,
    ) -> tuple[int, bytes, Mapping[str, str]]:
        """(status, body, response headers) of one attempt, the body read whole within the attempt's
        deadline and size limit. Raises _Retryable, or EndpointError for what a retry cannot mend.
        A plain JSON request goes by http.client (agenteval.endpoints.plain_http), anything else by httpx."""
        if auth is None and not params and self._plain is not False:
            wire = _plain_http()
            if self._plain is None:
                self._plain = not wire.proxies_configured()
                if not self._plain:
                    return self._httpx_attempt(settings, method, url, body, params, headers, auth, secrets)
            target = self._targets.get(url, False)
            if target is False:
                if len(self._targets) > 4096:  # (URLs that vary per case: keep the memo small)
                    self._targets.clear()
                target = self._targets[url] = wire.plain_target(url)
            if target is not None:
                try:
                    return self._plain_attempt(target, settings, method, url, body, headers)  # type: ignore[arg-type]
                except wire.NotPlain:
                    self._targets[url] = None  # (a redirect to follow, an encoding to decode): httpx from now on
        return self._httpx_attempt(settings, method, url, body, params, headers, auth, secrets)

    def _plain_attempt(
        self, target: plain_http.Target, settings: Transport, method: str, url: str, body: Any, headers: dict[str, str],
    ) -> tuple[int, bytes, Mapping[str, str]]:
        """`_attempt` over this thread's keep-alive http.client connection. Raises NotPlain when httpx must send it."""
        plain_http = _plain_http()
        deadline = time.monotonic() + settings.timeout
        limit = int(settings.max_response_mb * MIB)
        try:  # the bytes httpx's `json=` sends
            content = None if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        except (ValueError, TypeError, UnicodeError, OverflowError, RecursionError) as exc:
            raise EndpointError(f"{method} {url}: the request could not be sent: {type(exc).__name__}: {exc}") from None
        conn = self._connection(target, settings.timeout)
        watch = None
        reusable = False
        try:
            sock = plain_http.ready(conn, settings.timeout)
            watch = self._watchdog.watch(deadline, sock)  # (the socket blocks: this bounds the attempt)
            response = plain_http.open_reply(conn, target, method, content, headers)
            try:
                if time.monotonic() > deadline:  # connected, then the headers came, but too late
                    raise _Retryable(_timed_out(settings))
                status = response.status
                if target.secure and status in plain_http.REDIRECTS and response.getheader("location"):
                    raise plain_http.NotPlain("redirect")  # httpx follows it (with its checks), from the start
                declared = response.getheader("content-length") or ""
                if declared.isdigit() and int(declared) > limit:
                    raise EndpointError(_too_large(method, url, settings))
                codings = plain_http.decoders(response.getheader("content-encoding"))
                data = _bounded_body(iter(lambda: plain_http.read_chunk(response), b""), limit, deadline, method, url, settings)
                if watch.fired:  # a body without a length ends when its connection is closed
                    raise _Retryable(_timed_out(settings))
                if codings:
                    try:
                        decoded = plain_http.decode(data, codings, limit)
                    except zlib.error as exc:
                        raise EndpointError(f"{method} {url}: the reply body could not be decoded ({exc})") from None
                    if decoded is None:
                        raise EndpointError(_too_large(method, url, settings))
                    data = decoded
                reusable = not response.will_close
                return status, data, plain_http.reply_headers(response.msg) if not 200 <= status < 300 else _NO_HEADERS
            finally:
                response.close()
        except (EndpointError, _Retryable, plain_http.NotPlain):
            raise
        except plain_http.Failure as exc:
            if exc.timeout or (watch is not None and watch.fired):
                raise _Retryable(_timed_out(settings)) from None
            if self._closed:
                raise EndpointError(f"{method} {url}: the run is over: no more requests are sent") from None
            raise _Retryable(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a header http.client refuses, a connection closed under this thread
            if self._closed:
                raise EndpointError(f"{method} {url}: the run is over: no more requests are sent") from None
            raise EndpointError(f"{method} {url}: the request could not be sent: {type(exc).__name__}: {exc}") from None
        finally:
            if watch is not None:
                watch.cancel()
            if not reusable:
                conn.close()

    def _connection(self, target: plain_http.Target, timeout: float) -> Any:
        """This thread's http.client connection to `target` (one per worker thread, as with `_http`)."""
        key = (target, threading.get_ident())
        conn = self._connections.get(key)
        if conn is not None:
            return conn
        plain_http = _plain_http()
        tls = None
        if target.secure:
            import httpx

            with self._lock:
                if self._tls is None:
                    self._tls = httpx.create_ssl_context()
                tls = self._tls
        conn = plain_http.connection(target, timeout, tls)
        with self._lock:
            if self._closed:
                raise EndpointError("the run is over: no more requests are sent")
            self._connections[key] = conn
        return conn

    def _httpx_attempt(
        self, settings: Transport, method: str, url: str, body: Any,
        params: dict[str, str] | None, headers: dict[str, str], auth: RequestAuth | None = None, secrets: list[str] | None = None,
    ) -> tuple[int, bytes, Mapping[str, str]]:
        """`_attempt` through httpx: proxies, query parameters, signed requests, redirects over https."""
        import httpx

        client = self._http(url)
        deadline = time.monotonic() + settings.timeout
        limit = int(settings.max_response_mb * MIB)
        watch = None
        try:
            if auth is None:
                request = client.build_request(method, url, json=body, params=params, headers=headers, timeout=settings.timeout)
            else:  # signed over the exact bytes and URL sent, afresh for each attempt
                content = b"" if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
                request = client.build_request(method, url, content=content, params=params, timeout=settings.timeout)
                signed = auth.headers(method, str(request.url), content)
                if secrets is not None:
                    secrets.extend(secret for secret in auth.secrets() if secret not in secrets)
                request = client.build_request(
                    method, request.url, content=content, timeout=settings.timeout,
                    headers={**headers, "Content-Type": "application/json", **signed},
                )
            response = client.send(request, stream=True)
            try:
                if time.monotonic() > deadline:  # connected, then the headers came, but too late
                    raise _Retryable(_timed_out(settings))
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > limit:
                    raise EndpointError(_too_large(method, url, settings))
                watch = self._watchdog.watch(deadline, _socket_of(response))
                data = _bounded_body(response.iter_bytes(), limit, deadline, method, url, settings)
                if watch.fired:  # a body without a length ends when its connection is closed
                    raise _Retryable(_timed_out(settings))
                return response.status_code, data, response.headers
            finally:
                if watch is not None:
                    watch.cancel()
                response.close()
        except (EndpointError, _Retryable):
            raise
        except httpx.TimeoutException:
            raise _Retryable(_timed_out(settings)) from None
        except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
            if watch is not None and watch.fired:
                raise _Retryable(_timed_out(settings)) from None
            raise _Retryable(f"{type(exc).__name__}: {exc}") from None
        except httpx.DecodingError as exc:
            raise EndpointError(f"{method} {url}: the reply body could not be decoded ({exc})") from None
        except httpx.TooManyRedirects:
            raise EndpointError(f"{method} {url}: too many redirects") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise EndpointError(f"{method} {url}: {type(exc).__name__}: {exc}") from None
        except RuntimeError as exc:  # httpx: the client was closed under this thread (the run is over)
            raise EndpointError(f"{method} {url}: {exc}") from None
        except (ValueError, TypeError, UnicodeError, OverflowError, RecursionError) as exc:
            # the request could not be built: a body that is not JSON-able, a URL httpx refuses
            raise EndpointError(f"{method} {url}: the request could not be sent: {type(exc).__name__}: {exc}") from None

    def _env(self) -> Any:
        return os.environ if self._environ is None else self._environ

    def _headers(self, settings: Transport) -> dict[str, str]:
        headers = {}
        for name, template in settings.headers.items():
            value = self.resolve(template).strip()
            if _header_problem(value):
                raise EndpointError(
                    f"header {name!r} holds a character that cannot be sent in an HTTP header "
                    "(a line break, a control character or a non-ASCII character)"
                )
            headers[name] = value
        if settings.api_key_env:
            key = (self._env().get(settings.api_key_env) or "").strip()
            if not key:
                raise EndpointError(f"environment variable {settings.api_key_env} is not set (api_key_env)")
            if _header_problem(key):
                raise EndpointError(
                    f"the key in environment variable {settings.api_key_env} (api_key_env) holds a character that cannot "
                    "be sent in an HTTP header (a line break, a control character or a non-ASCII character, e.g. a typographic quote)"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

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
            if self._closed:
                raise EndpointError("the run is over: no more requests are sent")
            if secure and self._tls is None:
                self._tls = httpx.create_ssl_context()
            verify = self._tls if secure else False
        # no redirects without TLS checks: a redirect to https must not land on the unverified client
        client = httpx.Client(
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=8), follow_redirects=secure, verify=verify,
            max_redirects=10, headers={"User-Agent": _plain_http().USER_AGENT},
        )
        with self._lock:
            if self._closed:
                client.close()
                raise EndpointError("the run is over: no more requests are sent")
            self._clients[key] = client
        return client

    def _gate(self, settings: Transport, url: str) -> Gate:
        key = (urlsplit(url).netloc, settings.concurrency, settings.rate_limit)
        with self._lock:
            gate = self._gates.get(key)
            if gate is None:
                gate = self._gates[key] = Gate(settings.concurrency, settings.rate_limit)
            return gate


_wire: Any = None
_PLAIN_TARGETS = frozenset(("openai", "anthropic", "gemini"))  # targets whose requests are plain JSON (no signing, no query)
_loaded: set[str] = set()  # what load_transport imported in this process (a Ray worker scores batch after batch)


def load_transport(targets: Iterable[Any], models: dict[str, Any]) -> None:
    """Import, once, what the first requests of these targets load, before any case starts: each
    worker thread's first request would otherwise load it inside its case's time, every thread
    queued on the import lock. http.client (agenteval.endpoints.plain_http) when every target sends
    plain JSON to an http:// URL and no proxy is set; else httpx's transport as well (https, proxies,
    signed requests, query parameters), which costs a run about 0.13 s of CPU to import."""
    wanted = {"plain"}
    for target in targets:
        url = _base_url(target, models)
        if target.type not in _PLAIN_TARGETS or not url or not url.lower().startswith("http://"):
            wanted.add("httpx")
    if "httpx" not in wanted and _plain_http().proxies_configured():
        wanted.add("httpx")
    if "httpx" in wanted - _loaded:
        import httpx

        httpx.Client(verify=False).close()
    if "plain" not in _loaded:
        _plain_http()
        "localhost".encode("idna")  # the codec socket.getaddrinfo loads for a host name
    _loaded.update(wanted)


def _base_url(target: Any, models: dict[str, Any]) -> str | None:
    """The URL a target's requests go to (its own, or its `endpoint:`'s, with `${NAME}` read from the
    environment), None when it has none or it cannot be worked out."""
    if not hasattr(target, "base_url"):
        return None
    try:
        url = merged_settings(target, models).base_url if getattr(target, "endpoint", None) else target.base_url
        return substitute_env(url) if url else None
    except (ValueError, MissingEnvironment):
        return None


def _plain_http() -> Any:
    """agenteval.endpoints.plain_http, imported at the first request (http.client and ssl are not
    every run's start-up)."""
    global _wire
    if _wire is None:
        from agenteval.endpoints import plain_http

        _wire = plain_http
    return _wire


def _passes(check: Callable[[Any], None] | None, data: Any) -> bool:
    if check is None:
        return True
    try:
        check(data)
    except EndpointError:
        return False
    return True


def _bounded_body(chunks: Iterable[bytes], limit: int, deadline: float, method: str, url: str, settings: Transport) -> bytes:
    """A reply's body from its chunks, refused past `limit` bytes (max_response_mb) or past the attempt's deadline."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise EndpointError(_too_large(method, url, settings))
        parts.append(chunk)
        if time.monotonic() > deadline:
            raise _Retryable(_timed_out(settings))
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _timed_out(settings: Transport) -> str:
    return f"timed out after {settings.timeout:g}s"


def _too_large(method: str, url: str, settings: Transport) -> str:
    return f"{method} {url}: the reply is larger than {settings.max_response_mb:g} MiB (max_response_mb)"
