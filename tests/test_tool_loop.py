"""The tool loop of a model target: a real local server plays the model (scripted replies that call
tools), the tools are real (canned mocks, a subprocess, a Python function, a second HTTP server)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, write
from llm_server import Fault, LLMServer, calls
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.endpoints import Endpoints
from agenteval.process import Processes
from agenteval.suite.loader import SuiteInvalid, load_suite
from agenteval.suite.models import Case
from agenteval.targets.base import TargetRun
from agenteval.targets.openai import OpenAITarget, what_was_said
from agenteval.usage import Price

ORDER_TOOL = {
    "name": "get_order", "description": "Look an order up by its id.",
    "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
}
SHIPPED = {"id": 7, "status": "shipped"}
ORDER_MOCK = [{"when": {"id": 7}, "result": SHIPPED}, {"when": {"id": 8}, "result": {"id": 8, "status": "lost"}}]


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def target(server, tools, **keys):
    return OpenAITarget.model_validate({"type": "openai", "base_url": server.base_url, "model": "m1", "backoff": 0.01, "tools": tools, **keys})


def answer(model_target, folder: Path, case=None, prices=None):
    endpoints = Endpoints(prices=prices)
    try:
        return model_target.answer(case or Case(id="a", input="where is order 7?"), TargetRun(folder, Processes(), endpoints))
    finally:
        endpoints.close()


def sent_messages(server):
    """The messages of every chat request, in order."""
    return [request.body["messages"] for request in server.received if request.path.endswith("/chat/completions")]


def tool_message(request_messages):
    return [message for message in request_messages if message["role"] == "tool"]


def test_a_two_call_loop_with_mock_tools_ends_with_the_models_answer(server, tmp_path):
    server.play(calls(("get_order", {"id": 7})), calls(("get_order", {"id": 8})), {"role": "assistant", "content": "7 shipped, 8 lost"})
    got = answer(target(server, [{**ORDER_TOOL, "mock": ORDER_MOCK}]), tmp_path)
    assert got.error is None and got.limit_reached is None
    out = got.output
    assert out["content"] == "7 shipped, 8 lost" and out["stopped"] == "answered" and out["model"] == "m1"
    assert out["tool_calls"] == [
        {"name": "get_order", "arguments": {"id": 7}, "result": SHIPPED, "id": "call_1_get_order", "step": 1},
        {"name": "get_order", "arguments": {"id": 8}, "result": {"id": 8, "status": "lost"}, "id": "call_1_get_order", "step": 2},
    ]
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert out["messages"][2] == {"role": "tool", "tool_call_id": "call_1_get_order", "content": json.dumps(SHIPPED, separators=(",", ":"))}
    assert [(s["kind"], s["step"]) for s in out["steps"]] == [("model", 1), ("tool", 1), ("model", 2), ("tool", 2), ("model", 3)]
    model_usages = [s["usage"] for s in out["steps"] if s["kind"] == "model"]
    assert out["usage"]["total_tokens"] == sum(u["total_tokens"] for u in model_usages) > 0
    assert out["usage"]["latency_ms"] == got.usage["latency_ms"] == pytest.approx(sum(s["latency_ms"] for s in out["steps"]), abs=0.01)
    # the model was told of the tool in the API's shape, never of its implementation; each request holds the results so far
    assert server.count("/chat/completions") == 3
    assert server.received[0].body["tools"] == [{"type": "function", "function": ORDER_TOOL}]
    assert [len(tool_message(m)) for m in sent_messages(server)] == [0, 1, 2]
    assert sent_messages(server)[2][:-1] == out["messages"][:4]  # the conversation, as sent
    # a model judge shown the whole answer sees the conversation, not the latencies
    assert set(what_was_said(out)) == {"content", "messages", "tool_calls", "stopped"}


def test_a_reply_without_a_call_is_the_answer_after_one_request(server, tmp_path):
    got = answer(target(server, [{**ORDER_TOOL, "mock": ORDER_MOCK}]), tmp_path)
    assert got.output["content"] == "echo: where is order 7?" and got.output["stopped"] == "answered"
    assert got.output["tool_calls"] == [] and len(got.output["steps"]) == 1 and server.count() == 1


def test_tools_without_an_implementation_are_passed_through_in_one_request_as_before(server, tmp_path):
    server.play(calls(("get_weather", {"city": "Paris"})))
    given = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}, {"type": "web_search"}]
    got = answer(target(server, given), tmp_path)
    assert set(got.output) == {"content", "messages", "tool_calls", "usage", "model", "latency_ms"}
    assert got.output["tool_calls"] == [{"id": "call_1_get_weather", "name": "get_weather", "arguments": {"city": "Paris"}}]
    assert server.count() == 1 and server.received[0].body["tools"] == given


def test_command_python_and_http_tools_answer_the_calls(server, tmp_path):
    write(tmp_path, "stock.py", """
        def level(sku, warehouse="main"):
            return {"sku": sku, "warehouse": warehouse, "count": len(sku) * 10}
    """)
    write(tmp_path, "price.py", """
        import json, sys
        args = json.load(sys.stdin)
        print(json.dumps({"sku": args["sku"], "usd": 12.5}))
    """)
    with LLMServer() as service:
        tools = [
            {"name": "price", "command": ["python", "price.py"]},
            {"name": "stock", "python": "stock:level"},
            {"name": "ship", "http": {"url": service.url + "/ship", "retries": 0}},
            {"name": "note", "command": ["python", "-c", "print('plain text, not JSON')"]},
        ]
        server.play(calls(("price", {"sku": "ab"}), ("stock", {"sku": "abc"})), calls(("ship", {"sku": "ab", "to": "Lima"}), ("note", {})),
                    {"role": "assistant", "content": "done"})
        got = answer(target(server, tools), tmp_path)
        assert service.received[0].method == "POST" and service.received[0].body == {"sku": "ab", "to": "Lima"}
    results = {call["name"]: call["result"] for call in got.output["tool_calls"]}
    assert results == {
        "price": {"sku": "ab", "usd": 12.5},
        "stock": {"sku": "abc", "warehouse": "main", "count": 30},
        "ship": {"path": "/ship", "echo": {"sku": "ab", "to": "Lima"}},
        "note": "plain text, not JSON",
    }
    assert tool_message(sent_messages(server)[2])[-1]["content"] == "plain text, not JSON"  # text goes to the model as is
    assert got.output["stopped"] == "answered" and not any(step.get("error") for step in got.output["steps"])


def test_a_failing_tool_is_a_result_the_model_sees_and_answers(server, tmp_path):
    write(tmp_path, "broken.py", """
        def lookup(id):
            raise KeyError(f"order {id} is archived")
    """)
    with LLMServer() as service:
        service.fail(Fault("status", status=404, body='{"detail": "no route"}'))
        tools = [
            {"name": "crash", "command": ["python", "-c", "import sys; sys.stderr.write('disk full'); sys.exit(3)"]},
            {"name": "lookup", "python": "broken:lookup"},
            {"name": "remote", "http": {"url": service.url + "/x", "retries": 0}},
            {"name": "typed", "python": "broken:lookup"},
        ]
        server.play(calls(("crash", {}), ("lookup", {"id": 7}), ("remote", {}), ("typed", {"wrong": 1})),
                    {"role": "assistant", "content": "sorry, the tools failed"})
        got = answer(target(server, tools), tmp_path)
    assert got.error is None and got.output["content"] == "sorry, the tools failed" and got.output["stopped"] == "answered"
    errors = {call["name"]: call["result"]["error"] for call in got.output["tool_calls"]}
    assert errors["crash"] == "tool 'crash' exited with code 3; stderr: disk full"
    assert errors["lookup"] == "broken:lookup raised KeyError: 'order 7 is archived'"
    assert errors["remote"].startswith("tool 'remote': POST " + service.url + "/x: HTTP 404") and "no route" in errors["remote"]
    assert errors["typed"].startswith("broken:lookup raised TypeError:") and "wrong" in errors["typed"]
    seen = tool_message(sent_messages(server)[1])
    assert [json.loads(m["content"]) for m in seen] == [{"error": errors[name]} for name in ("crash", "lookup", "remote", "typed")]
    assert [s.get("error") for s in got.output["steps"] if s["kind"] == "tool"] == [True] * 4


def test_an_unknown_tool_and_arguments_that_are_not_json_are_results_the_model_sees(server, tmp_path):
    server.play(calls(("get_ordr", {"id": 7}), ("get_order", '{"id": 7'), ("get_order", "[7]"), ("get_order", {"id": 9})),
                {"role": "assistant", "content": "ok"})
    got = answer(target(server, [{**ORDER_TOOL, "mock": ORDER_MOCK}]), tmp_path)
    assert [call["result"] for call in got.output["tool_calls"]] == [
        {"error": "there is no tool named 'get_ordr' (tools: get_order)"},
        {"error": "the arguments of 'get_order' could not be read: not JSON: '{\"id\": 7'"},
        {"error": "the arguments of 'get_order' could not be read: not a JSON object: '[7]'"},
        {"error": 'no mock result of \'get_order\' for the arguments {"id":9}'},
    ]
    assert got.output["tool_calls"][1]["arguments"] == '{"id": 7'  # what the model wrote, kept for the evaluators
    assert len(tool_message(sent_messages(server)[1])) == 4 and got.output["content"] == "ok"


def test_a_model_that_keeps_calling_tools_stops_at_max_steps(tmp_path):
    with LLMServer(chat=lambda body: calls(("get_order", {"id": 7}))) as server:
        got = answer(target(server, [{**ORDER_TOOL, "mock": ORDER_MOCK}], loop={"max_steps": 3}), tmp_path)
        assert server.count() == 3
    assert got.error is None and got.output["stopped"] == "max_steps"
    assert got.limit_reached == "the tool loop reached its max_steps of 3 model calls (loop.max_steps) and the model was still calling tools"
    assert len(got.output["tool_calls"]) == 2  # the calls of the last reply are not run: no model would read their results
    assert got.output["messages"][-1]["role"] == "assistant" and got.output["messages"][-1]["tool_calls"]


def test_a_token_budget_ends_the_loop_and_a_cost_budget_needs_a_price(tmp_path):
    with LLMServer(chat=lambda body: calls(("get_order", {"id": 7}), content="checking the order now")) as server:
        got = answer(target(server, [{**ORDER_TOOL, "mock": ORDER_MOCK}], loop={"budget": {"tokens": 60}}), tmp_path)
        tokens = [s["usage"]["total_tokens"] for s in got.output["steps"] if s["kind"] == "model"]
        assert sum(tokens) > 60 >= sum(tokens[:-1]) and server.count() == len(tokens)
        assert got.output["stopped"] == "budget" and got.output["usage"]["total_tokens"] == sum(tokens)
        assert got.limit_reached == f"the tool loop used {sum(tokens)} tokens, over its budget of 60 (loop.budget.tokens)"

        costly = target(server, [{**ORDER_TOOL, "mock": ORDER_MOCK}], loop={"budget": {"cost_usd": 0.002}})
        priced = answer(costly, tmp_path, prices={"m1": Price(input=100, output=100)})  # $0.0001 a token
        assert priced.output["stopped"] == "budget" and priced.output["usage"]["cost_usd"] > 0.002
        assert priced.limit_reached.startswith("the tool loop cost $") and "over its budget of $0.002 (loop.budget.cost_usd)" in priced.limit_reached
        unpriced = answer(costly, tmp_path)
        assert unpriced.output is None and unpriced.error.startswith("loop.budget.cost_usd is set but the cost of a model call is unknown")


def test_the_loop_timeout_stops_a_slow_tool_and_the_loop(server, tmp_path):
    server.play(calls(("slow", {})))
    tools = [{"name": "slow", "command": ["python", "-c", "import time; time.sleep(20)"]}]
    started = time.monotonic()
    got = answer(target(server, tools, loop={"timeout": 0.5}), tmp_path)
    assert time.monotonic() - started < 5
    assert got.output["stopped"] == "timeout" and got.limit_reached == "the tool loop ran past its timeout of 0.5 s (loop.timeout)"
    assert got.output["tool_calls"][0]["result"]["error"].startswith("tool 'slow' timed out after 0.")
    assert server.count() == 1


def test_a_model_call_that_fails_is_the_cases_error(server, tmp_path):
    server.play(calls(("get_order", {"id": 7})))
    server.fail(Fault("sleep"), Fault("status", status=400, body='{"error": "context too long"}'))  # the first request passes, the second fails
    got = answer(target(server, [{**ORDER_TOOL, "mock": ORDER_MOCK}]), tmp_path)
    assert got.output is None and got.error.startswith("openai target: POST ") and "HTTP 400" in got.error
    assert got.error.endswith("(at model call 2 of the tool loop)") and got.usage["total_tokens"] > 0


def test_a_case_gives_its_own_mock_results_and_may_not_name_a_tool_the_target_lacks(server, tmp_path):
    model_target = target(server, [ORDER_TOOL])  # described only: the case's mock makes it a loop
    server.play(calls(("get_order", {"id": 7})), {"role": "assistant", "content": "cancelled"})
    case = Case.model_validate({"id": "c", "input": "order 7?", "tools": {"get_order": {"mock": [{"result": {"status": "cancelled"}}]}}})
    got = answer(model_target, tmp_path, case)
    assert got.output["tool_calls"][0]["result"] == {"status": "cancelled"} and got.output["content"] == "cancelled"
    stranger = Case.model_validate({"id": "d", "input": "x", "tools": {"refund": {"mock": [{"result": 1}]}}})
    assert answer(model_target, tmp_path, stranger).error == (
        "openai target: the case gives `tools.refund`, but the target has no tool named 'refund' (tools: get_order)"
    )


def test_tool_configs_are_checked_at_load():
    with pytest.raises(ValueError, match="a tool has one implementation: give one of `mock`, `command`, not 2"):
        OpenAITarget.model_validate({"type": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m",
                                     "tools": [{"name": "t", "mock": [], "command": ["true"]}]})
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        OpenAITarget.model_validate({"type": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m",
                                     "tools": [{"type": "function", "function": {"name": "t"}, "mokc": []}]})
    with pytest.raises(ValueError, match="give the tool's implementation for this case"):
        Case.model_validate({"id": "a", "tools": {"t": {"timeout": 3}}})


# --- end to end: `agenteval run` -----------------------------------------------------------------


def order_agent(body):
    """A model that looks the order up, then answers from what the tool returned."""
    last = body["messages"][-1]
    if last["role"] == "user":
        return calls(("get_order", {"id": int(last["content"].split("#")[1])}))
    status = json.loads(last["content"]).get("status", "unknown")
    return {"role": "assistant", "content": f"Your order is {status}."}


SUITE = """
name: orders
target:
  type: openai
  base_url: "{base_url}"
  model: m1
  temperature: 0
  backoff: 0.01
  tools:
    - name: get_order
      parameters: {{type: object, properties: {{id: {{type: integer}}}}}}
      mock:
        - {{when: {{id: 7}}, result: {{status: shipped}}}}
        - {{result: {{status: unknown}}}}
