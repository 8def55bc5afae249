"""llm_judge and semantic_similarity against a real local server; the rubric reader on its own."""

import json
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import read_jsonl, refused_url, run_cli, write
from llm_server import LLMServer, letter_embedding

from agenteval.endpoints import Endpoints, ResponseCache
from agenteval.evaluators import EvalContext
from agenteval.evaluators.model.llm_judge import LLMJudge
from agenteval.evaluators.model.rubric import RubricCriterion, read_scores
from agenteval.evaluators.model.semantic_similarity import SemanticSimilarity, cosine

CRITERIA = [
    {"name": "correct", "description": "States the same city as the reference.", "scale": "pass_fail", "weight": 3},
    {"name": "concise", "description": "One short sentence.", "scale": "likert5", "weight": 1},
]


def judge(server, **keys):
    return LLMJudge.model_validate({
        "type": "llm_judge", "base_url": server.base_url, "model": "grader", "backoff": 0.01,
        "criteria": CRITERIA, "path": "content", **keys,
    })


def context(endpoints, output, expected="Paris", case_input=None):
    return EvalContext("c1", case_input or {"question": "capital of France?"}, expected, output, {}, Path("."), None, endpoints)


def replying(*contents):
    """A chat handler answering with `contents` in turn (the last one repeats)."""
    queue = list(contents)
    lock = threading.Lock()

    def reply(body):
        with lock:
            content = queue.pop(0) if len(queue) > 1 else queue[0]
        return {"role": "assistant", "content": content}

    return reply


GOOD = json.dumps({"correct": {"reasoning": "Same city.", "score": "pass"}, "concise": {"reasoning": "Wordy.", "score": 3}})


