"""Hostile trace exports for the `traces` target: malformed OTLP, a trace of a million spans,
parent ids in a cycle, a 100 MB span, numbers no count can be. Each is that case's error or an
answer within bounds; the other cases are scored; the run never dies."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import MEASURE, read_jsonl, run_cli, write

TRACE = "ab" * 16
SUITE = """
name: hostile-traces
target: {type: traces, file: spans.jsonl}
evaluators:
  - {type: contains, path: content, reference: fine}
cases: cases.jsonl
"""


def chat_span(trace_id: str, span_id: str, reply: str, parent: str | None = None, **extra: object) -> dict:
    span = {
        "traceId": trace_id, "spanId": span_id, "name": "chat", "startTimeUnixNano": "1000000", "endTimeUnixNano": "3000000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                       {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": reply}]}])}}],
        **extra,
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def document(*spans: dict) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})


def run_suite(tmp_path: Path, lines: list[str], case_ids: list[str], measure: bool = False) -> tuple[object, dict, float | None]:
    write(tmp_path, "s.yaml", SUITE)
    (tmp_path / "spans.jsonl").write_text("\n".join(lines) + "\n")
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": case_id}) + "\n" for case_id in case_ids))
    out, peak = tmp_path / "out.jsonl", tmp_path / "peak"
    import subprocess
    import sys

    command = [*MEASURE, str(peak), sys.executable, "-m", "agenteval", "run", str(tmp_path / "s.yaml"), "-o", str(out), "-q"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300) if measure else run_cli(
        "run", tmp_path / "s.yaml", "-o", out, "-q")
    assert "Traceback" not in result.stderr, result.stderr
    lines_by_id = {line["case_id"]: line for line in read_jsonl(out)}
    assert set(lines_by_id) == set(case_ids)  # every case written, nothing lost
    return result, lines_by_id, float(peak.read_text()) if measure else None


def test_malformed_otlp_lines_are_skipped_and_named_and_good_traces_still_read(tmp_path):
    good = "cd" * 16
    lines = [
        "{not json",
        "[1, 2]",
        json.dumps({"resourceSpans": 5}),
        document({"traceId": "xyz", "spanId": "01" * 8}),
        document(chat_span(good, "02" * 8, "all fine")),
    ]
    result, cases, _ = run_suite(tmp_path, lines, [good, TRACE])
    assert result.returncode == 3
    assert cases[good]["verdict"] == "pass"
    assert cases[TRACE]["error"].startswith(
        f"traces target: no trace with trace_id '{TRACE}' in spans.jsonl (4 part(s) of the file could not be read: line 1: not JSON (")
    assert "line 2: not an OTLP/JSON trace export (expected {\"resourceSpans\": [...]})" in cases[TRACE]["error"]
    assert "line 4, span 1: `traceId` 'xyz' is not a 16-byte id in hex or base64" in cases[TRACE]["error"]


def test_a_trace_of_a_million_spans_is_that_cases_error_in_bounded_memory(tmp_path):
    small = "cd" * 16
    spans_per_line = 2_000
    line = document(*({"traceId": TRACE, "spanId": f"{n:016x}", "name": "s"} for n in range(spans_per_line)))
    lines = [line] * 500 + [document(chat_span(small, "02" * 8, "fine"))]
    result, cases, peak = run_suite(tmp_path, lines, [TRACE, small], measure=True)
    assert cases[TRACE]["error"] == (
        f"traces target: the trace with trace_id '{TRACE}' has 1000000 spans, more than the 10000 a trace may have to be read into an answer "
        "(limit `limits.trace_spans: 10000`; raise it in the suite's `limits:` if this is expected)")
    assert cases[small]["verdict"] == "pass"
    assert peak < 300, f"peak RSS {peak:.0f} MB"  # the index holds counts and byte ranges, never the spans


def test_parent_ids_in_a_cycle_still_give_an_answer(tmp_path):
    first, second = "01" * 8, "02" * 8
    lines = [document(chat_span(TRACE, first, "not yet", parent=second), chat_span(TRACE, second, "fine now", parent=first,
                                                                                     startTimeUnixNano="5000000", endTimeUnixNano="6000000"))]
    result, cases, _ = run_suite(tmp_path, lines, [TRACE])
    assert result.returncode == 0, result.stdout
    assert cases[TRACE]["verdict"] == "pass"
    assert cases[TRACE]["usage"]["latency_ms"] == 5.0


def test_a_span_of_100_mb_is_skipped_and_named_and_a_10_mb_message_attribute_is_that_cases_error(tmp_path):
    big, cut = "cd" * 16, "ef" * 16
    lines = [
        document(chat_span(TRACE, "01" * 8, "fine" + "x" * (100 * 1024 * 1024))),
        document(chat_span(cut, "02" * 8, "fine" + "y" * (10 * 1024 * 1024))),
        document(chat_span(big, "03" * 8, "fine")),
    ]
    result, cases, peak = run_suite(tmp_path, lines, [TRACE, cut, big], measure=True)
    assert cases[TRACE]["error"] == (
        f"traces target: no trace with trace_id '{TRACE}' in spans.jsonl (1 part(s) of the file could not be read: "
        "line 1: longer than 64 MB, the most one document may be (`limits.trace_document_mb`))")
    assert cases[big]["verdict"] == "pass"
    assert cases[cut]["error"] == (
        "traces target: span 'chat': `gen_ai.output.messages` is longer than 1,000,000 characters, the most an attribute is read to")
    assert peak < 600, f"peak RSS {peak:.0f} MB"


def test_token_counts_that_no_count_can_be_are_unknown_not_written(tmp_path):
    numbers = [{"key": "gen_ai.usage.input_tokens", "value": {"intValue": "99999999999999999999999"}},
               {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "-5"}},
               {"key": "gen_ai.request.temperature", "value": {"doubleValue": "NaN"}}]
    span = chat_span(TRACE, "01" * 8, "fine")
    span["attributes"] += numbers
    result, cases, _ = run_suite(tmp_path, [document(span)], [TRACE])
    assert result.returncode == 0, result.stdout
    assert cases[TRACE]["verdict"] == "pass"
    assert "input_tokens" not in cases[TRACE]["usage"] and "output_tokens" not in cases[TRACE]["usage"]


def test_a_traces_file_outside_the_suite_folder_or_missing_is_each_cases_error(tmp_path):
    suite_dir = tmp_path / "suite"
    (tmp_path / "outside.jsonl").write_text(document(chat_span(TRACE, "01" * 8, "fine")) + "\n")
    write(suite_dir, "s.yaml", SUITE.replace("spans.jsonl", "../outside.jsonl"))
    write(suite_dir, "cases.jsonl", json.dumps({"id": TRACE}) + "\n")
    result = run_cli("run", suite_dir / "s.yaml", "-o", tmp_path / "a.jsonl", "-q")
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert read_jsonl(tmp_path / "a.jsonl")[0]["error"] == (
        "traces target: `file` '../outside.jsonl' is outside the suite's folder; the export must be inside it")
    write(suite_dir, "s.yaml", SUITE.replace("spans.jsonl", "missing.jsonl"))
    result = run_cli("run", suite_dir / "s.yaml", "-o", tmp_path / "b.jsonl", "-q")
    assert result.returncode == 3
    assert read_jsonl(tmp_path / "b.jsonl")[0]["error"] == "traces target: cannot read `file` <suite dir>/missing.jsonl: No such file or directory"


# -- OTLP parts that are legal, missing or of the wrong type ----------------------------------------

T0 = 1_700_000_000_000_000_000  # a start time, in ns


def op_span(trace_id: str, span_id: str, name: str, operation: str, start: object, end: object, *attributes: dict, **extra: object) -> dict:
    return {"traceId": trace_id, "spanId": span_id, "name": name, "startTimeUnixNano": start, "endTimeUnixNano": end,
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": operation}}, *attributes], **extra}


def text(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def run_traces(tmp_path: Path, lines: list[str], suite: str, *options: str) -> tuple[object, dict]:
    """`agenteval run suite.yaml --traces spans.jsonl`: every case written, no traceback."""
    (tmp_path / "spans.jsonl").write_text("\n".join(lines) + "\n")
    write(tmp_path, "suite.yaml", suite)
    out = tmp_path / "out.jsonl"
    done = run_cli("run", tmp_path / "suite.yaml", "--traces", tmp_path / "spans.jsonl", *options, "-o", out, "-q")
    assert "Traceback" not in done.stderr, done.stderr
    return done, {line["case_id"]: line for line in read_jsonl(out)}


def test_an_unknown_or_unreadable_span_time_is_left_out_of_latency_and_does_not_move_the_span(tmp_path):
    calling = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_order", "arguments": {"id": 7}}]}])
    fine = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "fine"}]}])
    ms = 10**6
    lines = [document(
        op_span(TRACE, "01" * 8, "invoke_agent", "invoke_agent", str(T0), str(T0 + 500 * ms)),
        op_span(TRACE, "02" * 8, "chat 1", "chat", str(T0 + 10 * ms), str(T0 + 100 * ms), text("gen_ai.output.messages", calling)),
        op_span(TRACE, "03" * 8, "execute_tool get_order", "execute_tool", str(T0 + 150 * ms), str(T0 + 200 * ms),
                text("gen_ai.tool.name", "get_order"), text("gen_ai.tool.call.id", "c1")),
        op_span(TRACE, "04" * 8, "chat 2", "chat", "0", str(T0 + 400 * ms), text("gen_ai.output.messages", fine)),  # 0: unknown (OTLP)
        op_span(TRACE, "05" * 8, "chain", "other", str(T0 + 420 * ms), "99999999999999999999"),  # past 64 bits: unknown
        op_span(TRACE, "06" * 8, "chain 2", "other", str(2**64), None),  # past 64 bits, and missing
    )]
    suite = f"""
        name: times
        evaluators:
          - {{type: latency, max_ms: 2000}}
          - {{type: spans, checks: [{{kind: model, max_ms: 1000}}]}}
          - {{type: contains, path: content, reference: fine}}
        cases:
          - {{id: c1, metadata: {{trace_id: '{TRACE}'}}}}
        """
    done, cases = run_traces(tmp_path, lines, suite)
    answer = cases["c1"]["output"]
    assert done.returncode == 0 and cases["c1"]["verdict"] == "pass", cases["c1"]
    assert answer["usage"]["latency_ms"] == 500.0 and cases["c1"]["usage"]["latency_ms"] == 500.0
    assert [span["name"] for span in answer["spans"]] == ["invoke_agent", "chat 1", "execute_tool get_order", "chat 2", "chain", "chain 2"]
    assert [span["duration_ms"] for span in answer["spans"]] == [500.0, 90.0, 50.0, None, None, None]
    assert [span["start_ms"] for span in answer["spans"]] == [0.0, 10.0, 150.0, None, 420.0, None]
    assert answer["tool_calls"] == [{"name": "get_order", "arguments": {"id": 7}, "result": None, "id": "c1", "step": 1}]
    assert [(step["kind"], step["step"], step["latency_ms"]) for step in answer["steps"]] == [
        ("model", 1, 90.0), ("tool", 1, 50.0), ("model", 2, None)]


def test_a_nameless_event_and_parts_of_the_wrong_type_are_read_by_run_and_import_without_a_crash(tmp_path):
    nameless, calls, key, time = "01" * 16, "02" * 16, "03" * 16, "04" * 16
    choice = {"name": "gen_ai.choice", "attributes": [text("message", json.dumps({"role": "assistant", "content": "fine", "tool_calls": 5}))]}
    lines = [
        # proto3 JSON leaves an empty event name out
        document(op_span(nameless, "01" * 8, "chat m", "chat", str(T0), str(T0 + 10**8), events=[{"timeUnixNano": str(T0)}, choice])),
        document(op_span(calls, "02" * 8, "chat m", "chat", str(T0), str(T0 + 10**8), events=[choice])),
        document(
            op_span(key, "03" * 8, "retrieve", "retrieval", str(T0), str(T0 + 10**7), text("openinference.span.kind", "RETRIEVER"),
                    text("retrieval.documents.\u00b2.document.content", "superscript"), text("retrieval.documents.0.document.content", "fine doc")),
            op_span(key, "04" * 8, "chat m", "chat", str(T0 + 2 * 10**7), str(T0 + 10**8), events=[choice])),
        document(op_span(time, "05" * 8, "chat m", "chat", "\u00b2", str(T0 + 10**8), events=[choice]),
                 op_span(time, "06" * 8, "execute_tool get_order", "execute_tool", str(T0 + 10**8), str(T0 + 3 * 10**8),
                         text("gen_ai.tool.name", "get_order"), text("gen_ai.tool.call.arguments", '{"id": 7}'))),
    ]
    suite = ("name: s\nevaluators: [{type: contains, path: content, reference: fine}]\ncases:\n"
             + "".join(f"  - {{id: c{n}, metadata: {{trace_id: '{trace}'}}}}\n" for n, trace in enumerate([nameless, calls, key, time])))
    done, cases = run_traces(tmp_path, lines, suite)
    assert done.returncode == 0, cases
    assert [cases[f"c{n}"]["verdict"] for n in range(4)] == ["pass"] * 4
    assert cases["c1"]["output"]["tool_calls"] == []  # `tool_calls: 5` is no list of calls
    assert cases["c1"]["output"]["messages"] == [{"role": "assistant", "content": "fine"}]
    assert cases["c2"]["output"]["contexts"] == [{"text": "fine doc", "retriever": "retrieve"}]
    assert cases["c2"]["output"]["spans"][0]["documents"] == 1
    assert cases["c3"]["output"]["spans"][0]["duration_ms"] is None  # a start of "²" is unknown
    assert cases["c3"]["output"]["usage"]["latency_ms"] == 200.0
    assert cases["c3"]["output"]["tool_calls"][0]["arguments"] == {"id": 7}
    done = run_cli("import", "traces", tmp_path / "spans.jsonl", "-o", tmp_path / "imported")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "0 keys not carried over" in done.stdout + done.stderr
    imported = read_jsonl(tmp_path / "imported" / "cases.jsonl")
    assert [case["id"] for case in imported] == [nameless, calls, key, time]
    assert [case["output"]["content"] for case in imported] == ["fine"] * 4


RECEIVED = r'''
"""A system under test exporting one model span with a nameless event and a choice whose tool_calls is 5,
after a request whose Content-Length is a superscript digit."""
import json, os, socket, sys, urllib.request
from urllib.parse import urlsplit
endpoint = os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
_, trace_id, parent_id, _ = os.environ["TRACEPARENT"].split("-")
where = urlsplit(endpoint)
with socket.create_connection((where.hostname, where.port), timeout=10) as raw:
    raw.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \xb2\r\n\r\n{}")
    status = raw.recv(100).split(b" ")[1:2]
choice = {"name": "gen_ai.choice", "attributes": [{"key": "message", "value": {"stringValue": json.dumps(
    {"role": "assistant", "content": "fine", "tool_calls": 5})}}]}
span = {"traceId": trace_id, "spanId": "01" * 8, "parentSpanId": parent_id, "name": "chat m", "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000", "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
        "events": [{"timeUnixNano": "1500"}, choice]}
body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
urllib.request.urlopen(urllib.request.Request(endpoint, data=body, headers={"Content-Type": "application/json"}), timeout=30).read()
print(json.dumps({"status": status[0].decode() if status else None}))
'''


def test_received_spans_with_a_nameless_event_and_a_superscript_content_length_are_read(tmp_path):
    import sys

    write(tmp_path, "sender.py", RECEIVED)
    write(tmp_path, "s.yaml", f"""
        name: received
        target: {{type: command, command: [{sys.executable}, sender.py]}}
        traces: {{receive: true, wait_seconds: 5}}
        evaluators:
          - {{type: spans, checks: [{{kind: model, count: 1}}]}}
        cases:
          - {{id: one, input: go}}
        """)
    done = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "out.jsonl", "-q")
    assert "Traceback" not in done.stderr, done.stderr
    [line] = read_jsonl(tmp_path / "out.jsonl")
    assert line["verdict"] == "pass", line
    assert line["output"]["status"] == "411"  # `Content-Length: ²` is no length: refused, not a ValueError in the handler
    assert line["output"]["messages"] == [{"role": "assistant", "content": "fine"}]
    assert line["output"]["tool_calls"] == []


def test_a_span_exported_twice_is_read_once(tmp_path):
    chat = op_span(TRACE, "01" * 8, "chat m", "chat", str(T0), str(T0 + 10**8), text("session.id", "s1"),
                   text("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "fine"}]}])))
    tool = op_span(TRACE, "02" * 8, "execute_tool refund", "execute_tool", str(T0 + 2 * 10**8), str(T0 + 3 * 10**8),
                   text("gen_ai.tool.name", "refund"), text("gen_ai.tool.call.arguments", '{"id": 7}'))
    other = "cd" * 16  # a second trace of the session whose span ids are the same: other spans, both kept
    second = [dict(span, traceId=other, startTimeUnixNano=str(T0 + 10**9), endTimeUnixNano=str(T0 + 2 * 10**9)) for span in (chat, tool)]
    lines = [document(chat, tool), document(tool), document(*second), document(*second)]  # a retry; two exports concatenated
    suite = f"""
        name: dup
        evaluators:
          - {{type: spans, checks: [{{kind: tool, count: 2}}, {{kind: model, count: 2}}]}}
          - {{type: tool_calls, path: tool_calls, calls: [{{name: refund, arguments: {{id: 7}}}}, {{name: refund, arguments: {{id: 7}}}}], order: exact}}
        cases:
          - {{id: c1, metadata: {{session_id: s1}}}}
        """
    done, cases = run_traces(tmp_path, lines, suite, "--traces-match", "session_id")
    assert done.returncode == 0 and cases["c1"]["verdict"] == "pass", cases["c1"]["evaluator_results"]
    assert [(span["span_id"], span["name"]) for span in cases["c1"]["output"]["spans"]] == [
        ("01" * 8, "chat m"), ("02" * 8, "execute_tool refund"), ("01" * 8, "chat m"), ("02" * 8, "execute_tool refund")]
    assert len(cases["c1"]["output"]["tool_calls"]) == 2


def test_a_map_attribute_nested_200_deep_is_cut_at_20_levels_in_run_and_import(tmp_path):
    value = {"stringValue": "x"}
    for _ in range(200):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    span = chat_span(TRACE, "01" * 8, "fine")
    span["attributes"].append({"key": "deep", "value": value})
    suite = f"name: deep\nevaluators: [{{type: contains, path: content, reference: fine}}]\ncases:\n  - {{id: c1, metadata: {{trace_id: '{TRACE}'}}}}\n"
    done, cases = run_traces(tmp_path, [document(span)], suite)
    assert done.returncode == 0 and cases["c1"]["verdict"] == "pass", cases["c1"]
    deep, levels = cases["c1"]["output"]["spans"][0]["attributes"]["deep"], 0
    while isinstance(deep, dict):
        deep, levels = deep["k"], levels + 1
    assert (levels, deep) == (21, None)  # the value and 20 levels inside it; deeper is null
    done = run_cli("import", "traces", tmp_path / "spans.jsonl", "-o", tmp_path / "imported")
    assert done.returncode == 0, done.stderr
    done = run_cli("run", tmp_path / "imported", "-o", tmp_path / "imported.jsonl", "-q")
    assert done.returncode == 0, done.stderr
    assert [line["verdict"] for line in read_jsonl(tmp_path / "imported.jsonl")] == ["pass"]


def test_a_span_without_a_span_id_is_named_not_dropped(tmp_path):
    good = "cd" * 16
    tool = {"traceId": TRACE, "name": "execute_tool refund", "startTimeUnixNano": "5",
            "attributes": [text("gen_ai.operation.name", "execute_tool"), text("gen_ai.tool.name", "refund")]}
    lines = [document(chat_span(TRACE, "01" * 8, "fine"), tool), document(chat_span(good, "02" * 8, "fine"))]
    suite = (f"name: n\nevaluators: [{{type: spans, checks: [{{kind: tool, count: 0}}]}}]\ncases:\n"
             f"  - {{id: refund, metadata: {{trace_id: '{TRACE}'}}}}\n  - {{id: good, metadata: {{trace_id: '{good}'}}}}\n")
    done, cases = run_traces(tmp_path, lines, suite)
    assert done.returncode == 3
    assert cases["refund"]["error"] == (
        "--traces: a span of the trace cannot be read: line 1, span 2 ('execute_tool refund'): `spanId` is missing")
    assert cases["good"]["verdict"] == "pass"
    done = run_cli("import", "traces", tmp_path / "spans.jsonl", "-o", tmp_path / "imported")
    assert done.returncode == 0, done.stderr
    assert (f"not carried over: {tmp_path / 'spans.jsonl'}: trace {TRACE}: a span of the trace cannot be read: "
            "line 1, span 2 ('execute_tool refund'): `spanId` is missing") in done.stderr
    assert [case["id"] for case in read_jsonl(tmp_path / "imported" / "cases.jsonl")] == [good]


def test_one_document_of_2000_traces_is_read_in_about_the_time_of_the_same_traces_as_jsonl(tmp_path):
    import time

    from agenteval.traces.index import index_file

    def span(number: int) -> dict:
        reply = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"answer {number}"}]}])
        return op_span(f"{number + 1:032x}", f"{number + 1:016x}", "chat m", "chat", str(T0), str(T0 + 10**8),
                       text("gen_ai.output.messages", reply), text("pad", "p" * 800))

    count = 2_000
    spans = [span(number) for number in range(count)]
    del spans[7]["spanId"]  # the 8th span of the document: named by its place in it
    (tmp_path / "one.json").write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, indent=1))
    (tmp_path / "lines.jsonl").write_text("".join(document(item) + "\n" for item in spans))
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": f"c{n}", "metadata": {"trace_id": f"{n + 1:032x}"}}) + "\n" for n in range(count)))
    write(tmp_path, "s.yaml", "name: q\nevaluators: [{type: contains, path: content, reference: answer}]\ncases: cases.jsonl\n")
    seconds = {}
    for name in ("lines.jsonl", "one.json"):
        started = time.monotonic()
        done = run_cli("run", tmp_path / "s.yaml", "--traces", tmp_path / name, "-o", tmp_path / f"{name}.out", "-q", timeout=300)
        seconds[name] = time.monotonic() - started
        assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
        results = {line["case_id"]: line for line in read_jsonl(tmp_path / f"{name}.out")}
        assert [results[f"c{n}"]["verdict"] for n in range(count)] == ["pass"] * 7 + ["error"] + ["pass"] * (count - 8)
        assert results["c1999"]["output"]["content"] == "answer 1999"
    assert read_jsonl(tmp_path / "one.json.out")[7]["error"] == (
        "--traces: a span of the trace cannot be read: line 1, span 8 ('chat m'): `spanId` is missing")
    assert seconds["one.json"] < 2 * seconds["lines.jsonl"] + 3, seconds  # each case read the whole document: 25 times slower
    index = index_file(tmp_path / "one.json")  # each trace is read from its own part, never the whole document again
    assert max(length for ranges in index.ranges.values() for _, _, length, _ in ranges) < 3_000


def test_a_cost_that_is_true_or_negative_is_unknown_and_a_total_token_count_alone_is_kept(tmp_path):
    """OpenInference's `llm.cost.total` given as `true` read as a cost of 1.0, and -5.0 was summed
    into the usage; a span with only `llm.token_count.total` lost its count."""
    spans = []
    for number, (cost, total) in enumerate([({"boolValue": True}, 7), ({"doubleValue": -5.0}, None), ({"doubleValue": 0.25}, None)], 1):
        span = chat_span(f"{number:032x}", f"{number:016x}", "fine")
        span["attributes"] += [{"key": "llm.cost.total", "value": cost}]
        if total is not None:
            span["attributes"] += [{"key": "llm.token_count.total", "value": {"intValue": str(total)}}]
        spans.append(document(span))
    result, cases, _ = run_suite(tmp_path, spans, [f"{number:032x}" for number in (1, 2, 3)])
    assert result.returncode == 0, result.stdout
    first, second, third = (cases[f"{number:032x}"]["usage"] for number in (1, 2, 3))
    assert "cost_usd" not in first and first["total_tokens"] == 7
    assert "cost_usd" not in second and third["cost_usd"] == 0.25


def test_a_document_after_a_byte_order_mark_or_blank_lines_is_read(tmp_path):
    """A pretty-printed export saved with a byte-order mark, or starting with a blank line, and JSONL
    whose first line carries the mark: every trace is read (the whole file was 'not JSON')."""
    spans = [chat_span(f"{number:032x}", f"{number:016x}", "fine") for number in (1, 2)]
    pretty = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, indent=2)
    ids = [f"{number:032x}" for number in (1, 2)]
    for name, text in (("bom", "\ufeff" + pretty), ("blank", "\n\n" + pretty), ("jsonl", "\ufeff" + document(spans[0]) + "\n" + document(spans[1]))):
        folder = tmp_path / name
        folder.mkdir()
        write(folder, "s.yaml", SUITE)
        (folder / "spans.jsonl").write_text(text + "\n", encoding="utf-8")
        write(folder, "cases.jsonl", "".join(json.dumps({"id": case_id}) + "\n" for case_id in ids))
        done = run_cli("run", folder / "s.yaml", "-o", folder / "out.jsonl", "-q")
        assert done.returncode == 0, (name, done.stdout, done.stderr)
        assert [line["verdict"] for line in read_jsonl(folder / "out.jsonl")] == ["pass", "pass"], name


def test_an_openinference_message_past_the_attribute_limit_is_that_cases_error_as_a_genai_one_is(tmp_path):
    """An OpenInference reply of 1.5 million characters was cut to 1,000,000 and scored as if whole
    (a cut GenAI message was already the case's error, as traces.md's limits say)."""
    def span(trace_id: str, reply: str) -> dict:
        return {"traceId": trace_id, "spanId": "01" * 8, "name": "llm", "startTimeUnixNano": "1000000", "endTimeUnixNano": "3000000",
                "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
                               {"key": "llm.output_messages.0.message.role", "value": {"stringValue": "assistant"}},
                               {"key": "llm.output_messages.0.message.content", "value": {"stringValue": reply}}]}

    long, short = "cd" * 16, "ef" * 16
    result, cases, _ = run_suite(tmp_path, [document(span(long, "fine" + "z" * 1_500_000)), document(span(short, "fine"))], [long, short])
    assert result.returncode == 3, result.stdout
    assert cases[long]["error"] == ("traces target: span 'llm': `llm.output_messages.0.message.content` is longer than "
                                    "1,000,000 characters, the most an attribute is read to")
    assert cases[short]["verdict"] == "pass"
