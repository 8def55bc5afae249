"""The claim-level judges against a real local model server with scripted replies: scores equal to the
published formulas on the same verdicts, every claim kept, and each edge case's stated outcome."""

import json
import random
import threading
from pathlib import Path

import pytest
from llm_server import LLMServer

from agenteval.endpoints import Endpoints, ResponseCache
from agenteval.evaluators import EvalContext, evaluator_type
from agenteval.evaluators.model import claims as claim_kit

CONTEXTS = ["The Eiffel Tower is 330 metres tall.", "It was completed in 1889 for the World's Fair."]
ANSWER = {"answer": "The Eiffel Tower is 330 m tall, was finished in 1889 and is painted gold.", "contexts": CONTEXTS}


def judge(server, type_name, **keys):
    return evaluator_type(type_name).model_validate(
        {"type": type_name, "base_url": server.base_url, "model": "grader", "backoff": 0.01, "retries": 0, **keys}
    )


def context(endpoints, output=ANSWER, expected=None, case_input=None):
    return EvalContext("c1", case_input or {"question": "How tall is the Eiffel Tower?"}, expected, output, {}, Path("."), None, endpoints)


def replying(*contents):
    """A chat handler answering with `contents` in turn (the last one repeats); dicts are sent as JSON."""
    queue = [c if isinstance(c, str) else json.dumps(c) for c in contents]
    lock = threading.Lock()

    def reply(body):
        with lock:
            content = queue.pop(0) if len(queue) > 1 else queue[0]
        return {"role": "assistant", "content": content}

    return reply


def claims_reply(*verdicts, evidence=""):
    return {"claims": [f"claim {i}" for i in range(1, len(verdicts) + 1)],
            "verdicts": [{"claim": i, "verdict": v, "evidence": evidence} for i, v in enumerate(verdicts, 1)]}


FAITHFUL = {
    "claims": ["The Eiffel Tower is 330 m tall.", "It was finished in 1889.", "It is painted gold."],
    "verdicts": [
        {"claim": 1, "verdict": "supported", "evidence": "The Eiffel Tower is 330 metres   tall."},
        {"claim": 2, "verdict": "supported", "evidence": "completed in 1889"},
        {"claim": 3, "verdict": "not_found", "evidence": ""},
    ],
}


