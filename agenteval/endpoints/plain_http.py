"""JSON requests on keep-alive connections with the standard library's `http.client`.

httpx costs about 0.3 ms of CPU per request in its layers (URL model, pool, h11 events); a run
with a hundred requests in flight on two cores spends its time there. `http.client` sends the same
request for under a third of that. `Endpoints` uses this path only for what it can send exactly
as httpx would (`plain_target`): no proxy configured, no query parameters or signed request, a
URL httpx would not rewrite. Anything else (and an https redirect, or a reply in an encoding other
than gzip or deflate) goes through httpx.

Each worker thread keeps its own connection per host (no pool lock to queue on); an idle
connection the server closed is noticed before it is reused (as httpcore does), never by
re-sending a request the server may have received.
"""

from __future__ import annotations

import http.client
import os
import re
import select
import socket
import ssl
import zlib
from dataclasses import dataclass
from typing import Any

from agenteval.version import __version__

USER_AGENT = f"agenteval/{__version__}"
REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 1 << 16
# scheme, lower-case host (or an IPv6 literal), port, then a path and query httpx sends as written
_URL = re.compile(
    r"(https?)://([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?"
    r"((?:/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})*)?)\Z"
)
_DECODERS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


class NotPlain(Exception):
    """This request needs httpx after all (an https redirect to follow, a reply encoding only httpx decodes)."""


class Failure(Exception):
    """One attempt's failure, named as httpx names it (`ConnectError: ...`, `ReadError: ...`);
    `timeout` when a socket operation ran out of time."""

    def __init__(self, message: str, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


@dataclass(frozen=True, slots=True)
class Target:
    secure: bool
    host: str
    port: int
    path: str


def plain_target(url: str) -> Target | None:
    """Where to send `url` on this path, or None when httpx must send it (it would rewrite the URL:
    dot segments, characters to escape, user info, a fragment, an upper-case or non-ASCII host)."""
    found = _URL.match(url)
    if found is None:
        return None
    scheme, host, port, path = found.groups()
    if "/." in path or (port is not None and not 0 < int(port) < 65536):
        return None
    secure = scheme == "https"
    return Target(secure, host.strip("[]"), int(port) if port else (443 if secure else 80), path or "/")


def proxies_configured(environ: Any = None) -> bool:
    """True when the environment names a proxy (httpx would send through it): `*_proxy` in any case."""
    environ = os.environ if environ is None else environ
    return any(name.lower().endswith("_proxy") and name.lower() != "no_proxy" and value for name, value in environ.items())


class Headers(dict):  # type: ignore[type-arg]
    """A reply's headers by lower-case name (repeated ones joined with ", ", as httpx does), read case-insensitively."""

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)


def reply_headers(message: Any) -> Headers:
    headers = Headers()
    for name, value in message.items():
        name = name.lower()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


class _OneWrite:
    """A request's head and a body of bytes sent in one write: http.client writes them apart, and each
    write is a system call its thread gives up the GIL for (and waits to take it back, with a hundred
    threads sending)."""

    _buffer: list[bytes]

    def _send_output(self, message_body: Any = None, encode_chunked: bool = False) -> None:
        if type(message_body) is not bytes or encode_chunked:
            super()._send_output(message_body, encode_chunked)  # type: ignore[misc]
            return
        self._buffer.extend((b"", b""))
        head = b"\r\n".join(self._buffer)
        del self._buffer[:]
        self.send(head + message_body)  # type: ignore[attr-defined]


class _Connection(_OneWrite, http.client.HTTPConnection):
    pass


class _SecureConnection(_OneWrite, http.client.HTTPSConnection):
    pass


def connection(target: Target, timeout: float, tls: ssl.SSLContext | None) -> http.client.HTTPConnection:
    if target.secure:
        return _SecureConnection(target.host, target.port, timeout=timeout, context=tls)
    return _Connection(target.host, target.port, timeout=timeout)


