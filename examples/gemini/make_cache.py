"""Write this example's response cache from a scripted stand-in for Gemini, so the suite runs offline.

The replies in the committed cache were written here, not produced by Gemini: the fake Gemini API
of agenteval's tests (tests/gemini_server.py, which holds every request to the google-genai SDK's
types; it needs the dev install, `pip install -e '.[dev]'`) plays `gemini-2.5-flash` as an agent
that looks orders up with function calls and answers from the results, and misreads one order
number. The script runs the suite once against that server (every request is sent and checked),
then stores each reply under the key of the same request to the suite's default base_url (Google's),
where an offline run looks for it.

    python examples/gemini/make_cache.py

To cache what Gemini says instead: `GEMINI_API_KEY=... agenteval run examples/gemini/suite.yaml --refresh-cache`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CACHE = HERE / ".agenteval" / "cache" / "responses.sqlite"
GOOGLE = "https://generativelanguage.googleapis.com"  # the suite's default base_url
MISREAD = {"A-2003": "A-2030"}  # the one order number the stand-in model gets wrong
SIGNATURE = "Q2lvQkFZOU9UaW5r"  # a thought signature, as Gemini 2.5 sends with its function calls


def agent(body: dict, model: str) -> list[dict]:
    """What the stand-in model says: a function call per order number in the question, then an
    answer from the results; a question without an order number is answered with a question."""
    last = body["contents"][-1]["parts"]
    results = [part["functionResponse"]["response"]["output"] for part in last if "functionResponse" in part]
    if not results:
        question = "".join(part.get("text", "") for part in last)
        ids = list(dict.fromkeys(re.findall(r"A-\d{4}", question)))[:2]
        if not ids:
            return [{"text": "I can look that up for you. What is your order number? It starts with A- and has four digits."}]
        calls = [{"functionCall": {"name": "get_order", "args": {"order_id": MISREAD.get(order, order)}}} for order in ids]
        calls[0]["thoughtSignature"] = SIGNATURE
        return calls
    sentences = []
    for result in results:
        if "error" in result:
            asked = next(part["functionCall"]["args"]["order_id"] for part in body["contents"][-2]["parts"] if "functionCall" in part)
            sentences.append(f"I could not find order {asked}; please check the number.")
        elif result["status"] == "shipped":
            sentences.append(f"Order {result['order_id']} ({', '.join(result['items'])}) has shipped with {result['carrier']} "
                             f"and should arrive on {result['eta']}.")
        elif result["status"] == "delivered":
            sentences.append(f"Order {result['order_id']} ({', '.join(result['items'])}) was delivered on {result['delivered']}.")
        else:
            sentences.append(f"Order {result['order_id']} is {result['status']} and ships {result['ships']}.")
    return [{"text": " ".join(sentences)}]


def main() -> int:
    import agenteval
    from agenteval.endpoints.cache import ResponseCache, request_key

    tests = ROOT / "tests" if (ROOT / "tests" / "gemini_server.py").exists() else Path(agenteval.__file__).parents[1] / "tests"
    sys.path.insert(0, str(tests))  # the fake Gemini API of agenteval's tests (a checkout's, or the editable install's)
    from gemini_server import GeminiServer

    with tempfile.TemporaryDirectory() as scratch, GeminiServer(gemini=agent, delay=0.35) as server:
        env = {**os.environ, "GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": "stand-in"}
        done = subprocess.run(
            [sys.executable, "-m", "agenteval", "run", str(HERE / "suite.yaml"), "-o", str(Path(scratch) / "r.jsonl"), "-q",
             "--cache-dir", scratch], env=env, check=False,
        )
        if done.returncode not in (0, 1) or server.invalid:
            print(f"the run failed (exit {done.returncode}); refused requests: {server.invalid}", file=sys.stderr)
            return done.returncode or 1
        made = ResponseCache(Path(scratch) / "responses.sqlite")
        CACHE.unlink(missing_ok=True)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        kept = ResponseCache(CACHE)
        for request in server.received:
            identity = {"method": "POST", "json": request.body, "params": None}
            record = made.get(request_key(server.url + request.path, identity))
            if record is None:
                print(f"no reply was cached for {request.path} {json.dumps(request.body)[:80]}", file=sys.stderr)
                return 1
            kept.put(request_key(GOOGLE + request.path, identity), record)
        made.close()
        kept.close()
    print(f"wrote {CACHE.relative_to(ROOT)} ({len(server.received)} replies)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
