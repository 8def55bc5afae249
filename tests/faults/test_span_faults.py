"""Hostile replies under --otel: what a model server says about itself (ids, models, token counts,
finish reasons) reaches a span only when it is of the conventions' type; anything else is left
out, the case is scored as without tracing, and the run ends normally."""

from __future__ import annotations

import json

from conftest import read_jsonl, write
from fault_suites import assert_no_traceback
from llm_server import Fault, LLMServer
from otlp_receiver import OTLPReceiver, run_traced

HOSTILE = [
    # token counts that are not whole numbers >= 0, an id and a model that are not text, reasons that are not text
    {"id": {"nested": True}, "model": ["m"], "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok one"},
                                                          "finish_reason": 7}],
     "usage": {"prompt_tokens": -5, "completion_tokens": 1e308, "total_tokens": True}},
    {"id": "x" * 200_000, "model": "m2", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok two"},
                                                      "finish_reason": None}],
     "usage": {"prompt_tokens": 10**30, "completion_tokens": "3"}},
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok three"}}], "usage": []},
]


def test_hostile_self_descriptions_are_left_out_of_the_spans_and_the_cases_are_scored(tmp_path):
    with LLMServer() as server, OTLPReceiver() as receiver:
        server.fail(*[Fault("status", 200, body=json.dumps(reply)) for reply in HOSTILE])
        suite = write(tmp_path, "suite.yaml", json.dumps({
            "name": "hostile", "target": {"type": "openai", "base_url": server.base_url, "model": "m1", "retries": 0},
            "evaluators": [{"type": "contains", "path": "content", "reference": "ok"}],
            "cases": [{"id": f"c{i}", "input": f"q{i}"} for i in range(3)],
        }))
        done = run_traced(suite, receiver, tmp_path, "-o", "r.jsonl", "--workers", "1", "--no-cache", env={
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
        assert_no_traceback(done)
        assert done.returncode == 0, done.stderr
        assert "could not be exported" not in done.stderr
        spans = receiver.spans()
    assert [line["verdict"] for line in read_jsonl(tmp_path / "r.jsonl")] == ["pass"] * 3
    chats = [span for span in spans if span.name == "chat m1"]
    assert len(chats) == 3
    first, second, third = chats
    assert "gen_ai.response.id" not in first.attributes and "gen_ai.response.model" not in first.attributes
    assert "gen_ai.usage.input_tokens" not in first.attributes and "gen_ai.usage.output_tokens" not in first.attributes
    assert "gen_ai.response.finish_reasons" not in first.attributes
    assert second.attributes["gen_ai.response.model"] == "m2" and len(second.attributes["gen_ai.response.id"]) == 200_000
    assert "gen_ai.usage.input_tokens" not in second.attributes  # past what an OTLP integer holds
    assert "gen_ai.usage.output_tokens" not in second.attributes  # text, not a count
    assert "gen_ai.usage.input_tokens" not in third.attributes and "gen_ai.response.id" not in third.attributes


def test_a_slow_collector_gets_every_span_and_one_that_never_answers_is_counted_whole(tmp_path):
    """3,000 cases make 6,000 spans in about a second. A collector answering each request after
    0.3 s gets all of them (the SDK's queue of 2,048 dropped the rest without a word); one that
    takes the requests and never answers holds the run's end about 20 s, and the warning counts
    every span (it counted the 1,536 it had been handed)."""
    import time

    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": f"c{i}", "expected": "x", "output": "x"}) + "\n" for i in range(3000)))
    suite = write(tmp_path, "suite.yaml", "name: o\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    with OTLPReceiver(delay=0.3) as receiver:
        done = run_traced(suite, receiver, tmp_path, "-o", "slow.jsonl")
        assert_no_traceback(done)
        assert done.returncode == 0 and "could not be exported" not in done.stderr, done.stderr
        assert len(receiver.spans()) == 6000
    with OTLPReceiver(delay=1000) as receiver:
        started = time.monotonic()
        done = run_traced(suite, receiver, tmp_path, "-o", "hung.jsonl")
        took = time.monotonic() - started
    assert_no_traceback(done)
    assert done.returncode == 0 and len(read_jsonl(tmp_path / "hung.jsonl")) == 3000
    assert "warning: --otel: 6000 of 6000 spans could not be exported" in done.stderr, done.stderr
    assert took < 60, took


def test_a_token_count_no_json_reader_keeps_is_unknown_and_report_reads_the_results(tmp_path):
    """A model server reporting 10**400 prompt tokens: the count is unknown (it was kept, and
    `report --format json` then ended in a traceback, `Integer exceeds 64-bit range`)."""
    from conftest import run_cli
    from llm_server import Fault, LLMServer

    reply = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 10**400, "completion_tokens": 3}}
    with LLMServer() as server:
        server.fail(Fault("status", 200, body=json.dumps(reply)))
        suite = write(tmp_path, "suite.yaml", json.dumps({
            "name": "big", "target": {"type": "openai", "base_url": server.base_url, "model": "m", "retries": 0},
            "evaluators": [{"type": "contains", "path": "content", "reference": "ok"}], "cases": [{"id": "a", "input": "q"}]}))
        done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--no-cache")
    assert_no_traceback(done)
    [line] = read_jsonl(tmp_path / "r.jsonl")
    assert line["verdict"] == "pass" and line["usage"]["input_tokens"] is None and line["usage"]["output_tokens"] == 3
    report = run_cli("report", tmp_path / "r.jsonl", "--format", "json")
    assert_no_traceback(report)
    assert report.returncode == 0 and json.loads(report.stdout)["counts"]["passed"] == 1, report.stderr
