"""The `gemini` target end to end: the real CLI (and `step`, `embed`) against a fake Gemini API on
127.0.0.1 that holds every request to the google-genai SDK's own types (tests/gemini_server.py),
and the real google-genai client reading the same fake's replies."""

import json
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, write
from gemini_server import GeminiServer, google_error, service_account_file
from llm_server import Fault
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.endpoints import Endpoints
from agenteval.process import Processes
from agenteval.targets import GeminiTarget, TargetRun
from agenteval.usage import Price

SECRET = "AIza-do-not-leak-8080"
KEY = {"GEMINI_API_KEY": SECRET}
PATH = "/v1beta/models/gemini-test:generateContent"


@pytest.fixture
def server():
    with GeminiServer() as running:
        yield running
    assert running.invalid == []  # every request held to the SDK's types


def suite_text(server, target="", evaluators="", cases="", extra=""):
    return f"""
name: gem
target:
  type: gemini
  base_url: "{server.url}"
  model: gemini-test
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


def a_run(tmp_path, endpoints):
    return TargetRun(tmp_path, Processes(), endpoints)


def test_the_answer_has_the_openai_targets_shape_and_the_system_prompt_is_the_system_instruction(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  max_tokens: 64
  stop: ["END"]
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
    assert answer["tool_calls"] == [] and answer["model"] == "gemini-test"
    assert answer["usage"]["input_tokens"] == 11 and answer["usage"]["output_tokens"] == 7 and answer["usage"]["total_tokens"] == 18
    request = next(r for r in server.received if "case a" in json.dumps(r.body))
    assert request.path == PATH and request.method == "POST"
    assert request.body == {
        "contents": [{"role": "user", "parts": [{"text": "Q: capital of France? (case a)"}]}],
        "systemInstruction": {"parts": [{"text": "Answer with the city only."}]},
        "generationConfig": {"temperature": 0, "maxOutputTokens": 64, "stopSequences": ["END"]},
    }
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["x-goog-api-key"] == SECRET and "authorization" not in headers


def test_the_fake_is_faithful_the_real_google_genai_client_reads_its_replies_and_it_refuses_what_google_would(server):
    from google import genai
    from google.genai import errors, types

    def model(body, name):
        if body.get("tools"):
            return [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnbmVk"}]
        return [{"text": "Paris."}]

    server.gemini = model
    client = genai.Client(api_key=SECRET, http_options=types.HttpOptions(base_url=server.url))
    reply = client.models.generate_content(
        model="gemini-test", contents="capital of France?",
        config=types.GenerateContentConfig(system_instruction="Be brief.", temperature=0, max_output_tokens=20, seed=3,
                                           response_mime_type="application/json", response_json_schema={"type": "string"}),
    )
    assert reply.text == "Paris." and reply.candidates[0].finish_reason == types.FinishReason.STOP
    assert reply.usage_metadata.prompt_token_count == 5 and reply.usage_metadata.candidates_token_count == 1
    weather = types.FunctionDeclaration(name="get_weather", parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}})
    called = client.models.generate_content(
        model="gemini-test", contents="weather in Paris?",
        config=types.GenerateContentConfig(
            tools=[types.Tool(function_declarations=[weather])],
            tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode="ANY")),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        ),
    )
    assert called.function_calls[0].name == "get_weather" and called.function_calls[0].args == {"city": "Paris"}
    assert called.candidates[0].content.parts[0].thought_signature == b"signed"
    embedded = client.models.embed_content(model="gemini-embedding-001", contents=["abc", "abd"])
    assert [len(item.values) for item in embedded.embeddings] == [27, 27]
    assert server.invalid == [] and server.count(":batchEmbedContents") == 1
    # what Google would refuse, the fake refuses: an unknown key, a value of the wrong type
    for body in ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generation_config": {"temperatur": 1}},
                 {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": {"temperature": "hot"}}):
        with pytest.raises(errors.ClientError) as refused:
            client._api_client.request("post", "models/gemini-test:generateContent", body)
        assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
    assert len(server.invalid) == 2
    server.invalid.clear()


def test_function_calls_are_read_back_as_tool_calls_and_tools_go_as_declarations(tmp_path):
    def call_weather(body, model):
        assert body["tools"] == [{"functionDeclarations": [{
            "name": "get_weather", "description": "Weather now",
            "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": False},
        }]}]
        assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
        return [{"text": "Let me look."}, {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"}]

    with GeminiServer(gemini=call_weather) as server:
        write(tmp_path, "s.yaml", suite_text(
            server,
            """  tools: [{type: function, function: {name: get_weather, description: Weather now, parameters: {type: object, properties: {city: {type: string}}, additionalProperties: false}}}]
  tool_choice: required""",
            """  - {type: field_accuracy, fields: [{path: "tool_calls[0].name"}, {path: "tool_calls[0].arguments.city"}]}""",
            """  - {id: a, input: {question: "weather in Paris?"}, expected: {tool_calls: [{name: get_weather, arguments: {city: Paris}}]}}""",
        ))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.invalid == []
    answer = lines["a"]["output"]
    assert answer["tool_calls"] == [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]
    assert answer["content"] == "Let me look."
    assert answer["messages"][-1] == {
        "role": "assistant", "content": "Let me look.",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                        "extra_content": {"google": {"thought_signature": "c2ln"}}}],
    }


def test_step_sends_tool_results_as_function_responses_and_returns_the_canonical_message(server, tmp_path):
    replies = [
        [{"text": "Refund issued for "}, {"text": "order 7."}],
        [{"functionCall": {"id": "fc-9", "name": "refund", "args": {"order": 7, "reason": "late"}}, "thoughtSignature": "c2ln"}],
        [{"text": "done"}],
    ]
    server.gemini = lambda body, model: replies.pop(0)
    target = GeminiTarget.model_validate({"type": "gemini", "base_url": server.url, "model": "gemini-test", "max_tokens": 50})
    endpoints = Endpoints(prices={"gemini-test": Price(input=0.3, output=2.5)}, environ=KEY)
    conversation = [
        {"role": "system", "content": "You are a refund agent."},
        {"role": "user", "content": "Refund order 7, it came late."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1_1", "type": "function", "function": {"name": "lookup", "arguments": '{"order": 7}'}},
            {"id": "call_1_2", "type": "function", "function": {"name": "refund", "arguments": '{"order": 7}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_1_1", "content": '{"status": "delivered late"}'},
        {"role": "tool", "tool_call_id": "call_1_2", "content": "refund failed: try again", "is_error": True},
    ]
    tools = [{"name": "refund", "description": "Refund an order", "parameters": {"type": "object"}}]
    reply = target.step(conversation, tools, a_run(tmp_path, endpoints))
    assert reply.error is None
    assert reply.message == {"role": "assistant", "content": "Refund issued for order 7."}
    assert reply.content == "Refund issued for order 7." and reply.tool_calls == [] and reply.model == "gemini-test"
    assert reply.usage["input_tokens"] == 20 and reply.usage["output_tokens"] == 5  # the function responses count as input
    assert reply.usage["cost_usd"] == pytest.approx((20 * 0.3 + 5 * 2.5) / 1e6)
    sent = server.received[0].body
    assert sent["systemInstruction"] == {"parts": [{"text": "You are a refund agent."}]}
    assert sent["generationConfig"] == {"maxOutputTokens": 50}
    assert sent["tools"] == [{"functionDeclarations": [{"name": "refund", "description": "Refund an order", "parametersJsonSchema": {"type": "object"}}]}]
    assert sent["contents"] == [
        {"role": "user", "parts": [{"text": "Refund order 7, it came late."}]},
        {"role": "model", "parts": [
            {"functionCall": {"name": "lookup", "args": {"order": 7}}},
            {"functionCall": {"name": "refund", "args": {"order": 7}}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "lookup", "response": {"output": {"status": "delivered late"}}}},
            {"functionResponse": {"name": "refund", "response": {"error": "refund failed: try again"}}},
        ]},
    ]
    # the model's call comes back as a ToolCall with the API's id, and its thought signature goes back with it
    again = target.step(conversation[:2], None, a_run(tmp_path, endpoints))
    assert [(c.id, c.name, c.arguments, c.arguments_error) for c in again.tool_calls] == [("fc-9", "refund", {"order": 7, "reason": "late"}, None)]
    assert again.content is None and "tools" not in server.received[1].body
    target.step([*conversation[:2], again.message, {"role": "tool", "tool_call_id": "fc-9", "content": "ok"}], None, a_run(tmp_path, endpoints))
    assert server.received[2].body["contents"][1:] == [
        {"role": "model", "parts": [{"functionCall": {"id": "fc-9", "name": "refund", "args": {"order": 7, "reason": "late"}}, "thoughtSignature": "c2ln"}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "fc-9", "name": "refund", "response": {"output": "ok"}}}]},
    ]
    endpoints.close()


def test_step_and_embed_report_failures_as_errors_not_exceptions(server, tmp_path):
    target = GeminiTarget.model_validate({"type": "gemini", "base_url": server.url, "model": "gemini-test", "retries": 0})
    endpoints = Endpoints(environ=KEY)
    server.fail(Fault("status", 400, body=google_error(400, "bad")))
    reply = target.step([{"role": "user", "content": "hi"}], None, a_run(tmp_path, endpoints))
    assert reply.message == {} and reply.tool_calls == []
    assert reply.error == f"gemini target: POST {server.url}{PATH}: HTTP 400: '{google_error(400, 'bad')}'"
    orphan = target.step([{"role": "tool", "tool_call_id": "x", "content": "r"}], None, a_run(tmp_path, endpoints))
    assert orphan.error == "messages[0] answers call 'x', which no earlier assistant message made" and server.count() == 1
    server.fail(Fault("status", 200, body='{"embeddings": [{"values": [1.0]}]}'))
    short = target.embed(["a", "b"], a_run(tmp_path, endpoints))
    assert short.vectors == [] and short.error.startswith("gemini target: the reply has 1 embeddings for 2 texts")
    endpoints.close()


def test_embed_gives_a_vector_per_text_in_order_from_batch_embed_contents(server, tmp_path):
    from llm_server import letter_embedding

    target = GeminiTarget.model_validate({"type": "gemini", "base_url": server.url, "model": "models/gemini-embedding-test",
                                          "extra_body": {"taskType": "SEMANTIC_SIMILARITY"}})
    endpoints = Endpoints(environ=KEY)
    reply = target.embed(["Paris", "Lima"], a_run(tmp_path, endpoints))
    assert reply.error is None and reply.model == "models/gemini-embedding-test"
    assert reply.vectors == [letter_embedding("Paris"), letter_embedding("Lima")]
    request = server.received[0]
    assert request.path == "/v1beta/models/gemini-embedding-test:batchEmbedContents"
    assert request.body == {"requests": [
        {"model": "models/gemini-embedding-test", "content": {"parts": [{"text": text}]}, "taskType": "SEMANTIC_SIMILARITY"}
        for text in ("Paris", "Lima")
    ]}
    assert reply.usage["latency_ms"] > 0 and not reply.usage.get("cached")
    endpoints.close()


@pytest.mark.parametrize("code", [429, 500, 503, 504])
def test_googles_retryable_codes_are_retried(server, tmp_path, code):
    write(tmp_path, "s.yaml", suite_text(server, "  retries: 2", cases='  - {id: a, input: "say Paris", expected: Paris}'))
    server.fail(Fault("status", code, body=google_error(code)), Fault("status", code, headers={"Retry-After": "0"}, body=google_error(code)))
    done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert lines["a"]["verdict"] == "pass" and lines["a"]["output"]["content"] == "echo: say Paris"
    assert server.count(PATH) == 3


@pytest.mark.parametrize("code", [400, 403, 404])
def test_errors_google_says_not_to_retry_are_not(server, tmp_path, code):
    write(tmp_path, "s.yaml", suite_text(server, "  retries: 3", cases='  - {id: a, input: "x", expected: Paris}\n  - {id: b, input: "y", expected: Paris}'))
    server.fail(Fault("status", code, body=google_error(code, "no")))
    done, lines = run(tmp_path, "--workers", "1")
    assert done.returncode == 3
    assert lines["a"]["error"] == f"gemini target: POST {server.url}{PATH}: HTTP {code}: '{google_error(code, 'no')}'"
    assert lines["b"]["verdict"] == "fail"  # the run went on
    assert server.count(PATH) == 2


@pytest.mark.parametrize(("reply", "error"), [
    ({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}},
     "the prompt was blocked (promptFeedback.blockReason SAFETY)"),
    ({"candidates": [{"finishReason": "SAFETY", "index": 0}], "usageMetadata": {"promptTokenCount": 3}},
     "the reply was blocked (finishReason SAFETY)"),
    ({"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "bad call"}],
      "usageMetadata": {"promptTokenCount": 3}}, "the model's function call could not be used (finishReason MALFORMED_FUNCTION_CALL): 'bad call'"),
    ({"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]},
     "the reply's usageMetadata lacks promptTokenCount (and candidatesTokenCount) as whole numbers >= 0 (the Gemini API always sends them): 'None'"),
    ({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}, "the server answered with an error: 'RESOURCE_EXHAUSTED: quota'"),
])
def test_a_reply_that_is_no_answer_is_a_case_error_and_never_cached(tmp_path, reply, error):
    with GeminiServer(gemini=lambda body, model: reply) as server:
        write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0", cases='  - {id: a, input: "x", expected: Paris}'))
        done, lines = run(tmp_path)
        assert done.returncode == 3 and lines["a"]["error"] == f"gemini target: {error}"
        run(tmp_path)
        assert server.count() == 2  # never cached


def test_cost_comes_from_the_suites_prices_a_re_run_replays_without_the_key_and_repeats_ask_again(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(
        server, "  temperature: 0",
        cases='  - {id: a, input: "say Paris", expected: Paris}\n  - {id: b, input: "say Lima", expected: Paris}',
        extra="prices: {gemini-test: {input: 0.3, output: 2.5}}",
    ))
    done, lines = run(tmp_path)
    assert done.returncode == 1 and server.count() == 2
    usage = lines["a"]["usage"]
    assert usage["input_tokens"] == 2 and usage["output_tokens"] == 3
    assert usage["cost_usd"] == pytest.approx((2 * 0.3 + 3 * 2.5) / 1e6)
    summary = json.loads((tmp_path / "r0.summary.json").read_text())
    assert summary["usage"]["total_cost_usd"] == pytest.approx(2 * (2 * 0.3 + 3 * 2.5) / 1e6)
    again_done, again = run(tmp_path, env={"GEMINI_API_KEY": None})  # offline, without the key: every answer from the cache
    assert again_done.returncode == 1 and server.count() == 2, again_done.stderr
    for case_id, line in lines.items():
        assert again[case_id]["output"]["messages"] == line["output"]["messages"]
        assert again[case_id]["usage"] == {**line["usage"], "cached": True}
    repeated, _ = run(tmp_path, "--repeat", "2")
    assert repeated.returncode == 1 and server.count() == 4  # the second repetition is a new request per case
    run(tmp_path, "--no-cache")
    assert server.count() == 6


def test_two_gemini_models_as_cells_and_the_gate(server, tmp_path):
    write(tmp_path, "s.yaml", f"""
