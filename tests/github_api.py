"""A fake of the few GitHub REST API routes the Action uses, on 127.0.0.1, answering as GitHub
documents them: issue comments (listed 100 a page, created, updated; a body over 65,536 characters
refused with 422), repository artifacts (listed, downloaded through a redirect to storage), and
tokens: `write-token` may comment, `read-token` gets 403 as a fork's or a job's without
`pull-requests: write` does."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

WRITE, READ = "write-token", "read-token"


@dataclass
class FakeGitHub:
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # pull request -> comments
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    blobs: dict[int, bytes] = field(default_factory=dict)  # artifact id -> zip
    requests: list[tuple[str, str]] = field(default_factory=list)
    next_id: int = 1000

    def comment(self, number: int, body: str, user: str = "someone") -> None:
        self.next_id += 1
        self.comments.setdefault(number, []).append({"id": self.next_id, "body": body, "user": {"login": user}})


def serve(state: FakeGitHub) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: Any = None, headers: dict[str, str] | None = None, raw: bytes | None = None) -> None:
            body = raw if raw is not None else json.dumps(payload).encode()
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _token(self) -> str | None:
            value = self.headers.get("Authorization", "")
            return value[len("Bearer "):] if value.startswith("Bearer ") else None

        def _body(self) -> Any:
            return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

        def do_GET(self) -> None:  # noqa: N802
            url = urlparse(self.path)
            state.requests.append(("GET", url.path))
            query = parse_qs(url.query)
            if match := re.fullmatch(r"/repos/[^/]+/[^/]+/issues/(\d+)/comments", url.path):
                if self._token() is None:
                    return self._send(401, {"message": "Requires authentication"})
                page, per_page = int(query.get("page", ["1"])[0]), min(100, int(query.get("per_page", ["30"])[0]))
                listed = state.comments.get(int(match[1]), [])
                return self._send(200, listed[(page - 1) * per_page: page * per_page])
            if re.fullmatch(r"/repos/[^/]+/[^/]+/actions/artifacts", url.path):
                name = query.get("name", [None])[0]
                found = [item for item in state.artifacts if name is None or item["name"] == name]
                found.sort(key=lambda item: item["created_at"], reverse=True)  # newest first, as GitHub lists them
                page, per_page = int(query.get("page", ["1"])[0]), min(100, int(query.get("per_page", ["30"])[0]))
                return self._send(200, {"total_count": len(found), "artifacts": found[(page - 1) * per_page: page * per_page]})
            if match := re.fullmatch(r"/repos/[^/]+/[^/]+/actions/artifacts/(\d+)/zip", url.path):
                if self._token() is None:
                    return self._send(401, {"message": "Requires authentication"})
                host, port = self.server.server_address[:2]
                return self._send(302, None, {"Location": f"http://{host}:{port}/storage/{match[1]}"}, raw=b"")
            if match := re.fullmatch(r"/storage/(\d+)", url.path):
                if self.headers.get("Authorization"):  # storage URLs are signed: a token sent there is a leak
                    return self._send(400, {"message": "token sent to storage"})
                return self._send(200, raw=state.blobs[int(match[1])], headers={"Content-Type": "application/zip"})
            self._send(404, {"message": "Not Found"})

        def do_POST(self) -> None:  # noqa: N802
            url = urlparse(self.path)
            state.requests.append(("POST", url.path))
            match = re.fullmatch(r"/repos/[^/]+/[^/]+/issues/(\d+)/comments", url.path)
            if not match:
                return self._send(404, {"message": "Not Found"})
            if self._token() != WRITE:
                return self._send(403, {"message": "Resource not accessible by integration"})
            body = self._body().get("body", "")
            if len(body) > 65536:
                return self._send(422, {"message": "Validation Failed", "errors": [{"code": "custom", "message": "body is too long (maximum is 65536 characters)"}]})
            state.comment(int(match[1]), body, user="github-actions[bot]")
            created = state.comments[int(match[1])][-1]
            self._send(201, {**created, "html_url": f"https://github.example/pull/{match[1]}#issuecomment-{created['id']}"})

        def do_PATCH(self) -> None:  # noqa: N802
            url = urlparse(self.path)
            state.requests.append(("PATCH", url.path))
            match = re.fullmatch(r"/repos/[^/]+/[^/]+/issues/comments/(\d+)", url.path)
            if not match:
                return self._send(404, {"message": "Not Found"})
            if self._token() != WRITE:
                return self._send(403, {"message": "Resource not accessible by integration"})
            body = self._body().get("body", "")
            if len(body) > 65536:
                return self._send(422, {"message": "Validation Failed"})
            for comments in state.comments.values():
                for comment in comments:
                    if comment["id"] == int(match[1]):
                        comment["body"] = body
                        return self._send(200, {**comment, "html_url": f"https://github.example/comment/{comment['id']}"})
            self._send(404, {"message": "Not Found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}"
