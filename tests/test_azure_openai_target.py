"""The `azure_openai` target end to end: the real CLI (and `step`, `embed`) against a real local server
playing Azure OpenAI (tests/vendor_servers.py), which validates every body with the openai SDK's
request types, checks the deployment path, api-version and credentials, and answers with the SDK's
own reply models. The openai SDK's `AzureOpenAI` client is shown to talk to the same server."""

import json
import os
import stat
import sys
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, write
from typer.testing import CliRunner
from vendor_servers import AZURE_KEY, AZURE_TOKEN, AzureServer

from agenteval.cli import app
from agenteval.endpoints import Endpoints
from agenteval.process import Processes
from agenteval.targets import AzureOpenAITarget, TargetRun
from agenteval.usage import Price

ENV = {"AZURE_OPENAI_API_KEY": AZURE_KEY, "AZURE_OPENAI_ENDPOINT": None, "AZURE_OPENAI_AD_TOKEN": None}


@pytest.fixture
def server():
    with AzureServer() as running:
        yield running


def suite_text(server, target="", evaluators="", cases="", extra=""):
    return f"""
name: azure
target:
  type: azure_openai
  base_url: "{server.url}"
  deployment: gpt-4o-evals
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


def target_run(tmp_path, environ=None, prices=None):
    environ = {"AZURE_OPENAI_API_KEY": AZURE_KEY} if environ is None else environ
    return TargetRun(tmp_path, Processes(), Endpoints(prices=prices, environ=environ))


def test_a_deployment_is_asked_at_its_path_with_the_api_version_and_the_key(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  max_tokens: 30
  messages:
    - {role: system, content: "Answer with the city only."}
    - {role: user, content: "{{ input.question }}"}""", extra="""prices:
  gpt-4o-2024-08-06: {input: 2.5, output: 10}"""))
    done, lines = run(tmp_path)
    assert done.returncode == 1, done.stderr
    assert server.problems == []
    answer = lines["a"]["output"]
    assert answer["content"] == "echo: capital of France?" and answer["model"] == "gpt-4o-2024-08-06"
    assert answer["usage"]["input_tokens"] == 9 and answer["usage"]["cost_usd"] == pytest.approx((9 * 2.5 + 4 * 10) / 1e6)
    request = server.received[0]
    assert request.path == "/openai/deployments/gpt-4o-evals/chat/completions" and request.query == {"api-version": ["2024-10-21"]}
    assert request.headers["api-key"] == AZURE_KEY and "authorization" not in request.headers
    assert set(request.body) == {"model", "messages", "temperature", "max_tokens"} and request.body["model"] == "gpt-4o-evals"
    assert AZURE_KEY not in (tmp_path / "r0.jsonl").read_text()


def test_an_entra_id_token_from_a_variable_is_sent_as_a_bearer(tmp_path):
    with AzureServer(key=None, token=AZURE_TOKEN) as server:
        write(tmp_path, "s.yaml", suite_text(server, "  ad_token_env: AZURE_OPENAI_AD_TOKEN\n  api_version: 2025-01-01-preview"))
        done, lines = run(tmp_path, env={"AZURE_OPENAI_API_KEY": None, "AZURE_OPENAI_AD_TOKEN": AZURE_TOKEN})
    assert done.returncode == 1, done.stderr
    assert lines["a"]["output"]["content"] == "echo: {\"question\":\"capital of France?\"}" and server.problems == []
    assert server.received[0].headers["authorization"] == f"Bearer {AZURE_TOKEN}" and "api-key" not in server.received[0].headers
    assert server.received[0].query == {"api-version": ["2025-01-01-preview"]}