name: cells
models:
  gemini: {{base_url: "{server.url}", model: gemini-small, temperature: 0, backoff: 0.01}}
targets:
  small: {{type: gemini, endpoint: gemini}}
  large: {{type: gemini, endpoint: gemini, model: gemini-large}}
evaluators: [{{type: contains, path: content, reference: echo}}]
cases: [{{id: a, input: hi}}, {{id: b, input: ho}}]
""")
    done, lines = run(tmp_path, "--min-pass-rate", "1.0")
    assert done.returncode == 0, done.stderr
    assert sorted(request.path for request in server.received) == [
        "/v1beta/models/gemini-large:generateContent", "/v1beta/models/gemini-large:generateContent",
        "/v1beta/models/gemini-small:generateContent", "/v1beta/models/gemini-small:generateContent",
    ]
    assert {request.headers["x-goog-api-key"] for request in server.received} == {SECRET}  # GEMINI_API_KEY by default
    summary = json.loads((tmp_path / "r0.summary.json").read_text())
    assert summary["pass_rate"] == 1.0 and summary["counts"]["total"] == 4


def test_a_tool_loop_runs_over_the_gemini_api_and_replays_from_the_cache(tmp_path):
    def agent(body, model):
        last = body["contents"][-1]["parts"]
        results = [part["functionResponse"] for part in last if "functionResponse" in part]
        if not results:
            return [{"functionCall": {"name": "get_order", "args": {"id": 7}}}]
        return [{"text": f"Order 7: {results[0]['response']['output']['status']}"}]

    with GeminiServer(gemini=agent) as server:
        write(tmp_path, "s.yaml", suite_text(
            server, """  temperature: 0
  tools:
    - name: get_order
      description: Look an order up by its id.
      parameters: {type: object, properties: {id: {type: integer}}}
      mock: [{when: {id: 7}, result: {id: 7, status: shipped}}]""",
            "  - {type: contains, path: content, reference: shipped}",
            '  - {id: a, input: "where is order 7?", expected: x}',
        ))
        done, lines = run(tmp_path)
        assert done.returncode == 0, done.stderr
        answer = lines["a"]["output"]
        assert answer["content"] == "Order 7: shipped" and answer["stopped"] == "answered"
        assert answer["tool_calls"] == [{"name": "get_order", "arguments": {"id": 7}, "result": {"id": 7, "status": "shipped"}, "id": "call_1_1", "step": 1}]
        assert [m["role"] for m in answer["messages"]] == ["user", "assistant", "tool", "assistant"]
        first, second = (request.body for request in server.received)
        assert first["tools"][0]["functionDeclarations"][0]["name"] == "get_order"
        assert second["contents"][1:] == [
            {"role": "model", "parts": [{"functionCall": {"name": "get_order", "args": {"id": 7}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_order", "response": {"output": {"id": 7, "status": "shipped"}}}}]},
        ]
        again_done, again = run(tmp_path, env={"GEMINI_API_KEY": None})
        assert again_done.returncode == 0 and server.count() == 2  # the whole loop replayed from the cache, without the key
        assert again["a"]["output"]["messages"] == answer["messages"]
        assert server.invalid == []


def test_a_conversation_runs_turn_by_turn_over_step(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  messages:
    - {role: system, content: "You are the support agent of {{ input.shop }}."}""",
        "  - {type: contains, path: content, reference: echo}",
        "  - {id: c1, input: {shop: Acme}, turns: [hello, my order id is A-1, bye]}"))
    done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    answer = lines["c1"]["output"]
    assert [turn["reply"] for turn in answer["turns"]] == ["echo: hello", "echo: my order id is A-1", "echo: bye"]
    third = server.received[2].body
    assert third["systemInstruction"] == {"parts": [{"text": "You are the support agent of Acme."}]}
    assert third["contents"] == [
        {"role": "user", "parts": [{"text": "hello"}]}, {"role": "model", "parts": [{"text": "echo: hello"}]},
        {"role": "user", "parts": [{"text": "my order id is A-1"}]}, {"role": "model", "parts": [{"text": "echo: my order id is A-1"}]},
        {"role": "user", "parts": [{"text": "bye"}]},
    ]


