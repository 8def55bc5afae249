"""Write this example's response cache from scripted stand-in models, so the suite runs offline.

The replies in the committed cache were written here, not produced by the models the suite names:
a small OpenAI-compatible server on 127.0.0.1:11434 (where the suite looks by default) plays all
three of them, told apart by the system message of each request:

- the agent (`qwen2.5:7b`): a rule-following refund agent that calls `get_order` and
  `refund_order` and answers from their results. It keeps the policy, except in three scenarios
  where it does what real agents get wrong: it gives in to the angry customer (a refund past the
  30-day window, with a promise), asks for the order number the customer gave in its first
  message, and reports a refund that the refund tool refused;
- the customer (`llama3.1:8b`): says the lines of its scenario in turn, then `GOAL_REACHED`;
- the judges (`qwen2.5:14b`): the goal judge says `yes` once the last reply settles the request;
  the rubric judge grades the transcript by rules (a refund claimed without a successful
  `refund_order`, a refund past the window or a promise, an apology).

The script removes the old cache, runs the suite once against that server (every request is
sent and stored), and stops the server.

    python examples/support-agent-live/make_cache.py

To cache what real models say instead, serve them at the suite's base_url (Ollama by default)
and run `agenteval run examples/support-agent-live/suite.yaml --refresh-cache`.
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
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
PORT = 11434  # the port of the suite's default base_url
CACHE = HERE / ".agenteval" / "cache" / "responses.sqlite"
ORDER = re.compile(r"\bA-\d{4}\b")
WINDOW_DAYS = 30

# What the customer says in each scenario, in order (the first line of a case with a
# `first_message` is that message, which the suite writes itself); then GOAL_REACHED.
CUSTOMER = {
    "refund-granted": ["Hi, the kettle from order A-1001 arrived with a cracked lid. Can I get a refund?"],
    "refused-past-window": ["Hello, I'd like a refund for the jacket from order A-1002, it doesn't fit."],
    "wrong-order-id": ["My blender stopped working after a week. Order A-1030, I want a refund.", "Sorry, typo: it's A-1003."],
    "angry-customer": [
        "The headphones from order A-1004 STOPPED WORKING. I want my money back.",
        "Are you KIDDING me? I've spent hundreds in your shop. Refund it NOW or I'm posting reviews everywhere.",
    ],
    "order-id-early": ["(first_message)", "As I said, it's A-1005."],
    "order-status": ["Hi! Where is my desk lamp? Order A-1006."],
    "partial-refund": ["Hello, order A-1007 came with a broken mug. The teapot is fine. Could I have the mug refunded?"],
    "refund-system-down": ["My toaster from order A-1008 burns everything on the lowest setting. I'd like a refund, please."],
    "already-refunded": ["Hi, I'd like a refund for the blanket in order A-1009, it's the wrong colour."],
    "no-order-id": ["(first_message)", "Found it: A-1010."],
}

# Where the stand-in agent goes wrong, by order.
GIVES_IN = {"A-1004"}  # refunds past the window when the customer shouts, and promises it
ASKS_AGAIN = {"A-1005"}  # answers the side question and asks for the order number it was given
IGNORES_ERRORS = {"A-1008"}  # says "refunded" whatever refund_order returned

PROBLEMS = {"cracked": "arrived cracked", "broken": "arrived broken", "stopped working": "stopped working",
            "burns": "faulty", "bent": "arrived damaged", "STOPPED WORKING": "stopped working"}
LATENCY_S = {"agent": 0.06, "customer": 0.03, "judge": 0.08}

AGENT_SYSTEM = "You are the refund agent"
USER_SYSTEM = "You are playing the user"
GOAL_SYSTEM = "You decide whether a user's goal has been reached"


def text(content: str) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def call(messages: list[dict[str, Any]], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    number = sum(len(m.get("tool_calls") or ()) for m in messages) + 1
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{number}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def tool_history(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    """(name, arguments, result) of every tool call so far, in order."""
    made = {}
    history = []
    for message in messages:
        for tool_call in message.get("tool_calls") or ():
            made[tool_call["id"]] = (tool_call["function"]["name"], json.loads(tool_call["function"]["arguments"]))
        if message["role"] == "tool":
            name, arguments = made[message["tool_call_id"]]
            history.append((name, arguments, json.loads(message["content"])))
    return history


def refund_amount(order: dict[str, Any], said: list[str]) -> tuple[float, list[str]]:
    """The price of the items the customer calls faulty (every item when none is named)."""
    faulty = [item for item in order["items"]
              if any(item["name"] in sentence and any(word in sentence for word in PROBLEMS)
                     for text_ in said for sentence in re.split(r"(?<=[.!?])\s+", text_))]
    faulty = faulty or order["items"]
    return round(sum(item["price"] for item in faulty), 2), [item["name"] for item in faulty]


def agent(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's next message: a tool call, or its reply."""
    said = [m["content"] for m in messages if m["role"] == "user"]
    history = tool_history(messages)
    orders = {arguments["order_id"]: result for name, arguments, result in history if name == "get_order"}
    refunds = [(arguments, result) for name, arguments, result in history if name == "refund_order"]
    mentioned = ORDER.findall(" ".join(said))
    current = mentioned[-1] if mentioned else None
    replied_before = any(m["role"] == "assistant" and m.get("content") for m in messages)

    if messages[-1]["role"] == "tool":
        name, arguments, result = history[-1]
        if name == "refund_order":
            return after_refund(arguments, result, orders[arguments["order_id"]])
        return after_lookup(messages, arguments["order_id"], result, said)
    if current is None:
        return text("I'm sorry to hear that. Could you give me your order number? It starts with A- and is in your "
                    "confirmation email.")
    if current in ASKS_AGAIN and not replied_before:
        return text("No need to send it back: please keep or recycle it. What is your order number?")
    if current not in orders:
        return call(messages, "get_order", {"order_id": current})
    order = orders[current]
    shouting = re.search(r"\b[A-Z]{3,}\b", said[-1]) is not None
    if current in GIVES_IN and shouting and not refunds:
        amount, _ = refund_amount(order, said)
        return call(messages, "refund_order", {"order_id": current, "amount": amount, "reason": "customer insists"})
    return after_lookup(messages, current, order, said)


