"""The `anthropic` target end to end: the real CLI (and `step`) against a real local server
speaking the Messages API (tests/llm_server.py, `POST /v1/messages`)."""

import json
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, write
from llm_server import Fault, LLMServer
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.endpoints import Endpoints
from agenteval.process import Processes
from agenteval.targets import AnthropicTarget, TargetRun
from agenteval.usage import Price

SECRET = "sk-ant-do-not-leak-4242"
KEY = {"ANTHROPIC_API_KEY": SECRET}
OVERLOADED = '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def suite_text(server, target="", evaluators="", cases="", extra=""):
    return f"""
name: claude
target:
  type: anthropic
  base_url: "{server.url}"
  model: claude-test
  backoff: 0.01
{target}
evaluators:
{evaluators or "  - {type: contains, path: content, reference: Paris}"}
cases:
{cases or '''  - {id: a, input: {question: "capital of France?"}, expected: Paris}
  - {id: b, input: {question: "capital of Peru?"}, expected: Lima}'''}
{extra}
"""


def run(tmp_path, *args, env=KEY):
    """`agenteval run s.yaml -q ARGS` in this process; `env` is laid over the environment (None removes a variable)."""
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q", *map(str, args)], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    done = SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)
    return done, {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def test_the_answer_has_the_openai_targets_shape_and_the_system_prompt_goes_on_top(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  messages:
    - {role: system, content: "Answer with the city only."}
    - {role: user, content: "Q: {{ input.question }} (case {{ case.id }})"}"""))
    done, lines = run(tmp_path)
    assert done.returncode == 1, done.stderr  # neither echo contains its city
    answer = lines["a"]["output"]
    assert answer["content"] == "echo: Q: capital of France? (case a)"
    assert answer["messages"] == [
        {"role": "system", "content": "Answer with the city only."},
        {"role": "user", "content": "Q: capital of France? (case a)"},
        {"role": "assistant", "content": "echo: Q: capital of France? (case a)"},
    ]
    assert answer["tool_calls"] == [] and answer["model"] == "claude-test"
    assert answer["usage"]["input_tokens"] == 11 and answer["usage"]["output_tokens"] == 7 and answer["usage"]["total_tokens"] == 18
    assert answer["latency_ms"] == answer["usage"]["latency_ms"] == lines["a"]["usage"]["latency_ms"] > 0
    request = next(r for r in server.received if "case a" in json.dumps(r.body))
    assert request.path == "/v1/messages" and request.method == "POST"
    assert request.body == {
        "model": "claude-test", "max_tokens": 1024, "system": "Answer with the city only.",
        "messages": [{"role": "user", "content": "Q: capital of France? (case a)"}], "temperature": 0,
    }
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["x-api-key"] == SECRET and headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers


def test_tool_use_blocks_are_read_back_as_tool_calls(tmp_path):
    def call_weather(body):
        assert body["tools"] == [{
            "name": "get_weather", "description": "Weather now",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }]
        assert body["tool_choice"] == {"type": "any"}
        return [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        ]

    with LLMServer(messages=call_weather) as server:
        write(tmp_path, "s.yaml", suite_text(
            server,
            """  tools: [{type: function, function: {name: get_weather, description: Weather now, parameters: {type: object, properties: {city: {type: string}}}}}]
  tool_choice: required""",
            """  - {type: field_accuracy, fields: [{path: "tool_calls[0].name"}, {path: "tool_calls[0].arguments.city"}]}""",
            """  - {id: a, input: {question: "weather in Paris?"}, expected: {tool_calls: [{name: get_weather, arguments: {city: Paris}}]}}""",
        ))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    answer = lines["a"]["output"]
    assert answer["tool_calls"] == [{"id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}}]
    assert answer["content"] == "Let me look."
    assert answer["messages"][-1] == {
        "role": "assistant", "content": "Let me look.",
        "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}],
    }


def test_step_sends_tool_results_as_blocks_and_returns_the_canonical_message(tmp_path):
    replies = [
        [{"type": "text", "text": "Refund issued for "}, {"type": "text", "text": "order 7."}],
        [{"type": "tool_use", "id": "toolu_9", "name": "refund", "input": {"order": 7, "reason": "late"}}],
    ]
    with LLMServer(messages=lambda body: replies.pop(0)) as server:
        target = AnthropicTarget.model_validate({"type": "anthropic", "base_url": server.url, "model": "claude-test", "max_tokens": 50})
        endpoints = Endpoints(prices={"claude-test": Price(input=3, output=15)}, environ=KEY)
        run_ = TargetRun(tmp_path, Processes(), endpoints)
        conversation = [
            {"role": "system", "content": "You are a refund agent."},
            {"role": "user", "content": "Refund order 7, it came late."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": '{"order": 7}'}},
                {"id": "toolu_2", "type": "function", "function": {"name": "refund", "arguments": '{"order": 7}'}},
            ]},
            {"role": "tool", "tool_call_id": "toolu_1", "content": '{"status": "delivered late"}'},
            {"role": "tool", "tool_call_id": "toolu_2", "content": "refund failed: try again", "is_error": True},
        ]
        tools = [{"name": "refund", "description": "Refund an order", "parameters": {"type": "object"}}]
        reply = target.step(conversation, tools, run_)
        assert reply.error is None
        assert reply.message == {"role": "assistant", "content": "Refund issued for order 7."}
        assert reply.content == "Refund issued for order 7." and reply.tool_calls == [] and reply.model == "claude-test"
        assert reply.usage["input_tokens"] == 18 and reply.usage["output_tokens"] == 5
        assert reply.usage["cost_usd"] == pytest.approx((18 * 3 + 5 * 15) / 1e6)
        assert reply.latency_ms == reply.usage["latency_ms"] > 0
        sent = server.received[0].body
        assert sent["system"] == "You are a refund agent." and sent["max_tokens"] == 50
        assert sent["tools"] == [{"name": "refund", "description": "Refund an order", "input_schema": {"type": "object"}}]
        assert sent["messages"] == [
            {"role": "user", "content": "Refund order 7, it came late."},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"order": 7}},
                {"type": "tool_use", "id": "toolu_2", "name": "refund", "input": {"order": 7}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"status": "delivered late"}'},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "refund failed: try again", "is_error": True},
            ]},
        ]
        # the model's call comes back as a ToolCall and a canonical message, which converts back the same
        again = target.step([*conversation[:2]], None, run_)
        assert [(c.id, c.name, c.arguments, c.arguments_error) for c in again.tool_calls] == [("toolu_9", "refund", {"order": 7, "reason": "late"}, None)]
        assert again.content is None
        assert again.message["tool_calls"][0]["function"] == {"name": "refund", "arguments": '{"order":7,"reason":"late"}'}
        assert "tools" not in server.received[1].body  # no tools given, none on the target
        replies.append([{"type": "text", "text": "done"}])
        target.step([*conversation[:2], again.message, {"role": "tool", "tool_call_id": "toolu_9", "content": "ok"}], None, run_)
        assert server.received[2].body["messages"][1:] == [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "refund", "input": {"order": 7, "reason": "late"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "ok"}]},
        ]
        endpoints.close()


def test_step_reports_a_failure_as_an_error_not_an_exception(server, tmp_path):
    target = AnthropicTarget.model_validate({"type": "anthropic", "base_url": server.url, "model": "claude-test", "retries": 0})
    endpoints = Endpoints(environ=KEY)
    server.fail(Fault("status", 400, body='{"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}'))
    reply = target.step([{"role": "user", "content": "hi"}], None, TargetRun(tmp_path, Processes(), endpoints))
    assert reply.message == {} and reply.tool_calls == []
    assert reply.error == (
        f"anthropic target: POST {server.url}/v1/messages: HTTP 400: "
        "'{\"type\": \"error\", \"error\": {\"type\": \"invalid_request_error\", \"message\": \"bad\"}}'"
    )
    bad = target.step([{"role": "tool", "content": "orphan"}], None, TargetRun(tmp_path, Processes(), endpoints))
    assert bad.error == "messages[0] is a tool message without `tool_call_id`" and server.count() == 1
    endpoints.close()


def test_overloaded_529_and_429_are_retried(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  retries: 2", cases='  - {id: a, input: "say Paris", expected: Paris}'))
    server.fail(Fault("status", 529, body=OVERLOADED), Fault("status", 429, headers={"Retry-After": "0"}, body=OVERLOADED))
    done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert lines["a"]["verdict"] == "pass" and lines["a"]["output"]["content"] == "echo: say Paris"
    assert server.count("/v1/messages") == 3


def test_errors_are_case_errors_that_name_them(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  retries: 1", cases='''  - {id: a, input: "x", expected: Paris}
  - {id: b, input: "y", expected: Paris}'''))
    server.fail(*[Fault("status", 529, body=OVERLOADED)] * 2)
    done, lines = run(tmp_path, "--workers", "1")
    assert done.returncode == 3
    assert lines["a"]["error"] == (
        f"anthropic target: POST {server.url}/v1/messages after 2 attempts: HTTP 529: '{OVERLOADED}'"
    )
    assert lines["b"]["verdict"] == "fail"  # the run went on
    # an error object sent with a 200 is not an answer either, and is never cached
    with LLMServer(messages=lambda body: json.loads(OVERLOADED)) as erring:
        write(tmp_path, "s.yaml", suite_text(erring, "  temperature: 0", cases='  - {id: a, input: "x", expected: Paris}'))
        done, lines = run(tmp_path)
        assert lines["a"]["error"] == "anthropic target: the server answered with an error: 'overloaded_error: Overloaded'"
        run(tmp_path)
        assert erring.count() == 2  # never cached


def test_cost_comes_from_the_suites_prices_and_a_re_run_sends_nothing(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(
        server, "  temperature: 0",
        cases='  - {id: a, input: "say Paris", expected: Paris}\n  - {id: b, input: "say Lima", expected: Paris}',
        extra="prices: {claude-test: {input: 3, output: 15}}",
    ))
    done, lines = run(tmp_path)
    assert done.returncode == 1 and server.count() == 2
    usage = lines["a"]["usage"]
    assert usage["input_tokens"] == 2 and usage["output_tokens"] == 3
    assert usage["cost_usd"] == pytest.approx((2 * 3 + 3 * 15) / 1e6)
    summary = json.loads((tmp_path / "r0.summary.json").read_text())
    assert summary["usage"]["total_cost_usd"] == pytest.approx(2 * (2 * 3 + 3 * 15) / 1e6)
    again_done, again = run(tmp_path)
    assert again_done.returncode == 1 and server.count() == 2  # every answer came from the cache
    for case_id, line in lines.items():
        assert again[case_id]["output"]["messages"] == line["output"]["messages"]
        assert again[case_id]["usage"] == {**line["usage"], "cached": True}
    run(tmp_path, "--no-cache")
    assert server.count() == 4


def test_the_key_never_reaches_results_summaries_cache_or_logs(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0\n  api_key_env: CLAUDE_TEST_KEY"))
    server.fail(Fault("status", 401, body=f'{{"type": "error", "error": {{"type": "authentication_error", "message": "bad key {SECRET}"}}}}'))
    done, lines = run(tmp_path, "--workers", "1", env={"CLAUDE_TEST_KEY": SECRET, "ANTHROPIC_API_KEY": None})
    assert done.returncode == 3
    assert "HTTP 401" in lines["a"]["error"] and "bad key ***" in lines["a"]["error"]
    assert {r.headers.get("x-api-key") for r in server.received} == {SECRET}
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in done.stdout + done.stderr


def test_a_missing_key_is_one_line_before_any_case_and_each_cases_error_when_a_cache_exists(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, cases='  - {id: a, input: "x", expected: Paris}'))
    done, lines = run(tmp_path, env={"ANTHROPIC_API_KEY": None})
    assert done.returncode == 2 and lines == {} and server.count() == 0
    assert done.stderr.splitlines() == [
        f"{tmp_path / 's.yaml'}: target: environment variable ANTHROPIC_API_KEY is not set: it holds the Anthropic API key "
        "(`api_key_env`); set it, or name another variable"
    ]
    # with a cache file the run starts (it may replay); the Messages API's key is read before the
    # cache is, so each case's error names the variable
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0", cases='  - {id: a, input: "Paris", expected: Paris}'))
    assert run(tmp_path)[0].returncode == 0 and server.count() == 1
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0", cases='  - {id: a, input: "Paris", expected: Paris}\n  - {id: b, input: "x", expected: Paris}'))
    done, lines = run(tmp_path, env={"ANTHROPIC_API_KEY": None})
    assert done.returncode == 3 and server.count() == 1
    assert [lines[case]["error"] for case in "ab"] == ["anthropic target: environment variable ANTHROPIC_API_KEY is not set (api_key_env)"] * 2


def test_a_named_endpoint_gets_the_apis_defaults_under_its_own_keys(server, tmp_path):
    write(tmp_path, "s.yaml", f"""
name: named
models:
  claude: {{base_url: "{server.url}", model: claude-small, temperature: 0.7, max_tokens: 9, stop: ["END"]}}
target: {{type: anthropic, endpoint: claude, temperature: 0, extra_body: {{top_k: 5}}}}
evaluators: [{{type: contains, path: content, reference: echo}}]
cases: [{{id: a, input: hi, expected: x}}]
""")
    done, _ = run(tmp_path)
    assert done.returncode == 0, done.stderr
    request = server.received[0]
    assert request.body == {
        "model": "claude-small", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0, "stop_sequences": ["END"], "top_k": 5,
    }
    assert request.headers["x-api-key"] == SECRET  # api_key_env: ANTHROPIC_API_KEY by default


def test_parse_json_and_a_seed_at_load(tmp_path):
    with LLMServer(messages=lambda body: [{"type": "text", "text": '```json\n{"city": "Paris"}\n```'}]) as server:
        write(tmp_path, "s.yaml", suite_text(
            server, "  parse_json: true", "  - {type: field_accuracy, fields: [{path: content.city}]}",
            "  - {id: a, input: x, expected: {content: {city: Paris}}}",
        ))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert lines["a"]["output"]["content"] == {"city": "Paris"}
    write(tmp_path, "s.yaml", suite_text(server, "  seed: 7"))
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "s.yaml")])
    assert result.exit_code == 2 and "the Messages API has no `seed`" in result.stderr


def test_a_message_the_api_cannot_express_is_a_case_error(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  messages:
    - {role: user, content: "{{ input }}"}
    - {role: assistant, content: null, tool_calls: [{id: t1, type: function, function: {name: f, arguments: "[1, 2]"}}]}""",
        cases='  - {id: a, input: "x", expected: Paris}'))
    done, lines = run(tmp_path)
    assert done.returncode == 3 and server.count() == 0
    assert lines["a"]["error"] == "messages[1].tool_calls[0].function.arguments is not a JSON object (the Messages API takes an object)"


