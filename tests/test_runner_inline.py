"""An offline run (recorded answers, pure evaluators, one worker) scores its usual cases in the
runner's own loop, without `run_case`, and each with the lean `_recorded`. Every kind of case must
get the result the general path gives it: `run_case` on threads, with every case answered and
scored the general way (`_answered`: the target's answer, its admission, a run context)."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize("repeat", [1, 2])
def test_the_inline_loop_gives_every_kind_of_case_the_result_of_the_general_path(monkeypatch, repeat):
    with monkeypatch.context() as patched:
        patched.setattr(Runner, "_recorded", Runner._answered)
        general = {(r.case_id, r.repetition): _comparable(r) for r in agenteval.run_suite(SUITE, workers=2, repeat=repeat)}

    through_run_case = []
    run_case = Runner.run_case

    def counted(self, case, *args, **kwargs):
        through_run_case.append(case.id)
        return run_case(self, case, *args, **kwargs)

    monkeypatch.setattr(Runner, "run_case", counted)
    inline = {(r.case_id, r.repetition): _comparable(r) for r in agenteval.run_suite(SUITE, workers=1, repeat=repeat)}

    assert through_run_case == [name for name in ("no-output", "own-check") for _ in range(repeat)]  # the others: the loop itself
    assert inline == general
    names = ["hit", "miss", "7", "lenient", "deep", "played", "no-output", "own-check"]
    assert list(inline) == [(name, repetition) for name in names for repetition in range(repeat)]
    verdicts = ["pass", "fail", "pass", "pass", "error", "fail", "error", "pass"]
    assert [line["verdict"] for line in inline.values()] == [verdict for verdict in verdicts for _ in range(repeat)]
    seven = inline[("7", 0)]
    assert seven["agent_id"] == "agent-1" and seven["session_id"] == "3" and seven["tags"] == ["int-id"]
    assert "answer nested deeper than 4 levels" in inline[("deep", 0)]["error"]
    assert inline[("own-check", 0)]["evaluator_results"][-1]["type"] == "contains"
