"""Writes cases.jsonl: 30 recorded support replies (run once; the file is committed)."""

import json
from pathlib import Path

REPLIES = [
    ("Sorry about the delay! I've issued the refund for order A-{n}; it will show within 5 days.", "refund issued"),
    ("Thank you for waiting. Your order A-{n} ships tomorrow and I will send the tracking number.", "ships tomorrow"),
    ("Refund for A-{n} issued.", "refund issued"),
    ("Whatever, order A-{n} is not our fault. Read the FAQ.", "escalated"),
    ("Thanks for reaching out. Order A-{n} was delivered yesterday.", "delivered"),
    ("Order A-{n} is delayed. Calm down, it will come.", "delayed"),
]

with Path(__file__).with_name("cases.jsonl").open("w") as out:
    for i in range(30):
        reply, expected = REPLIES[i % len(REPLIES)]
        n = 1000 + i
        out.write(json.dumps({"id": f"ticket-{i:02d}", "input": {"message": f"Where is my order A-{n}?"},
                              "expected": expected, "output": reply.format(n=n), "tags": [["refund", "shipping", "other"][i % 3]]}) + "\n")