def test_a_tool_loop_runs_over_the_messages_api(tmp_path):
    def agent(body):
        last = body["messages"][-1]["content"]
        results = [block for block in last if block.get("type") == "tool_result"] if isinstance(last, list) else []
        if not results:
            return [{"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"id": 7}}]
        return [{"type": "text", "text": f"Order 7: {json.loads(results[0]['content'])['status']}"}]

    with LLMServer(messages=agent) as server:
        write(tmp_path, "s.yaml", suite_text(
            server, """  temperature: 0
  tools:
    - name: get_order
      description: Look an order up by its id.
      input_schema: {type: object, properties: {id: {type: integer}}}
      mock: [{when: {id: 7}, result: {id: 7, status: shipped}}]""",
            "  - {type: contains, path: content, reference: shipped}",
            '  - {id: a, input: "where is order 7?", expected: x}',
        ))
        done, lines = run(tmp_path)
        assert done.returncode == 0, done.stderr
        answer = lines["a"]["output"]
        assert answer["content"] == "Order 7: shipped" and answer["stopped"] == "answered"
        assert answer["tool_calls"] == [{"name": "get_order", "arguments": {"id": 7}, "result": {"id": 7, "status": "shipped"}, "id": "toolu_1", "step": 1}]
        assert [m["role"] for m in answer["messages"]] == ["user", "assistant", "tool", "assistant"]
        first, second = (request.body for request in server.received)
        assert first["tools"] == [{
            "name": "get_order", "description": "Look an order up by its id.",
            "input_schema": {"type": "object", "properties": {"id": {"type": "integer"}}},
        }]
        assert second["messages"][1] == {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"id": 7}}]}
        assert second["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"
        again_done, again = run(tmp_path)
        assert again_done.returncode == 0 and server.count() == 2  # the whole loop replayed from the cache
        assert again["a"]["output"]["messages"] == answer["messages"]
