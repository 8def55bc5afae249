"""Hostile judge replies and answers against the retrieval-augmented evaluators, through the real command.

A judge listing claims without verdicts, verdicts for claims or chunks that do not exist, ten
thousand claims; an answer carrying 50 MB of context or a ranking with NaN scores: each case is an
`error` naming what was wrong (or a bounded result), the run goes on, and nothing is lost.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from conftest import read_jsonl, run_cli
from llm_server import LLMServer

from fault_suites import assert_no_traceback

ANSWER = {"answer": "Paris is the capital of France.", "contexts": ["Paris is the capital and largest city of France."]}


def _suite(server: LLMServer, evaluator: str) -> str:
    return (
        "name: rag-faults\n"
        f"models:\n  judge: {{base_url: '{server.base_url}', model: grader, retries: 0, backoff: 0.01}}\n"
        "target: {type: recorded}\n"
        f"evaluators:\n  - {evaluator}\n"
        "cases: cases.jsonl\n"
    )


def _run(folder: Path, server: LLMServer, evaluator: str, cases: list[dict]) -> dict[str, dict]:
    (folder / "suite.yaml").write_text(_suite(server, evaluator))
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    out = folder / "out.jsonl"
    proc = run_cli("run", "suite.yaml", "-o", out, "--quiet", cwd=folder, timeout=120)
    assert_no_traceback(proc)
    rows = {row["case_id"]: row for row in read_jsonl(out)}
    assert len(rows) == len(cases)
    return rows


def _by_question(replies: dict[str, object]):
    """A chat handler replying by the question found in the prompt."""
    lock = threading.Lock()

    def reply(body):
        prompt = body["messages"][1]["content"]
        with lock:
            found = next(content for key, content in replies.items() if key in prompt)
        return {"role": "assistant", "content": found if isinstance(found, str) else json.dumps(found)}

    return reply


def _result(row: dict) -> dict:
    (result,) = row["evaluator_results"]
    return result


HOSTILE = {
    "no-verdicts": ({"claims": ["Paris is the capital of France.", "It is big."], "verdicts": [
        {"claim": 1, "verdict": "supported", "evidence": "Paris is the capital"}]}, "claim 2 has no verdict"),
    "unknown-claim": ({"claims": ["Paris is the capital of France."], "verdicts": [
        {"claim": 1, "verdict": "supported", "evidence": ""}, {"claim": 7, "verdict": "supported", "evidence": ""}]},
        "a verdict for claim 7, but the reply has 1 claims"),
    "twice": ({"claims": ["a"], "verdicts": [{"claim": 1, "verdict": "supported", "evidence": ""},
                                             {"claim": 1, "verdict": "contradicted", "evidence": ""}]}, "two verdicts for claim 1"),
    "odd-verdict": ({"claims": ["a"], "verdicts": [{"claim": 1, "verdict": "probably", "evidence": ""}]},
                    "claim 1: the verdict 'probably' is not one of supported, contradicted, not_found"),
    "not-a-number": ({"claims": ["a"], "verdicts": [{"claim": "1", "verdict": "supported"}]}, "a verdict names claim '1', not a number"),
    "huge": ({"claims": [f"claim {i}" for i in range(10_000)],
              "verdicts": [{"claim": i, "verdict": "supported", "evidence": ""} for i in range(1, 10_001)]},
             "the reply lists 10,000 claims, more than max_claims (200)"),
    "prose": ("I am sure the answer is faithful.", "no JSON object in the reply"),
}


def test_hostile_claim_replies_are_errors_naming_what_was_wrong(tmp_path):
    cases = [{"id": name, "input": {"question": f"question {name}?"}, "output": ANSWER} for name in HOSTILE]
    with LLMServer(chat=_by_question({f"question {name}?": reply for name, (reply, _) in HOSTILE.items()})) as server:
        rows = _run(tmp_path, server, "{type: faithfulness, endpoint: judge}", cases)
        asked = server.count()
    assert asked == 2 * len(HOSTILE)  # each asked once more, then given up
    for name, (_, why) in HOSTILE.items():
        result = _result(rows[name])
        assert result["verdict"] == "error", name
        assert result["error"].startswith(f"faithfulness: the reply could not be read after a retry ({why}): "), result["error"]
        assert len(result["details"]["raw_reply"]) <= 520  # the reply is kept as an excerpt of about 500 characters


def test_verdicts_for_chunks_that_do_not_exist_are_an_error(tmp_path):
    reply = {"verdicts": [{"chunk": 1, "verdict": "useful", "evidence": ""}, {"chunk": 9, "verdict": "useful", "evidence": ""}]}
    cases = [{"id": "c", "input": {"question": "q?"}, "output": ANSWER, "expected": "Paris"}]
    with LLMServer(chat=_by_question({"q?": reply})) as server:
        rows = _run(tmp_path, server, "{type: context_precision, endpoint: judge}", cases)
    assert "(a verdict for chunk 9, but there are 1 chunks)" in _result(rows["c"])["error"]


def test_a_50_mb_context_is_an_error_naming_the_limit_and_nothing_is_sent(tmp_path):
    big = {"answer": "Paris.", "contexts": ["x" * 1_000_000] * 50}
    cases = [{"id": "big", "input": "q", "output": big}, {"id": "fine", "input": "q", "output": ANSWER}]
    reply = {"claims": ["Paris."], "verdicts": [{"claim": 1, "verdict": "supported", "evidence": "Paris"}]}
    with LLMServer(chat=_by_question({"": reply})) as server:
        rows = _run(tmp_path, server, "{type: faithfulness, endpoint: judge}", cases)
        asked = server.count()
    assert asked == 1
    assert _result(rows["big"])["error"] == (
        "contexts (in the answer) holds more than 400,000 characters (limit `limits.context_chars: 400000`; "
        "raise it in the suite's `limits:` if this is expected)"
    )
    assert _result(rows["fine"])["verdict"] == "pass"


@pytest.mark.parametrize(("output", "expected", "error"), [
    ({"retrieved": [{"id": "a", "s": "NaN"}]}, ["a"], "retrieved[0].s is 'NaN', not a finite number"),
    ({"retrieved": [{"id": "a", "s": True}]}, ["a"], "retrieved[0].s is True, not a finite number"),
    ({"retrieved": [{"id": "a", "s": 1}]}, {"a": 10 ** 30}, "the grade of 'a' in `expected` is 1e+30: a grade is an integer from 0 to 1,000,000"),
    ({"retrieved": [{"id": ["a"], "s": 1}]}, ["a"], "retrieved[0].id is ['a'], not an id (a string or an integer)"),
])
def test_hostile_rankings_and_judgments_are_errors(tmp_path, output, expected, error):
    suite = (
        "name: retrieval-faults\ntarget: {type: recorded}\n"
        "evaluators:\n  - {type: retrieval, score_key: s, metrics: [{metric: ndcg, k: 10, min: 0.5}]}\ncases: cases.jsonl\n"
    )
    (tmp_path / "suite.yaml").write_text(suite)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "h", "expected": expected, "output": output}) + "\n")
    proc = run_cli("run", "suite.yaml", "-o", tmp_path / "out.jsonl", "--quiet", cwd=tmp_path, timeout=120)
    assert_no_traceback(proc)
    assert proc.returncode == 3
    (row,) = read_jsonl(tmp_path / "out.jsonl")
    assert _result(row)["error"] == error


def test_a_ranking_of_a_million_ids_is_scored_in_bounded_time(tmp_path):
    ranking = [f"d{i}" for i in range(1_000_000)]
    suite = (
        "name: retrieval-big\ntarget: {type: recorded}\n"
        "evaluators:\n  - {type: retrieval, metrics: [{metric: average_precision, min: 0.5}, {metric: ndcg, k: 10}]}\ncases: cases.jsonl\n"
    )
    (tmp_path / "suite.yaml").write_text(suite)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "h", "expected": ["d0", "d999999"], "output": {"retrieved": ranking}}) + "\n")
    proc = run_cli("run", "suite.yaml", "-o", tmp_path / "out.jsonl", "--quiet", cwd=tmp_path, timeout=120)
    assert_no_traceback(proc)
    (row,) = read_jsonl(tmp_path / "out.jsonl")
    result = _result(row)
    assert result["details"]["criteria"]["average_precision"]["score"] == (1 + 2 / 1_000_000) / 2
    assert len(result["details"]["ranking"]) == 20
