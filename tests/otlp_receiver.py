"""An OTLP/HTTP receiver on 127.0.0.1 for tests: collects what `agenteval run --otel` exports and
decodes it (protobuf, as the exporter sends it) into plain spans with attributes and events."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass
class Span:
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status_code: int = 0
    status_message: str = ""


def value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(item) for item in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def attributes(items: Any) -> dict[str, Any]:
    return {item.key: value(item.value) for item in items}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.bodies.append(body)
        time.sleep(self.server.delay)  # (a slow collector: it has the spans, and answers late)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class OTLPReceiver:
    """`with OTLPReceiver() as receiver:` then `receiver.env` for the run, `receiver.spans()` after;
    `delay`: seconds it takes to answer each request."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def __enter__(self) -> OTLPReceiver:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.bodies = []
        self._server.delay = self.delay
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def env(self) -> dict[str, str]:
        return {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{self._server.server_port}", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        }

    @property
    def raw(self) -> list[bytes]:
        return list(self._server.bodies)

    def spans(self) -> list[Span]:
        found = []
        for body in self._server.bodies:
            for resource_spans in ExportTraceServiceRequest.FromString(body).resource_spans:
                for scope in resource_spans.scope_spans:
                    for span in scope.spans:
                        found.append(Span(
                            span.name, span.kind, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(),
                            attributes(span.attributes), [(event.name, attributes(event.attributes)) for event in span.events],
                            span.status.code, span.status.message,
                        ))
        return found


def run_traced(suite: Any, receiver: OTLPReceiver, cwd: Any, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`agenteval run SUITE --otel` in a subprocess exporting to `receiver`."""
    return subprocess.run(
        [sys.executable, "-m", "agenteval", "run", str(suite), "--otel", "-q", *args],
        env={**os.environ, **receiver.env, **(env or {})}, cwd=cwd, capture_output=True, text=True, timeout=180,
    )
