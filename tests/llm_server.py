"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions and embeddings formats,
and Anthropic's Messages API (`POST /v1/messages`, at `server.url`: its base_url is the root).

Tests start one per test (stdlib `http.server` in a thread), script its replies and faults, and
read back every request it received. Run as a script it serves until killed (for benchmarks):
`python tests/llm_server.py --delay 0.05` prints its base URL on the first line.

Faults are queued and used by the next requests in order: `status` (any code, optional headers
such as Retry-After, any body: an error object or an empty `choices` on a 200), `sleep` (answer
after a pause, e.g. past a client's timeout), `truncate` (Content-Length promises more than is
sent, then the connection closes), `not_json`, `drip` (headers at once, then one byte of a chat
reply every `seconds`) and `endless` (a chunked body of 1 MiB chunks at full speed, up to 512 MiB
or until the client hangs up).

Scripted mode plays a model that calls tools: `server.play(calls(("get_order", {"id": 7})), reply)`
queues chat replies used by the next chat requests in order (a message, or a function of the
request body giving one, e.g. to answer from the tool result it was sent).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]


@dataclass
class Received:
    path: str
    method: str
    headers: dict[str, str]
    body: Any


@dataclass
class Fault:
    kind: str  # status | sleep | truncate | not_json | drip | endless
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    body: str = '{"error": {"message": "scripted failure"}}'


def words(text: Any) -> int:
    return len(str(text).split())


