"""A command target records each answer's wall time as `usage.latency_ms`, like the http targets do.

Real runs of a small Python program that sleeps 50 ms per case: the latency lands on each result
line, in the summary's percentiles, in the terminal line, and a `latency` evaluator (per case and
suite limits) judges it. Recorded answers keep no latency at all (absent, not 0).
"""

from __future__ import annotations

import json

from conftest import read_jsonl, run_cli, write

SLEEP_MS = 50
CASES = 4


def _suite(folder, evaluators: str, target: str = "{type: command, command: [python, slow.py]}"):
    write(folder, "slow.py", f"""
        import json, sys, time
        data = json.load(sys.stdin)
        time.sleep({SLEEP_MS / 1000})
        if data["q"] < 0:
            sys.exit("negative input")
        print(json.dumps({{"a": data["q"]}}))
    """)
    cases = "".join(f"  - {{id: c{i}, input: {{q: {i}}}, expected: {{a: {i}}}, output: {{a: {i}}}}}\n" for i in range(CASES))
    return write(folder, "suite.yaml", f"name: timed\ntarget: {target}\nevaluators:\n{evaluators}\ncases:\n{cases}")


def _run(folder, *extra):
    done = run_cli("run", folder / "suite.yaml", "-o", folder / "r.jsonl", "--workers", "1", *extra)
    summary = json.loads((folder / "r.summary.json").read_text())
    return done, {line["case_id"]: line for line in read_jsonl(folder / "r.jsonl")}, summary


def test_each_answer_records_its_wall_time_and_the_summary_its_percentiles(tmp_path):
    _suite(tmp_path, "  - {type: field_accuracy, fields: [{path: a}]}\n  - {type: latency, max_ms: 30000, p50_ms: 30000, p95_ms: 30000}")
    done, lines, summary = _run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    latencies = sorted(line["usage"]["latency_ms"] for line in lines.values())
    assert len(latencies) == CASES and latencies[0] >= SLEEP_MS
    assert all(set(line["usage"]) == {"latency_ms"} for line in lines.values())  # no tokens, no cost: a program counts none
    for line in lines.values():  # the case's duration includes the answer's wall time
        assert line["duration_ms"] >= line["usage"]["latency_ms"]
        latency = next(r for r in line["evaluator_results"] if r["type"] == "latency")
        assert latency["verdict"] == "pass" and latency["details"] == {"latency_ms": line["usage"]["latency_ms"]}
    usage = summary["usage"]
    assert usage["target"]["requests"] == CASES
    assert usage["latency_ms"]["p50"] == (latencies[1] + latencies[2]) / 2
    assert usage["latency_ms"]["max"] == latencies[-1] and usage["latency_ms"]["p95"] >= usage["latency_ms"]["p50"] >= SLEEP_MS
    assert usage["total_tokens"] == 0 and usage["total_cost_usd"] is None
    assert [check["passed"] for check in summary["suite_limits"]] == [True, True]
    target_line = next(text for text in done.stdout.splitlines() if text.startswith("target: latency p50 "))
    assert "tokens" not in target_line and "cost" not in target_line  # nothing to say about tokens a program never reported
    assert "total: tokens" not in done.stdout


def test_a_latency_limit_under_the_wall_time_fails_each_case_and_the_suite(tmp_path):
    _suite(tmp_path, "  - {type: field_accuracy, fields: [{path: a}]}\n  - {type: latency, max_ms: 20, p95_ms: 20}")
    done, lines, summary = _run(tmp_path)
    assert done.returncode == 1
    for line in lines.values():
        latency = next(r for r in line["evaluator_results"] if r["type"] == "latency")
        assert line["verdict"] == "fail" and latency["verdict"] == "fail"
        assert latency["misses"] == [f"latency_ms {line['usage']['latency_ms']:.0f} ms > 20 ms"]
    [check] = summary["suite_limits"]
    assert check["figure"] == "latency_p95_ms" and check["value"] == summary["usage"]["latency_ms"]["p95"] and not check["passed"]
    assert f"suite limit not met: latency_p95_ms {check['value']:g} > 20 (evaluator latency)" in done.stderr


def test_a_failed_command_has_no_latency_and_recorded_answers_none_at_all(tmp_path):
    _suite(tmp_path, "  - {type: latency, max_ms: 30000}")
    write(tmp_path, "more.yaml", (tmp_path / "suite.yaml").read_text() + "  - {id: neg, input: {q: -1}, expected: {a: -1}}\n")
    done = run_cli("run", tmp_path / "more.yaml", "-o", tmp_path / "f.jsonl", "--workers", "1")
    assert done.returncode == 3
    failed = {line["case_id"]: line for line in read_jsonl(tmp_path / "f.jsonl")}["neg"]
    assert failed["verdict"] == "error" and "negative input" in failed["error"] and failed["usage"] is None

    _suite(tmp_path, "  - {type: latency, max_ms: 30000, p50_ms: 30000}", target="{type: recorded}")
    done, lines, summary = _run(tmp_path)
    assert done.returncode == 1
    assert all(line["usage"] is None for line in lines.values())
    assert "usage" not in summary  # absent, never a latency of 0
    latency = lines["c0"]["evaluator_results"][0]
    assert latency["verdict"] == "fail" and latency["misses"][0].startswith("no latency recorded for this answer")
    assert summary["suite_limits"] == [
        {"evaluator": "latency", "figure": "latency_p50_ms", "limit": 30000, "value": None, "passed": False}
    ]
    assert "target: latency" not in done.stdout


def test_report_of_a_command_run_shows_the_same_latency(tmp_path):
    _suite(tmp_path, "  - {type: field_accuracy, fields: [{path: a}]}")
    done, _, summary = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    reported = run_cli("report", tmp_path / "r.jsonl", "--format", "json")
    assert reported.returncode == 0, reported.stderr
    assert json.loads(reported.stdout)["usage"] == summary["usage"]
    table = run_cli("report", tmp_path / "r.jsonl")
    expected = next(text for text in done.stdout.splitlines() if text.startswith("target: latency"))
    assert expected in table.stdout.splitlines()
    markdown = run_cli("report", tmp_path / "r.jsonl", "--format", "markdown").stdout
    assert "### Usage, limits and repeats" in markdown and "- target: latency p50 " in markdown
