"""Hostile input on the way traces come into a run: the span receiver (`traces: {receive: true}`)
flooded, sent malformed OTLP, an oversized body, a sender that stalls, parent ids in a cycle;
`--traces` and `import traces` given files that cannot be read; bad `traces:` keys. Each is a clear
refusal to the sender and that case's error, or exit 2 before anything runs; every case is written."""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import MEASURE, read_jsonl, run_cli, write

SENDER = r'''
"""A system under test that sends the receiver what its case input says, records the replies, answers."""
import json, os, sys, urllib.request, urllib.error
case = json.load(sys.stdin)
endpoint = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
_, trace_id, parent_id, _ = os.environ["TRACEPARENT"].split("-")


def span(number, parent, **extra):
    return {"traceId": trace_id, "spanId": f"{number + 1:016x}", "parentSpanId": parent, "name": "chat",
            "startTimeUnixNano": str(1000 + number), "endTimeUnixNano": str(2000 + number),
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}, *extra.get("attributes", [])]}


def document(spans):
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()


def send(body, content_type="application/json"):
    request = urllib.request.Request(endpoint, data=body, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:  # the receiver closed the connection on an oversized body
        return None, str(exc)


mode = case["mode"]
replies = []
if mode == "malformed":
    replies.append(send(b"{not json"))
    replies.append(send(json.dumps({"resourceSpans": 5}).encode()))
elif mode == "protobuf-garbage":
    replies.append(send(b"\xff\xff\xff\xff garbage", "application/x-protobuf"))
elif mode == "oversized":
    padding = [{"key": "pad", "value": {"stringValue": "x" * 80_000}}]
    replies.append(send(document([span(0, parent_id, attributes=padding)])))
elif mode == "flood":
    for batch in range(10):
        replies.append(send(document([span(batch * 100 + n, parent_id) for n in range(100)])))
elif mode == "cycle":  # a child of the case's span, then two spans that name each other as parent
    replies.append(send(document([span(0, parent_id), span(1, f"{3:016x}"), span(2, f"{2:016x}")])))
else:  # fine: one model span
    replies.append(send(document([span(0, parent_id)])))
open(f"replies-{case['name']}.json", "w").write(json.dumps(replies))
print(json.dumps({"content": "done"}))
'''

SUITE = """
name: hostile-receiver
target: {{type: command, command: [{python}, sender.py]}}
traces: {{receive: true, wait_seconds: 2}}
limits: {{receive_body_mb: 0.05, trace_spans: 500, receive_mb: {held}}}
evaluators:
  - {{type: spans, checks: [{{kind: model, min_count: 1}}]}}
cases:
{cases}
"""


def run_receiver(tmp_path: Path, modes: list[str], held: float = 8) -> dict[str, dict]:
    write(tmp_path, "sender.py", SENDER)
    cases = "".join(f"  - {{id: {mode}, input: {{mode: {mode}, name: {mode}}}}}\n" for mode in modes)
    write(tmp_path, "s.yaml", SUITE.format(python=sys.executable, held=held, cases=cases))
    out = tmp_path / "out.jsonl"
    done = run_cli("run", tmp_path / "s.yaml", "-o", out, "-q", "--workers", "3")
    assert "Traceback" not in done.stderr, done.stderr
    lines = {line["case_id"]: line for line in read_jsonl(out)}
    assert set(lines) == set(modes)  # every case written, nothing lost
    return lines


def replies(tmp_path: Path, name: str) -> list:
    return json.loads((tmp_path / f"replies-{name}.json").read_text())


def test_malformed_otlp_is_a_400_to_the_sender_and_that_cases_error(tmp_path):
    lines = run_receiver(tmp_path, ["malformed", "protobuf-garbage"])
    statuses = [status for status, _ in replies(tmp_path, "malformed")]
    assert statuses == [400, 400]
    assert "the body is not JSON" in replies(tmp_path, "malformed")[0][1]
    assert 'not an OTLP/JSON trace export (expected {\\"resourceSpans\\": [...]})' in replies(tmp_path, "malformed")[1][1]
    assert replies(tmp_path, "protobuf-garbage")[0][0] in (400, 415)  # 415 when opentelemetry-proto is absent
    error = lines["malformed"]["error"]
    assert error.startswith("traces: the span receiver refused spans while this case ran, so its trace may be incomplete: 400: ")
    assert lines["protobuf-garbage"]["verdict"] == "error"


