"""The `bedrock` target end to end: the real CLI (and `step`, `embed`) against a real local server
playing Bedrock Runtime (tests/vendor_servers.py), which recomputes every SigV4 signature with
botocore and validates every request and reply against bedrock-runtime's own service model."""

import json
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, write
from typer.testing import CliRunner
from vendor_servers import ACCESS_KEY, AWS_ENV, SECRET_KEY, SESSION_TOKEN, BedrockServer

from agenteval.cli import app
from agenteval.endpoints import Endpoints
from agenteval.process import Processes
from agenteval.targets import BedrockTarget, TargetRun
from agenteval.usage import Price

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"  # a cross-region inference profile
NO_AWS = {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None, "AWS_SESSION_TOKEN": None, "AWS_PROFILE": None,
          "AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
          "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
          "AWS_CONTAINER_CREDENTIALS_FULL_URI": None, "AWS_WEB_IDENTITY_TOKEN_FILE": None}
ENV = {**NO_AWS, **AWS_ENV}


@pytest.fixture
def server():
    with BedrockServer() as running:
        yield running


def suite_text(server, target="", evaluators="", cases="", extra=""):
    return f"""
name: bedrock
target:
  type: bedrock
  base_url: "{server.url}"
  region: us-east-1
  model: {MODEL}
  backoff: 0.01
{target}
evaluators:
{evaluators or "  - {type: contains, path: content, reference: Paris}"}
cases:
{cases or '''  - {id: a, input: {question: "capital of France?"}, expected: Paris}
  - {id: b, input: {question: "capital of Peru?"}, expected: Lima}'''}
{extra}
"""


def run(tmp_path, *args, env=ENV):
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q", *map(str, args)], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    done = SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)
    return done, {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def target_run(tmp_path, environ=ENV, prices=None):
    return TargetRun(tmp_path, Processes(), Endpoints(prices=prices, environ={k: v for k, v in environ.items() if v is not None}))


def test_a_signed_converse_request_and_the_answer_in_the_openai_targets_shape(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  max_tokens: 40
  stop: ["###"]
  messages:
    - {role: system, content: "Answer with the city only."}
    - {role: user, content: "Q: {{ input.question }} (case {{ case.id }})"}""", extra="""prices:
  anthropic.claude-3-5-haiku-20241022-v1:0: {input: 0.8, output: 4}"""))
    done, lines = run(tmp_path)
    assert done.returncode == 1, done.stderr  # neither echo holds its city
    assert server.problems == []  # every signature recomputed, every request valid for the service model
    answer = lines["a"]["output"]
    assert answer["content"] == "echo: Q: capital of France? (case a)"
    assert answer["messages"][-1] == {"role": "assistant", "content": "echo: Q: capital of France? (case a)"}
    assert answer["tool_calls"] == [] and answer["model"] == MODEL
    assert answer["usage"]["input_tokens"] == 11 and answer["usage"]["output_tokens"] == 7
    # priced under the model without the inference profile's `us.` prefix
    assert answer["usage"]["cost_usd"] == pytest.approx((11 * 0.8 + 7 * 4) / 1e6)
    request = next(r for r in server.received if "case a" in json.dumps(r.body))
    assert request.path == f"/model/{MODEL.replace(':', '%3A')}/converse"
    assert request.body == {
        "messages": [{"role": "user", "content": [{"text": "Q: capital of France? (case a)"}]}],
        "system": [{"text": "Answer with the city only."}],
        "inferenceConfig": {"maxTokens": 40, "temperature": 0, "stopSequences": ["###"]},
    }
    authorization = request.headers["authorization"]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/") and "/us-east-1/bedrock/aws4_request" in authorization
    assert request.headers["x-amz-security-token"] == SESSION_TOKEN
    text = (tmp_path / "r0.jsonl").read_text()
    assert SECRET_KEY not in text and SESSION_TOKEN not in text and "AWS4-HMAC" not in text


def test_an_arn_model_id_is_encoded_in_the_path_and_names_the_region(server, tmp_path):
    arn = "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.anthropic.claude-3-5-sonnet-20240620-v1:0"
    target = BedrockTarget.model_validate({"type": "bedrock", "model": arn, "base_url": server.url})
    reply = target.step([{"role": "user", "content": "hi"}], None, target_run(tmp_path))
    assert reply.error is None and reply.content == "echo: hi" and server.problems == []
    assert server.received[0].path == "/model/arn%3Aaws%3Abedrock%3Aeu-west-1%3A123456789012%3Ainference-profile%2Feu.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
    assert "/eu-west-1/bedrock/aws4_request" in server.received[0].headers["authorization"]


def test_a_tool_loop_sends_tool_use_and_tool_result_blocks_the_service_model_accepts(tmp_path):
    def model(body, model_id):
        last = body["messages"][-1]["content"]
        result = next((block["toolResult"] for block in last if "toolResult" in block), None)
        if result is None:
            assert body["toolConfig"]["tools"] == [{"toolSpec": {
                "name": "get_order", "description": "Look an order up",
                "inputSchema": {"json": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}}]
            return [{"text": "Looking."}, {"toolUse": {"toolUseId": "tu-1", "name": "get_order", "input": {"id": "A-1"}}}]
        assert result["toolUseId"] == "tu-1" and "status" not in result
        return {"text": f"Your order is {json.loads(result['content'][0]['text'])['status']}."}

    with BedrockServer(model) as server:
        write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  tools:
    - name: get_order
      description: Look an order up
      parameters: {type: object, properties: {id: {type: string}}, required: [id]}
      mock: [{result: {status: shipped}}]""", "  - {type: contains, path: content, reference: shipped}",
            "  - {id: a, input: order A-1 please}"))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.problems == []
    answer = lines["a"]["output"]
    assert answer["content"] == "Your order is shipped." and answer["stopped"] == "answered"
    assert answer["tool_calls"] == [{"id": "tu-1", "name": "get_order", "arguments": {"id": "A-1"}, "result": {"status": "shipped"}, "step": 1}]
    second = server.received[1].body["messages"]
    assert second[1] == {"role": "assistant", "content": [
        {"text": "Looking."}, {"toolUse": {"toolUseId": "tu-1", "name": "get_order", "input": {"id": "A-1"}}}]}
    assert second[2]["role"] == "user" and second[2]["content"][0]["toolResult"]["toolUseId"] == "tu-1"
    assert [step["kind"] for step in answer["steps"]] == ["model", "tool", "model"]