def test_faithfulness_keeps_every_claim_verdict_and_quote_and_scores_supported_over_claims():
    with LLMServer(chat=replying(FAITHFUL)) as server:
        result = judge(server, "faithfulness").evaluate(context(Endpoints()))
        request = server.received[0].body
    assert result.verdict == "fail" and result.score == 2 / 3
    assert result.details["claims"] == [
        {"claim": "The Eiffel Tower is 330 m tall.", "verdict": "supported", "evidence": "The Eiffel Tower is 330 metres   tall.", "quote_found": True},
        {"claim": "It was finished in 1889.", "verdict": "supported", "evidence": "completed in 1889", "quote_found": True},
        {"claim": "It is painted gold.", "verdict": "not_found", "evidence": "", "quote_found": None},
    ]
    assert result.details["counts"] == {"supported": 2, "contradicted": 0, "not_found": 1}
    assert result.details["formula"] == "supported / claims = 2 / 3" and result.details["threshold"] == 1.0
    assert result.reasoning == "supported / claims = 2 / 3 = 0.6667 (< threshold 1)"
    assert result.misses == ["not_found: It is painted gold."] and len(result.hits) == 2
    assert result.details["usage"]["total_tokens"] > 0 and result.details["model"] == "grader"
    assert request["temperature"] == 0 and request["response_format"]["json_schema"]["name"] == "claim_verdicts"
    verdict_schema = request["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]
    assert verdict_schema["properties"]["verdict"]["enum"] == ["supported", "contradicted", "not_found"]
    prompt = request["messages"][1]["content"]
    for shown in ("# Retrieved context\n[1] The Eiffel Tower is 330 metres tall.\n\n[2] It was completed in 1889",
                  "# Answer\nThe Eiffel Tower is 330 m tall, was finished", "# Question\n{\n  \"question\": \"How tall"):
        assert shown in prompt


def test_a_quote_that_is_not_in_the_context_is_marked():
    reply = claims_reply("supported", evidence="The tower is made of gold")
    with LLMServer(chat=replying(reply)) as server:
        result = judge(server, "faithfulness").evaluate(context(Endpoints()))
    assert result.verdict == "pass" and result.details["claims"][0]["quote_found"] is False


def ragas_share(verdicts, counted):
    """ragas: faithful statements / statements (a list of 0/1 verdicts, summed)."""
    flags = [1 if verdict in counted else 0 for verdict in verdicts]
    return sum(flags) / len(flags)


def ragas_context_precision(flags):
    """ragas' _calculate_average_precision, without its 1e-10 (which makes no score exactly 1)."""
    denominator = sum(flags)
    numerator = sum([(sum(flags[: i + 1]) / (i + 1)) * flags[i] for i in range(len(flags))])
    return numerator / denominator if denominator else 0.0


@pytest.mark.parametrize(("type_name", "choices", "counted"), [
    ("faithfulness", claim_kit.SUPPORT, ("supported",)),
    ("context_recall", claim_kit.SUPPORT, ("supported",)),
    ("answer_relevance", claim_kit.RELEVANCE, ("relevant", "unclear")),
    ("context_relevance", ("relevant", "irrelevant"), ("relevant",)),
])
def test_claim_scores_equal_the_published_formula_on_scripted_verdicts(type_name, choices, counted):
    rng = random.Random(type_name)
    scripted = [[rng.choice(choices) for _ in range(rng.randint(1, 12))] for _ in range(40)]
    with LLMServer(chat=replying(*(claims_reply(*verdicts) for verdicts in scripted))) as server:
        config = judge(server, type_name, threshold=0.6)
        results = [config.evaluate(context(Endpoints(), expected="The tower is 330 m tall.")) for _ in scripted]
    for verdicts, result in zip(scripted, results):
        expected = ragas_share(verdicts, counted)
        assert result.score == expected and [c["verdict"] for c in result.details["claims"]] == verdicts
        assert result.verdict == ("pass" if expected >= 0.6 else "fail")


def test_context_precision_equals_ragas_on_scripted_chunk_verdicts():
    rng = random.Random(3)
    scripted = [[rng.random() < 0.4 for _ in range(rng.randint(1, 8))] for _ in range(40)]
    replies = [{"verdicts": [{"chunk": i, "verdict": "useful" if flag else "not_useful", "evidence": ""}
                             for i, flag in enumerate(flags, 1)]} for flags in scripted]
    with LLMServer(chat=replying(*replies)) as server:
        config = judge(server, "context_precision")
        results = [config.evaluate(context(Endpoints(), {"answer": "a", "contexts": [f"chunk {i}" for i in range(len(flags))]},
                                           expected="ref")) for flags in scripted]
    for flags, result in zip(scripted, results):
        ragas = ragas_context_precision([int(f) for f in flags])
        assert result.score == ragas
        assert result.score == pytest.approx(sum(
            (sum(flags[: i + 1]) / (i + 1)) * flags[i] for i in range(len(flags))) / (sum(flags) + 1e-10), abs=1e-9)
        assert [c["verdict"] == "useful" for c in result.details["chunks"]] == flags


def test_context_precision_shows_each_chunks_precision_and_judges_against_the_reference():
    reply = {"verdicts": [{"chunk": 1, "verdict": "not_useful", "evidence": ""},
                          {"chunk": 2, "verdict": "useful", "evidence": "completed in 1889"}]}
    with LLMServer(chat=replying(reply)) as server:
        result = judge(server, "context_precision").evaluate(context(Endpoints(), expected="Finished in 1889."))
        prompt = server.received[0].body["messages"][1]["content"]
    assert result.score == 0.5 and result.verdict == "pass" and result.details["formula"] == "(0.5) / 1"
    assert result.details["chunks"][1] == {"chunk": 2, "verdict": "useful", "evidence": "completed in 1889",
                                           "precision_at_k": 0.5, "quote_found": True}
    assert result.details["judged_against"] == "reference" and "# Reference answer\nFinished in 1889." in prompt
    assert "for each of the 2 chunks" in prompt


def test_context_recall_splits_the_reference_and_needs_one():
    with LLMServer(chat=replying(claims_reply("supported", "not_found"))) as server:
        result = judge(server, "context_recall", reference_path="answer").evaluate(
            context(Endpoints(), expected={"answer": "330 m; 1889; designed by Eiffel."}))
        prompt = server.received[0].body["messages"][1]["content"]
        missing = judge(server, "context_recall").evaluate(context(Endpoints(), expected=None))
    assert result.score == 0.5 and "# Reference answer\n330 m; 1889; designed by Eiffel." in prompt
    assert missing.verdict == "fail" and missing.misses == ["the case has no `expected`"] and server.count() == 1


@pytest.mark.parametrize(("type_name", "verdict", "score"), [
    ("faithfulness", "pass", 1.0), ("answer_relevance", "fail", 0.0), ("context_relevance", "fail", 0.0),
])
def test_no_claims_has_each_judges_stated_outcome(type_name, verdict, score):
    with LLMServer(chat=replying({"claims": [], "verdicts": []})) as server:
        result = judge(server, type_name).evaluate(context(Endpoints()))
    assert result.verdict == verdict and result.score == score
    assert result.reasoning.startswith("the judge found no claims in ") and result.reasoning.endswith(f"`no_claims: {verdict}`")


def test_a_reference_without_claims_is_an_error_and_no_claims_can_be_chosen():
    with LLMServer(chat=replying({"claims": [], "verdicts": []})) as server:
        result = judge(server, "context_recall").evaluate(context(Endpoints(), expected="ok"))
        chosen = judge(server, "faithfulness", no_claims="error").evaluate(context(Endpoints()))
    assert result.verdict == "error" and result.error == "context_recall: the judge found no claims in the reference answer (`no_claims: error`)"
    assert chosen.verdict == "error"


@pytest.mark.parametrize("type_name", ["faithfulness", "context_recall", "context_relevance", "context_precision"])
def test_an_empty_context_fails_with_zero_without_asking(type_name):
    with LLMServer(chat=replying(FAITHFUL)) as server:
        empty = judge(server, type_name).evaluate(context(Endpoints(), {"answer": "x", "contexts": ["", "  "]}, expected="r"))
        missing = judge(server, type_name).evaluate(context(Endpoints(), {"answer": "x"}, expected="r"))
    assert server.count() == 0
    assert empty.verdict == "fail" and empty.score == 0.0 and "the retrieved context is empty" in empty.misses[0]
    assert missing.verdict == "fail" and missing.misses == ["contexts (in the answer) (missing)"]


def test_context_can_come_from_the_input_as_objects():
    with LLMServer(chat=replying(claims_reply("supported"))) as server:
        result = judge(server, "faithfulness", contexts="docs", contexts_from="input", context_key="body").evaluate(
            context(Endpoints(), {"answer": "x"}, case_input={"question": "q", "docs": [{"body": "Doc one."}]}))
        prompt = server.received[0].body["messages"][1]["content"]
    assert result.verdict == "pass" and "# Retrieved context\n[1] Doc one." in prompt


def test_a_reply_without_verdicts_is_asked_again_then_an_error_naming_why():
    with LLMServer(chat=replying({"claims": ["a", "b"]})) as server:
        result = judge(server, "faithfulness").evaluate(context(Endpoints()))
        retry = server.received[1].body["messages"]
    assert server.count() == 2 and retry[3]["content"].startswith("That reply could not be used: the reply has no `verdicts` list.")
    assert result.verdict == "error" and result.error.startswith(
        "faithfulness: the reply could not be read after a retry (the reply has no `verdicts` list): ")


def test_a_fixed_reply_on_the_retry_is_used_and_only_it_is_cached(tmp_path):
    cache = tmp_path / "cache.sqlite"
    with LLMServer(chat=replying("not json", claims_reply("supported"))) as server:
        first = judge(server, "faithfulness").evaluate(context(Endpoints(ResponseCache(cache))))
        again = judge(server, "faithfulness").evaluate(context(Endpoints(ResponseCache(cache))))
    assert first.verdict == "pass" and again.verdict == "pass" and server.count() == 3  # the first request is asked again


def test_a_custom_prompt_sees_the_case(tmp_path):
    with LLMServer(chat=replying(claims_reply("relevant"))) as server:
        judge(server, "answer_relevance", prompt="Q={{ question }} A={{ answer }} id={{ case.id }}\n{{ reply_format }}",
              question_path="question").evaluate(context(Endpoints()))
        prompt = server.received[0].body["messages"][1]["content"]
    assert prompt.startswith("Q=How tall is the Eiffel Tower? A=The Eiffel Tower is 330 m tall, was finished in 1889 and is painted gold. id=c1\n")
    assert "a verdict is one of: relevant, irrelevant, unclear" in prompt


@pytest.mark.parametrize(("keys", "message"), [
    ({"threshold": 0}, "greater than 0"),
    ({"threshold": 1.5}, "less than or equal to 1"),
    ({"prompt": "{{ question", "prompt_file": "p.txt"}, "give `prompt` or `prompt_file`, not both"),
    ({"contexts": "a..b"}, "malformed path"),
])
def test_config_mistakes_are_load_errors(keys, message):
    with LLMServer() as server, pytest.raises(ValueError, match=message):
        judge(server, "faithfulness", **keys)


def test_the_docs_show_each_default_prompt_and_reply_format_as_sent():
    page = (Path(__file__).resolve().parent.parent / "docs" / "rag.md").read_text()
    for text in (*claim_kit.PROMPTS.values(), claim_kit.claims_reply_text(claim_kit.SUPPORT),
                 claim_kit.chunks_reply_text(claim_kit.USEFUL, 3), claim_kit.SYSTEM_PROMPT):
        assert text in page


def test_context_precision_without_a_reference_judges_the_chunks_against_the_answer():
    reply = {"verdicts": [{"chunk": 1, "verdict": "useful", "evidence": ""}, {"chunk": 2, "verdict": "not_useful", "evidence": ""}]}
    with LLMServer(chat=replying(reply)) as server:
        result = judge(server, "context_precision").evaluate(context(Endpoints(), expected=None))
        prompt = server.received[0].body["messages"][1]["content"]
    assert result.score == 1.0 and result.details["judged_against"] == "answer"
    assert "# Reference answer\nThe Eiffel Tower is 330 m tall, was finished in 1889" in prompt


@pytest.mark.parametrize(("contexts", "error"), [
    (["ok", {"text": 3}], "contexts[1].text (in the answer) is int, not a text"),
    (["ok", {"body": "x"}], "contexts[1].text (in the answer) is missing, not a text"),
    ({"a": "b"}, "contexts (in the answer) is dict: the context is a text or a list of chunks"),
    (["x"] * 1001, "contexts (in the answer) holds 1,001 chunks, more than 1,000"),
])
def test_a_context_that_is_not_text_is_an_error_without_asking(contexts, error):
    with LLMServer(chat=replying(FAITHFUL)) as server:
        result = judge(server, "faithfulness").evaluate(context(Endpoints(), {"answer": "x", "contexts": contexts}))
    assert server.count() == 0 and result.verdict == "error" and result.error == error


def test_one_text_is_one_chunk():
    with LLMServer(chat=replying(claims_reply("supported"))) as server:
        judge(server, "faithfulness").evaluate(context(Endpoints(), {"answer": "x", "contexts": "All of it."}))
        prompt = server.received[0].body["messages"][1]["content"]
    assert "# Retrieved context\n[1] All of it.\n\n# Answer" in prompt
