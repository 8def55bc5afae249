"""The span receiver (`traces: {receive: true}`): OTLP/JSON requests taken per second, and the time a
case takes to collect its spans, against a bare http.server that only reads each body.

    python benchmarks/bench_receiver.py [--requests 400] [--spans 50]

One client on 127.0.0.1 sends `--requests` OTLP/JSON requests of `--spans` GenAI chat spans each, one
after another on one keep-alive connection, all for the trace one case waits for; then the case
collects them (every span read and walked from the case's traceparent). Wall time of the best of 3.
"""

from __future__ import annotations

import argparse
import json
import resource
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def bodies(trace_id: str, parent_id: str, requests: int, spans: int) -> list[bytes]:
    made = []
    for batch in range(requests):
        found = [{
            "traceId": trace_id, "spanId": f"{batch * spans + n + 1:016x}", "parentSpanId": parent_id, "name": "chat gpt-4o-mini",
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + n), "endTimeUnixNano": str(1_700_000_000_000_500_000 + n),
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                           {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}}],
        } for n in range(spans)]
        made.append(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": found}]}]}).encode())
    return made


def post_all(endpoint: str, sent: list[bytes]) -> float:
    import httpx

    with httpx.Client() as client:
        started = time.perf_counter()
        for body in sent:
            reply = client.post(endpoint, content=body, headers={"Content-Type": "application/json"})
            assert reply.status_code == 200, reply.text
        return time.perf_counter() - started


def bare(sent: list[bytes]) -> float:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            import socket

            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        return post_all(f"http://127.0.0.1:{server.server_address[1]}/v1/traces", sent)
    finally:
        server.shutdown()
        server.server_close()


def receiver(requests: int, spans: int) -> tuple[float, float, int]:
    from agenteval.traces.propagation import new_traceparent
    from agenteval.traces.receiver import SpanReceiver

    taken = SpanReceiver(16, 1024, requests * spans)
    try:
        traceparent = new_traceparent()
        ticket = taken.expect(traceparent)
        _, trace_id, parent_id, _ = traceparent.split("-")
        posted = post_all(taken.endpoint, bodies(trace_id, parent_id, requests, spans))
        started = time.perf_counter()
        found, problem = taken.collect(ticket, 1)
        assert problem is None and len(found) == requests * spans, problem
        return posted, time.perf_counter() - started, len(found)
    finally:
        taken.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--spans", type=int, default=50)
    args = parser.parse_args()
    sent = bodies("ab" * 16, "cd" * 8, args.requests, args.spans)
    size = sum(map(len, sent)) / len(sent)
    plain = min(bare(sent) for _ in range(3))
    runs = [receiver(args.requests, args.spans) for _ in range(3)]
    posted = min(run[0] for run in runs)
    collected = min(run[1] for run in runs)
    print(f"{args.requests} requests of {args.spans} spans ({size / 1024:.1f} kB each)")
    print("| mode | requests/s | ms per request |")
    print("|---|---:|---:|")
    print(f"| bare: http.server reads each body | {args.requests / plain:,.0f} | {plain / args.requests * 1000:.2f} |")
    print(f"| agenteval: receive, parse and hold each span | {args.requests / posted:,.0f} | {posted / args.requests * 1000:.2f} |")
    print(f"collect: {runs[0][2]:,} spans read and walked in {collected * 1000:.0f} ms; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