def test_structured_output_asks_for_json_with_the_schema_and_parse_json_reads_it(tmp_path):
    with GeminiServer(gemini=lambda body, model: [{"text": '{"city": "Paris"}'}]) as server:
        write(tmp_path, "s.yaml", suite_text(
            server, """  parse_json: true
  response_format: {type: json_schema, json_schema: {name: city, schema: {type: object, properties: {city: {type: string}}, required: [city]}}}""",
            "  - {type: field_accuracy, fields: [{path: content.city}]}",
            "  - {id: a, input: x, expected: {content: {city: Paris}}}",
        ))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert lines["a"]["output"]["content"] == {"city": "Paris"}
    assert server.received[0].body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    assert server.invalid == []


def test_a_missing_key_is_one_line_at_load_naming_what_to_set(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, cases='  - {id: a, input: "x", expected: Paris}'))
    done, lines = run(tmp_path, env={"GEMINI_API_KEY": None})
    assert done.returncode == 2 and lines == {} and server.count() == 0
    assert done.stderr.splitlines() == [
        f"{tmp_path / 's.yaml'}: target: environment variable GEMINI_API_KEY is not set: set it to a Gemini API key "
        "(api_key_env), or give `vertex: {project, location}` to use Google Cloud credentials"
    ]
    # with a cache to replay from, the run starts; a case the cache lacks says what to set
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0", cases='  - {id: a, input: "Paris", expected: Paris}'))
    assert run(tmp_path)[0].returncode == 0 and server.count() == 1
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0", cases='  - {id: a, input: "Paris", expected: Paris}\n  - {id: b, input: "x", expected: Paris}'))
    done, lines = run(tmp_path, env={"GEMINI_API_KEY": None})
    assert done.returncode == 3 and server.count() == 1
    assert lines["a"]["verdict"] == "pass" and lines["a"]["usage"]["cached"] is True
    assert lines["b"]["error"] == ("gemini target: environment variable GEMINI_API_KEY is not set (api_key_env): set it to a Gemini "
                                   "API key, or give `vertex: {project, location}` to use Google Cloud credentials")


