"""An OTLP/HTTP span receiver for a live run (`traces: {receive: true}`): the system under test
exports its spans here while a case runs, and they join that case's answer.

Only the spans of traces a running case waits for are held, each trace to `limits.trace_spans`,
all of them to `limits.receive_mb`; a request body past `limits.receive_body_mb`, malformed OTLP or
a flood past those bounds is refused (413 / 400) and every case in flight at that moment gets an
error saying its spans may be incomplete: nothing is dropped silently. OTLP/JSON is always read;
OTLP/protobuf when opentelemetry-proto (the `otel` extra) is installed.
"""

from __future__ import annotations

import socket
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from agenteval.traces.otlp import Span, TraceError, is_digits, raw_spans, read_span, trace_id_of
from agenteval.traces.propagation import parent_id_of, trace_id_of as traced_id

PATH = "/v1/traces"
MAX_REFUSALS = 100
"""Refusals remembered (the oldest are forgotten first); each is named to the cases it overlapped."""
REQUEST_SECONDS = 10.0
"""How long one request may take to arrive: a sender that stalls mid-body is cut off."""


def protobuf_available() -> bool:
    """Whether OTLP/protobuf can be read (opentelemetry-proto, in the `otel` extra)."""
    try:
        import opentelemetry.proto.collector.trace.v1.trace_service_pb2  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class _Trace:
    raw: list[dict[str, Any]] = field(default_factory=list)
    bytes: int = 0
    waiters: int = 0
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Ticket:
    """A case's claim on the spans of its `traceparent`, from before its target was called."""

    traceparent: str
    trace_id: str
    parent_id: str
    since: float