evaluators:
  - {{type: tool_calls, calls: [{{name: get_order, arguments: {{id: 7}}}}]}}
  - {{type: contains, path: content, reference: shipped}}
cases: cases.jsonl
{extra}
"""


def run(tmp_path, *args):
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q", *map(str, args)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return SimpleNamespace(returncode=result.exit_code, stdout=result.stdout), {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def test_a_loop_answer_is_scored_by_tool_calls_and_a_text_rule_and_replays_from_the_cache(tmp_path):
    with LLMServer(chat=order_agent) as server:
        write(tmp_path, "s.yaml", SUITE.format(base_url=server.base_url, extra=""))
        (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(case) for case in [
            {"id": "shipped", "input": "where is order #7"},
            {"id": "other", "input": "where is order #8"},
            # (asked in other words than "shipped": the same first request at temperature 0 could be the other case's cache hit)
            {"id": "own-mock", "input": "where is my order #7", "tools": {"get_order": {"mock": [{"result": {"status": "shipped"}}]}}},
        ]) + "\n")
        done, lines = run(tmp_path)
        assert done.returncode == 1, done.stdout
        assert server.count() == 6
        assert lines["shipped"]["verdict"] == "pass" and lines["own-mock"]["verdict"] == "pass"
        assert lines["shipped"]["output"]["content"] == "Your order is shipped."
        other = {result["name"]: result["verdict"] for result in lines["other"]["evaluator_results"]}
        assert lines["other"]["output"]["content"] == "Your order is unknown." and other["contains"] == "fail"
        assert lines["shipped"]["usage"]["total_tokens"] == lines["shipped"]["output"]["usage"]["total_tokens"] > 0

        again, replayed = run(tmp_path)
        assert again.returncode == 1 and server.count() == 6  # every model step came from the cache
        for case_id, line in lines.items():
            assert replayed[case_id]["output"]["messages"] == line["output"]["messages"]
            assert replayed[case_id]["output"]["tool_calls"] == line["output"]["tool_calls"]
            assert replayed[case_id]["verdict"] == line["verdict"]
            assert all(s["usage"].get("cached") for s in replayed[case_id]["output"]["steps"] if s["kind"] == "model")


def test_a_cases_file_may_give_mock_results_but_not_a_program_without_trust(tmp_path):
    write(tmp_path, "s.yaml", SUITE.format(base_url="http://127.0.0.1:9/v1", extra=""))
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(case) for case in [
        {"id": "mocked", "input": "#7", "tools": {"get_order": {"mock": [{"result": {"status": "shipped"}}]}}},
        {"id": "runs", "input": "#7", "tools": {"get_order": {"command": ["sh", "-c", "touch PWNED"]}}},
        {"id": "calls", "input": "#7", "tools": {"get_order": {"http": {"url": "http://127.0.0.1:9/steal"}}}},
    ]) + "\n")
    with pytest.raises(SuiteInvalid) as refused:
        load_suite(tmp_path / "s.yaml")
    shown = [problem.render() for problem in refused.value.problems]
    cases = tmp_path / "cases.jsonl"
    assert shown == [
        f"{cases}:2: tools.get_order.command: case 'runs': a `command` tool implementation in a cases file runs a program or code; "
        "cases files are data, so this needs `trust_cases: true` in the suite (only for a file you trust like your own code), "
        "or move the tool into the suite",
        f"{cases}:3: tools.get_order.http: case 'calls': a `http` tool implementation in a cases file talks to a server of its own; "
        "cases files are data, so this needs `trust_cases: true` in the suite (only for a file you trust like your own code), "
        "or move the tool into the suite",
    ]
    write(tmp_path, "s.yaml", SUITE.format(base_url="http://127.0.0.1:9/v1", extra="trust_cases: true"))
    assert load_suite(tmp_path / "s.yaml").index.count == 3
    assert not (tmp_path / "PWNED").exists()


def test_a_loop_ended_by_a_limit_fails_its_case_with_the_limit_named(tmp_path, monkeypatch):
    """Through a whole run: the trajectory is kept and scored, and the case fails with an
    `agent_limits` result naming the limit, whatever the other evaluators say."""
    from agenteval.api import run_suite

    monkeypatch.setenv("LOOP_KEY", "sk-loop")
    with LLMServer(chat=lambda body: calls(("get_order", {"id": 7}))) as server:
        suite = {
            "name": "limits", "models": {"m": {"base_url": server.base_url, "api_key_env": "LOOP_KEY", "model": "m1"}},
            "target": {"type": "openai", "endpoint": "m", "tools": [{**ORDER_TOOL, "mock": ORDER_MOCK}], "loop": {"max_steps": 2}},
            "evaluators": [{"type": "tool_calls", "name": "calls"}],
            "cases": [{"id": "a", "input": "where is order 7?", "expected": {"tool_calls": [{"name": "get_order", "arguments": {"id": 7}}]}}],
        }
        [result] = list(run_suite(suite, base_dir=tmp_path, cache=False))
    assert result.verdict == "fail" and result.output["stopped"] == "max_steps"
    calls_result, limit = result.evaluator_results
    assert calls_result.verdict == "pass"  # the call was right; the loop never ended
    assert (limit.name, limit.verdict, limit.score) == ("agent_limits", "fail", 0.0)
    assert limit.misses == ["the tool loop reached its max_steps of 2 model calls (loop.max_steps) and the model was still calling tools"]


def test_the_docs_tool_calls_example_checks_the_result_a_tool_loop_records(server, tmp_path):
    """docs/evaluators.md's `tool_calls` example, run on the trajectory a real loop recorded with mock tools."""
    import re as _re

    import yaml

    from agenteval.evaluators import EvalContext, EvaluatorSpec
    from pydantic import TypeAdapter

    text = (Path(__file__).resolve().parent.parent / "docs" / "evaluators.md").read_text()
    block = next(body for body in _re.findall(r"```yaml\n(.*?)```", text, _re.S) if "result:" in body and "type: tool_calls" in body)
    [config] = yaml.safe_load(block)
    evaluator = TypeAdapter(EvaluatorSpec).validate_python({**config, "path": "tool_calls"})
    refund = {"name": "issue_refund", "parameters": {"type": "object", "properties": {}}}
    lookup = {"name": "lookup_order", "parameters": {"type": "object", "properties": {}}}
    tools = [{**lookup, "mock": [{"result": {"order_id": "A-1001", "status": "delivered"}}]},
             {**refund, "mock": [{"result": {"status": "refunded", "amount": 25.0}}]}]
    arguments = {"order_id": "A-1001", "amount": 25.0, "reason": "the item arrived damaged", "channel": "card"}
    server.play(calls(("lookup_order", {"order_id": "A-1001"})), calls(("issue_refund", arguments)), {"role": "assistant", "content": "Refunded."})
    got = answer(target(server, tools), tmp_path)
    assert got.error is None, got.error
    assert got.output["tool_calls"][1]["result"] == {"status": "refunded", "amount": 25.0}  # a mapping, as the loop records it
    result = evaluator.evaluate(EvalContext("c", None, None, got.output, {}, tmp_path))
    assert (result.verdict, result.misses) == ("pass", [])