def test_vertex_ai_with_default_credentials_from_a_service_account_key(server, tmp_path):
    credentials = service_account_file(tmp_path, f"{server.url}/token")
    write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  vertex: {project: "${GCP_TEST_PROJECT}", location: europe-west4}""", "  - {type: contains, path: content, reference: echo}",
        '  - {id: a, input: "hi", expected: x}\n  - {id: b, input: "ho", expected: x}'))
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(credentials), "GCP_TEST_PROJECT": "acme-evals", "GEMINI_API_KEY": None}
    done, lines = run(tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert lines["a"]["output"]["content"] == "echo: hi"
    calls = [r for r in server.received if r.path != "/token"]
    assert {r.path for r in calls} == {"/v1/projects/acme-evals/locations/europe-west4/publishers/google/models/gemini-test:generateContent"}
    assert {r.headers["Authorization"] for r in calls} == {f"Bearer {server.token}"} and server.tokens_issued == 1
    assert not any("x-goog-api-key" in {h.lower() for h in r.headers} for r in calls)
    for path in [p for p in tmp_path.rglob("*") if p.is_file() and p != credentials]:
        assert server.token.encode() not in path.read_bytes(), path
    # a re-run replays from the cache: no credentials needed, no token asked for
    gone = {**env, "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "gone.json")}
    again, replayed = run(tmp_path, env=gone)
    assert again.returncode == 0 and replayed["b"]["output"]["content"] == "echo: ho" and server.tokens_issued == 1
    # without usable credentials, each case says so
    again, failed = run(tmp_path, "--no-cache", env=gone)
    assert again.returncode == 3 and server.tokens_issued == 1
    assert failed["a"]["error"] == (
        "gemini target: no Google credentials found for Vertex AI: set GOOGLE_APPLICATION_CREDENTIALS to a service account "
        "key file, or run `gcloud auth application-default login`"
    )


def test_thoughts_are_not_content_but_their_tokens_are_output_and_native_declarations_pass_as_they_are(server, tmp_path):
    reply = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Let me think.", "thought": True}, {"text": "Lima."}]},
                             "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 7, "cachedContentTokenCount": 4, "candidatesTokenCount": 1, "thoughtsTokenCount": 30,
                               "toolUsePromptTokenCount": 2, "totalTokenCount": 40},
             "modelVersion": "gemini-test-001"}
    server.gemini = lambda body, model: reply
    native = {"name": "lookup", "description": "Find a city", "parameters": {"type": "OBJECT", "properties": {"q": {"type": "STRING"}}}}
    target = GeminiTarget.model_validate({"type": "gemini", "base_url": server.url, "model": "gemini-test"})
    endpoints = Endpoints(prices={"gemini-test": Price(input=1, output=10)}, environ=KEY)
    step = target.step([{"role": "user", "content": "capital of Peru?"}], [native], a_run(tmp_path, endpoints))
    endpoints.close()
    assert step.error is None and step.content == "Lima." and step.model == "gemini-test-001"
    assert (step.usage["input_tokens"], step.usage["output_tokens"], step.usage["total_tokens"]) == (9, 31, 40)
    assert step.usage["cost_usd"] == pytest.approx((9 * 1 + 31 * 10) / 1e6)  # priced by the model asked for
    assert server.received[0].body["tools"] == [{"functionDeclarations": [native]}]


def test_answers_from_a_predictions_file_need_no_key(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, cases='  - {id: a, input: "x", expected: Paris}'))
    write(tmp_path, "answers.jsonl", '{"id": "a", "output": {"content": "Paris"}}\n')
    done, lines = run(tmp_path, "--predictions", tmp_path / "answers.jsonl", env={"GEMINI_API_KEY": None})
    assert done.returncode == 0, done.stderr
    assert lines["a"]["verdict"] == "pass" and server.count() == 0


def test_embeddings_on_vertex_ai_through_a_named_endpoint(server, tmp_path, monkeypatch):
    from llm_server import letter_embedding

    from agenteval.endpoints import ModelEndpoint

    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file(tmp_path, f"{server.url}/token")))
    models = {"google": ModelEndpoint.model_validate({"base_url": server.url, "model": "gemini-embedding-001"})}
    target = GeminiTarget.model_validate({"type": "gemini", "endpoint": "google", "vertex": {"project": "acme", "location": "us-central1"}})
    endpoints = Endpoints(models=models, environ={})
    first = target.embed(["Paris", "Lima"], a_run(tmp_path, endpoints))
    again = target.embed(["Paris", "Lima"], a_run(tmp_path, endpoints))
    endpoints.close()
    assert first.error is None and first.vectors == [letter_embedding("Paris"), letter_embedding("Lima")]
    assert again.vectors == first.vectors and server.tokens_issued == 1  # one token for the run
    calls = [r for r in server.received if r.path != "/token"]
    assert [r.path for r in calls] == ["/v1/projects/acme/locations/us-central1/publishers/google/models/gemini-embedding-001:batchEmbedContents"] * 2
    assert calls[0].headers["Authorization"] == f"Bearer {server.token}" and "x-goog-api-key" not in calls[0].headers
