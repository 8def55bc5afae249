"""tool_calls speed: one evaluation of a 50-call trajectory, as the runner makes it.

    python benchmarks/bench_tools.py

Each evaluation reads the trajectory (OpenAI-style chat messages: 50 assistant tool calls with
JSON-string arguments, each followed by its tool result message), decodes the arguments,
checks every same-name pair, aligns the calls 1:1 and builds the details. Rows:
- 10 expected calls (exact, fuzzy, numeric_tolerance, regex and any_of arguments) against the
  50-call trajectory, for each `order`; then with BFCL's strict options (no unexpected
  arguments, strict types, folded text), and with a `result:` check on each call;
- 50 expected calls over 5 tools against the 50 calls (500 same-name pairs);
- the worst case: 50 identical expected calls against 50 identical calls (every pair satisfies).
The script asserts the scores, so it measures right answers.
"""

from __future__ import annotations

import json
import random
import statistics
import time
import timeit
from pathlib import Path

from agenteval.evaluators import EvalContext
from agenteval.evaluators.tools import ToolCalls

TOOLS = ["lookup_order", "issue_refund", "search_faq", "escalate_to_human", "send_email"]
CALLS = 50


def trajectory_call(i: int) -> tuple[str, dict]:
    tool = TOOLS[i % len(TOOLS)]
    return tool, {"order_id": f"A-{1000 + i}", "amount": round(10 + i * 1.25, 2), "reason": f"customer reported problem number {i}", "channel": "email"}


def messages(rng: random.Random) -> list[dict]:
    out: list[dict] = [{"role": "user", "content": "Please sort out my orders."}]
    for i in range(CALLS):
        name, arguments = trajectory_call(i)
        call_id = f"call_{i}"
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ]})
        out.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps({"ok": True, "n": rng.random()})})
    out.append({"role": "assistant", "content": "All done."})
    return out


def expected_call(i: int) -> dict:
    name, arguments = trajectory_call(i)
    return {"name": name, "arguments": {
        "order_id": {"match": "regex", "pattern": r"A-\d{4}"} if i % 2 else arguments["order_id"],
        "amount": {"match": "numeric_tolerance", "value": arguments["amount"], "tolerance": 0.01},
        "reason": {"match": "fuzzy", "value": arguments["reason"], "threshold": 0.9},
        "channel": {"match": "any_of", "values": ["email", "sms", ""]},
    }}


def time_us(evaluator: ToolCalls, ctx: EvalContext, number: int = 200, repeat: int = 7) -> tuple[float, float]:
    """(median, best) microseconds of CPU time per evaluation (CPU time, not wall time: on a
    shared machine other processes' load would otherwise count as ours)."""
    runs = timeit.repeat(lambda: evaluator.evaluate(ctx), number=number, repeat=repeat, timer=time.process_time)
    per_call = [run / number * 1e6 for run in runs]
    return statistics.median(per_call), min(per_call)


def main() -> None:
    rng = random.Random(7)
    ctx = EvalContext("bench", None, None, {"messages": messages(rng)}, {}, Path("."))
    rows = []
    ten = [expected_call(i) for i in range(0, CALLS, 5)]  # every 5th call, so all in order
    for order in ("any", "in_order"):
        evaluator = ToolCalls.model_validate({"type": "tool_calls", "calls": ten, "order": order, "forbidden": ["delete_account"]})
        result = evaluator.evaluate(ctx)
        assert result.score == 1.0 and result.verdict == "pass", result.misses
        rows.append((f"10 expected, order: {order}", *time_us(evaluator, ctx)))
    strict = {"extra_arguments": False, "strict_types": True, "case_sensitive": False, "ignore_characters": " ,./-_*^"}
    evaluator = ToolCalls.model_validate({"type": "tool_calls", "calls": ten, **strict})
    result = evaluator.evaluate(ctx)
    assert result.score == 1.0 and result.verdict == "pass", result.misses
    rows.append(("10 expected, BFCL-strict options", *time_us(evaluator, ctx)))
    with_results = [{**call, "result": {"match": "object", "properties": {"ok": True}}} for call in ten]
    evaluator = ToolCalls.model_validate({"type": "tool_calls", "calls": with_results})
    result = evaluator.evaluate(ctx)
    assert result.score == 1.0 and result.verdict == "pass", result.misses
    rows.append(("10 expected, each with a `result:` check", *time_us(evaluator, ctx)))
    every = [expected_call(i) for i in range(CALLS)]
    for order in ("any", "exact"):
        evaluator = ToolCalls.model_validate({"type": "tool_calls", "calls": every, "order": order})
        result = evaluator.evaluate(ctx)
        assert result.score == 1.0 and result.verdict == "pass", result.misses
        rows.append((f"50 expected, order: {order}", *time_us(evaluator, ctx, number=50)))
    same = [{"name": "lookup_order", "arguments": {"order_id": "A-1"}} for _ in range(CALLS)]
    alike = EvalContext("bench", None, None, same, {}, Path("."))
    for order in ("any", "in_order"):
        evaluator = ToolCalls.model_validate({"type": "tool_calls", "calls": same, "order": order})
        assert evaluator.evaluate(alike).score == 1.0
        rows.append((f"50 expected, 50 identical calls (2,500 pairs), order: {order}", *time_us(evaluator, alike, number=20)))
    print(f"tool_calls on a {CALLS}-call trajectory ({len(ctx.output['messages'])} messages)")
    print("| expected calls | median µs | best µs |")
    print("|---|---:|---:|")
    for label, median, best in rows:
        print(f"| {label} | {median:,.0f} | {best:,.0f} |")


if __name__ == "__main__":
    main()
