"""Model judges on `models:` entries of type bedrock, gemini and azure_openai: the real CLI against
the fake vendor servers (every request checked against the vendor's own types), the judge's
schema sent as each API's structured output where it has one, and a re-run replayed offline from
the response cache. semantic_similarity through embed() on gemini and azure_openai."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from conftest import read_jsonl, write
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.evaluators.model.claims import SYSTEM_PROMPT as CLAIMS_SYSTEM
from agenteval.evaluators.model.rubric import SYSTEM_PROMPT as RUBRIC_SYSTEM

pytest.importorskip("botocore")
pytest.importorskip("google.genai")
pytest.importorskip("openai")
from gemini_server import GeminiServer  # noqa: E402
from vendor_servers import AWS_ENV, AZURE_KEY, AzureServer, BedrockServer  # noqa: E402

GEMINI_KEY = "gemini-judge-key-do-not-leak-4242"
ENV = {**AWS_ENV, "AZURE_OPENAI_API_KEY": AZURE_KEY, "GEMINI_API_KEY": GEMINI_KEY}
GRADE = {"correct": {"reasoning": "names the capital", "score": "pass"}}
VERDICTS = {
    "claims": ["The tower is 330 m tall.", "It is painted gold."],
    "verdicts": [{"claim": 1, "verdict": "supported", "evidence": "330 metres"}, {"claim": 2, "verdict": "not_found", "evidence": ""}],
}
EVALUATORS = " []"
CASES = """
  - id: paris
    input: "capital of France?"
    output: "Paris"
    evaluators: [{type: llm_judge, endpoint: judge, criteria: [{name: correct, description: It names the capital.}]}]
  - id: tower
    input: {question: "How tall?"}
    output: {answer: "330 m, painted gold", contexts: ["The tower is 330 metres tall."]}
    evaluators: [{type: faithfulness, endpoint: judge, threshold: 0.5}]
"""


def answer_for(system: str) -> str:
    """The judge's reply for the prompt it sent: a grade for the rubric, verdicts for the claims."""
    assert system in (RUBRIC_SYSTEM, CLAIMS_SYSTEM), system[:80]
    return json.dumps(GRADE if system == RUBRIC_SYSTEM else VERDICTS)


def bedrock_reply(body, model_id):
    return {"text": answer_for("".join(block["text"] for block in body["system"]))}


def gemini_reply(body, model):
    return [{"text": answer_for("".join(part["text"] for part in body["systemInstruction"]["parts"]))}]


def azure_reply(body, deployment):
    return {"content": answer_for(body["messages"][0]["content"])}


VENDORS = {
    "bedrock": (lambda: BedrockServer(bedrock_reply), lambda url: f"""
    type: bedrock
    model: us.anthropic.claude-3-5-haiku-20241022-v1:0
    region: us-east-1
    base_url: "{url}"
    embedding_model: amazon.titan-embed-text-v2:0"""),
    "gemini": (lambda: GeminiServer(gemini_reply), lambda url: f"""
    type: gemini
    model: gemini-judge
    base_url: "{url}" """),
    "azure_openai": (lambda: AzureServer(azure_reply), lambda url: f"""
    type: azure_openai
    deployment: gpt-judge
    embedding_deployment: embed-small
    base_url: "{url}" """),
}


