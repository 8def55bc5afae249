"""Where a run writes, and what it writes: names, locks, torn lines, unwritable paths, secrets, NaN."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from conftest import read_jsonl, run_cli, write

RECORDED = """
name: out
evaluators:
  - {name: fields, type: field_accuracy, fields: [{path: a}]}
  - {name: other, type: field_accuracy, fields: [{path: a, match: numeric_tolerance, tolerance: 10}]}
cases: cases.jsonl
"""


def _recorded(tmp_path, count=5):
    write(tmp_path, "suite.yaml", RECORDED)
    lines = [json.dumps({"id": f"c{i}", "expected": {"a": i}, "output": {"a": i if i != 1 else -1}}) for i in range(count)]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "suite.yaml"


def test_version_flag_prints_the_version():
    from agenteval import __version__

    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"agenteval {__version__}"


def test_two_runs_in_the_same_second_get_different_default_files(tmp_path):
    suite = _recorded(tmp_path)
    first = subprocess.Popen([sys.executable, "-m", "agenteval", "run", str(suite), "-q"], cwd=tmp_path, stderr=subprocess.PIPE)
    second = subprocess.Popen([sys.executable, "-m", "agenteval", "run", str(suite), "-q"], cwd=tmp_path, stderr=subprocess.PIPE)
    assert first.wait(60) == 1 and second.wait(60) == 1
    files = sorted((tmp_path / "agenteval-results").glob("*.jsonl"))
    assert len(files) == 2
    for path in files:
        rows = read_jsonl(path)
        assert len(rows) == 5 and len({row["run_id"] for row in rows}) == 1


def test_resume_without_output_ignores_a_suite_whose_name_extends_this_one(tmp_path):
    suite = _recorded(tmp_path)
    assert run_cli("run", suite, "-q", cwd=tmp_path).returncode == 1
    ours = next((tmp_path / "agenteval-results").glob("out-*.jsonl"))
    other = tmp_path / "agenteval-results" / "out-extraction-20991231-235959.jsonl"
    other.write_text(json.dumps({"run_id": "x", "suite": "out-extraction", "case_id": "z", "score": 1, "verdict": "pass"}) + "\n")
    os.utime(other, (time.time() + 60, time.time() + 60))
    again = run_cli("run", suite, "--resume", "-q", cwd=tmp_path)
    assert again.returncode == 1, again.stderr
    assert len(read_jsonl(ours)) == 5  # nothing left to run: the same five results, none added


def test_a_second_run_on_the_same_file_is_refused_while_the_first_runs(tmp_path):
    write(tmp_path, "slow.py", "import sys, json, time\nd = json.load(sys.stdin); time.sleep(0.3); print(json.dumps({'a': d['q']}))\n")
    write(tmp_path, "suite.yaml", """
        name: locked
        target: {type: command, command: [python, slow.py]}
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases: cases.jsonl
    """)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": {"q": i}, "expected": {"a": i}}) + "\n" for i in range(6)))
    first = subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", "suite.yaml", "-o", "r.jsonl", "-q", "--workers", "1"],
        cwd=tmp_path, stderr=subprocess.PIPE, text=True,
    )
    time.sleep(1.0)
    second = run_cli("run", "suite.yaml", "-o", "r.jsonl", "--resume", "-q", cwd=tmp_path)
    assert first.wait(60) == 0
    assert second.returncode == 2
    assert "r.jsonl is being written by another agenteval run" in second.stderr
    rows = read_jsonl(tmp_path / "r.jsonl")
    assert sorted(row["case_id"] for row in rows) == [f"c{i}" for i in range(6)]
    assert len({row["run_id"] for row in rows}) == 1


def test_resume_keeps_finished_results_when_the_torn_line_is_longer_than_a_mebibyte(tmp_path):
    suite = _recorded(tmp_path, 50)
    results = tmp_path / "r.jsonl"
    assert run_cli("run", suite, "-o", results, "-q").returncode == 1
    with results.open("a") as handle:
        handle.write('{"run_id": "x", "suite": "out", "case_id": "c49", "output": "' + "q" * (2 << 20))
    again = run_cli("run", suite, "-o", results, "--resume", "-q")
    assert again.returncode == 1, again.stderr
    rows = read_jsonl(results)
    assert sorted(row["case_id"] for row in rows) == sorted(f"c{i}" for i in range(50))


def test_a_directory_as_output_is_named_as_one(tmp_path):
    suite = _recorded(tmp_path)
    (tmp_path / "outdir").mkdir()
    done = run_cli("run", suite, "-o", tmp_path / "outdir")
    assert done.returncode == 2
    assert "outdir is a directory; -o takes a file path" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_output_that_cannot_be_created_is_one_line_and_exit_2(tmp_path):
    suite = _recorded(tmp_path)
    (tmp_path / "blocker").write_text("a file, not a folder")
    done = run_cli("run", suite, "-o", tmp_path / "blocker" / "r.jsonl")
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: cannot write results to ")
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_dev_null_as_output_writes_no_summary_beside_it(tmp_path):
    suite = _recorded(tmp_path)
    done = run_cli("run", suite, "-o", "/dev/null", "-q")
    assert done.returncode == 1, done.stderr
    assert not os.path.exists("/dev/null.summary.json")


def test_env_values_and_credentials_never_reach_the_summary(tmp_path):
    write(tmp_path, "t.py", "import sys, json\njson.load(sys.stdin); print(json.dumps({'a': 1}))\n")
    write(tmp_path, "judge.py", "import sys, json\njson.load(sys.stdin); print(json.dumps({'score': 1}))\n")
    write(tmp_path, "suite.yaml", """
        name: secrets
        target: {type: command, command: [python, t.py], env: {API_KEY: sk-live-SUITEKEY}}
        evaluators:
          - {type: field_accuracy, fields: [{path: a}]}
          - {type: code_judge, command: [python, judge.py], api_token: tok-JUDGEKEY, threshold: 0.5}
        cases: [{id: c0, input: {}, expected: {a: 1}}]
    """)
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["resolved_suite"]["target"]["env"] == {"API_KEY": "<redacted>"}
    judge = summary["resolved_suite"]["evaluators"][1]
    assert judge["api_token"] == "<redacted>" and judge["threshold"] == 0.5
    for name in ("r.jsonl", "r.summary.json"):
        text = (tmp_path / name).read_text()
        assert "SUITEKEY" not in text and "JUDGEKEY" not in text


def test_a_nan_answer_is_kept_so_rescoring_gives_the_same_verdict(tmp_path):
    write(tmp_path, "t.py", "import sys; sys.stdin.read(); print('{\"a\": NaN}')\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "n1", "input": {}, "expected": {"a": null}}\n')
    write(tmp_path, "live.yaml", """
        name: n
        target: {type: command, command: [python, t.py]}
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases: cases.jsonl
    """)
    write(tmp_path, "rec.yaml", """
        name: n
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases: cases.jsonl
    """)
    live = run_cli("run", "live.yaml", "-o", "r.jsonl", "-q", cwd=tmp_path)
    assert live.returncode == 1, live.stderr
    assert '"output":{"a": NaN}' in (tmp_path / "r.jsonl").read_text()
    again = run_cli("run", "rec.yaml", "--predictions", "r.jsonl", "-o", "-", "-q", cwd=tmp_path)
    assert again.returncode == 1, again.stderr
    assert json.loads(again.stdout)["verdict"] == "fail"


def test_evaluator_flag_runs_only_the_named_evaluators(tmp_path):
    suite = _recorded(tmp_path)
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--evaluator", "other")
    assert done.returncode == 0, done.stderr
    rows = read_jsonl(tmp_path / "r.jsonl")
    assert {tuple(e["name"] for e in row["evaluator_results"]) for row in rows} == {("other",)}
    assert "skipped evaluators (--evaluator): fields" in done.stdout
    assert json.loads((tmp_path / "r.summary.json").read_text())["evaluators_skipped"] == ["fields"]


def test_evaluator_flag_with_an_unknown_name_exits_2_with_a_hint(tmp_path):
    suite = _recorded(tmp_path)
    done = run_cli("run", suite, "-o", "-", "--evaluator", "feilds")
    assert done.returncode == 2
    assert "--evaluator feilds: the suite has no evaluator of that name; did you mean 'fields'?" in done.stderr


def test_a_recorded_answer_nested_deeper_than_orjson_writes_is_still_stored(tmp_path):
    # an answer deeper than `limits.answer_depth` (200 by default) is the case's error: the limit is raised here
    write(tmp_path, "suite.yaml", """
        name: deep
        limits: {answer_depth: 400}
        evaluators: [{type: field_accuracy, fields: [{path: a}]}]
        cases: cases.jsonl
    """)
    deep = "[" * 300 + "]" * 300
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "d", "expected": {"a": 1}, "output": {"a": 1, "deep": ' + deep + '}}\n'
        '{"id": "e", "expected": {"a": 2}, "output": {"a": 2}}\n'
    )
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {row["case_id"]: row for row in read_jsonl(tmp_path / "r.jsonl")}
    assert set(rows) == {"d", "e"} and rows["d"]["verdict"] == "pass"
    depth, node = 0, rows["d"]["output"]["deep"]
    while node:
        depth, node = depth + 1, node[0]
    assert depth == 299  # the innermost list is empty


def test_each_result_line_carries_the_cases_expected_and_older_lines_without_it_still_read(tmp_path):
    suite = _recorded(tmp_path, count=3)
    assert run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q").returncode == 1
    lines = read_jsonl(tmp_path / "r.jsonl")
    assert [(line["case_id"], line["expected"]) for line in lines] == [("c0", {"a": 0}), ("c1", {"a": 1}), ("c2", {"a": 2})]
    old = tmp_path / "old.jsonl"  # a results file written before `expected` was stored
    old.write_text("".join(json.dumps({k: v for k, v in line.items() if k != "expected"}) + "\n" for line in lines))
    from agenteval.results import read_results

    assert [(result.case_id, result.expected, result.verdict) for result in read_results(old)] == [
        ("c0", None, "pass"), ("c1", None, "fail"), ("c2", None, "pass"),
    ]
    report = run_cli("report", old, "--format", "json")
    assert report.returncode == 1 and json.loads(report.stdout)["counts"] == {"total": 3, "passed": 2, "failed": 1, "errored": 0}
    again = run_cli("run", suite, "--predictions", old, "-o", "-", "-q")  # re-scored from an old results file
    assert again.returncode == 1, again.stderr
    rescored = [json.loads(line) for line in again.stdout.splitlines()]
    assert [(line["case_id"], line["verdict"], line["expected"]) for line in rescored] == [
        ("c0", "pass", {"a": 0}), ("c1", "fail", {"a": 1}), ("c2", "pass", {"a": 2}),
    ]


def test_default_file_names_keep_unicode_names_and_the_run_ids_time(tmp_path):
    names = {"請求書": "請求書", "請求書-b": "請求書-b", "ünï": "ünï", "../.hidden/x\ty": "hidden-x-y", "é" * 200: "é" * 60}
    for name, slug in names.items():
        write(tmp_path, "s.yaml", json.dumps({"name": name, "evaluators": [{"type": "equals"}], "cases": [{"id": "c", "expected": "x", "output": "x"}]}))
        assert run_cli("run", "s.yaml", "-q", cwd=tmp_path).returncode == 0
        [path] = (tmp_path / "agenteval-results").glob("*.jsonl")
        run_id = read_jsonl(path)[0]["run_id"]
        assert path.name == f"{slug}-{run_id[:8]}-{run_id[9:15]}-{run_id[-6:]}.jsonl"
        assert len(slug.encode()) <= 120
        for stale in (tmp_path / "agenteval-results").iterdir():
            stale.unlink()


def test_a_run_of_one_case_says_1_case(tmp_path):
    write(tmp_path, "s.yaml", json.dumps({"name": "one", "evaluators": [{"type": "equals"}], "cases": [{"id": "c", "expected": "x", "output": "y"}]}))
    quiet = run_cli("run", "s.yaml", "-q", "-o", "r.jsonl", cwd=tmp_path)
    assert quiet.stderr.splitlines() == ["one: 1 case, 0 passed, 1 failed, 0 errored, pass rate 0.0%"]
    assert run_cli("report", "r.jsonl", cwd=tmp_path).stdout.splitlines()[1] == "1 case: 0 passed, 1 failed, 0 errored  pass rate 0.0%  mean score 0.000"
    markdown = run_cli("report", "r.jsonl", "--format", "markdown", cwd=tmp_path).stdout
    assert "**1 case: 0 passed, 1 failed, 0 errored**" in markdown
    compared = run_cli("compare", "r.jsonl", "r.jsonl", cwd=tmp_path).stdout
    assert "(1 case) → new" in compared and "cases)" not in compared


def test_resume_without_output_continues_the_newest_unfinished_run_and_says_so(tmp_path):
    suite = _recorded(tmp_path)
    folder = tmp_path / "agenteval-results"
    assert run_cli("run", suite, "-q", "--filter", "c[01]", cwd=tmp_path).returncode == 1
    [begun] = folder.glob("out-*.jsonl")
    (folder / (begun.name[: -len(".jsonl")] + ".summary.json")).unlink()  # killed before its summary: unfinished
    time.sleep(1.1)
    assert run_cli("run", suite, "-q", cwd=tmp_path).returncode == 1
    [finished] = [path for path in folder.glob("out-*.jsonl") if path != begun]
    resumed = run_cli("run", suite, "--resume", "-q", cwd=tmp_path)
    assert resumed.returncode == 1, resumed.stderr
    assert resumed.stderr.splitlines() == [
        f"note: --resume continues agenteval-results/{begun.name}, which is unfinished (no summary beside it); "
        f"the newest run of 'out', agenteval-results/{finished.name}, is finished",
        "out: 5 cases, 4 passed, 1 failed, 0 errored, pass rate 80.0%",
    ]
    assert sorted(row["case_id"] for row in read_jsonl(begun)) == [f"c{i}" for i in range(5)] and len(read_jsonl(finished)) == 5
    again = run_cli("run", suite, "--resume", "-q", cwd=tmp_path)
    assert again.returncode == 1, again.stderr
    assert again.stderr.splitlines() == [
        f"note: --resume found no unfinished run of 'out'; the newest, agenteval-results/{begun.name}, is finished: nothing is left to run",
        "out: 5 cases, 4 passed, 1 failed, 0 errored, pass rate 80.0%",
    ]
