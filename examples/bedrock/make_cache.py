"""Write this example's response cache from a scripted stand-in for Bedrock, so the suite runs offline.

The replies in the committed cache were written here, not by Claude on Bedrock: a small server on
127.0.0.1 plays Bedrock Runtime's Converse API for an order-desk model that looks each order up
with `get_order`, then says its status in one sentence; it misreads one order id (A-1003 as
A-1030), as models sometimes do. Every request it gets is validated with botocore's
ParamValidator against bedrock-runtime's service model, and every reply against the operation's
output shape. The script removes the old cache, runs the suite once with
AWS_ENDPOINT_URL_BEDROCK_RUNTIME pointing at that server and stand-in credentials (the cache knows
a reply by region and model, not by the endpoint it came from), and stops the server.

    python examples/bedrock/make_cache.py

To cache what Claude on Bedrock says instead, run with your AWS credentials:
`agenteval run examples/bedrock/suite.yaml --refresh-cache`.
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
from urllib.parse import unquote

import botocore.session
from botocore.validate import ParamValidator

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".agenteval" / "cache" / "responses.sqlite"
OPERATION = botocore.session.get_session().get_service_model("bedrock-runtime").operation_model("Converse")
SLIPS = {"A-1003": "A-1030"}  # the order id the stand-in misreads


def validated(params: dict, shape: object) -> None:
    report = ParamValidator().validate(params, shape)
    if report.has_errors():
        raise ValueError(report.generate_report())


def answer(body: dict) -> list[dict]:
    """The stand-in model's content blocks for a Converse request."""
    last = body["messages"][-1]["content"]
    result = next((block["toolResult"] for block in last if "toolResult" in block), None)
    if result is not None:
        order = json.loads(result["content"][0]["text"])
        if "error" in order:
            return [{"text": "I could not find that order; could you check its number?"}]
        return [{"text": f"Your order {order['id']} is {order['status']}."}]
    asked = " ".join(block.get("text", "") for block in last)
    found = re.search(r"A-\d{4}", asked)
    if found is None:
        return [{"text": "You have 30 days from delivery to return an item."}]
    order_id = SLIPS.get(found.group(0), found.group(0))
    return [{"text": "Let me look that order up."}, {"toolUse": {"toolUseId": f"tooluse_{order_id}", "name": "get_order", "input": {"id": order_id}}}]


def serve() -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(0.25 + zlib.crc32(raw) % 30 / 100)  # a steady latency, varied per request (deterministically)
            model_id = unquote(self.path.split("/")[2])
            body = json.loads(raw)
            assert self.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential="), "not signed"
            validated({"modelId": model_id, **body}, OPERATION.input_shape)
            blocks = answer(body)
            words = sum(len(block.get("text", "").split()) for message in body["messages"] for block in message["content"])
            out = sum(len(block.get("text", "").split()) for block in blocks) + 12 * sum("toolUse" in block for block in blocks)
            reply = {
                "output": {"message": {"role": "assistant", "content": blocks}},
                "stopReason": "tool_use" if any("toolUse" in block for block in blocks) else "end_turn",
                "usage": {"inputTokens": 310 + 2 * words, "outputTokens": out, "totalTokens": 310 + 2 * words + out},
                "metrics": {"latencyMs": 400},
            }
            validated(reply, OPERATION.output_shape)
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    server = serve()
    try:
        CACHE.unlink(missing_ok=True)
        env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
        env.update({
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": f"http://127.0.0.1:{server.server_address[1]}", "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_ACCESS_KEY_ID": "AKIDSTANDIN", "AWS_SECRET_ACCESS_KEY": "stand-in-secret",
        })
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
