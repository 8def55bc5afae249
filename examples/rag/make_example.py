"""Write this example's cases and its judge's response cache, so the suite runs offline.

The retriever's rankings and the generator's answers below are recorded by hand, to show one
failure each (a chunk not retrieved, a fact invented, the right chunk ranked low, an answer that
wanders). The judge replies in the committed cache were written here, not by a model: a scripted
stand-in judge on 127.0.0.1:11434 (where the suite looks by default) splits each text into
sentences and decides each by word overlap with the context, much as a careful model would on
texts this plain. The script rewrites cases.jsonl from documents.jsonl, removes the old cache,
runs the suite once against that judge (every request is sent and stored) and stops it.

    python examples/rag/make_example.py

To have a real model judge instead, serve it at the suite's base_url (Ollama by default) and run
`agenteval run examples/rag/suite.yaml --refresh-cache`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = 11434  # the port of the suite's default base_url
CACHE = HERE / ".agenteval" / "cache" / "responses.sqlite"

# id -> (question, relevant ids with grades, the retriever's ranking, the generator's answer, the reference answer)
CASES = {
    "refund": (
        "Can I get my money back if I cancel an online ticket?", {"doc-refunds": 2},
        ["doc-refunds", "doc-seats", "doc-delays"],
        "Yes. Online tickets are refunded in full up to 24 hours before departure.",
        "Online tickets are refunded in full up to 24 hours before departure. After that, 50 percent is refunded until departure.",
    ),
    "dog": (  # the chunk about animals is not retrieved, and the generator fills the gap itself
        "Does my dog need a ticket?", {"doc-pets": 2},
        ["doc-children", "doc-luggage", "doc-bikes"],
        "No. Dogs travel free of charge on all trains.",
        "Dogs on a lead pay a child fare. Small pets in a closed carrier travel free.",
    ),
    "luggage": (  # the right chunk, and an invented weight limit
        "How much luggage can I bring?", {"doc-luggage": 2},
        ["doc-luggage", "doc-bikes", "doc-food"],
        "You may bring two large suitcases and one piece of hand luggage. Each suitcase may weigh up to 23 kg.",
        "Each passenger may bring two large suitcases and one piece of hand luggage. There is no weight limit for luggage.",
    ),
    "delay": (  # the right chunk, ranked third
        "What compensation do I get if my train is two hours late?", {"doc-delays": 2},
        ["doc-history", "doc-food", "doc-delays"],
        "From 120 minutes late you receive 50 percent of the ticket price back.",
        "From 120 minutes late, passengers receive 50 percent of the ticket price back.",
    ),
    "bike": (
        "What does it cost to take a bicycle on an intercity train?", {"doc-bikes": 2, "doc-seats": 1},
        ["doc-bikes", "doc-luggage", "doc-seats"],
        "On intercity trains a bicycle reservation is required and costs 9 euros.",
        "On intercity trains a bicycle reservation is required and costs 9 euros.",
    ),
    "children": (  # the answer wanders off to the bistro car
        "Do children travel free?", {"doc-children": 2},
        ["doc-children", "doc-food", "doc-refunds"],
        "Children under 6 travel free. Children from 6 to 14 pay half the adult fare. "
        "Intercity trains have a bistro car serving hot meals until 21:00.",
        "Children under 6 travel free. Children from 6 to 14 pay half the adult fare.",
    ),
}

STOP = set(
    "a an and any are as at be by can do does for from get i if in is it my of on or the their there they this to up "
    "what when which who will with you your yes no much may all each".split()
)
SAME = {"bicycle": "bike", "suitcase": "luggage", "dog": "pet", "kid": "child", "children": "child", "money": "refund",
        "back": "refund", "refunded": "refund", "compensation": "refund", "late": "delay", "hour": "minute", "minutes": "minute"}


def words(text: str) -> set[str]:
    found = set()
    for word in re.findall(r"[a-z0-9:]+", text.lower()):
        word = SAME.get(word, word)
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = SAME.get(word[:-1], word[:-1])
        if word not in STOP:
            found.add(word)
    return found


def sentences(text: str) -> list[str]:
    """The claims of a text: its sentences that assert something (not a bare "Yes.")."""
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if len(words(s)) > 1]


def passages(context: list[str]) -> list[str]:
    """What a claim may rest on: each sentence, and each sentence with the one before it ("they" in
    the second sentence names what the first one does)."""
    return context + [f"{a} {b}" for a, b in zip(context, context[1:])]


def support(claim: str, context: list[str]) -> dict:
    """supported: a passage holds 3/4 of the claim's words and every number of it; contradicted: one
    holds the words but other numbers; else not_found."""
    mine, numbers = words(claim), set(re.findall(r"\d+", claim))
    near = [p for p in passages(context) if len(mine & words(p)) >= 0.75 * len(mine)]
    for passage in sorted(near, key=len):
        if numbers <= set(re.findall(r"\d+", passage)):
            return {"verdict": "supported", "evidence": passage}
    if near:
        return {"verdict": "contradicted", "evidence": near[0]}
    return {"verdict": "not_found", "evidence": ""}


def section(prompt: str, title: str) -> str:
    found = re.search(rf"# {title}\n(.*?)(?:\n\n# |\Z)", prompt, re.S)
    return found.group(1) if found else ""


def chunks(prompt: str) -> list[str]:
    return [c for c in re.split(r"\n\n(?=\[\d+\] )", section(prompt, "Retrieved context")) if c]


def judged(prompt: str, schema: str) -> dict:
    """The stand-in judge's reply to one prompt of the suite's judges (told apart by what they show)."""
    question = section(prompt, "Question")
    context = [s for chunk in chunks(prompt) for s in sentences(re.sub(r"^\[\d+\] ", "", chunk))]
    if schema == "chunk_verdicts":  # context_precision: is each chunk used by the reference?
        reference = sentences(section(prompt, "Reference answer"))
        verdicts = []
        for number, chunk in enumerate(chunks(prompt), 1):
            inside = sentences(re.sub(r"^\[\d+\] ", "", chunk))
            used = [support(claim, inside) for claim in reference]
            quote = next((u["evidence"] for u in used if u["verdict"] == "supported"), "")
            verdicts.append({"chunk": number, "verdict": "useful" if quote else "not_useful", "evidence": quote})
        return {"verdicts": verdicts}
    if "# Answer" in prompt and "# Retrieved context" in prompt:  # faithfulness
        claims = sentences(section(prompt, "Answer"))
        decided = [support(claim, context) for claim in claims]
    elif "# Reference answer" in prompt:  # context_recall
        claims = sentences(section(prompt, "Reference answer"))
        decided = [support(claim, context) for claim in claims]
    elif "# Answer" in prompt:  # answer_relevance
        claims = sentences(section(prompt, "Answer"))
        asked = words(question)
        decided = [{"verdict": "relevant" if words(c) & asked else "irrelevant", "evidence": question if words(c) & asked else ""}
                   for c in claims]
    else:  # context_relevance
        claims = context
        asked = words(question)
        decided = [{"verdict": "relevant" if words(c) & asked else "irrelevant", "evidence": c if words(c) & asked else ""}
                   for c in claims]
    return {"claims": claims, "verdicts": [{"claim": i, **d} for i, d in enumerate(decided, 1)]}


def write_cases() -> None:
    documents = {doc["id"]: doc for doc in map(json.loads, (HERE / "documents.jsonl").read_text().splitlines())}
    lines = []
    for case_id, (question, relevant, ranking, answer, reference) in CASES.items():
        retrieved = [{"id": doc, "text": documents[doc]["text"]} for doc in ranking]
        lines.append(json.dumps({
            "id": case_id, "input": {"question": question},
            "expected": {"relevant": relevant, "answer": reference},
            "output": {"answer": answer, "retrieved": retrieved},
        }))
    (HERE / "cases.jsonl").write_text("\n".join(lines) + "\n")


def serve() -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = body["messages"][1]["content"]
            content = json.dumps(judged(prompt, body["response_format"]["json_schema"]["name"]))
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
            data = json.dumps({
                "id": "chatcmpl-example", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(content.split()),
                          "total_tokens": prompt_tokens + len(content.split())},
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
    write_cases()
    server = serve()
    try:
        CACHE.unlink(missing_ok=True)
        env = {key: value for key, value in os.environ.items() if key != "RAG_JUDGE_BASE_URL"}
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
