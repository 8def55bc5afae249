"""Model judges, a claim-level judge and a simulated user on a `models:` entry of type anthropic:
the real CLI against a real local server speaking the Messages API, every request checked
against the anthropic SDK's own request types and every reply built from its `Message` type;
the response cache replays them offline, and an unreadable reply is asked once more and never cached."""

from __future__ import annotations

import json
import threading
import typing
from types import SimpleNamespace
from typing import Literal

import pytest
from conftest import read_jsonl, write
from llm_server import LLMServer
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.conversations.simulated_user import JUDGE_SYSTEM
from agenteval.endpoints.settings import ModelEndpoint
from agenteval.evaluators.model.claims import SYSTEM_PROMPT as CLAIMS_SYSTEM
from agenteval.evaluators.model.rubric import SYSTEM_PROMPT as RUBRIC_SYSTEM

anthropic_types = pytest.importorskip("anthropic.types")
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

SECRET = "sk-ant-judge-do-not-leak-7171"
KEY = {"JUDGE_ANTHROPIC_KEY": SECRET}
REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)
REQUEST_KEYS = set(typing.get_type_hints(MessageCreateParamsNonStreaming))
GRADE = {"correct": {"reasoning": "names the capital", "score": "pass"}}


def checked(body):
    """The request as the anthropic SDK's MessageCreateParams reads it (lazy lists read out); AssertionError if it is not one."""
    assert set(body) <= REQUEST_KEYS, set(body) - REQUEST_KEYS
    params = REQUEST.validate_python(body)
    for message in params["messages"]:
        if not isinstance(message["content"], str):
            list(message["content"])
    return body


class Claude:
    """The Messages API's side of the server: replies in turn from `replies` (per system prompt
    kind), each built as an anthropic `Message`; every request is kept and checked."""

    def __init__(self, rubric=(), claims=(), user=(), judge=()):
        self.queues = {"rubric": list(rubric), "claims": list(claims), "user": list(user), "judge": list(judge)}
        self.requests: dict[str, list] = {kind: [] for kind in self.queues}
        self.lock = threading.Lock()

    def __call__(self, body):
        checked(body)
        system = body.get("system") or ""
        kind = ("rubric" if system == RUBRIC_SYSTEM else "claims" if system == CLAIMS_SYSTEM else "judge" if system == JUDGE_SYSTEM
                else "user" if system.startswith("You are playing the user") else None)
        assert kind is not None, system
        with self.lock:
            self.requests[kind].append(body)
            queue = self.queues[kind]
            text = queue.pop(0) if len(queue) > 1 else queue[0]
        text = text if isinstance(text, str) else json.dumps(text)
        message = anthropic_types.Message.model_validate({
            "id": f"msg_{kind}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 40, "output_tokens": len(text.split())},
        })
        return message.model_dump(mode="json", exclude_none=True)


def run(tmp_path, *args, env=KEY):
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "-o", str(out), "-q", *map(str, args)], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    done = SimpleNamespace(returncode=result.exit_code, stdout=result.stdout, stderr=result.stderr)
    return done, {line["case_id"]: line for line in read_jsonl(out)} if out.exists() else {}


def models(server, more=""):
    return f"""
models:
  claude:
    type: anthropic
    base_url: "{server.url}"
    model: claude-judge
    api_key_env: JUDGE_ANTHROPIC_KEY
    backoff: 0.01
{more}
prices:
  claude-judge: {{input: 3, output: 15}}
"""


def judged_suite(server, evaluators, cases=None):
    return f"""
name: judged-by-claude
{models(server)}
target: {{type: recorded}}
evaluators:
{evaluators}
cases:
{cases or '''  - {id: paris, input: "capital of France?", output: "Paris", expected: "Paris"}'''}
"""


LLM_JUDGE = "  - {type: llm_judge, endpoint: claude, criteria: [{name: correct, description: It names the capital.}]}"