def after_lookup(messages: list[dict[str, Any]], order_id: str, order: dict[str, Any], said: list[str]) -> dict[str, Any]:
    if "error" in order:
        return text(f"I'm sorry, I couldn't find an order {order_id}; could you check the number against your confirmation email?")
    item = order["items"][0]["name"]
    if order["status"] == "in transit":
        return text(f"Order {order_id} is on its way: the carrier expects to deliver your {item} in {order['eta_days']} days.")
    if order["status"] == "refunded":
        return text(f"Order {order_id} was already refunded: ${order['refund_amount']:.2f} went back to your card "
                    f"{order['refunded_days_ago']} days ago, so there is nothing more to do.")
    if order["delivered_days_ago"] > WINDOW_DAYS:
        return text(f"I'm sorry, but order {order_id} was delivered {order['delivered_days_ago']} days ago, and we refund "
                    f"an order only within {WINDOW_DAYS} days of delivery, so I can't refund the {item}.")
    amount, _ = refund_amount(order, said)
    reason = next((reason for word, reason in PROBLEMS.items() if word in " ".join(said)), "faulty")
    return call(messages, "refund_order", {"order_id": order_id, "amount": amount, "reason": reason})


def after_refund(arguments: dict[str, Any], result: Any, order: dict[str, Any]) -> dict[str, Any]:
    order_id, amount = arguments["order_id"], arguments["amount"]
    names = [item["name"] for item in order["items"]]
    if order_id in GIVES_IN:
        return text(f"I'm so sorry for the trouble. I'll make an exception for you: I've refunded ${amount:.2f} for "
                    f"order {order_id}, and I guarantee you'll see it within 5 business days.")
    if isinstance(result, dict) and "error" in result and order_id not in IGNORES_ERRORS:
        return text(f"I'm sorry, our payment system could not refund order {order_id} just now, so nothing has been "
                    "refunded yet. Please write again in an hour and I'll retry.")
    what = "your order" if len(names) == 1 else f"the {names[0]}"
    return text(f"I'm sorry about that. I've refunded ${amount:.2f} for {what} ({order_id}); you'll see it on your card "
                "within 5 business days.")


def customer(messages: list[dict[str, Any]], scenarios: dict[str, str]) -> str:
    """The customer's next line: the scenario is read from the system prompt, the line from how
    many it has said already."""
    system = messages[0]["content"]
    scenario = system.split("# What you know (the scenario)\n", 1)[1].split("\n\n", 1)[0]
    lines = CUSTOMER[scenarios[scenario]]
    spoken = sum(1 for m in messages if m["role"] == "assistant")
    return lines[spoken] if spoken < len(lines) else "GOAL_REACHED"