def echo_reply(body: dict[str, Any]) -> Reply:
    """Default chat reply: `echo: <last user message>`."""
    last = next((m.get("content") for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    return {"role": "assistant", "content": f"echo: {last}"}


def block_text(content: Any) -> str:
    """The text of a Messages-API content: a string, or the text of its text blocks."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def echo_blocks(body: dict[str, Any]) -> list[dict[str, Any]] | dict[str, Any]:
    """Default Messages-API reply: one text block `echo: <last user text>`. A handler returns the
    content blocks, or a whole body (a dict) that is sent as it is (an error object with a 200)."""
    last = next((block_text(m.get("content")) for m in reversed(body.get("messages", [])) if m.get("role") == "user"), "")
    return [{"type": "text", "text": f"echo: {last}"}]


def calls(*called: tuple[str, Any], content: str | None = None) -> Reply:
    """An assistant message calling tools: `calls(("get_order", {"id": 7}))`; arguments that are a
    string are sent as they are (to play a model writing arguments that are not JSON)."""
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"call_{index}_{name}", "type": "function",
         "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}}
        for index, (name, arguments) in enumerate(called, 1)
    ]}


def letter_embedding(text: str) -> list[float]:
    """A deterministic 27-dimensional embedding: letter counts plus a hash bucket, so equal texts
    have cosine 1 and texts sharing letters are close."""
    vector = [0.0] * 27
    for char in text.lower():
        if "a" <= char <= "z":
            vector[ord(char) - 97] += 1.0
    vector[26] = int(hashlib.sha256(text.encode()).hexdigest()[:4], 16) / 65535.0
    return vector


class QuietHandler(BaseHTTPRequestHandler):
    """What every test server's handler shares: HTTP/1.1 keep-alive, no Nagle delay, no log lines."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm on, the body waits for the
    # client's delayed ACK of the headers (40 ms on Linux), as no real model server makes it wait.
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # bursts of concurrent clients must not be refused

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (its timeout) is expected here; anything else is printed."""
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)):
            super().handle_error(request, client_address)


class LLMServer:
    """Start with `with LLMServer() as server:`; `server.base_url` ends in /v1."""

    def __init__(
        self, delay: float = 0.0, chat: Callable[[dict[str, Any]], Reply] = echo_reply, port: int = 0,
        messages: Callable[[dict[str, Any]], list[dict[str, Any]] | dict[str, Any]] = echo_blocks,
    ) -> None:
        self.delay = delay
        self.chat = chat
        self.messages = messages  # the Messages API's replies
        self.embed = letter_embedding
        self.faults: deque[Fault] = deque()
        self.script: deque[Reply | Callable[[dict[str, Any]], Reply]] = deque()  # scripted chat replies (play)
        self.received: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def fail(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def play(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        """Script the next chat replies, in order: a message (e.g. `calls(...)` for a model calling tools),
        or a function of the request body giving one. Once they are used up, `chat` answers again."""
        with self._lock:
            self.script.extend(replies)

    def _chat_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            scripted = self.script.popleft() if self.script else None
        if scripted is None:
            return self.chat(body)
        return scripted(body) if callable(scripted) else json.loads(json.dumps(scripted))

    def count(self, path_end: str = "") -> int:
        with self._lock:
            return sum(1 for request in self.received if request.path.endswith(path_end))

    def __enter__(self) -> LLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self.faults.popleft() if self.faults else None

    def _record(self, request: Received) -> None:
        with self._lock:
            self.received.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def answer(self, path: str, body: Any) -> tuple[int, Any]:
        """(status, JSON) for a request that no fault intercepted."""
        if not isinstance(body, dict) and not path.endswith(("/chat/completions", "/embeddings", "/v1/messages")):
            return 200, {"path": path, "echo": body}
        body = body if isinstance(body, dict) else {}  # a client that hung up mid-request
        if path.endswith("/chat/completions"):
            message = self._chat_reply(body)
            prompt = sum(words(m.get("content", "")) for m in body.get("messages", []))
            completion = words(message.get("content") or "")
            return 200, {
                "id": "chatcmpl-test", "object": "chat.completion", "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
            }
        if path.endswith("/v1/messages"):
            return 200, self.messages_reply(body)
        if path.endswith("/embeddings"):
            texts = body["input"] if isinstance(body.get("input"), list) else [body.get("input")]
            return 200, {
                "object": "list", "model": body.get("model"),
                "data": [{"object": "embedding", "index": i, "embedding": self.embed(text)} for i, text in enumerate(texts)],
                "usage": {"prompt_tokens": sum(map(words, texts)), "total_tokens": sum(map(words, texts))},
            }
        return 200, {"path": path, "echo": body}

    def messages_reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """A Messages-API reply: the handler's blocks, `stop_reason` tool_use when one is a call,
        usage in words (system and every text and tool result sent in, the text blocks out)."""
        blocks = self.messages(body)
        if isinstance(blocks, dict):
            return blocks
        sent = [body.get("system") or ""]
        for message in body.get("messages", []):
            content = message.get("content")
            sent.append(block_text(content))
            if isinstance(content, list):
                sent.extend(str(b.get("content", "")) for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
        calling = any(block.get("type") == "tool_use" for block in blocks)
        return {
            "id": "msg_test", "type": "message", "role": "assistant", "model": body.get("model"), "content": blocks,
            "stop_reason": "tool_use" if calling else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": sum(map(words, sent)), "output_tokens": sum(words(b.get("text", "")) for b in blocks)},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                server._record(Received(self.path, self.command, dict(self.headers), body))
                self._counted = True
                try:
                    self._answer(body)
                finally:
                    self._finish()

            def _finish(self) -> None:
                """The request is no longer in flight: called before its reply's last write, since the
                client may send its next request the moment that write lands (before this thread runs again)."""
                if self._counted:
                    self._counted = False
                    server._done()

            def _answer(self, body: Any) -> None:
                fault = server._next_fault()
                if server.delay:
                    time.sleep(server.delay)
                if fault is not None and fault.kind == "sleep":
                    time.sleep(fault.seconds)
                    fault = None
                if fault is None:
                    status, data = server.answer(self.path.split("?")[0], body)
                    self._send(status, json.dumps(data).encode())
                elif fault.kind == "status":
                    self._send(fault.status, fault.body.encode(), fault.headers)
                elif fault.kind == "not_json":
                    self._send(200, b"<html>Bad gateway</html>", {"Content-Type": "text/html"})
                elif fault.kind == "truncate":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "500")
                    self.end_headers()
                    self.wfile.write(b'{"choices": [{"message": {"content": "cut')
                    self.wfile.flush()
                    self.close_connection = True
                elif fault.kind == "drip":
                    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": "x" * 200}}]}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    for i in range(len(payload)):
                        self.wfile.write(payload[i:i + 1])
                        self.wfile.flush()
                        time.sleep(fault.seconds)
                elif fault.kind == "endless":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"z" * (1 << 20)
                    for _ in range(512):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.close_connection = True

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                headers = {"Content-Type": "application/json", **(headers or {})}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self._finish()
                self.wfile.write(payload)

        return Handler


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args()
    server = LLMServer(delay=args.delay)
    with server:
        print(server.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
