"""The usual offline run (recorded answers, pure evaluators, one worker, each case once) scores its
cases in the runner's own loop, without `run_case`. Every kind of case must get the result the
general path (`run_case`, here on threads) gives it."""

from __future__ import annotations

import agenteval
from agenteval.runner import Runner

CASES = [
    {"id": "hit", "expected": {"name": "Acme", "total": 10}, "output": {"name": "Acme", "total": 10.0}},
    {"id": "miss", "expected": {"name": "Acme", "total": 10}, "output": {"name": "Globex", "total": 12}},
    {"id": 7, "expected": {"name": "Acme"}, "output": {"name": "Acme"}, "tags": ["int-id"],
     "metadata": {"agent_id": "agent-1", "session_id": 3}},
    {"id": "lenient", "expected": {"name": "Acme", "total": 10}, "output": {"name": "Acme", "total": 99}, "threshold": 0.4},
    {"id": "deep", "expected": {"name": "Acme"}, "output": {"name": [[[[["Acme"]]]]]}},  # past answer_depth: admission refuses it
    {"id": "played", "expected": {"name": "Acme"},
     "output": {"turns": [{"user": "hi", "assistant": "Acme"}], "final": "Acme"}},  # a recorded conversation
    {"id": "no-output", "expected": {"name": "Acme"}},
    {"id": "own-check", "expected": {"name": "Acme"}, "output": {"name": "Acme"},
     "evaluators": [{"type": "contains", "path": "name", "reference": "Ac"}]},
]

SUITE = {
    "name": "inline",
    "trust_cases": True,
    "limits": {"answer_depth": 4},
    "evaluators": [
        {"type": "field_accuracy", "fields": [{"path": "name", "match": "fuzzy"}, {"path": "total", "match": "numeric_tolerance"}]},
        {"type": "equals", "path": "name", "weight": 2},
    ],
    "cases": CASES,
}

VARYING = ("run_id", "timestamp", "duration_ms")


def _comparable(result) -> dict:
    line = result.to_dict()
    for key in VARYING:
        line.pop(key)
    for evaluator in line["evaluator_results"]:
        evaluator.pop("duration_ms")
    return line


def test_the_inline_loop_gives_every_kind_of_case_the_result_of_the_general_path(monkeypatch):
    general = {result.case_id: _comparable(result) for result in agenteval.run_suite(SUITE, workers=2)}

    through_run_case = []
    run_case = Runner.run_case

    def counted(self, case, *args, **kwargs):
        through_run_case.append(case.id)
        return run_case(self, case, *args, **kwargs)

    monkeypatch.setattr(Runner, "run_case", counted)
    inline = {result.case_id: _comparable(result) for result in agenteval.run_suite(SUITE, workers=1)}

    assert through_run_case == ["no-output", "own-check"]  # the others were scored by the loop itself
    assert inline == general
    assert list(inline) == ["hit", "miss", "7", "lenient", "deep", "played", "no-output", "own-check"]
    assert [inline[name]["verdict"] for name in inline] == ["pass", "fail", "pass", "pass", "error", "fail", "error", "pass"]
    assert inline["7"]["agent_id"] == "agent-1" and inline["7"]["session_id"] == "3" and inline["7"]["tags"] == ["int-id"]
    assert "answer nested deeper than 4 levels" in inline["deep"]["error"]
    assert inline["own-check"]["evaluator_results"][-1]["type"] == "contains"