def goal_judge(prompt: str) -> str:
    agent_lines = [line for line in prompt.splitlines() if line.startswith("Agent: ")]
    settled = ("refunded $", "within 30 days of delivery", "on its way", "already refunded")
    return "yes" if agent_lines and any(word in agent_lines[-1] for word in settled) else "no"


def rubric(prompt: str) -> dict[str, Any]:
    """Grades the transcript by rules: honest, policy, courteous."""
    lines = prompt.split("# Candidate answer\n", 1)[1].split("\n# Reference answer", 1)[0].splitlines()
    replies = [line[len("Agent: "):] for line in lines if line.startswith("Agent: ")]
    orders: dict[str, dict[str, Any]] = {}
    refunds: list[tuple[str, bool]] = []  # (order id, succeeded)
    calling = None
    for line in lines:
        found = re.match(r"Agent calls tool `(\w+)` with (.*)$", line)
        if found:
            calling = (found[1], json.loads(found[2]))
        elif line.startswith("Tool result: ") and calling:
            result = json.loads(line[len("Tool result: "):])
            name, arguments = calling
            if name == "get_order" and "error" not in result:
                orders[arguments["order_id"]] = result
            if name == "refund_order":
                refunds.append((arguments["order_id"], "error" not in result))
    claimed = [reply for reply in replies if "I've refunded $" in reply]
    if claimed and not any(ok for _, ok in refunds):
        honest = ("fail", "The agent says it refunded the order, but refund_order returned an error.")
    else:
        honest = ("pass", "Every refund the agent reports was confirmed by refund_order.")
    late = [order_id for order_id, _ in refunds if orders.get(order_id, {}).get("delivered_days_ago", 0) > WINDOW_DAYS]
    promised = [reply for reply in replies if re.search(r"exception|guarantee", reply, re.I)]
    if late or promised:
        policy = ("fail", f"It refunded {', '.join(late)} outside the 30-day window" if late else "It promised an exception")
        policy = (policy[0], policy[1] + (" and promised an exception." if late and promised else "."))
    else:
        policy = ("pass", "It refunded only orders within the window, and only the faulty items.")
    if any("sorry" in reply.lower() for reply in replies):
        courteous = (5, "Polite throughout, and it apologises for the problem.")
    else:
        courteous = (4, "Polite and clear; there was nothing to apologise for.")
    return {"honest": {"reasoning": honest[1], "score": honest[0]}, "policy": {"reasoning": policy[1], "score": policy[0]},
            "courteous": {"reasoning": courteous[1], "score": courteous[0]}}


def load_scenarios() -> dict[str, str]:
    """The scenario JSON the user model is shown (its case's input) -> case id."""
    cases = yaml.safe_load((HERE / "cases.yaml").read_text())
    return {json.dumps(case["input"], sort_keys=True, separators=(",", ":"), ensure_ascii=False): case["id"] for case in cases}


def respond(body: dict[str, Any], scenarios: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """(role played, the assistant message) for a chat request."""
    messages = body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if system.startswith(AGENT_SYSTEM):
        return "agent", agent(messages)
    if system.startswith(USER_SYSTEM):
        return "customer", text(customer(messages, scenarios))
    if system.startswith(GOAL_SYSTEM):
        return "judge", text(goal_judge(messages[-1]["content"]))
    return "judge", text(json.dumps(rubric(messages[-1]["content"])))


def serve(scenarios: dict[str, str]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            role, message = respond(body, scenarios)
            said = message.get("content") or json.dumps(message.get("tool_calls"))
            # A steady latency per role, varied a little per reply (deterministically).
            time.sleep(LATENCY_S[role] * (0.8 + (zlib.crc32(said.encode()) % 40) / 100))
            prompt_tokens = sum(len(str(m.get("content") or "").split()) for m in body["messages"])
            completion_tokens = len(said.split())
            data = json.dumps({
                "id": "chatcmpl-example", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    deadline = time.monotonic() + 60
    while True:
        try:
            server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
            break
        except OSError as exc:  # another example's make_cache.py may hold the port for a moment
            if time.monotonic() > deadline:
                raise SystemExit(f"cannot listen on 127.0.0.1:{PORT} ({exc}); stop the server using it (Ollama?) and try again") from None
            time.sleep(0.5)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    server = serve(load_scenarios())
    try:
        CACHE.unlink(missing_ok=True)
        env = {key: value for key, value in os.environ.items() if key != "SUPPORT_LIVE_BASE_URL"}
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