def by_type(line, type_name):
    return next(result for result in line["evaluator_results"] if result["type"] == type_name)


def test_llm_judge_asks_an_anthropic_model_with_its_schema_and_replays_offline(tmp_path):
    claude = Claude(rubric=[GRADE])
    with LLMServer(messages=claude) as server:
        write(tmp_path, "s.yaml", judged_suite(server, LLM_JUDGE))
        done, lines = run(tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert server.count("/v1/messages") == 1
        request = server.received[0]
    result = by_type(lines["paris"], "llm_judge")
    assert (result["verdict"], result["score"]) == ("pass", 1.0)
    assert result["details"]["criteria"]["correct"]["reasoning"] == "names the capital"
    assert result["details"]["model"] == "claude-judge"
    usage = result["details"]["usage"]
    assert usage["input_tokens"] == 40 and usage["output_tokens"] == len(json.dumps(GRADE).split())
    assert usage["cost_usd"] == pytest.approx((40 * 3 + usage["output_tokens"] * 15) / 1e6)
    body = claude.requests["rubric"][0]
    assert body["system"] == RUBRIC_SYSTEM and body["model"] == "claude-judge" and "temperature" not in body
    assert "# Candidate answer\nParis" in body["messages"][0]["content"]
    schema = body["output_config"]["format"]["schema"]  # structured outputs, the judge's schema
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert schema["required"] == ["correct"] and schema["properties"]["correct"]["properties"]["score"] == {"type": "string", "enum": ["pass", "fail"]}
    headers = {name.lower(): value for name, value in request.headers.items()}
    assert headers["x-api-key"] == SECRET and "authorization" not in headers

    # the server is gone: the re-run replays the grade from the cache
    done, again = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    replayed = by_type(again["paris"], "llm_judge")
    assert (replayed["verdict"], replayed["details"]["criteria"]) == (result["verdict"], result["details"]["criteria"])
    assert replayed["details"]["usage"]["cached"] is True
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path.name


def test_an_unreadable_reply_is_asked_once_more_and_only_the_readable_one_is_cached(tmp_path):
    claude = Claude(rubric=["I would say it passes.", GRADE])
    with LLMServer(messages=claude) as server:
        write(tmp_path, "s.yaml", judged_suite(server, LLM_JUDGE))
        done, lines = run(tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        first, retry = claude.requests["rubric"]
        assert retry["messages"][:1] == first["messages"]
        assert retry["messages"][1] == {"role": "assistant", "content": "I would say it passes."}
        assert retry["messages"][2]["content"].startswith("That reply could not be used: no JSON object in the reply.")
        result = by_type(lines["paris"], "llm_judge")
        assert result["verdict"] == "pass"
        assert result["details"]["usage"]["input_tokens"] == 80  # both requests counted

        # the unreadable first reply was not kept: the re-run asks again, and this time it is readable at once
        done, again = run(tmp_path)
        assert done.returncode == 0
        assert len(claude.requests["rubric"]) == 3 and claude.requests["rubric"][2] == first
        assert by_type(again["paris"], "llm_judge")["verdict"] == "pass"
        # ... and now it is: a third run sends nothing
        run(tmp_path)
        assert len(claude.requests["rubric"]) == 3


def test_two_unreadable_replies_are_the_judges_error_with_the_reply(tmp_path):
    claude = Claude(rubric=["no idea"])
    with LLMServer(messages=claude) as server:
        write(tmp_path, "s.yaml", judged_suite(server, LLM_JUDGE))
        done, lines = run(tmp_path)
    assert done.returncode == 3
    result = by_type(lines["paris"], "llm_judge")
    assert result["verdict"] == "error" and len(claude.requests["rubric"]) == 2
    assert result["error"] == "llm_judge: the reply could not be read after a retry (no JSON object in the reply): 'no idea'"
    assert result["details"]["raw_reply"] == "no idea"


def test_faithfulness_asks_an_anthropic_model_and_replays_offline(tmp_path):
    verdicts = {
        "claims": ["The tower is 330 m tall.", "It is painted gold."],
        "verdicts": [{"claim": 1, "verdict": "supported", "evidence": "330 metres"}, {"claim": 2, "verdict": "not_found", "evidence": ""}],
    }
    claude = Claude(claims=[verdicts])
    case = ('  - {id: tower, input: {question: "How tall?"}, '
            'output: {answer: "330 m, painted gold", contexts: ["The tower is 330 metres tall."]}}')
    with LLMServer(messages=claude) as server:
        write(tmp_path, "s.yaml", judged_suite(server, "  - {type: faithfulness, endpoint: claude, threshold: 0.5}", case))
        done, lines = run(tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    result = by_type(lines["tower"], "faithfulness")
    assert (result["verdict"], result["score"]) == ("pass", 0.5)
    assert [claim["verdict"] for claim in result["details"]["claims"]] == ["supported", "not_found"]
    body = claude.requests["claims"][0]
    assert body["output_config"]["format"]["schema"]["required"] == ["claims", "verdicts"]
    assert "The tower is 330 metres tall." in body["messages"][0]["content"]
    assert result["details"]["usage"]["input_tokens"] == 40
    done, again = run(tmp_path)  # offline
    assert done.returncode == 0 and by_type(again["tower"], "faithfulness")["score"] == 0.5
    assert len(claude.requests["claims"]) == 1


def test_a_simulated_user_and_its_goal_judge_on_an_anthropic_model(tmp_path):
    claude = Claude(user=["I want a refund for A-1."], judge=["yes"])
    with LLMServer(messages=claude) as server:
        write(tmp_path, "s.yaml", f"""
name: talk-to-claude
{models(server, f"  agent: {{base_url: '{server.base_url}', model: agent, temperature: 0}}")}
target:
  type: openai
  endpoint: agent
  messages: [{{role: system, content: "You are a support agent."}}]
evaluators:
  - {{type: conversation}}
cases:
  - id: refund
    input: {{order: A-1}}
    user:
      endpoint: claude
      goal: Get a refund for order A-1.
      max_turns: 3
      stop: {{judge: true}}
""")
        done, lines = run(tmp_path, "--repeat", 2)
        assert done.returncode == 0, done.stdout + done.stderr
    repetitions = read_jsonl(tmp_path / "r0.jsonl")
    assert [line["output"]["turns"] for line in repetitions] == [[{"user": "I want a refund for A-1.", "reply": "echo: I want a refund for A-1.", "tool_calls": []}]] * 2
    assert [line["output"]["stopped"] for line in repetitions] == ["goal", "goal"]
    # each repetition is a variant of its own: the user model and the goal judge were asked once in each
    assert (len(claude.requests["user"]), len(claude.requests["judge"])) == (2, 2)
    user_body = claude.requests["user"][0]
    assert "Get a refund for order A-1." in user_body["system"] and user_body["model"] == "claude-judge"
    assert claude.requests["judge"][0]["system"] == JUDGE_SYSTEM and "temperature" not in claude.requests["judge"][0]
    steps = [step for step in lines["refund"]["output"]["steps"] if step["kind"] == "user"]
    assert [(step["purpose"], step["usage"]["input_tokens"]) for step in steps] == [("message", 40), ("judge", 40)]
    assert lines["refund"]["usage"]["simulated_user"]["input_tokens"] == 80

    done, again = run(tmp_path, "--repeat", 2)  # the server is gone: both repetitions replay
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line["output"]["turns"] for line in read_jsonl(tmp_path / "r1.jsonl")] == [line["output"]["turns"] for line in repetitions]
    assert [step["usage"]["cached"] for step in again["refund"]["output"]["steps"]] == [True, True, True]


def test_a_judges_own_keys_are_laid_over_the_anthropic_model_it_names(tmp_path):
    claude = Claude(rubric=[GRADE])
    judge = ("  - {type: llm_judge, endpoint: claude, model: claude-strict, max_tokens: 300, stop: [END], structured_output: false,"
             " criteria: [{name: correct, description: It names the capital.}]}")
    with LLMServer(messages=claude) as server:
        write(tmp_path, "s.yaml", judged_suite(server, judge))
        done, lines = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    body = claude.requests["rubric"][0]
    assert (body["model"], body["max_tokens"], body["stop_sequences"]) == ("claude-strict", 300, ["END"])
    assert "output_config" not in body  # structured_output: false sends no schema; the prompt states the format
    assert "Reply with one JSON object and nothing else." in body["messages"][0]["content"]


class EmbeddingVendor(ModelEndpoint):
    """A model target of a vendor with embeddings, as a `models:` entry of its type is: its
    `embed()` asks the server's /embeddings through the run's endpoints."""

    type: Literal["vendor"] = "vendor"

    def embed(self, texts, run):
        from agenteval.agents.protocol import EmbedReply

        reply = run.endpoints.send(self, "POST", self.base_url + "/embeddings", {"model": self.model, "input": texts}, cache=True)
        return EmbedReply([item["embedding"] for item in reply.data["data"]], {"latency_ms": reply.latency_ms, "input_tokens": 4}, self.model)


def test_semantic_similarity_on_a_model_type_with_embeddings_uses_its_embed(tmp_path):
    from agenteval.endpoints import Endpoints, ResponseCache
    from agenteval.evaluators import EvalContext, evaluator_type

    with LLMServer() as server:
        endpoints = Endpoints(ResponseCache(tmp_path / "cache.sqlite"), models={"vectors": EmbeddingVendor(base_url=server.base_url, model="v1")})
        judge = evaluator_type("semantic_similarity").model_validate({"type": "semantic_similarity", "endpoint": "vectors", "threshold": 0.5})
        context = EvalContext("c1", "q", "the cat sat", "the cat sat", {}, tmp_path, None, endpoints)
        result = judge.evaluate(context)
        assert server.count("/embeddings") == 1
        assert server.received[0].body == {"model": "v1", "input": ["the cat sat", "the cat sat"]}
    assert (result.verdict, result.score) == ("pass", pytest.approx(1.0))
    assert result.details["usage"]["input_tokens"] == 4


def test_schema_bounds_the_messages_api_refuses_move_into_the_description(tmp_path):
    grade = {"grounded": {"reasoning": "mostly", "score": 8}}
    claude = Claude(rubric=[grade])
    judge = "  - {type: llm_judge, endpoint: claude, criteria: [{name: grounded, description: Supported claims., scale: {range: [1, 10]}}]}"
    with LLMServer(messages=claude) as server:
        write(tmp_path, "s.yaml", judged_suite(server, judge))
        done, lines = run(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # 8 of 1-10 is partial: the case fails
    score = claude.requests["rubric"][0]["output_config"]["format"]["schema"]["properties"]["grounded"]["properties"]["score"]
    assert score == {"type": "number", "description": "{minimum: 1, maximum: 10}"}
    result = by_type(lines["paris"], "llm_judge")
    assert result["verdict"] == "partial" and result["score"] == pytest.approx(7 / 9) and result["details"]["criteria"]["grounded"]["raw_score"] == 8


def test_a_model_endpoint_built_in_python_is_still_a_models_entry():
    from agenteval.suite.models import Suite

    suite = Suite.model_validate({"name": "api", "cases": [], "models": {
        "local": ModelEndpoint(base_url="http://127.0.0.1:9/v1", model="m", temperature=0),
        "claude": {"type": "anthropic", "model": "c"},
    }})
    local, claude = suite.models["local"], suite.models["claude"]
    assert (local.type, local.base_url, local.model, local.temperature) == (None, "http://127.0.0.1:9/v1", "m", 0)
    assert (claude.type, claude.base_url, claude.api_key_env) == ("anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY")
