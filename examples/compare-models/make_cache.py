"""Write this example's response cache from two scripted stand-in models, so the suite runs offline.

The replies in the committed cache were written here, not produced by the models the suite names:
a small OpenAI-compatible server on 127.0.0.1:11434 (where the suite looks by default) plays
`qwen2.5:0.5b` as a small model that gets some facts wrong and `qwen2.5:7b` as a large one that
slips once, each answering the `terse` prompt with the bare answer and the `careful` one with a
sentence. The script removes the old cache, runs the suite once against that server (every
request is sent and stored), and stops the server.

    python examples/compare-models/make_cache.py

To cache what real models say instead, serve them at the suite's base_url (Ollama by default)
and run `agenteval run examples/compare-models/suite.yaml --refresh-cache`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = 11434  # the port of the suite's default base_url
CACHE = HERE / ".agenteval" / "cache" / "responses.sqlite"

# The sentence each model gives under the `careful` prompt; {} is the answer.
SENTENCES = {
    "au-capital": "The capital of Australia is {}.",
    "ca-capital": "The capital of Canada is {}.",
    "tr-capital": "The capital of Turkey is {}.",
    "amazon": "The {} is the longest river in South America.",
    "yen": "The currency of Japan is the {}.",
    "gold": "The chemical symbol for gold is {}.",
    "sodium": "The chemical symbol for sodium is {}.",
    "jupiter": "{} is the largest planet in the solar system.",
    "mercury": "{} is the planet closest to the Sun.",
    "boiling": "Water boils at {} degrees Celsius at sea level.",
    "diamond": "{} is the hardest natural mineral.",
    "photosynthesis": "Plants take in {} from the air for photosynthesis.",
    "multiply": "17 times 23 is {}.",
    "prime": "The smallest prime number is {}.",
    "sqrt": "The square root of 144 is {}.",
    "hexagon": "A hexagon has {} sides.",
    "austen": "Pride and Prejudice was written by {}.",
    "mona-lisa": "The Mona Lisa was painted by {}.",
    "berlin-wall": "The Berlin Wall fell in {}.",
    "moon": "The first person to walk on the Moon was {}.",
}

# Where each stand-in model goes wrong: (model, prompt) -> {case id: its answer}.
WRONG = {
    ("qwen2.5:0.5b", "terse"): {
        "au-capital": "Sydney", "ca-capital": "Toronto", "tr-capital": "Istanbul", "sodium": "So",
        "austen": "Charlotte Brontë", "multiply": "381", "prime": "1",
    },
    ("qwen2.5:0.5b", "careful"): {  # checking fixes the sums, not the facts it does not know
        "au-capital": "Sydney", "ca-capital": "Toronto", "tr-capital": "Istanbul", "sodium": "So",
        "austen": "Charlotte Brontë", "diamond": "Quartz",
    },
    ("qwen2.5:7b", "terse"): {"multiply": "381"},
    ("qwen2.5:7b", "careful"): {},
}

# Replies the small model pads past one short sentence under the `careful` prompt.
RAMBLES = {
    "diamond": "Quartz is the hardest natural mineral, since it easily scratches glass, steel and most other common rocks.",
    "moon": "The first person to walk on the Moon was Neil Armstrong, an American astronaut, in July 1969 on Apollo 11.",
}

LATENCY_S = {"qwen2.5:0.5b": 0.04, "qwen2.5:7b": 0.16}  # the large model answers more slowly


def load_cases() -> dict[str, tuple[str, str]]:
    """question -> (case id, expected answer)."""
    cases = {}
    for line in (HERE / "cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        cases[case["input"]["question"]] = (case["id"], case["expected"]["answer"])
    return cases


def reply(body: dict, cases: dict[str, tuple[str, str]]) -> str:
    """What the stand-in model named in the request says to its messages."""
    messages = body["messages"]
    prompt = "careful" if messages[0]["role"] == "system" else "terse"
    asked = messages[-1]["content"]
    case_id, answer = next(found for question, found in cases.items() if asked.endswith(question))
    model = body["model"]
    answer = WRONG[model, prompt].get(case_id, answer)
    if prompt == "terse":
        return answer
    if model == "qwen2.5:0.5b" and case_id in RAMBLES:
        return RAMBLES[case_id]
    sentence = SENTENCES[case_id].format(answer)
    return sentence[0].upper() + sentence[1:]


def serve(cases: dict[str, tuple[str, str]]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            content = reply(body, cases)
            # A steady latency per model, varied a little per question (deterministically).
            time.sleep(LATENCY_S[body["model"]] * (0.8 + (zlib.crc32(content.encode()) % 40) / 100))
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
            completion_tokens = len(content.split())
            data = json.dumps({
                "id": "chatcmpl-example", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    try:
        server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    except OSError as exc:
        raise SystemExit(f"cannot listen on 127.0.0.1:{PORT} ({exc}); stop the server using it (Ollama?) and try again") from None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    server = serve(load_cases())
    try:
        CACHE.unlink(missing_ok=True)
        env = {key: value for key, value in os.environ.items() if key != "COMPARE_MODELS_BASE_URL"}
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
