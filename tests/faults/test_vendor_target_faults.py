"""Hostile input for the `bedrock` and `azure_openai` targets, run as a user runs them (the real CLI
in a subprocess) against the fake vendor servers of tests/vendor_servers.py: credentials a server
echoes (in a usable reply and in an error) never reach results, reports, the cache, the spans or
the output streams; replies that cannot be used are that case's error and never cached; bad keys are refused
at load with file and line."""

from __future__ import annotations

import json
import uuid

import pytest
from conftest import read_jsonl
from test_endpoint_faults import _Collector, agenteval, assert_clean, assert_secret_never_leaves, chat_suite, one_line
from vendor_servers import AZURE_KEY, AzureServer, BedrockServer

NO_AWS = {"AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
          "AWS_EC2_METADATA_DISABLED": "true"}


def run(*args: object, cwd, env: dict[str, str]):
    """`agenteval ARGS` in a fresh process whose environment has no AWS or Azure variable but `env`'s."""
    import os
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AZURE_")) and k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run([sys.executable, "-m", "agenteval", *map(str, args)], cwd=cwd, env={**environ, **NO_AWS, **env},
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("vendor", ["bedrock", "azure_openai"])
def test_credentials_a_server_echoes_never_leave_the_run(tmp_path, vendor):
    core = uuid.uuid4().hex
    if vendor == "bedrock":
        access, secret, token = f"AKID{core[:16].upper()}", f"secret-{core}", f"token-{core}"
        server = BedrockServer(lambda body, model: {"text": f"I saw {secret} and {token}"}, credentials=(access, secret, token))
        env = {"AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token}
        target = {"type": "bedrock", "model": "amazon.nova-lite-v1:0", "region": "us-east-1", "temperature": 0, "retries": 0}
        echoed = f"request {secret} / {token} denied"
        hidden = (secret, token)
    else:
        key = f"azkey-{core}"
        server = AzureServer(lambda body, deployment: {"content": f"I saw {key}"}, key=key)
        env = {"AZURE_OPENAI_API_KEY": key}
        target = {"type": "azure_openai", "deployment": "gpt", "temperature": 0, "retries": 0}
        echoed = f"key {key} has no access"
        hidden = (key,)
    with server, _Collector() as collector:
        target["base_url"] = server.url
        env |= {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
        cases = [{"id": "denied", "input": "hi"}, {"id": "echo", "input": "again"}]  # the first request is denied
        suite = chat_suite(tmp_path, f"target: {json.dumps(target)}", "  - {type: contains, path: content, reference: saw}", cases)
        server.fail(403, "AccessDeniedException" if vendor == "bedrock" else "403", message=echoed)
        done = run("run", suite, "-o", "r.jsonl", "--html", "h.html", "--junit", "j.xml", "--markdown", "m.md", "--workers", "1", "--otel",
                   cwd=tmp_path, env=env)
    assert_clean(done, 3)
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    assert lines["echo"]["output"]["content"] == ("I saw *** and ***" if vendor == "bedrock" else "I saw ***")
    assert "HTTP 403" in lines["denied"]["error"] and "***" in lines["denied"]["error"]
    looked = assert_secret_never_leaves(core, tmp_path, done)
    assert {"r.jsonl", "r.summary.json", "h.html", "j.xml", "m.md", "responses.sqlite"} <= set(looked)
    assert all(value not in json.dumps([r.body for r in server.received]) for value in hidden)  # never sent in a body either
    assert collector.bodies and not [body for body in collector.bodies if core.encode() in body], "a secret is in a span"
    assert any(b"HTTP 403" in body for body in collector.bodies)  # the denied case's error, redacted, is in its span


BEDROCK_REPLIES = {
    "no_output": ({"stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}},
                  "the reply has no output.message.content"),
    "tool_use_without_input": ({"output": {"message": {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "f"}}]}},
                                "stopReason": "tool_use", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}},
                               "the reply's content[0] is a toolUse block without toolUseId, name and input"),
    "negative_usage": ({"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}}, "stopReason": "end_turn",
                        "usage": {"inputTokens": -1, "outputTokens": 1, "totalTokens": 0}},
                       "the reply's usage lacks inputTokens and outputTokens as whole numbers >= 0"),
    "cut_in_a_tool_use": ({"output": {"message": {"role": "assistant", "content": [
        {"toolUse": {"toolUseId": "t", "name": "f", "input": {}}}]}}, "stopReason": "max_tokens",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}},
        "the reply was cut at maxTokens in the middle of a toolUse block"),
}