def test_scores_are_normalized_weighted_and_reasoned():
    with LLMServer(chat=replying(GOOD)) as server:
        result = judge(server).evaluate(context(Endpoints(), {"content": "It is Paris, the lovely capital."}))
        request = server.received[0].body
    assert result.verdict == "partial" and result.score == pytest.approx((3 * 1.0 + 1 * 0.5) / 4)
    assert result.details["criteria"]["correct"] == {
        "score": 1.0, "raw_score": "pass", "reasoning": "Same city.", "weight": 3.0, "scale": "pass_fail (pass or fail)",
    }
    assert result.details["criteria"]["concise"]["score"] == 0.5 and result.details["criteria"]["concise"]["reasoning"] == "Wordy."
    assert result.hits == ["correct"] and result.misses == ["concise (3)"]
    assert result.details["usage"]["total_tokens"] > 0 and result.details["model"] == "grader"
    assert request["temperature"] == 0
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["correct", "concise"]
    assert schema["properties"]["concise"]["properties"]["score"] == {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    assert schema["properties"]["correct"]["properties"]["score"] == {"type": "string", "enum": ["pass", "fail"]}
    prompt = request["messages"][1]["content"]
    for shown in ("capital of France?", "It is Paris, the lovely capital.", "# Reference answer\nParis",
                  "- correct (score: \"pass\" or \"fail\"): States the same city as the reference.",
                  "- concise (score: an integer from 1 (worst) to 5 (best)): One short sentence."):
        assert shown in prompt


def test_a_malformed_reply_is_asked_again_once():
    with LLMServer(chat=replying("I think it is fine!", "Sure: ```json\n" + GOOD + "\n```")) as server:
        result = judge(server).evaluate(context(Endpoints(), {"content": "Paris"}))
        retry = server.received[1].body["messages"]
    assert result.verdict == "partial" and server.count() == 2
    assert retry[2] == {"role": "assistant", "content": "I think it is fine!"}
    assert retry[3]["content"].startswith("That reply could not be used: no JSON object in the reply.")
    assert result.details["usage"]["input_tokens"] == sum(
        len(str(m["content"]).split()) for m in retry[:2]) + sum(len(str(m["content"]).split()) for m in retry)


def test_two_malformed_replies_are_an_error_with_the_raw_reply():
    with LLMServer(chat=replying('{"correct": {"score": "maybe"}}')) as server:
        result = judge(server).evaluate(context(Endpoints(), {"content": "Paris"}))
    assert result.verdict == "error" and result.score == 0.0 and server.count() == 2
    assert result.error == (
        "llm_judge: the reply could not be read after a retry (criterion 'correct': score 'maybe' is not pass_fail (pass or fail)): "
        "'{\"correct\": {\"score\": \"maybe\"}}'"
    )
    assert result.details["raw_reply"] == '{"correct": {"score": "maybe"}}'


def test_a_missing_candidate_fails_without_a_request():
    with LLMServer(chat=replying(GOOD)) as server:
        result = judge(server).evaluate(context(Endpoints(), {"text": "Paris"}))
    assert result.verdict == "fail" and result.misses == ["content (missing)"] and server.count() == 0


def test_an_unreachable_judge_is_an_error_result():
    with refused_url() as nowhere:
        config = judge(SimpleNamespace(base_url=nowhere), retries=0)
        result = config.evaluate(context(Endpoints(), {"content": "Paris"}))
    assert result.verdict == "error" and result.error.startswith("llm_judge: POST http://127.0.0.1:") and "ConnectError" in result.error


def test_a_custom_prompt_sees_the_case(tmp_path):
    with LLMServer(chat=replying(GOOD)) as server:
        config = judge(server, prompt="Q={{ input }} A={{ candidate }} R={{ reference }}\n{{ rubric }}\n{{ reply_format }}")
        config.evaluate(context(Endpoints(), {"content": "Paris"}, case_input="q?"))
        (tmp_path / "p.txt").write_text("FILE {{ candidate }} for {{ case.id }}")
        judge(server, prompt_file="p.txt").evaluate(
            EvalContext("c9", "q", "Paris", {"content": "Lyon"}, {}, tmp_path, None, Endpoints())
        )
        first, second = (r.body["messages"][1]["content"] for r in server.received)
    assert first.startswith("Q=q? A=Paris R=Paris\n- correct (score:") and "Reply with one JSON object" in first
    assert second == "FILE Lyon for c9"


def test_judge_replies_are_cached(tmp_path):
    with LLMServer(chat=replying(GOOD)) as server:
        endpoints = Endpoints(ResponseCache(tmp_path / "c.sqlite"))
        first = judge(server).evaluate(context(endpoints, {"content": "Paris"}))
        again = judge(server).evaluate(context(endpoints, {"content": "Paris"}))
        assert server.count() == 1
    assert again.score == first.score and again.details["usage"]["cached"] is True


@pytest.mark.parametrize("reply, expected", [
    ('{"correct": {"score": "pass", "reasoning": "r"}, "concise": {"score": 5}}', 1.0),
    ('Here you go:\n{"correct": "fail", "concise": 1} hope it helps', 0.0),
    ('```json\n{"criteria": [{"name": "correct", "score": "pass"}, {"name": "Concise", "score": 1}]}\n```', 0.75),
    ('{"Correct": {"score": true}, "concise": {"score": 3}}', 0.875),
])
def test_the_rubric_reader_is_tolerant(reply, expected):
    criteria = [RubricCriterion.model_validate(c) for c in CRITERIA]
    scores, problem = read_scores(reply, criteria)
    assert problem is None
    total = sum(scores[c.name]["score"] * c.weight for c in criteria) / sum(c.weight for c in criteria)
    assert total == pytest.approx(expected)


@pytest.mark.parametrize("reply, problem", [
    ("", "the reply is empty"),
    ("no json here", "no JSON object in the reply"),
    ('{"correct": "pass"}', "criterion 'concise' is missing"),
    ('{"correct": "pass", "concise": 7}', "criterion 'concise': score 7 is outside likert5 (1 to 5)"),
])
def test_the_rubric_reader_says_why_a_reply_is_unusable(reply, problem):
    assert read_scores(reply, [RubricCriterion.model_validate(c) for c in CRITERIA]) == ({}, problem)


def test_scales_range_percent_binary_in_the_schema_and_scores():
    criteria = [RubricCriterion.model_validate(c) for c in (
        {"name": "a", "description": "x", "scale": {"range": [1, 10]}},
        {"name": "b", "description": "x", "scale": "percent"},
        {"name": "c", "description": "x", "scale": "binary"},
    )]
    scores, problem = read_scores('{"a": 10, "b": 25, "c": false}', criteria)
    assert problem is None and [scores[n]["score"] for n in "abc"] == [1.0, 0.25, 0.0]


def test_llm_judge_config_errors_are_load_errors(tmp_path):
    write(tmp_path, "s.yaml", """
name: j
evaluators:
  - type: llm_judge
    base_url: http://127.0.0.1:1/v1
    model: m
    criteria: [{name: ok, description: fine, scale: likert7}]
cases: [{id: a, expected: x, output: y}]
""")
    done = run_cli("validate", tmp_path / "s.yaml")
    assert done.returncode == 2 and "s.yaml:6: evaluators[0].criteria[0].scale: invalid value 'likert7'" in done.stderr


# --- semantic_similarity -----------------------------------------------------------------------

def similarity_config(server, **keys):
    return SemanticSimilarity.model_validate({
        "type": "semantic_similarity", "base_url": server.base_url, "model": "embedder", "path": "content", **keys,
    })


def test_similarity_is_the_cosine_of_the_server_embeddings():
    with LLMServer() as server:
        config = similarity_config(server, threshold=0.9)
        close = config.evaluate(context(Endpoints(), {"content": "Paris is the capital"}, "The capital is Paris"))
        far = config.evaluate(context(Endpoints(), {"content": "zzz qqq"}, "Paris"))
    a, b = np.array(letter_embedding("Paris is the capital")), np.array(letter_embedding("The capital is Paris"))
    assert close.score == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))
    assert close.verdict == "pass" and far.verdict == "fail"
    assert far.details["similarity"] < 0.9 and far.reasoning.startswith("cosine similarity ")


