"""Write this example's response cache from a scripted stand-in for Azure OpenAI, so the suite runs offline.

The replies in the committed cache were written here, not by a model on Azure: a small server on
127.0.0.1:8767 (where the suite looks by default) plays a deployment's chat completions for an
order-desk model that looks each order up with `get_order`, then says its status in one sentence;
it misreads one order id (A-1003 as A-1030), as models sometimes do. It answers only at
`/openai/deployments/{deployment}/chat/completions?api-version=2024-10-21` with the `api-key` it
expects, as Azure does. The script removes the old cache, runs the suite once against that
server (every request is sent and stored), and stops the server.

    python examples/azure-openai/make_cache.py

To cache what your deployment says instead, set AZURE_ORDERS_ENDPOINT (https://YOUR-RESOURCE.openai.azure.com)
and AZURE_OPENAI_API_KEY, name your deployment in suite.yaml, and run
`agenteval run examples/azure-openai/suite.yaml --refresh-cache`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

HERE = Path(__file__).resolve().parent
PORT = 8767  # the port of the suite's default base_url
CACHE = HERE / ".agenteval" / "cache" / "responses.sqlite"
KEY = "stand-in-key"
SLIPS = {"A-1003": "A-1030"}  # the order id the stand-in misreads


def answer(body: dict) -> dict:
    """The stand-in model's assistant message for a chat-completions request."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        order = json.loads(last["content"])
        if "error" in order:
            return {"role": "assistant", "content": "I could not find that order; could you check its number?"}
        return {"role": "assistant", "content": f"Your order {order['id']} is {order['status']}."}
    found = re.search(r"A-\d{4}", last["content"])
    if found is None:
        return {"role": "assistant", "content": "You have 30 days from delivery to return an item."}
    order_id = SLIPS.get(found.group(0), found.group(0))
    call = {"id": f"call_{order_id}", "type": "function", "function": {"name": "get_order", "arguments": json.dumps({"id": order_id})}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def serve() -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(0.25 + zlib.crc32(json.dumps(body).encode()) % 30 / 100)  # a steady latency, varied per request
            parts = urlsplit(self.path)
            assert parts.path == "/openai/deployments/gpt-4o-mini-orders/chat/completions", parts.path
            assert parse_qs(parts.query) == {"api-version": ["2024-10-21"]}, parts.query
            assert self.headers["api-key"] == KEY, "no api-key"
            message = answer(body)
            words = sum(len(str(m.get("content") or "").split()) for m in body["messages"])
            out = len(str(message.get("content") or "").split()) + 10 * len(message.get("tool_calls", []))
            data = json.dumps({
                "id": "chatcmpl-standin", "object": "chat.completion", "created": 1764300000, "model": "gpt-4o-mini-2024-07-18",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 120 + 2 * words, "completion_tokens": out, "total_tokens": 120 + 2 * words + out},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    try:
        server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    except OSError as exc:
        raise SystemExit(f"cannot listen on 127.0.0.1:{PORT} ({exc}); stop the server using it and try again") from None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    server = serve()
    try:
        CACHE.unlink(missing_ok=True)
        env = {key: value for key, value in os.environ.items() if key != "AZURE_ORDERS_ENDPOINT"} | {"AZURE_OPENAI_API_KEY": KEY}
        with tempfile.TemporaryDirectory() as scratch:
            done = subprocess.run(
                [sys.executable, "-m", "agenteval", "run", str(HERE / "suite.yaml"), "-o", str(Path(scratch) / "r.jsonl"), "-q"],
                env=env, check=False,
            )
    finally:
        server.shutdown()
        server.server_close()
    if done.returncode not in (0, 1):
        print(f"the run failed (exit {done.returncode})", file=sys.stderr)
        return done.returncode
    print(f"wrote {CACHE.relative_to(HERE.parent.parent)} ({CACHE.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