def test_an_oversized_body_is_a_413_naming_the_limit_and_that_cases_error(tmp_path):
    lines = run_receiver(tmp_path, ["oversized"])
    status, text = replies(tmp_path, "oversized")[0]
    assert status in (413, None), text  # 413, or the connection closed before the sender read it
    assert lines["oversized"]["error"].startswith(
        "traces: the span receiver refused spans while this case ran, so its trace may be incomplete: 413: a request of ")
    assert lines["oversized"]["error"].endswith(" bytes is larger than the receiver takes (limit `limits.receive_body_mb: 0.05`)")


def test_a_flood_of_spans_past_the_trace_limit_is_a_413_and_that_cases_error_while_others_are_scored(tmp_path):
    lines = run_receiver(tmp_path, ["flood", "fine"])
    statuses = [status for status, _ in replies(tmp_path, "flood")]
    assert statuses[:5] == [200] * 5 and statuses[5] == 413  # 500 spans held, the 501st refused
    assert re.fullmatch(
        r"traces: the span receiver refused spans while this case ran, so its trace may be incomplete: "
        r"trace [0-9a-f]{32} has more than 500 spans \(limit `limits.trace_spans: 500`; raise it in the suite's `limits:` if this is expected\)",
        lines["flood"]["error"]), lines["flood"]["error"]
    assert lines["fine"]["verdict"] in ("pass", "error")  # (it may have run while the flood was refused)


def test_spans_past_what_the_receiver_may_hold_are_refused_and_memory_stays_bounded(tmp_path):
    write(tmp_path, "sender.py", SENDER)
    lines = run_receiver(tmp_path, ["flood"], held=0.001)
    statuses = [status for status, _ in replies(tmp_path, "flood")]
    assert 413 in statuses
    assert "(limit `limits.receive_mb: 0.001`)" in lines["flood"]["error"]


def test_received_parent_ids_in_a_cycle_end_the_walk_and_the_case_is_scored(tmp_path):
    lines = run_receiver(tmp_path, ["cycle"])
    assert lines["cycle"]["verdict"] == "pass", lines["cycle"]
    assert [span["span_id"] for span in lines["cycle"]["output"]["spans"]] == [f"{1:016x}"]  # the cycle is no child of the case


def test_a_sender_that_stalls_mid_body_is_cut_off_and_others_are_still_received():
    from agenteval.traces.propagation import new_traceparent
    from agenteval.traces.receiver import SpanReceiver

    receiver = SpanReceiver(1, 1, 100, request_seconds=0.5)
    try:
        traceparent = new_traceparent()
        ticket = receiver.expect(traceparent)
        port = int(receiver.endpoint.split(":")[2].split("/")[0])
        stalled = socket.create_connection(("127.0.0.1", port))
        stalled.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"resou")
        _, trace_id, parent_id, _ = traceparent.split("-")
        body = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": trace_id, "spanId": "01" * 8, "parentSpanId": parent_id, "name": "chat",
                "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}]}]}]}
        assert httpx.post(receiver.endpoint, json=body, timeout=5).status_code == 200  # another sender is not held up
        started = time.monotonic()
        assert stalled.recv(100) == b""  # cut off: the connection is closed
        assert time.monotonic() - started < 5
        spans, problem = receiver.collect(ticket, 1)
        assert [span.span_id for span in spans] == ["01" * 8]
        assert problem == ("the span receiver refused spans while this case ran, so its trace may be incomplete: "
                           "400: the request body did not arrive in time")
    finally:
        receiver.close()


