"""A real HTTP/1.1 server on 127.0.0.1 that plays scripted replies as raw bytes (any status, headers,
body, a gzip or deflate body) and records each request's line, headers and the connection it came
on: for the tests of the plain http.client path (agenteval.endpoints.plain_http)."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from llm_server import QuietHandler


@dataclass
class Scripted:
    status: int = 200
    body: bytes = b'{"ok": true}'
    headers: dict[str, str] = field(default_factory=dict)
    close_after: bool = False  # close the connection after the reply without saying so (as an idle timeout does)


@dataclass
class Seen:
    line: str
    headers: list[tuple[str, str]]
    connection: int
    body: bytes


class PlainServer:
    def __init__(self) -> None:
        self.script: deque[Scripted] = deque()
        self.seen: list[Seen] = []
        self._connections = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> PlainServer:
        threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(QuietHandler):
            def setup(self) -> None:
                super().setup()
                with server._lock:
                    server._connections += 1
                    self.number = server._connections

            def do_POST(self) -> None:
                self._serve()

            def do_GET(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with server._lock:
                    server.seen.append(Seen(self.requestline, list(self.headers.items()), self.number, body))
                    reply = server.script.popleft() if server.script else Scripted()
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                self.wfile.flush()
                if reply.close_after:
                    self.close_connection = True

        return Handler
