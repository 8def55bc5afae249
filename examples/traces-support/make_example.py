"""Write this example's trace export and its judge's response cache, so the suite runs offline.

The export, spans.jsonl, is what a support agent's production tracing recorded: the agent is an
ordinary tool loop on the openai SDK, instrumented by `openinference-instrumentation-openai`
(its model calls) and OpenInference's tracer helpers (its agent and tool spans), exported by the
OTLP exporter's own encoder as OTLP/JSON, one document per conversation. Its model is a scripted
stand-in on 127.0.0.1 (tests/llm_server.py), playing four conversations: one right, one with two
tools, one that looks up the wrong order, one that claims a refund it never made.

The judge replies in the committed cache were written here, not by a model: a scripted stand-in
judge on 127.0.0.1:11434 (where the suite looks by default) passes `grounded` when a tool was
called and every number in the reply is in a tool call or its result, and `on_topic` when the
reply names the customer's order. The
script rewrites spans.jsonl, removes the old cache, runs the suite once against that judge
(every request is sent and stored) and stops it.

    python examples/traces-support/make_example.py     # needs the dev extra (openai, openinference)

To have a real model judge instead, serve it at the suite's base_url (Ollama by default) and run
`agenteval run examples/traces-support/suite.yaml --refresh-cache`.
"""

from __future__ import annotations

import base64
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
sys.path.insert(0, str(HERE.parents[1] / "tests"))  # the stand-in model server

from llm_server import LLMServer, calls  # noqa: E402

PORT = 11434  # the port of the suite's default judge base_url
CACHE = HERE / ".agenteval" / "cache" / "responses.sqlite"
ORDERS = {
    3: {"status": "delivered", "total": 18.0},
    6: {"status": "in transit", "eta": "Friday"},
    7: {"status": "delivered", "delivered_on": "3 March"},
    9: {"status": "delivered", "delivered_on": "1 March"},
    12: {"status": "processing", "total": 54.0},
}
TOOLS = [
    {"type": "function", "function": {"name": name, "description": description,
                                      "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}}
    for name, description in (("get_order", "Find an order."), ("cancel_order", "Cancel an order."), ("issue_refund", "Refund an order."))
]


def run_tool(name: str, arguments: dict) -> dict:
    order = ORDERS.get(arguments["id"], {"error": "no such order"})
    if name == "cancel_order":
        return {"id": arguments["id"], "status": "cancelled"}
    if name == "issue_refund":
        return {"id": arguments["id"], "refunded": order.get("total")}
    return order


def from_result(template: str):
    """A model reply written from the last tool result it was sent."""
    def reply(body: dict) -> dict:
        result = json.loads(body["messages"][-1]["content"])
        return {"role": "assistant", "content": template.format(**result)}
    return reply


# session id -> (the customer's message, the stand-in model's replies in turn)
CONVERSATIONS = {
    "session-7": ("Where is order 7?", [
        calls(("get_order", {"id": 7})), from_result("Order 7 was {status} on {delivered_on}."),
    ]),
    "session-12": ("Please cancel order 12.", [
        calls(("get_order", {"id": 12})), calls(("cancel_order", {"id": 12})),
        from_result("Order 12 is {status}; you will not be charged."),
    ]),
    "session-9": ("Where is order 9?", [  # looks up the wrong order, and reports it
        calls(("get_order", {"id": 6})), from_result("Your order is {status} and arrives on {eta}."),
    ]),
    "session-3": ("I want a refund for order 3.", [  # claims a refund it never made
        {"role": "assistant", "content": "I have refunded 18 euros for order 3 to your card."},
    ]),
}


def record(out: Path) -> None:
    """Run the agent on each conversation under real instrumentation; write the OTLP/JSON export."""
    import openai
    from google.protobuf.json_format import MessageToDict
    from openinference.instrumentation import TracerProvider, using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("support-agent")
    with LLMServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="example-key")
        for session, (question, replies) in CONVERSATIONS.items():
            server.play(*replies)
            with using_session(session), tracer.start_as_current_span("support-agent", openinference_span_kind="agent") as agent:
                agent.set_input(question)
                messages = [{"role": "system", "content": "You are a support agent. Use the tools."}, {"role": "user", "content": question}]
                while True:
                    message = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS).choices[0].message
                    if not message.tool_calls:
                        break
                    messages.append(message.model_dump(exclude_none=True))
                    for call in message.tool_calls:
                        arguments = json.loads(call.function.arguments)
                        with tracer.start_as_current_span(call.function.name, openinference_span_kind="tool") as span:
                            span.set_tool(name=call.function.name, parameters=TOOLS[0]["function"]["parameters"])
                            span.set_input(arguments)
                            span.set_attribute("tool_call.id", call.id)
                            result = run_tool(call.function.name, arguments)
                            span.set_output(result)
                        messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
                agent.set_output(message.content)
    by_trace: dict[int, list] = {}
    for span in exporter.get_finished_spans():
        by_trace.setdefault(span.context.trace_id, []).append(span)
    lines = []
    for group in by_trace.values():
        document = MessageToDict(encode_spans(group))
        for resource in document.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if span.get(key):
                            span[key] = base64.b64decode(span[key]).hex()  # OTLP/JSON ids are hex
        lines.append(json.dumps(document, sort_keys=True))
    out.write_text("\n".join(lines) + "\n")


def judged(prompt: str) -> dict:
    """The stand-in judge: grounded iff a tool was called and every number of the reply is in a
    tool call or its result; on topic iff the reply names the order the customer asked about."""
    question = prompt.split("# Input\n", 1)[1].split("\n\n# ", 1)[0]
    candidate = json.loads(prompt.split("# Candidate answer\n", 1)[1].split("\n\n# Reference answer", 1)[0])
    reply = candidate["content"] or ""
    results = " ".join(json.dumps([call["arguments"], call["result"]]) for call in candidate["tool_calls"])
    numbers = re.findall(r"\d+", reply)
    unsupported = [number for number in numbers if number not in re.findall(r"\d+", results)]
    asked = re.findall(r"\d+", question)
    grounded = {"reasoning": "Every figure comes from a tool call or its result." if not unsupported else
                f"{', '.join(unsupported)} appear(s) in no tool call or result.", "score": "fail" if unsupported or not results else "pass"}
    if not results:
        grounded["reasoning"] = "No tool was called: nothing in the reply is backed by a result."
    on_topic = {"reasoning": "Names the order asked about." if asked and asked[0] in numbers else "Does not name the order asked about.",
                "score": "pass" if asked and asked[0] in numbers else "fail"}
    return {"grounded": grounded, "on_topic": on_topic}


def serve() -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            content = json.dumps(judged(body["messages"][1]["content"]))
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
    record(HERE / "spans.jsonl")
    server = serve()
    try:
        CACHE.unlink(missing_ok=True)
        env = {key: value for key, value in os.environ.items() if key != "TRACES_JUDGE_BASE_URL"}
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
    print(f"wrote spans.jsonl and {CACHE.relative_to(HERE.parent.parent)} ({CACHE.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
