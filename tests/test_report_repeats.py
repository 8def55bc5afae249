"""`agenteval report` on the results of a `--repeat N` run shows the repeat figures the run showed.

The target is a real program whose answers change between repetitions: each case's input carries
a pattern ("101": right on the 1st and 3rd call), and the program counts its calls per case in
files. The report is computed from the results file alone, while it streams.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics

from conftest import read_jsonl, run_cli, write

from agenteval.repeats import FLAKY_SHOWN, INFERRED, RepeatStats
from agenteval.reports.markdown import md
from agenteval.results import CaseResult

PATTERNS = {"a": "101", "b": "111", "c": "000", "d": "100", "e": "011"}
FLAKY = [  # lowest pass rate first, then by case id
    {"case_id": "d", "runs": 3, "passed": 1, "pass_rate": 1 / 3},
    {"case_id": "a", "runs": 3, "passed": 2, "pass_rate": 2 / 3},
    {"case_id": "e", "runs": 3, "passed": 2, "pass_rate": 2 / 3},
]
REPEAT_LINES = ("pass rate over 3 repetitions:", "mean score over 3 repetitions:", "flaky cases:", "pass@k over", "pass^k over")
# passes out of 3 per case: a 2, b 3, c 0, d 1, e 2; each figure is the mean over the 5 cases of the
# per-case estimator, worked by hand (pass@2 of a case with 1 pass in 3 tries: 1 - C(2,2)/C(3,2) = 2/3)
PASS_AT_K = {"1": 8 / 15, "2": 11 / 15, "3": 4 / 5}
PASS_HAT_K = {"1": 8 / 15, "2": 1 / 3, "3": 1 / 5}


def _suite(folder):
    write(folder, "flip.py", """
        import fcntl, json, os, sys
        data = json.load(sys.stdin)
        os.makedirs("counts", exist_ok=True)
        with open(os.path.join("counts", data["id"]), "a+") as counter:
            fcntl.flock(counter, fcntl.LOCK_EX)  # repetitions of one case may run at once
            counter.seek(0)
            calls = len(counter.read())
            counter.write(".")
        right = data["pattern"][calls % len(data["pattern"])] == "1"
        print(json.dumps({"a": data["id"] if right else "wrong", "b": data["id"]}))
    """)
    cases = "".join(
        f"  - {{id: {case}, input: {{id: {case}, pattern: '{pattern}'}}, expected: {{a: {case}, b: {case}}}}}\n"
        for case, pattern in PATTERNS.items()
    )
    return write(folder, "suite.yaml", (
        "name: flaky\ntarget: {type: command, command: [python, flip.py]}\n"
        f"evaluators: [{{type: field_accuracy, fields: [{{path: a}}, {{path: b}}]}}]\ncases:\n{cases}"
    ))


def _run(folder, name, *extra):
    shutil.rmtree(folder / "counts", ignore_errors=True)  # every run starts each case's calls at 0
    done = run_cli("run", folder / "suite.yaml", "-o", folder / f"{name}.jsonl", "--repeat", "3", *extra)
    assert done.returncode == 1, done.stdout + done.stderr
    return done, json.loads((folder / f"{name}.summary.json").read_text())


def _report(*args):
    done = run_cli("report", *args)
    assert done.returncode == 1, done.stderr
    return done


def _repeat_lines(text):
    return [line for line in text.splitlines() if line.startswith(REPEAT_LINES)]


def test_report_rebuilds_the_repeat_figures_of_the_run(tmp_path):
    _suite(tmp_path)
    done, summary = _run(tmp_path, "r", "--workers", "1")
    lines = read_jsonl(tmp_path / "r.jsonl")
    assert len(lines) == 15 and sorted(line["repetition"] for line in lines) == [0] * 5 + [1] * 5 + [2] * 5
    repeats = summary["repeats"]
    rates = [sum(line["verdict"] == "pass" for line in lines if line["repetition"] == r) / 5 for r in range(3)]
    assert rates == [3 / 5, 2 / 5, 3 / 5]
    assert repeats["repeat"] == 3 and repeats["flaky_cases"] == 3 and repeats["flaky"] == FLAKY
    assert repeats["pass_rate"]["mean"] == statistics.mean(rates)
    assert abs(repeats["pass_rate"]["std"] - statistics.stdev(rates)) < 1e-12
    assert repeats["pass_at_k"].keys() == PASS_AT_K.keys() and repeats["pass_hat_k"].keys() == PASS_HAT_K.keys()
    assert all(abs(repeats["pass_at_k"][k] - PASS_AT_K[k]) < 1e-15 for k in PASS_AT_K)
    assert all(abs(repeats["pass_hat_k"][k] - PASS_HAT_K[k]) < 1e-15 for k in PASS_HAT_K)
    assert abs(repeats["pass_at_k"]["1"] - repeats["pass_rate"]["mean"]) < 1e-15  # pass@1 is the pass rate over all tries

    reported = json.loads(_report(tmp_path / "r.jsonl", "--format", "json").stdout)
    assert reported["repeats"] == repeats  # the same figures, to the last bit
    for key in ("counts", "pass_rate", "mean_score", "evaluators", "fields", "usage"):
        assert reported[key] == summary[key], key

    run_lines = _repeat_lines(done.stdout)
    assert len(run_lines) == 5 and run_lines[2] == "flaky cases: 3: d (1/3), a (2/3), e (2/3)"
    assert run_lines[3:] == [
        "pass@k over 3 repetitions: pass@1 0.533, pass@2 0.733, pass@3 0.800",
        "pass^k over 3 repetitions: pass^1 0.533, pass^2 0.333, pass^3 0.200",
    ]
    assert _repeat_lines(_report(tmp_path / "r.jsonl").stdout) == run_lines

    markdown = _report(tmp_path / "r.jsonl", "--format", "markdown").stdout
    assert "### Usage, limits and repeats" in markdown
    assert "95% CI \\[" in markdown  # brackets escaped, not a link
    for line in run_lines:
        assert f"- {md(line)}" in markdown
    _report(tmp_path / "r.jsonl", "--format", "html", "-o", tmp_path / "r.html")
    page = (tmp_path / "r.html").read_text()
    assert '<section id="usage"><h2>Usage, limits and repeats</h2>' in page
    for line in run_lines:
        assert f"<li>{line}</li>" in page

    _run(tmp_path, "rr", "--workers", "1", "--markdown", tmp_path / "run.md")
    assert all(f"- {md(line)}" in (tmp_path / "run.md").read_text() for line in run_lines)  # the run's own Markdown has them too


def test_results_in_any_order_and_from_shards_give_the_run_figures(tmp_path):
    _suite(tmp_path)
    _, summary = _run(tmp_path, "w", "--workers", "2")  # repetitions finish out of order
    lines = read_jsonl(tmp_path / "w.jsonl")
    reported = json.loads(_report(tmp_path / "w.jsonl", "--format", "json").stdout)
    assert reported["repeats"] == summary["repeats"] and summary["repeats"]["flaky"] == FLAKY

    shuffled = tmp_path / "shuffled.jsonl"
    random.Random(7).shuffle(lines)
    shuffled.write_text("".join(json.dumps(line) + "\n" for line in lines))
    again = json.loads(_report(shuffled, "--format", "json").stdout)["repeats"]
    assert again["flaky"] == FLAKY and again["flaky_cases"] == 3 and again["pass_rate"]["mean"] == summary["repeats"]["pass_rate"]["mean"]

    _, whole = _run(tmp_path, "whole", "--workers", "1")
    _run(tmp_path, "s1", "--workers", "1", "--shard", "1/2")
    _run(tmp_path, "s2", "--workers", "1", "--shard", "2/2")
    shards = _report(tmp_path / "s1.jsonl", tmp_path / "s2.jsonl", "--format", "json")
    assert json.loads(shards.stdout)["repeats"] == whole["repeats"]
    twice = _report(tmp_path / "whole.jsonl", tmp_path / "whole.jsonl", "--format", "json")
    assert json.loads(twice.stdout)["repeats"] == whole["repeats"]
    assert "warning: 15 duplicate results skipped" in twice.stderr


def test_a_run_without_repeat_reports_no_repeat_section(tmp_path):
    _suite(tmp_path)
    shutil.rmtree(tmp_path / "counts", ignore_errors=True)
    run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "once.jsonl", "-q")
    reported = _report(tmp_path / "once.jsonl", "--format", "json")
    assert "repeats" not in json.loads(reported.stdout)
    assert _repeat_lines(_report(tmp_path / "once.jsonl").stdout) == []


def _result(case: int, repetition: int, passed: bool) -> CaseResult:
    return CaseResult("run", "s", f"c{case:03d}", 1.0 if passed else 0.25, "pass" if passed else "fail", repetition=repetition)


def test_the_flaky_cases_listed_do_not_depend_on_the_order_results_arrive():
    rng = random.Random(3)
    results = [_result(case, rep, rng.random() < 0.5) for case in range(400) for rep in range(4)]
    in_order = RepeatStats(4)
    for result in results:
        in_order.add(result)
    shuffled = RepeatStats(INFERRED)
    for result in rng.sample(results, len(results)):
        shuffled.add(result)
    first, second = in_order.to_dict(), shuffled.to_dict()
    assert first == second
    passes: dict[str, int] = {}
    for result in results:
        passes[result.case_id] = passes.get(result.case_id, 0) + (result.verdict == "pass")
    flaky = sorted((count / 4, case) for case, count in passes.items() if 0 < count < 4)
    assert first["flaky_cases"] == len(flaky) > FLAKY_SHOWN
    assert [(row["pass_rate"], row["case_id"]) for row in first["flaky"]] == flaky[:FLAKY_SHOWN]
    assert first["repeat"] == 4