def test_a_gzip_bomb_is_refused_without_unpacking_it():
    import gzip

    from agenteval.traces.receiver import SpanReceiver

    receiver = SpanReceiver(1, 1, 100)
    try:
        bomb = gzip.compress(b"{" + b" " * (50 << 20) + b"}")  # 50 MB unpacked, 50 kB sent
        reply = httpx.post(receiver.endpoint, content=bomb, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"}, timeout=10)
        assert reply.status_code == 413 and "unpacks to more than the receiver takes" in reply.json()["error"]
        wrong = httpx.post(receiver.endpoint.replace("/v1/traces", "/v1/logs"), json={}, timeout=10)
        assert wrong.status_code == 404 and wrong.json() == {"error": "spans are received at /v1/traces"}
    finally:
        receiver.close()


@pytest.mark.parametrize("block,message", [
    ("{receive: true, port: -1}", "s.yaml:3: traces.port: must be >= 0, got -1"),
    ("{receive: true, port: 70000}", "s.yaml:3: traces.port: must be <= 65535, got 70000"),
    ("{receive: true, wait_seconds: .nan}", "s.yaml:3: traces.wait_seconds: must be a finite number, got nan"),
    ("{receive: true, wait_seconds: 0}", "s.yaml:3: traces.wait_seconds: must be > 0.0, got 0"),
    ("{receive: yes please}", "s.yaml:3: traces.receive: expected true or false, got 'yes please'"),
    ("{recieve: true}", "s.yaml:3: traces.recieve: unknown key 'recieve'; did you mean 'receive'?"),
])
def test_bad_traces_keys_are_refused_at_load(tmp_path, block, message):
    write(tmp_path, "s.yaml", f"name: s\ntarget: {{type: command, command: [echo]}}\ntraces: {block}\n"
          "evaluators: [{type: contains, reference: x}]\ncases: [{id: a}]\n")
    done = run_cli("validate", tmp_path / "s.yaml")
    assert done.returncode == 2 and done.stderr.splitlines()[0] == f"{tmp_path / message}", done.stderr


@pytest.mark.parametrize("limit,message", [
    ("receive_body_mb: .nan", "must be a finite number, got nan"),
    ("receive_mb: -1", "must be > 0.0, got -1"),
    ("trace_spans: 0", "must be > 0, got 0"),
    ("trace_document_mb: 100000", "must be <= 4096.0, got 100000"),
])
def test_bad_trace_limits_are_refused_at_load(tmp_path, limit, message):
    write(tmp_path, "s.yaml", f"name: s\nlimits: {{{limit}}}\ncases: [{{id: a, output: 1}}]\n")
    done = run_cli("validate", tmp_path / "s.yaml")
    assert done.returncode == 2 and done.stderr.splitlines()[0] == f"{tmp_path / 's.yaml'}:2: limits.{limit.split(':')[0]}: {message}", done.stderr


def test_a_receiver_port_already_taken_stops_the_run_before_any_case(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        write(tmp_path, "s.yaml", f"name: s\ntarget: {{type: command, command: [echo]}}\ntraces: {{receive: true, port: {port}}}\n"
              "evaluators: [{type: contains, reference: x}]\ncases: [{id: a}]\n")
        done = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "out.jsonl", "-q")
    assert done.returncode == 2, done.stderr
    assert f"error: traces.receive: cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_traces_option_on_a_folder_or_a_trace_of_a_million_spans(tmp_path):
    write(tmp_path, "s.yaml", "name: s\nevaluators: [{type: contains, path: content, reference: fine}]\ncases: cases.jsonl\n")
    trace = "ab" * 16
    write(tmp_path, "cases.jsonl", json.dumps({"id": trace}) + "\n")
    done = run_cli("run", tmp_path / "s.yaml", "--traces", tmp_path, "-o", tmp_path / "out.jsonl", "-q")
    assert done.returncode == 2 and f"error: --traces {tmp_path}: a folder" in done.stderr
    line = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": trace, "spanId": f"{n:016x}", "name": "s"} for n in range(2_000)]}]}]})
    (tmp_path / "big.jsonl").write_text((line + "\n") * 500)
    peak = tmp_path / "peak"
    import subprocess

    done = subprocess.run([*MEASURE, str(peak), sys.executable, "-m", "agenteval", "run", str(tmp_path / "s.yaml"),
                           "--traces", str(tmp_path / "big.jsonl"), "-o", str(tmp_path / "out.jsonl"), "-q"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr
    [result] = read_jsonl(tmp_path / "out.jsonl")
    assert result["error"].startswith(f"--traces: the trace with trace_id '{trace}' has 1000000 spans, more than the 10000")
    assert float(peak.read_text()) < 300


def test_import_traces_lists_what_cannot_be_read_and_writes_nothing_when_nothing_can(tmp_path):
    good = {"traceId": "cd" * 16, "spanId": "01" * 8, "name": "chat", "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]}
    neither = {"traceId": "ef" * 16, "spanId": "02" * 8, "name": "GET /"}
    lines = ["{not json", json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [neither]}]}]}),
             json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [good]}]}]})]
    (tmp_path / "spans.jsonl").write_text("\n".join(lines) + "\n")
    done = run_cli("import", "traces", tmp_path / "spans.jsonl", "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert [case["id"] for case in read_jsonl(tmp_path / "out" / "cases.jsonl")] == ["cd" * 16]
    assert f"not carried over: {tmp_path / 'spans.jsonl'}:1: document: not JSON (" in done.stderr
    assert f"not carried over: {tmp_path / 'spans.jsonl'}: trace {'ef' * 16}: no span follows the OpenTelemetry GenAI conventions" in done.stderr
    (tmp_path / "bad.jsonl").write_text("{not json\n[1]\n")
    done = run_cli("import", "traces", tmp_path / "bad.jsonl", "-o", tmp_path / "none")
    assert done.returncode == 2 and not (tmp_path / "none").exists()
    assert f"error: {tmp_path / 'bad.jsonl'}: no trace found (line 1: not JSON (" in done.stderr
    done = run_cli("import", "traces", tmp_path / "spans.jsonl", "-o", tmp_path / "x", "--match", "span name")
    assert done.returncode == 2 and "error: --match: give `trace_id`, `session_id` or `attribute NAME`" in done.stderr


def test_import_traces_by_session_lists_a_trace_whose_session_id_is_empty_and_writes_a_suite_that_validates(tmp_path):
    """`--match session_id` and a trace whose `session.id` is "": listed as not carried over (it was
    written as a case with an empty id, and the import then called its own suite invalid, exit 2)."""
    def traced(number: int, session: str) -> str:
        span = {"traceId": f"{number:032x}", "spanId": f"{number:016x}", "name": "chat m", "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}, {"key": "session.id", "value": {"stringValue": session}}]}
        return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})

    (tmp_path / "spans.jsonl").write_text(traced(1, "s-1") + "\n" + traced(2, "") + "\n")
    done = run_cli("import", "traces", tmp_path / "spans.jsonl", "-o", tmp_path / "out", "--match", "session_id")
    assert done.returncode == 0, done.stderr
    assert f"traces: trace(s) {2:032x} have an empty session_id" in done.stderr
    assert [case["id"] for case in read_jsonl(tmp_path / "out" / "cases.jsonl")] == ["s-1"]
    assert run_cli("validate", tmp_path / "out" / "suite.yaml").returncode == 0


def test_receiving_spans_without_a_target_that_calls_a_system_is_refused_at_load(tmp_path):
    write(tmp_path, "s.yaml", "name: s\ntraces: {receive: true}\nevaluators: [{type: contains, reference: x}]\ncases: [{id: a, output: x}]\n")
    done = run_cli("validate", tmp_path / "s.yaml")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"{tmp_path / 's.yaml'}:1: traces.receive: spans are received from a system an http, command or python target calls "
        "(it is sent the case's traceparent); this suite's target is recorded")