def test_a_conversation_of_scripted_turns_sends_the_history_each_turn(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0", "  - {type: contains, path: content, reference: bye}",
                                         "  - {id: c1, input: {}, turns: [hello, order A-1, bye]}"))
    done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert [turn["reply"] for turn in lines["c1"]["output"]["turns"]] == ["echo: hello", "echo: order A-1", "echo: bye"]
    assert server.received[2].body["messages"] == [
        {"role": "user", "content": [{"text": "hello"}]}, {"role": "assistant", "content": [{"text": "echo: hello"}]},
        {"role": "user", "content": [{"text": "order A-1"}]}, {"role": "assistant", "content": [{"text": "echo: order A-1"}]},
        {"role": "user", "content": [{"text": "bye"}]},
    ]
    assert server.problems == []


def test_a_rerun_replays_from_the_cache_without_credentials_and_repeat_asks_again(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0"))
    first, lines = run(tmp_path)
    assert first.returncode == 1 and len(server.received) == 2
    again, replayed = run(tmp_path, env=NO_AWS)  # offline: no credentials, no request
    assert again.returncode == 1, again.stderr
    assert len(server.received) == 2
    assert replayed["a"]["output"]["content"] == lines["a"]["output"]["content"] and replayed["a"]["usage"]["cached"] is True
    repeated, _ = run(tmp_path, "--repeat", "2")
    assert repeated.returncode == 1 and len(server.received) == 4  # the second repetition is asked anew; the first replays


@pytest.mark.parametrize(("status", "code"), [
    (429, "ThrottlingException"), (503, "ServiceUnavailableException"), (429, "ModelNotReadyException"),
    (500, "InternalServerException"),
])
def test_retryable_errors_are_retried_as_aws_retries_them(server, tmp_path, status, code):
    server.fail(status, code)
    target = BedrockTarget.model_validate({"type": "bedrock", "model": MODEL, "region": "us-east-1", "base_url": server.url, "backoff": 0.01})
    reply = target.step([{"role": "user", "content": "hi"}], None, target_run(tmp_path))
    assert reply.error is None and reply.content == "echo: hi"
    assert len(server.received) == 2 and server.problems == []  # the retry was signed afresh and valid


@pytest.mark.parametrize(("status", "code"), [
    (400, "ValidationException"), (403, "AccessDeniedException"), (408, "ModelTimeoutException"),
    (400, "ServiceQuotaExceededException"), (424, "ModelErrorException"),
])
def test_errors_aws_does_not_retry_are_not_retried(server, tmp_path, status, code):
    server.fail(status, code)
    target = BedrockTarget.model_validate({"type": "bedrock", "model": MODEL, "region": "us-east-1", "base_url": server.url, "backoff": 0.01})
    reply = target.step([{"role": "user", "content": "hi"}], None, target_run(tmp_path))
    assert len(server.received) == 1
    assert reply.error.startswith(f"bedrock target: POST {server.url}/model/") and f"HTTP {status}: '{{\"message\": \"scripted {code}\"}}'" in reply.error


def test_no_credentials_is_one_line_naming_what_to_set(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0"))
    done, lines = run(tmp_path, env=NO_AWS)
    assert done.returncode == 2 and lines == {}
    assert done.stderr.strip().splitlines() == [
        f"{tmp_path / 's.yaml'}: target: no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), "
        "or AWS_PROFILE, or run where a role provides them"]
    assert server.received == []


def test_a_profile_from_the_shared_credentials_file_signs(server, tmp_path):
    credentials = write(tmp_path, "credentials", f"[evals]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
                                                 f"aws_session_token = {SESSION_TOKEN}\n")
    environ = {**NO_AWS, "AWS_PROFILE": "evals", "AWS_SHARED_CREDENTIALS_FILE": str(credentials)}
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0"))
    done, lines = run(tmp_path, env=environ)
    assert done.returncode == 1, done.stderr
    assert lines["a"]["output"]["content"] == 'echo: {"question":"capital of France?"}' and server.problems == []


def test_a_bedrock_api_key_is_sent_as_a_bearer_token_instead_of_signing(tmp_path):
    with BedrockServer(bearer="ABSKbedrock-api-key-0123") as server:
        target = BedrockTarget.model_validate({"type": "bedrock", "model": MODEL, "region": "us-east-1", "base_url": server.url,
                                               "api_key_env": "AWS_BEARER_TOKEN_BEDROCK"})
        reply = target.step([{"role": "user", "content": "hi"}], None, target_run(tmp_path, {**NO_AWS, "AWS_BEARER_TOKEN_BEDROCK": "ABSKbedrock-api-key-0123"}))
    assert reply.error is None and reply.content == "echo: hi" and server.problems == []


@pytest.mark.parametrize("model", ["amazon.titan-embed-text-v2:0", "cohere.embed-english-v3"])
def test_embed_asks_invoke_model_once_per_request_the_model_takes_and_caches(server, tmp_path, model):
    from llm_server import letter_embedding

    target = BedrockTarget.model_validate({"type": "bedrock", "model": MODEL, "region": "us-east-1", "base_url": server.url,
                                           "embedding_model": model})
    run_ = target_run(tmp_path)
    reply = target.embed(["refund issued", "order shipped"], run_)
    assert reply.error is None and server.problems == []
    assert reply.vectors == [letter_embedding("refund issued"), letter_embedding("order shipped")]
    assert server.count("/invoke") == (2 if "titan" in model else 1)
    assert target.embed(["refund issued", "order shipped"], run_).vectors == reply.vectors


def test_step_prices_and_converts_a_whole_conversation(server, tmp_path):
    target = BedrockTarget.model_validate({"type": "bedrock", "model": MODEL, "region": "us-east-1", "base_url": server.url, "max_tokens": 50})
    conversation = [
        {"role": "system", "content": "You are a refund agent."},
        {"role": "user", "content": "Refund order 7."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "lookup", "arguments": '{"order": 7}'}},
            {"id": "t2", "type": "function", "function": {"name": "refund", "arguments": '{"order": 7}'}}]},
        {"role": "tool", "tool_call_id": "t1", "content": '{"status": "late"}'},
        {"role": "tool", "tool_call_id": "t2", "content": "refund failed", "is_error": True},
    ]
    reply = target.step(conversation, [{"name": "refund", "parameters": {"type": "object"}}],
                        target_run(tmp_path, prices={MODEL: Price(input=1, output=5)}))
    assert reply.error is None and server.problems == []
    sent = server.received[0].body
    assert sent["messages"][2] == {"role": "user", "content": [
        {"toolResult": {"toolUseId": "t1", "content": [{"text": '{"status": "late"}'}]}},
        {"toolResult": {"toolUseId": "t2", "content": [{"text": "refund failed"}], "status": "error"}}]}
    assert reply.usage["cost_usd"] == pytest.approx((reply.usage["input_tokens"] * 1 + reply.usage["output_tokens"] * 5) / 1e6)