def test_default_azure_credential_gets_the_token_from_the_azure_cli(tmp_path, monkeypatch):
    """`entra_id: true`: azure-identity's DefaultAzureCredential, here asking a stand-in `az` for the token."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    az = bin_dir / "az"
    az.write_text(f"#!{sys.executable}\nimport json, sys, time\nassert '--resource' in sys.argv, sys.argv\n"
                  f"print(json.dumps({{'accessToken': {AZURE_TOKEN!r}, 'expires_on': int(time.time()) + 3600, 'tokenType': 'Bearer'}}))\n")
    az.chmod(az.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("AZURE_TOKEN_CREDENTIALS", "AzureCliCredential")
    with AzureServer(key=None, token=AZURE_TOKEN) as server:
        target = AzureOpenAITarget.model_validate({"type": "azure_openai", "base_url": server.url, "deployment": "gpt", "entra_id": True})
        reply = target.step([{"role": "user", "content": "hi"}], None, target_run(tmp_path, environ={}))
    assert reply.error is None and reply.content == "echo: hi" and server.problems == []
    assert server.received[0].headers["authorization"] == f"Bearer {AZURE_TOKEN}"


def test_a_tool_loop_and_the_calls_the_sdk_types_accept(tmp_path):
    def model(body, deployment):
        last = body["messages"][-1]
        if last["role"] != "tool":
            assert body["tools"][0]["function"]["name"] == "get_order"
            return {"content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_order", "arguments": '{"id": "A-1"}'}}]}
        return {"content": f"Your order is {json.loads(last['content'])['status']}."}

    with AzureServer(model) as server:
        write(tmp_path, "s.yaml", suite_text(server, """  temperature: 0
  tools:
    - name: get_order
      parameters: {type: object, properties: {id: {type: string}}}
      mock: [{result: {status: shipped}}]""", "  - {type: contains, path: content, reference: shipped}", "  - {id: a, input: order A-1}"))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.problems == []
    answer = lines["a"]["output"]
    assert answer["content"] == "Your order is shipped." and [step["kind"] for step in answer["steps"]] == ["model", "tool", "model"]
    assert server.received[1].body["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": '{"status":"shipped"}'}


def test_a_conversation_of_scripted_turns(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0", "  - {type: contains, path: content, reference: bye}",
                                         "  - {id: c1, input: {}, turns: [hello, bye]}"))
    done, lines = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert [turn["reply"] for turn in lines["c1"]["output"]["turns"]] == ["echo: hello", "echo: bye"]
    assert server.received[1].body["messages"] == [
        {"role": "user", "content": "hello"}, {"role": "assistant", "content": "echo: hello"}, {"role": "user", "content": "bye"}]


def test_a_rerun_replays_from_the_cache_without_the_key(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0"))
    first, lines = run(tmp_path)
    assert first.returncode == 1 and len(server.received) == 2
    again, replayed = run(tmp_path, env={"AZURE_OPENAI_API_KEY": None})
    assert again.returncode == 1, again.stderr
    assert len(server.received) == 2 and replayed["b"]["output"] == {**lines["b"]["output"], "usage": replayed["b"]["output"]["usage"]}
    assert replayed["b"]["usage"]["cached"] is True


def test_a_missing_key_is_one_line_naming_the_variable(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  temperature: 0.5"))
    done, lines = run(tmp_path, env={"AZURE_OPENAI_API_KEY": None})
    assert done.returncode == 2 and lines == {} and server.received == []
    assert done.stderr.strip().splitlines() == [f"{tmp_path / 's.yaml'}: target: environment variable AZURE_OPENAI_API_KEY is not set (api_key_env)"]


@pytest.mark.parametrize(("status", "headers", "retried"), [
    (429, {"Retry-After": "0"}, True), (500, {}, True), (503, {}, True), (408, {}, True),
    (400, {}, False), (401, {}, False), (404, {}, False), (429, {"x-should-retry": "false"}, False), (400, {"x-should-retry": "true"}, True),
])
def test_errors_are_retried_as_the_openai_sdk_retries_them(server, tmp_path, status, headers, retried):
    server.fail(status, str(status), headers)
    target = AzureOpenAITarget.model_validate({"type": "azure_openai", "base_url": server.url, "deployment": "gpt", "backoff": 0.01})
    reply = target.step([{"role": "user", "content": "hi"}], None, target_run(tmp_path))
    assert len(server.received) == (2 if retried else 1)
    assert (reply.error is None) == retried
    if not retried:
        assert f"HTTP {status}" in reply.error and AZURE_KEY not in reply.error


def test_embed_asks_the_embedding_deployment(server, tmp_path):
    from llm_server import letter_embedding

    target = AzureOpenAITarget.model_validate({"type": "azure_openai", "resource": "contoso", "deployment": "gpt",
                                               "embedding_deployment": "embed-small", "base_url": None})
    target = target.model_copy(update={"base_url": server.url, "resource": None})
    reply = target.embed(["refund", "shipped"], target_run(tmp_path))
    assert reply.error is None and reply.vectors == [letter_embedding("refund"), letter_embedding("shipped")]
    assert server.received[0].path == "/openai/deployments/embed-small/embeddings" and server.problems == []
    assert reply.usage["input_tokens"] == 2


def test_the_resource_names_the_endpoint(tmp_path):
    target = AzureOpenAITarget.model_validate({"type": "azure_openai", "resource": "contoso", "deployment": "gpt"})
    settings, auth = target._transport(target_run(tmp_path), "gpt")
    assert settings.base_url == "https://contoso.openai.azure.com" and auth is None
    assert settings.headers == {"api-key": "${AZURE_OPENAI_API_KEY}"}


def test_the_openai_sdks_azure_client_talks_to_the_same_server(tmp_path):
    """The fake is faithful: the SDK's own client, configured as its docs say, gets its answers."""
    from openai import AzureOpenAI

    def model(body, deployment):
        return {"content": f"{deployment} heard {body['messages'][-1]['content']}"}

    with AzureServer(model) as server:
        client = AzureOpenAI(api_key=AZURE_KEY, api_version="2024-10-21", azure_endpoint=server.url, max_retries=0)
        completion = client.chat.completions.create(
            model="gpt-4o-evals", messages=[{"role": "user", "content": "hello"}], temperature=0,
            tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        )
        embedding = client.embeddings.create(model="embed-small", input=["a b"])
    assert completion.choices[0].message.content == "gpt-4o-evals heard hello"
    assert len(embedding.data[0].embedding) > 0
    assert server.problems == []
    assert [r.path for r in server.received] == ["/openai/deployments/gpt-4o-evals/chat/completions", "/openai/deployments/embed-small/embeddings"]


def test_both_credentials_at_once_are_refused_at_load(server, tmp_path):
    write(tmp_path, "s.yaml", suite_text(server, "  entra_id: true\n  ad_token_env: TOKEN"))
    done, _ = run(tmp_path)
    assert done.returncode == 2 and "give `entra_id: true` or `ad_token_env:`, not both" in done.stderr


def test_step_prices_by_the_deployment_name(server, tmp_path):
    target = AzureOpenAITarget.model_validate({"type": "azure_openai", "base_url": server.url, "deployment": "gpt-4o-evals"})
    reply = target.step([{"role": "user", "content": "hi"}], None, target_run(tmp_path, prices={"gpt-4o-evals": Price(input=1, output=2)}))
    assert reply.usage["cost_usd"] == pytest.approx((9 * 1 + 4 * 2) / 1e6)
