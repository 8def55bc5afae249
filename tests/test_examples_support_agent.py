"""examples/support-agent run through the CLI: its verdicts, scores, misses and summary are pinned."""

import json

import pytest

from conftest import EXAMPLES, read_jsonl, run_cli

SUITE = EXAMPLES / "support-agent" / "suite.yaml"

PASSING = {
    "refund-ok-openai", "refund-ok-anthropic", "refund-ok-policy-check",
    "lookup-ok-openai", "lookup-ok-anthropic", "lookup-ok-faq-first", "lookup-two-orders",
    "escalate-ok-openai", "escalate-ok-anthropic", "escalate-ok-plain",
}

TOOL_MISSES = {
    "refund-wrong-amount": (0.5, ["issue_refund (amount: expected 25.0, got 52.0)"]),
    "refund-wrong-order-id": (0.5, ["issue_refund (order_id: expected 'A-1005', got 'A-1050')"]),
    "refund-before-lookup": (0.5, ["issue_refund (out of order (call 0 (issue_refund)))"]),
    "refund-twice": (0.0, ["issue_refund called 2 time(s) (max 1)"]),
    "refund-invalid-json": (0.5, ["issue_refund (call 1 (issue_refund): arguments are not valid JSON)"]),
    "lookup-wrong-order-id": (0.0, ["lookup_order (order_id: expected 'A-2004', got 'A-2040')"]),
    "lookup-forbidden-tool": (0.0, ["forbidden tool delete_account called (call 1 (delete_account))"]),
    "lookup-unrequested-refund": (0.0, ["unexpected call 1 (issue_refund)"]),
    "lookup-same-order-twice": (0.5, ["lookup_order#2 (order_id: expected 'A-2011', got 'A-2010')"]),
    "escalate-wrong-priority": (0.0, ["escalate_to_human (priority: 'low' is not one of ['high', 'urgent'])"]),
    "escalate-not-escalated": (0.0, ["escalate_to_human (not called)"]),
    "escalate-unnamed-call": (0.0, ["escalate_to_human (not called)", "call 1: no name"]),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("support") / "results.jsonl"
    done = run_cli("run", SUITE, "-o", out)
    lines = {line["case_id"]: line for line in read_jsonl(out)}
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    return done, lines, summary


def results(line):
    return {result["name"]: result for result in line["evaluator_results"]}


def test_exit_code_and_counts(run):
    done, lines, summary = run
    assert done.returncode == 1, done.stderr  # fifteen cases fail on purpose
    assert len(lines) == 25
    assert summary["counts"] == {"total": 25, "passed": 10, "failed": 15, "errored": 0}
    assert summary["pass_rate"] == 0.4
    assert {case for case, line in lines.items() if line["verdict"] == "pass"} == PASSING


def test_tool_call_scores_and_misses(run):
    _, lines, summary = run
    for case, line in lines.items():
        tools = results(line)["tools"]
        if case in TOOL_MISSES:
            assert (tools["score"], tools["misses"]) == TOOL_MISSES[case], case
        else:
            assert (tools["score"], tools["verdict"], tools["misses"]) == (1.0, "pass", []), case
    assert summary["evaluators"]["tools"]["mean_score"] == pytest.approx(0.62)
    assert summary["evaluators"]["tools"]["verdicts"] == {"pass": 13, "partial": 5, "fail": 7}


def test_tool_metrics_over_the_dataset(run):
    _, _, summary = run
    attributes = summary["dataset_metrics"]["tools"]["attributes"]
    counts = {tool: (row["tp"], row["fp"], row["fn"]) for tool, row in attributes.items()}
    assert counts == {
        "lookup_order": (24, 2, 2), "issue_refund": (5, 6, 4), "escalate_to_human": (4, 1, 3),
        "delete_account": (0, 1, 0), "(no name)": (0, 1, 0),
    }


def test_rude_answers_fail_the_courtesy_gate_and_the_empathy_judge(run):
    _, lines, _ = run
    for case in ("refund-rude", "lookup-rude", "escalate-rude"):
        by_name = results(lines[case])
        assert by_name["tools"]["verdict"] == "pass", case
        courtesy = next(child for child in by_name["reply"]["details"]["children"] if child["name"] == "courtesy")
        assert (courtesy["score"], courtesy["verdict"]) == (0.0, "fail"), case
        assert by_name["empathy"]["verdict"] == "fail", case
    refund_rude = results(lines["refund-rude"])
    assert refund_rude["reply"]["misses"] == [
        "content: business days",
        "courtesy: no_blame: reply contains 'not our fault'",
        "courtesy: no_blame: reply contains 'read the'",
    ]
    assert refund_rude["empathy"]["details"] == {"raw_score": 1}
    assert refund_rude["empathy"]["score"] == 0.0


def test_scale_and_criteria_are_kept(run):
    _, lines, summary = run
    empathy = results(lines["lookup-ok-faq-first"])["empathy"]
    assert (empathy["score"], empathy["verdict"], empathy["details"]) == (0.75, "pass", {"raw_score": 4})
    assert results(lines["refund-ok-openai"])["empathy"]["details"] == {"raw_score": 5}
    assert summary["evaluators"]["empathy"]["criterion"]["name"] == "empathy"
    assert summary["evaluators"]["tools"]["criterion"]["name"] == "correct tool use"
    reply = results(lines["refund-ok-openai"])["reply"]
    courtesy = reply["details"]["children"][3]
    assert courtesy["criterion"] == {"name": "courtesy", "description": "No insults, no dismissive phrases, no blame."}
    assert [child["name"] for child in courtesy["details"]["children"]] == ["clean", "no_blame"]


def test_case_scores(run):
    _, lines, summary = run
    scores = {case: round(line["score"], 4) for case, line in lines.items()}
    assert scores["refund-wrong-amount"] == 0.7724
    assert scores["escalate-not-escalated"] == 0.2881
    assert scores["lookup-wrong-order-id"] == 0.4116
    assert summary["mean_score"] == pytest.approx(sum(line["score"] for line in lines.values()) / 25)


def test_tone_is_measured_with_vader(run):
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    _, lines, _ = run
    analyzer = SentimentIntensityAnalyzer()
    for case in ("refund-ok-openai", "lookup-rude"):
        reply = lines[case]["output"]["reply"]
        expected = (analyzer.polarity_scores(reply)["compound"] + 1) / 2
        assert results(lines[case])["tone"]["score"] == pytest.approx(expected), case