def test_a_seed_is_refused_at_load(tmp_path, server):
    write(tmp_path, "s.yaml", suite_text(server, "  seed: 7"))
    done, _ = run(tmp_path)
    assert done.returncode == 2 and "the Converse API has no `seed`" in done.stderr


def test_the_aws_endpoint_variable_routes_requests_and_the_cache_knows_them_by_region_and_model(server, tmp_path):
    suite = suite_text(server, "  temperature: 0").replace(f'  base_url: "{server.url}"\n', "")
    write(tmp_path, "s.yaml", suite)
    done, lines = run(tmp_path, env={**ENV, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": server.url})
    assert done.returncode == 1, done.stderr
    assert len(server.received) == 2 and server.problems == []
    again, replayed = run(tmp_path, env={**NO_AWS, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://127.0.0.1:9"})  # nothing listens there
    assert again.returncode == 1, again.stderr
    assert replayed["a"]["usage"]["cached"] is True and replayed["a"]["output"]["content"] == lines["a"]["output"]["content"]


def test_bedrock_and_azure_openai_side_by_side_as_cells_with_the_gate(server, tmp_path):
    from vendor_servers import AZURE_KEY, AzureServer

    with AzureServer(lambda body, deployment: {"content": "Paris, of course."}) as azure:
        write(tmp_path, "s.yaml", f"""
name: two-clouds
targets:
  claude: {{type: bedrock, base_url: "{server.url}", region: us-east-1, model: {MODEL}, temperature: 0}}
  gpt: {{type: azure_openai, base_url: "{azure.url}", deployment: gpt-4o, temperature: 0}}
evaluators:
  - {{type: contains, path: content, reference: Paris}}
cases:
  - {{id: a, input: "capital of France?"}}
  - {{id: b, input: "capital of France, please"}}
""")
        done, _ = run(tmp_path, env={**ENV, "AZURE_OPENAI_API_KEY": AZURE_KEY})
        lines = read_jsonl(sorted(tmp_path.glob("r*.jsonl"))[-1])
        gated, _ = run(tmp_path, "--target", "gpt", "--min-pass-rate", "1.0", env={**ENV, "AZURE_OPENAI_API_KEY": AZURE_KEY})
        keyless = {**ENV, "AZURE_OPENAI_API_KEY": None}
        without_key, _ = run(tmp_path, "--no-cache", env=keyless)
        only_claude, _ = run(tmp_path, "--no-cache", "--target", "claude", env=keyless)
    assert done.returncode == 1, done.stderr  # the claude cell echoes, and fails
    verdicts = {(line["target"], line["case_id"]): line["verdict"] for line in lines}
    assert verdicts == {("claude", "a"): "fail", ("claude", "b"): "fail", ("gpt", "a"): "pass", ("gpt", "b"): "pass"}
    assert gated.returncode == 0, gated.stderr  # the gpt cell alone passes the gate, from the cache
    assert len(azure.received) == 2 and server.problems == [] and azure.problems == []
    assert without_key.returncode == 2
    assert without_key.stderr.strip().splitlines() == [f"{tmp_path / 's.yaml'}: targets.gpt: environment variable AZURE_OPENAI_API_KEY is not set (api_key_env)"]
    assert only_claude.returncode == 1, only_claude.stderr  # the cell chosen needs no Azure key