def stale(conn: http.client.HTTPConnection) -> bool:
    """An idle kept-alive connection that has something to read (the server closed it, or sent
    what nobody asked for) cannot carry another request."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


def ready(conn: http.client.HTTPConnection, timeout: float) -> socket.socket:
    """The connection's socket, connected within `timeout` (a kept-alive one the server closed is
    replaced), in blocking mode: the caller's watchdog bounds the rest of the attempt by shutting it.
    (With a timeout, every send and read is a poll and then the call: two system calls, each giving
    up the GIL.) Raises Failure."""
    if conn.sock is not None and stale(conn):
        conn.close()
    if conn.sock is None:
        conn.timeout = timeout
        try:
            conn.connect()
        except (TimeoutError, socket.timeout):
            conn.close()
            raise Failure("ConnectTimeout", timeout=True) from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise Failure(f"ConnectError: {exc}") from None
        conn.sock.settimeout(None)
    return conn.sock


def open_reply(
    conn: http.client.HTTPConnection, target: Target, method: str, content: bytes | None, headers: dict[str, str],
) -> http.client.HTTPResponse:
    """Send the request on a connection `ready` gave and read the reply's status line and headers. Raises Failure."""
    sent = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate", "Connection": "keep-alive", "User-Agent": USER_AGENT}
    if content is not None:
        sent["Content-Type"] = "application/json"
    if headers:
        given = {name.lower() for name in headers}
        sent = {name: value for name, value in sent.items() if name.lower() not in given}
        sent.update(headers)
    try:
        conn.request(method, target.path, body=content, headers=sent)
    except (TimeoutError, socket.timeout):
        conn.close()
        raise Failure("WriteTimeout", timeout=True) from None
    except OSError as exc:
        conn.close()
        raise Failure(f"WriteError: {exc}") from None
    try:
        return conn.getresponse()
    except (TimeoutError, socket.timeout):
        conn.close()
        raise Failure("ReadTimeout", timeout=True) from None
    except http.client.RemoteDisconnected:
        conn.close()
        raise Failure("RemoteProtocolError: Server disconnected without sending a response.") from None
    except OSError as exc:
        conn.close()
        raise Failure(f"ReadError: {exc}") from None
    except http.client.HTTPException as exc:
        conn.close()
        raise Failure(f"RemoteProtocolError: {type(exc).__name__}: {exc}") from None


def read_chunk(response: http.client.HTTPResponse) -> bytes:
    """The next bytes of the body (b"" at its end). Raises Failure: a read that failed or timed out,
    or a body shorter than its Content-Length (which `read1` does not report)."""
    try:
        chunk = response.read1(_CHUNK)
    except (TimeoutError, socket.timeout):
        raise Failure("ReadTimeout", timeout=True) from None
    except OSError as exc:
        raise Failure(f"ReadError: {exc}") from None
    except (http.client.HTTPException, ValueError) as exc:  # IncompleteRead of a chunked body, a bad chunk size
        raise Failure(f"RemoteProtocolError: peer closed connection without sending complete message body ({type(exc).__name__})") from None
    if not chunk and response.length:
        raise Failure("RemoteProtocolError: peer closed connection without sending complete message body (incomplete body)")
    return chunk


def decoders(encoding: str | None) -> list[str]:
    """The Content-Encoding's codings to undo, last applied first; NotPlain for one only httpx decodes."""
    if not encoding:
        return []
    codings = [part.strip().lower() for part in encoding.split(",") if part.strip()]
    codings = [coding for coding in codings if coding != "identity"]
    if any(coding not in _DECODERS for coding in codings):
        raise NotPlain(encoding)
    return codings[::-1]


def decode(body: bytes, codings: list[str], limit: int) -> bytes | None:
    """`body` with its gzip/deflate codings undone, or None when it grows past `limit` bytes.
    Raises zlib.error for a body that is not what it says."""
    for coding in codings:
        wbits = _DECODERS[coding]
        decoder = zlib.decompressobj(wbits)
        try:
            out = decoder.decompress(body, limit + 1)
        except zlib.error:
            if coding != "deflate":
                raise
            decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # deflate sent without its zlib header, as some servers do
            out = decoder.decompress(body, limit + 1)
        if len(out) > limit or decoder.unconsumed_tail:
            return None
        out += decoder.flush()
        if len(out) > limit:
            return None
        body = out
    return body