def run(tmp_path, env=ENV):
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q"], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    done = SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)
    return done, {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def suite(entry, evaluators=EVALUATORS, cases=CASES):
    return f"""
name: vendor-judged
models:
  judge:{entry}
    backoff: 0.01
target: {{type: recorded}}
evaluators:{evaluators}
cases:{cases}
"""


def by_type(line, type_name):
    return next(result for result in line["evaluator_results"] if result["type"] == type_name)


def requests_of(server):
    """The bodies the server received, as JSON."""
    return [received.body for received in server.received]


def structured_output(kind, body):
    """The judge's schema as the vendor's request carries it (None: the prompt alone states it)."""
    if kind == "gemini":
        config = body.get("generationConfig", {})
        assert config.get("responseMimeType") == "application/json"
        return config["responseJsonSchema"]
    if kind == "azure_openai":
        assert body["response_format"]["type"] == "json_schema"
        return body["response_format"]["json_schema"]["schema"]
    assert set(body) <= {"messages", "system", "inferenceConfig"}, set(body)  # Converse: no structured output
    return None


@pytest.mark.parametrize("kind", list(VENDORS))
def test_llm_judge_and_faithfulness_on_a_vendor_model_and_replayed_offline(tmp_path, kind):
    make, entry = VENDORS[kind]
    with make() as server:
        write(tmp_path, "s.yaml", suite(entry(server.url)))
        done, lines = run(tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        bodies = requests_of(server)
        assert len(bodies) == 2  # one judge per case: one request each
        assert getattr(server, "problems", []) == [] and getattr(server, "invalid", []) == []
    grade = by_type(lines["paris"], "llm_judge")
    assert (grade["verdict"], grade["score"]) == ("pass", 1.0)
    assert grade["details"]["criteria"]["correct"]["reasoning"] == "names the capital"
    assert grade["details"]["usage"]["input_tokens"] > 0 and not grade["details"]["usage"].get("cached")
    faithful = by_type(lines["tower"], "faithfulness")
    assert (faithful["verdict"], faithful["score"]) == ("pass", 0.5)
    assert [claim["verdict"] for claim in faithful["details"]["claims"]] == ["supported", "not_found"]
    schemas = [structured_output(kind, body) for body in bodies]
    if kind == "bedrock":
        assert schemas == [None] * 2
        assert "Reply with one JSON object and nothing else." in bodies[0]["messages"][0]["content"][0]["text"] + bodies[1]["messages"][0]["content"][0]["text"]
    else:
        assert sorted(schema["required"] for schema in schemas) == [["claims", "verdicts"], ["correct"]]

    # the server is gone: the re-run replays every judge's reply from the cache
    done, again = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    replayed = by_type(again["paris"], "llm_judge")
    assert (replayed["verdict"], replayed["details"]["criteria"]) == (grade["verdict"], grade["details"]["criteria"])
    assert replayed["details"]["usage"]["cached"] is True
    assert by_type(again["tower"], "faithfulness")["score"] == 0.5
    for path in tmp_path.rglob("*"):
        if path.is_file():
            content = path.read_bytes()
            for secret in (GEMINI_KEY, AZURE_KEY, AWS_ENV["AWS_SECRET_ACCESS_KEY"], AWS_ENV["AWS_SESSION_TOKEN"]):
                assert secret.encode() not in content, path.name


@pytest.mark.parametrize("kind", list(VENDORS))
def test_semantic_similarity_embeds_with_a_vendor_model(tmp_path, kind):
    make, entry = VENDORS[kind]
    evaluators = "\n  - {type: semantic_similarity, endpoint: judge, threshold: 0.9}"
    cases = '\n  - {id: same, input: q, output: "the cat sat", expected: "the cat sat"}\n  - {id: other, input: q, output: "zzz", expected: "the cat sat"}'
    with make() as server:
        write(tmp_path, "s.yaml", suite(entry(server.url), evaluators, cases))
        done, lines = run(tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr  # `other` is not similar
        sent = len(server.received)
        assert sent >= 2 and all(("embed" in received.path.lower() or "invoke" in received.path) for received in server.received)
    same, other = (by_type(lines[case], "semantic_similarity") for case in ("same", "other"))
    assert (same["verdict"], same["score"]) == ("pass", pytest.approx(1.0))
    assert other["verdict"] == "fail" and other["score"] < 0.5
    done, again = run(tmp_path)  # offline: the embeddings come from the cache
    assert done.returncode == 1 and by_type(again["same"], "semantic_similarity")["score"] == pytest.approx(1.0)


NO_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None, "AWS_SESSION_TOKEN": None, "AWS_PROFILE": None,
    "AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
    "AWS_CONTAINER_CREDENTIALS_FULL_URI": None, "AWS_WEB_IDENTITY_TOKEN_FILE": None,
    "AZURE_OPENAI_API_KEY": None, "GEMINI_API_KEY": None,
}
MISSING = {
    "bedrock": "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), "
               "or AWS_PROFILE, or run where a role provides them",
    "gemini": "environment variable GEMINI_API_KEY is not set: set it to a Gemini API key (api_key_env), "
              "or give `vertex: {project, location}` to use Google Cloud credentials",
    "azure_openai": "environment variable AZURE_OPENAI_API_KEY is not set (api_key_env)",
}


@pytest.mark.parametrize("kind", list(VENDORS))
def test_a_vendor_model_without_its_credential_is_one_line_at_load(tmp_path, kind):
    make, entry = VENDORS[kind]
    with make() as server:
        write(tmp_path, "s.yaml", suite(entry(server.url)))
        done, lines = run(tmp_path, env=NO_CREDENTIALS)
        assert server.received == []
    assert done.returncode == 2 and lines == {}
    line = next(number for number, text in enumerate((tmp_path / "s.yaml").read_text().splitlines(), 1) if text == "  judge:")
    assert done.stderr.splitlines() == [f"{tmp_path / 's.yaml'}:{line}: models.judge: {MISSING[kind]}"]