def test_cosine_matches_numpy_and_handles_degenerate_vectors():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.normal(size=64), rng.normal(size=64)
        assert cosine(list(a), list(b)) == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))
    assert cosine([0.0, 0.0], [1.0, 0.0]) is None and cosine([1.0], [1.0, 2.0]) is None


def test_embeddings_are_batched_across_cases_and_cached(tmp_path):
    with LLMServer(delay=0.05) as server:
        cases = "\n".join(f"  - {{id: c{i}, expected: 'reference {i}', output: {{content: 'candidate {i}'}}}}" for i in range(16))
        write(tmp_path, "s.yaml", f"""
name: sim
evaluators:
  - {{type: semantic_similarity, base_url: "{server.base_url}", model: e, path: content, threshold: 0.0}}
cases:
{cases}
""")
        done = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "r.jsonl", "--workers", "8")
        assert done.returncode == 0, done.stderr
        batches = [r.body["input"] for r in server.received]
        assert sum(len(batch) for batch in batches) == 32 and len(batches) < 16  # fewer requests than cases
        assert len(read_jsonl(tmp_path / "r.jsonl")) == 16
        again = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "r2.jsonl", "--workers", "8")
        assert again.returncode == 0 and server.count() == len(batches)  # a re-run sends nothing
    scores = {line["case_id"]: line["score"] for line in read_jsonl(tmp_path / "r2.jsonl")}
    a, b = np.array(letter_embedding("candidate 3")), np.array(letter_embedding("reference 3"))
    assert scores["c3"] == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))


def test_llm_judge_in_a_suite_with_a_named_model(tmp_path):
    with LLMServer(chat=replying(GOOD)) as server:
        write(tmp_path, "s.yaml", f"""
name: judged
models:
  grader: {{base_url: "{server.base_url}", model: big-grader, temperature: 0.2}}
evaluators:
  - name: quality
    type: llm_judge
    endpoint: grader
    max_tokens: 300
    path: content
    criteria: {json.dumps(CRITERIA)}
    min_score: 0.8
cases:
  - {{id: a, input: "capital of France?", expected: Paris, output: {{content: Paris}}}}
""")
        done = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "r.jsonl")
        body = server.received[0].body
    assert done.returncode == 0, done.stderr
    assert body["model"] == "big-grader" and body["temperature"] == 0.2 and body["max_tokens"] == 300
    line = read_jsonl(tmp_path / "r.jsonl")[0]
    assert line["evaluator_results"][0]["score"] == pytest.approx(0.875)
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["usage"]["judges"]["requests"] == 1 and summary["usage"]["judges"]["tokens"]["total"] > 0


@pytest.mark.parametrize("reply, expected", [
    ('Format: {"correct": "pass", "concise": 5}. Grade: {"correct": "fail", "concise": 1}', 0.0),  # the last complete one
    ('{"correct": "fail", "concise": 1} and a footnote {"note": "checked twice"}', 0.0),  # not the last object: it is no grade
    ('Thinking: {"correct": "pass"} ... final: {"criteria": [{"name": "correct", "score": "pass"}, {"name": "concise", "score": 5}]}', 1.0),
])
def test_the_rubric_reader_takes_the_last_object_that_has_every_criterion(reply, expected):
    criteria = [RubricCriterion.model_validate(c) for c in CRITERIA]
    scores, problem = read_scores(reply, criteria)
    assert problem is None
    assert sum(scores[c.name]["score"] * c.weight for c in criteria) / sum(c.weight for c in criteria) == pytest.approx(expected)
