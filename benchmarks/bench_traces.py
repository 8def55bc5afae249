"""Reading trace exports: 10,000 traces of 50 spans each into answers, against a bare loop that
parses the same JSON.

    python benchmarks/bench_traces.py [--traces 10000]

The export is OTLP/JSON in OpenInference's conventions, one document per line (as the collector's
file exporter writes): per trace an agent span, then 24 rounds of an LLM span (messages, a tool
call, token counts) and its TOOL span, then the final LLM span. Each mode runs in its own child
process, so its peak memory is its own:
- `bare`: read each line and `orjson.loads` it, counting the spans (the floor: parsing the JSON);
- `agenteval`: index the file (agenteval.traces.index), then read every trace into its answer
  (agenteval.traces.answer.trace_answer), as a `traces` target does for each case.
CPU time of the child (the machine is shared; wall time would count other people's load).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 24


def attribute(key: str, value: object) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": str(value)}}


def span(trace: int, number: int, name: str, parent: int | None, attributes: dict) -> dict:
    raw = {"traceId": f"{trace:032x}", "spanId": f"{number + 1:016x}", "name": name, "kind": 1,
           "startTimeUnixNano": str(1_700_000_000_000_000_000 + number * 1_000_000),
           "endTimeUnixNano": str(1_700_000_000_000_000_000 + number * 1_000_000 + 800_000),
           "attributes": [attribute(key, value) for key, value in attributes.items()], "status": {}}
    if parent is not None:
        raw["parentSpanId"] = f"{parent + 1:016x}"
    return raw


def trace_document(trace: int) -> str:
    spans = [span(trace, 0, "agent", None, {"openinference.span.kind": "AGENT", "session.id": f"session-{trace}", "input.value": "Sort my orders out."})]
    for round_ in range(ROUNDS + 1):
        llm = {
            "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini", "llm.token_count.prompt": 200 + round_,
            "llm.token_count.completion": 20, "llm.token_count.total": 220 + round_,
            "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "You are a support agent.",
            "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": "Sort my orders out.",
            "llm.output_messages.0.message.role": "assistant",
        }
        if round_ < ROUNDS:
            llm["llm.output_messages.0.message.tool_calls.0.tool_call.id"] = f"call_{round_}"
            llm["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = "lookup_order"
            llm["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"] = json.dumps({"order_id": f"A-{round_}"})
        else:
            llm["llm.output_messages.0.message.content"] = "All sorted."
        spans.append(span(trace, len(spans), "ChatCompletion", 0, llm))
        if round_ < ROUNDS:
            spans.append(span(trace, len(spans), "lookup_order", 0, {
                "openinference.span.kind": "TOOL", "tool.name": "lookup_order", "tool_call.id": f"call_{round_}",
                "input.value": json.dumps({"order_id": f"A-{round_}"}), "output.value": json.dumps({"status": "shipped", "n": round_}),
            }))
    assert len(spans) == 50
    return json.dumps({"resourceSpans": [{"resource": {"attributes": [attribute("service.name", "support")]},
                                          "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]})


def bare(path: Path) -> int:
    import orjson

    count = 0
    with path.open("rb") as file:
        for line in file:
            for resource_spans in orjson.loads(line)["resourceSpans"]:
                for scope in resource_spans["scopeSpans"]:
                    count += len(scope["spans"])
    return count


def agenteval(path: Path) -> int:
    from agenteval.traces.answer import trace_answer
    from agenteval.traces.index import index_file

    index = index_file(path)
    count = 0
    for trace_id in list(index.ranges):
        answer = trace_answer(index.spans(trace_id))
        assert answer["content"] == "All sorted." and len(answer["tool_calls"]) == ROUNDS and answer["usage"]["total_tokens"] > 0
        count += len(answer["spans"])
    return count


def child(mode: str, path: Path) -> None:
    started = time.process_time()
    count = (bare if mode == "bare" else agenteval)(path)
    seconds = time.process_time() - started
    print(json.dumps({"spans": count, "cpu_s": seconds, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--child", choices=["bare", "agenteval"])
    parser.add_argument("--file")
    args = parser.parse_args()
    if args.child:
        child(args.child, Path(args.file))
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "spans.jsonl"
        with path.open("w") as file:
            for trace in range(1, args.traces + 1):
                file.write(trace_document(trace) + "\n")
        size = path.stat().st_size / 1e6
        print(f"{args.traces:,} traces x 50 spans, {size:.0f} MB of OTLP/JSON")
        print("| mode | CPU s | µs per trace | peak RSS MB |")
        print("|---|---:|---:|---:|")
        for mode in ("bare", "agenteval"):
            runs = [json.loads(subprocess.run([sys.executable, __file__, "--child", mode, "--file", str(path)],
                                              capture_output=True, text=True, check=True).stdout) for _ in range(3)]
            best = min(runs, key=lambda run: run["cpu_s"])
            assert best["spans"] == args.traces * 50
            print(f"| {mode} | {best['cpu_s']:.2f} | {best['cpu_s'] / args.traces * 1e6:,.0f} | {max(run['peak_mb'] for run in runs):.0f} |")


if __name__ == "__main__":
    main()