@pytest.mark.parametrize("fault", sorted(BEDROCK_REPLIES))
def test_an_unusable_converse_reply_is_that_cases_error_and_never_cached(tmp_path, fault):
    reply, expected = BEDROCK_REPLIES[fault]
    creds = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLETESTKEY01", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzTESTSECRET",
             "AWS_SESSION_TOKEN": "FwoGZXIvYXdzEBYaDTESTSESSIONTOKENdoNotLeak"}
    with BedrockServer() as server:
        target = {"type": "bedrock", "model": "amazon.nova-lite-v1:0", "region": "us-east-1", "base_url": server.url, "temperature": 0,
                  "retries": 0}
        suite = chat_suite(tmp_path, f"target: {json.dumps(target)}", "  - {type: contains, path: content, reference: echo}",
                           [{"id": "c1", "input": "hi"}])
        server.fail(200, json.dumps(reply))
        first = run("run", suite, "-o", "r.jsonl", cwd=tmp_path, env=creds)
        again = run("run", suite, "-o", "again.jsonl", cwd=tmp_path, env=creds)
    assert_clean(first, 3)
    (line,) = read_jsonl(tmp_path / "r.jsonl")
    assert line["verdict"] == "error" and line["error"].startswith("bedrock target: " + expected), line["error"]
    assert_clean(again, 0)  # not cached: asked again, and answered this time
    assert len(server.received) == 2 and server.problems == []


@pytest.mark.parametrize(("key", "value", "message"), [
    ("region", "'us-east-1; rm -rf /'", "target.region: String should match pattern"),
    ("model", "''", "no `model`: give the Bedrock model id, inference profile or ARN"),
    ("temperature", ".nan", "target.temperature: must be <= 2.0, got nan"),
    ("max_tokens", "-5", "target.max_tokens: must be >= 1, got -5"),
])
def test_a_bad_bedrock_key_is_refused_at_load_with_file_and_line(tmp_path, key, value, message):
    target = {"type": "bedrock", "model": "amazon.nova-lite-v1:0", "region": "us-east-1"}
    suite = chat_suite(tmp_path, "target:\n" + "".join(f"  {k}: {v}\n" for k, v in target.items() if k != key) + f"  {key}: {value}",
                       "  - {type: contains, path: content, reference: x}", [{"id": "c1", "input": "hi"}])
    done = agenteval("validate", suite, cwd=tmp_path)
    assert_clean(done, 2)
    assert one_line(done.stderr)[0].startswith(f"{suite}:") and message in done.stderr, done.stderr


@pytest.mark.parametrize(("extra", "message"), [
    ("  api_version: v1", "target.api_version: String should match pattern"),
    ("  deployment: ''", "target.deployment: String should have at least 1 character"),
    ("  resource: 'contoso.evil.com/x'", "target.resource: String should match pattern"),
    ("  resource: contoso\n  base_url: https://contoso.openai.azure.com", "give `resource:` or `base_url:`, not both"),
    ("  api_key: sk-literal-123", "a literal `api_key` is not allowed in a suite"),
    ("  headers: {api-key: literal-key-123}", "header 'api-key' holds a literal secret"),
])
def test_a_bad_azure_key_is_refused_at_load_with_file_and_line(tmp_path, extra, message):
    target = "target:\n  type: azure_openai\n" + ("" if "deployment:" in extra else "  deployment: gpt\n") + extra
    suite = chat_suite(tmp_path, target, "  - {type: contains, path: content, reference: x}", [{"id": "c1", "input": "hi"}])
    done = agenteval("validate", suite, cwd=tmp_path)
    assert_clean(done, 2)
    assert one_line(done.stderr)[0].startswith(f"{suite}:") and message in done.stderr, done.stderr


def test_an_embedding_that_is_not_finite_is_an_error_not_a_vector(tmp_path):
    from agenteval.endpoints import Endpoints
    from agenteval.process import Processes
    from agenteval.targets import AzureOpenAITarget, TargetRun

    with AzureServer() as server:
        bad = {"object": "list", "model": "e", "data": [{"object": "embedding", "index": 0, "embedding": [1.0, float("nan")]}],
               "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        server.fail(200, json.dumps(bad))
        target = AzureOpenAITarget.model_validate({"type": "azure_openai", "base_url": server.url, "deployment": "gpt",
                                                   "embedding_deployment": "e", "retries": 0})
        reply = target.embed(["a"], TargetRun(tmp_path, Processes(), Endpoints(environ={"AZURE_OPENAI_API_KEY": AZURE_KEY})))
    assert reply.vectors == [] and reply.error == "azure_openai target: the embeddings reply holds a value that is not a finite number (nan)"


def test_entra_id_without_credentials_is_each_cases_error_without_azure_identitys_log_lines(tmp_path):
    """`entra_id: true` where no credential is found: each case says so in its error; stderr holds the
    run's line only (azure-identity logged some 13 warnings a case there, even with `-q`)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("azure.identity")
    suite = tmp_path / "s.yaml"
    suite.write_text('name: a\ntarget: {type: azure_openai, resource: myres, deployment: d, api_version: "2024-10-21", entra_id: true, '
                     'retries: 0, timeout: 5}\nevaluators: [{type: contains, path: content, reference: x}]\ncases: [{id: a, input: hi}, {id: b, input: ho}]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "IDENTITY_", "MSI_")) and k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(tmp_path / "r.jsonl"), "-q", "--no-cache"],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == ["a: 2 cases, 0 passed, 0 failed, 2 errored, pass rate 0.0%"], done.stderr
    assert all("no Entra ID token from DefaultAzureCredential" in line["error"] for line in read_jsonl(tmp_path / "r.jsonl"))