class SpanReceiver:
    """The receiver of one run: `expect` before a case's target runs, `collect` after, `close` at the end."""

    def __init__(self, body_mb: float, held_mb: float, max_spans: int, port: int = 0, request_seconds: float = REQUEST_SECONDS) -> None:
        self.body_mb, self.held_mb, self.max_spans = body_mb, held_mb, max_spans
        self.body_bytes, self.held_bytes = int(body_mb * (1 << 20)), int(held_mb * (1 << 20))
        self.request_seconds = request_seconds
        self.protobuf = protobuf_available()
        self._traces: dict[str, _Trace] = {}
        self._held = 0
        self._refusals: list[tuple[float, str]] = []
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))  # OSError: the port is taken
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="agenteval-span-receiver", daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        """Where a sender posts spans: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT's value."""
        return f"http://127.0.0.1:{self._server.server_address[1]}{PATH}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._changed:
            self._traces.clear()
            self._held = 0

    # -- the cases' side ---------------------------------------------------------------------------

    def expect(self, traceparent: str) -> Ticket | None:
        """Start holding the spans of `traceparent`'s trace (None for a traceparent that does not read)."""
        trace_id, parent_id = traced_id(traceparent), parent_id_of(traceparent)
        if trace_id is None or parent_id is None:
            return None
        with self._changed:
            self._traces.setdefault(trace_id, _Trace()).waiters += 1
        return Ticket(traceparent, trace_id, parent_id, time.monotonic())

    def collect(self, ticket: Ticket, wait_seconds: float) -> tuple[list[Span], str | None]:
        """The case's spans (those below its traceparent), waiting up to `wait_seconds` for the first
        of them; and a problem that makes them incomplete or absent (None when there is none)."""
        deadline = time.monotonic() + wait_seconds
        with self._changed:
            trace = self._traces[ticket.trace_id]
            while not any(raw.get("parentSpanId") and _parent(raw) == ticket.parent_id for raw in trace.raw):
                left = deadline - time.monotonic()
                if left <= 0 or trace.problem is not None:
                    break
                self._changed.wait(min(left, 0.5))
            raw = list(trace.raw)
            problem = trace.problem or next((text for when, text in self._refusals if when >= ticket.since), None)
            trace.waiters -= 1
            if trace.waiters <= 0:
                self._held -= trace.bytes
                del self._traces[ticket.trace_id]
        spans, unreadable = _case_spans(raw, ticket.parent_id)
        if problem is not None:
            return spans, f"the span receiver refused spans while this case ran, so its trace may be incomplete: {problem}"
        if unreadable is not None:
            return spans, f"a span the system exported cannot be read: {unreadable}"
        if not spans:
            return [], (
                f"no span arrived for trace {ticket.trace_id} (traceparent {ticket.traceparent}) within {wait_seconds:g} s "
                f"(`traces.wait_seconds`): does the system export to {self.endpoint} and continue the case's traceparent?"
            )
        return spans, None

    # -- the senders' side -------------------------------------------------------------------------

    def receive(self, body: bytes, content_type: str) -> tuple[int, str]:
        """Take one OTLP request body: (HTTP status, message)."""
        if "protobuf" in content_type:
            if not self.protobuf:
                return self.refuse(415, "OTLP/protobuf needs opentelemetry-proto (pip install 'agenteval[otel]'); send OTLP/JSON")
            try:
                document = _from_protobuf(body)
            except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends: a malformed body
                return self.refuse(400, f"not an OTLP/protobuf ExportTraceServiceRequest ({type(exc).__name__})")
        else:
            try:
                document = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                return self.refuse(400, f"the body is not JSON ({exc})")
        try:
            found = raw_spans(document)
        except TraceError as exc:
            return self.refuse(400, str(exc))
        each = max(1, len(body) // max(1, len(found)))  # what one span holds, about
        with self._changed:
            for raw in found:
                try:
                    trace_id = trace_id_of(raw)
                except TraceError:
                    continue  # a span of no trace: no case can wait for it
                trace = self._traces.get(trace_id)
                if trace is None or trace.problem is not None:
                    continue  # no case of this run waits for it (another run's, or a late span)
                if len(trace.raw) >= self.max_spans:
                    trace.problem = (f"trace {trace_id} has more than {self.max_spans} spans "
                                     f"(limit `limits.trace_spans: {self.max_spans}`; raise it in the suite's `limits:` if this is expected)")
                    self._changed.notify_all()
                    return 413, trace.problem
                if self._held + each > self.held_bytes:
                    return self._refuse_locked(413, (
                        f"the receiver holds {self._held / (1 << 20):.1f} MiB of spans for the cases in flight, the most it may "
                        f"(limit `limits.receive_mb: {self.held_mb:g}`)"))
                trace.raw.append(raw)
                trace.bytes += each
                self._held += each
            self._changed.notify_all()
        return 200, ""

    def refuse(self, status: int, message: str) -> tuple[int, str]:
        with self._changed:
            return self._refuse_locked(status, message)

    def _refuse_locked(self, status: int, message: str) -> tuple[int, str]:
        self._refusals.append((time.monotonic(), f"{status}: {message}"))
        del self._refusals[:-MAX_REFUSALS]
        self._changed.notify_all()
        return status, message


def _parent(raw: dict[str, Any]) -> str | None:
    from agenteval.traces.otlp import hex_id

    try:
        return hex_id(raw.get("parentSpanId"), 8, "parentSpanId")
    except TraceError:
        return None


def _case_spans(raw: list[dict[str, Any]], parent_id: str) -> tuple[list[Span], str | None]:
    """The spans below `parent_id` (the case's traceparent), read; a cycle of parent ids ends the walk."""
    spans: list[Span] = []
    for item in raw:
        try:
            spans.append(read_span(item))
        except TraceError as exc:
            return [], str(exc)
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        children.setdefault(span.parent_id, []).append(span)
    found, seen, stack = [], set(), [parent_id]
    while stack:
        for span in children.get(stack.pop(), ()):
            if span.span_id not in seen:
                seen.add(span.span_id)
                found.append(span)
                stack.append(span.span_id)
    return found, None


def _from_protobuf(body: bytes) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return MessageToDict(request)


def _handler(receiver: SpanReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = receiver.request_seconds
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()  # the reply's headers and body go out at once: no wait on a delayed ACK per request
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            if self.path.split("?", 1)[0] != PATH:
                self._reply(404, f"spans are received at {PATH}", close=False)
                return
            length = self.headers.get("Content-Length", "")
            if not is_digits(length):
                self._reply(411, "a Content-Length is required")
                return
            size = int(length)
            if size > receiver.body_bytes:
                status, message = receiver.refuse(413, (
                    f"a request of {size:,} bytes is larger than the receiver takes "
                    f"(limit `limits.receive_body_mb: {receiver.body_mb:g}`)"))
                self._reply(status, message)
                return
            try:
                body = self.rfile.read(size)
            except OSError:
                receiver.refuse(400, "the request body did not arrive in time")
                self.close_connection = True
                return
            if len(body) < size:
                self._reply(*receiver.refuse(400, "the request body ended early"))
                return
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                body = _gunzip(body, receiver.body_bytes)
                if body is None:
                    self._reply(*receiver.refuse(413, (
                        f"a gzip request unpacks to more than the receiver takes "
                        f"(limit `limits.receive_body_mb: {receiver.body_mb:g}`), or is not gzip")))
                    return
            self._reply(*receiver.receive(body, self.headers.get("Content-Type", "application/json")), close=False)

        def _reply(self, status: int, message: str, close: bool = True) -> None:
            protobuf = "protobuf" in self.headers.get("Content-Type", "")
            body = b"" if status == 200 and protobuf else orjson.dumps({} if status == 200 else {"error": message})
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf" if protobuf and status == 200 else "application/json")
                self.send_header("Content-Length", str(len(body)))
                if close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the sender went away before its answer (a reset): nothing is left to tell it
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - no request log on the run's stderr
            return

    return Handler


def _gunzip(body: bytes, most: int) -> bytes | None:
    """The unpacked body, or None when it is not gzip or unpacks past `most` bytes (a zip bomb)."""
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = unpacker.decompress(body, most + 1)
    except zlib.error:
        return None
    return None if len(data) > most or unpacker.unconsumed_tail else data
