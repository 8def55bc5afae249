"""examples/support-agent-live: ten live conversations (a refund agent with mocked tools and a
simulated customer) replayed from the committed cache, offline. The output its README shows is
what the run prints, every request (agent, customer, judges) comes from the cache, the verdicts
and the reasons of the three failures are pinned, and make_cache.py rebuilds a cache that gives
the same conversations."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLES, assert_same_run_output, read_jsonl
from test_doc_examples import console_blocks

FOLDER = EXAMPLES / "support-agent-live"
CACHE = Path(".agenteval") / "cache" / "responses.sqlite"
ENV = {**os.environ, "CI": "1", "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
ENV.pop("SUPPORT_LIVE_BASE_URL", None)  # the cache is keyed by the default base_url
PASSING = {"refund-granted", "refused-past-window", "wrong-order-id", "order-status", "partial-refund",
           "already-refunded", "no-order-id"}


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(FOLDER, tmp_path / "examples" / "support-agent-live", ignore=shutil.ignore_patterns("agenteval-results", "__pycache__"))
    return tmp_path / "examples" / "support-agent-live"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenteval", "run", "examples/support-agent-live/suite.yaml", *args],
        cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
    )




def _by_name(line: dict) -> dict[str, dict]:
    return {result["name"]: result for result in line["evaluator_results"]}


def test_the_readme_shows_what_the_command_prints_offline_from_the_cache(tmp_path):
    folder = _copy(tmp_path)
    cache_before = (folder / CACHE).read_bytes()
    steps = [(step.command, step.status, step.output) for block in console_blocks([FOLDER / "README.md"]) for step in block.steps]
    assert [(command, status) for command, status, _ in steps] == [
        ("agenteval run examples/support-agent-live/suite.yaml --show-failures 3 -o live.jsonl", 1),
    ]
    for command, status, shown in steps:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        assert done.returncode == status, done.stdout
        # the cached replies' latencies plus the mock tools' own time, measured in this run (0.02-0.1 ms a case)
        assert_same_run_output(done.stdout.splitlines(), shown, latency_within=2)
    assert (folder / CACHE).read_bytes() == cache_before  # a replay writes nothing

    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "live.jsonl")}
    assert len(lines) == 10 and {case for case, line in lines.items() if line["verdict"] == "pass"} == PASSING
    assert {line["verdict"] for line in lines.values()} == {"pass", "fail"}
    # every model step (agent, customer, goal judge) and every rubric judge came from the cache
    for case, line in lines.items():
        steps = line["output"]["steps"]
        assert all(step["usage"]["cached"] for step in steps if step["kind"] in ("model", "user")), case
        assert {step["kind"] for step in steps} >= {"model", "tool", "user"}, case
        assert line["usage"]["cached"] is True
    summary = json.loads((tmp_path / "live.summary.json").read_text())
    assert summary["usage"]["target"]["requests"] == summary["usage"]["target"]["cached"] == 10
    assert summary["usage"]["judges"]["requests"] == summary["usage"]["judges"]["cached"] == 10
    assert summary["counts"] == {"total": 10, "passed": 7, "failed": 3, "errored": 0}


def test_the_conversations_and_the_reasons_of_the_three_failures(tmp_path):
    _copy(tmp_path)
    assert _run(tmp_path, "-q", "-o", "r.jsonl").returncode == 1
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    goals = {case: (line["output"]["goal"]["rule"], line["output"]["goal"]["turn"], len(line["output"]["turns"])) for case, line in lines.items()}
    assert goals == {
        "refund-granted": ("tool", 1, 1), "refused-past-window": ("judge", 1, 1), "wrong-order-id": ("regex", 2, 2),
        "angry-customer": ("tool", 2, 2), "order-id-early": ("tool", 2, 2), "order-status": ("judge", 1, 1),
        "partial-refund": ("regex", 1, 1), "refund-system-down": ("regex", 1, 1), "already-refunded": ("user", 1, 1),
        "no-order-id": ("tool", 2, 2),
    }
    calls = {case: [(call["name"], call["arguments"]["order_id"], call["turn"]) for call in line["output"]["tool_calls"]]
             for case, line in lines.items()}
    assert calls["wrong-order-id"] == [("get_order", "A-1030", 1), ("get_order", "A-1003", 2), ("refund_order", "A-1003", 2)]
    assert calls["order-status"] == [("get_order", "A-1006", 1)]
    partial = lines["partial-refund"]["output"]["tool_calls"][1]
    assert (partial["arguments"]["amount"], partial["result"]) == (12.0, {"status": "issued"})
    down = lines["refund-system-down"]["output"]["tool_calls"][1]
    assert down["result"] == {"error": "payment provider unavailable, try again later"}  # the case's own mock

    angry = _by_name(lines["angry-customer"])
    assert (angry["tools"]["verdict"], angry["tools"]["misses"]) == ("fail", ["unexpected call 1 (refund_order)"])
    assert angry["no_promises"]["misses"] == ["turn 2: content contains 'guarantee'", "turn 2: content contains 'exception'"]
    assert angry["rubric"]["misses"] == ["policy (fail)"] and angry["rubric"]["score"] == 0.6
    assert angry["conversation"]["verdict"] == "pass"  # the customer got what it wanted
    down_results = _by_name(lines["refund-system-down"])
    assert down_results["rubric"]["misses"] == ["honest (fail)"]
    assert [name for name, result in down_results.items() if result["verdict"] != "pass"] == ["rubric"]
    early = _by_name(lines["order-id-early"])
    assert early["conversation"]["misses"] == ["turn 1: asked again for order number (given in turn 1)"]
    assert [name for name, result in early.items() if result["verdict"] != "pass"] == ["conversation"]
    for case in PASSING:
        assert all(result["verdict"] == "pass" for result in lines[case]["evaluator_results"]), case
    assert _by_name(lines["order-status"])["rubric"]["misses"] == ["courteous (4)"]  # passes at 0.95 >= 0.9


def test_make_cache_rebuilds_a_cache_with_the_same_conversations(tmp_path, example_port):
    _copy(tmp_path / "committed")
    committed = _run(tmp_path / "committed", "-q", "-o", "r.jsonl")
    folder = _copy(tmp_path / "rebuilt")
    made = subprocess.run([sys.executable, str(folder / "make_cache.py")], env=ENV, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("wrote examples/support-agent-live/.agenteval/cache/responses.sqlite (")
    replayed = _run(tmp_path / "rebuilt", "-q", "-o", "r.jsonl")
    assert (committed.returncode, replayed.returncode) == (1, 1), replayed.stdout

    def conversations(path: Path) -> dict[str, tuple]:
        return {line["case_id"]: (line["output"]["messages"], line["output"]["tool_calls"], line["verdict"], line["score"],
                                  line["usage"]["cached"])
                for line in read_jsonl(path)}

    rebuilt = conversations(tmp_path / "rebuilt" / "r.jsonl")
    assert len(rebuilt) == 10 and rebuilt == conversations(tmp_path / "committed" / "r.jsonl")
