"""`--executor ray` against a real local Ray instance: the same results as a local run, line for line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import read_jsonl, run_cli, write

ray = pytest.importorskip("ray", reason="Ray is in the dev extra; install it with pip install -e '.[dev]'")

JUDGE = """
import time
from agenteval.judge import run_judge

def judge(payload):
    time.sleep(payload["config"].get("sleep", 0))
    same = payload["candidate_answer"] == payload["reference_answer"]
    return {"score": 1.0 if same else 0.0, "reasoning": "for " + payload["case_id"]}

if __name__ == "__main__":
    run_judge(judge)
"""

TARGET = """
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"a": d["q"] if d["q"] % 5 else -1, "name": "Item %d" % d["q"]}))
"""

SUITE = """
name: on-ray
target: {type: command, command: [python, target.py]}
evaluators:
  - {name: fields, type: field_accuracy, fields: [{path: a}, {path: name, match: fuzzy}]}
  - {name: judge, type: code_judge, command: [python, judge.py], protocol: jsonl, sleep: SLEEP}
cases: cases.jsonl
"""


def _suite(tmp_path, count=30, sleep=0.0):
    write(tmp_path, "judge.py", JUDGE)
    write(tmp_path, "target.py", TARGET)
    write(tmp_path, "suite.yaml", SUITE.replace("SLEEP", str(sleep)))
    rows = [{"id": f"c{i:03d}", "input": {"q": i}, "expected": {"a": i, "name": f"Item {i}"}, "tags": ["odd" if i % 2 else "even"]} for i in range(count)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return tmp_path / "suite.yaml"


def _comparable(path):
    """Result lines without what may differ between two runs: run id and timings."""
    rows = []
    for row in read_jsonl(path):
        for key in ("run_id", "duration_ms", "timestamp"):
            row.pop(key)
        assert len(row.pop("trace_id")) == 32  # each run sends each case a fresh W3C trace id
        if row["usage"] is not None:  # the command target's wall time, a timing like duration_ms
            assert row["usage"].pop("latency_ms") > 0
        for evaluator in row["evaluator_results"]:
            evaluator.pop("duration_ms")
        rows.append(row)
    return sorted(rows, key=lambda row: row["case_id"])


def test_a_ray_run_gives_the_same_results_as_a_local_run(tmp_path):
    _suite(tmp_path)
    local = run_cli("run", "suite.yaml", "-o", "local.jsonl", "-q", cwd=tmp_path)
    on_ray = run_cli("run", "suite.yaml", "-o", "ray.jsonl", "-q", "--executor", "ray", "--batch-size", "4", cwd=tmp_path, timeout=240)
    assert local.returncode == on_ray.returncode == 1, on_ray.stderr
    expected = _comparable(tmp_path / "local.jsonl")
    assert len(expected) == 30 and sum(row["verdict"] == "fail" for row in expected) == 6
    assert _comparable(tmp_path / "ray.jsonl") == expected
    local_summary = json.loads((tmp_path / "local.summary.json").read_text())
    ray_summary = json.loads((tmp_path / "ray.summary.json").read_text())
    for key in ("counts", "pass_rate", "mean_score", "fields", "tags", "dataset_metrics"):
        assert ray_summary[key] == local_summary[key], key
    assert "Traceback" not in on_ray.stderr


def test_shard_predictions_and_resume_work_on_ray(tmp_path):
    _suite(tmp_path, count=20)
    write(tmp_path, "recorded.yaml", """
        name: on-ray
        evaluators:
          - {name: fields, type: field_accuracy, fields: [{path: a}, {path: name, match: fuzzy}]}
        cases: cases.jsonl
    """)
    assert run_cli("run", "suite.yaml", "-o", "answers.jsonl", "-q", cwd=tmp_path).returncode == 1
    first = run_cli("run", "recorded.yaml", "-o", "r.jsonl", "-q", "--predictions", "answers.jsonl",
                    "--shard", "1/2", "--executor", "ray", "--batch-size", "3", cwd=tmp_path, timeout=240)
    assert first.returncode == 1, first.stderr
    assert sorted(row["case_id"] for row in read_jsonl(tmp_path / "r.jsonl")) == [f"c{i:03d}" for i in range(0, 20, 2)]
    rest = run_cli("run", "recorded.yaml", "-o", "r.jsonl", "-q", "--predictions", "answers.jsonl",
                   "--resume", "--executor", "ray", "--batch-size", "3", cwd=tmp_path, timeout=240)
    assert rest.returncode == 1, rest.stderr
    rows = read_jsonl(tmp_path / "r.jsonl")
    assert sorted(row["case_id"] for row in rows) == [f"c{i:03d}" for i in range(20)]
    assert sum(row["verdict"] == "fail" for row in rows) == 4  # c000, c005, c010, c015 answered -1
    assert len({row["run_id"] for row in rows}) == 1


def _ray_worker_pids():
    listing = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in listing.splitlines() if "ray::score_batch" in line]


def test_a_worker_killed_mid_run_loses_only_its_batch_which_ray_retries(tmp_path):
    _suite(tmp_path, count=40, sleep=0.05)
    run = subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", "suite.yaml", "-o", "r.jsonl", "-q", "--executor", "ray", "--batch-size", "4"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and run.poll() is None:
        results = tmp_path / "r.jsonl"
        if results.exists() and results.read_text().count("\n") >= 4:
            workers = _ray_worker_pids()
            if workers:
                killed = workers[0]
                os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    _, stderr = run.communicate(timeout=240)
    assert killed is not None, "no busy Ray worker was seen to kill"
    assert run.returncode == 1, stderr
    ids = [row["case_id"] for row in read_jsonl(tmp_path / "r.jsonl")]
    assert sorted(ids) == [f"c{i:03d}" for i in range(40)]  # every case, none twice


def test_without_ray_the_executor_says_what_to_install(tmp_path):
    _suite(tmp_path, count=2)
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['ray'] = None\n")
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "run", "suite.yaml", "--executor", "ray"],
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(blocker)}, timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --executor ray needs Ray: pip install 'agenteval[ray]'"
    assert not (tmp_path / "agenteval-results").exists()


def test_an_unknown_executor_is_refused(tmp_path):
    _suite(tmp_path, count=2)
    done = run_cli("run", "suite.yaml", "--executor", "spark", cwd=tmp_path)
    assert done.returncode == 2 and "--executor takes local or ray, got 'spark'" in done.stderr


def test_the_response_cache_and_repeats_reach_the_ray_workers(tmp_path):
    from llm_server import LLMServer

    with LLMServer() as server:
        write(tmp_path, "suite.yaml", f"""
name: live-on-ray
target: {{type: openai, base_url: "{server.base_url}", model: m1, temperature: 0, backoff: 0.01}}
evaluators:
  - {{type: contains, path: content, reference: capital}}
cases:
""" + "".join(f'  - {{id: q{i}, input: {{question: "capital number {i}?"}}, expected: x}}\n' for i in range(6)))
        first = run_cli("run", "suite.yaml", "-o", "first.jsonl", "-q", "--executor", "ray", "--batch-size", "2", cwd=tmp_path, timeout=240)
        assert first.returncode == 0, first.stderr
        assert server.count() == 6
        assert (tmp_path / ".agenteval" / "cache" / "responses.sqlite").is_file()  # the driver's cache, written by the workers

        again = run_cli("run", "suite.yaml", "-o", "again.jsonl", "-q", "--executor", "ray", "--repeat", "3", cwd=tmp_path, timeout=240)
        assert again.returncode == 0, again.stderr
        assert server.count() == 18  # repetition 0 from the cache; 1 and 2 have cache keys of their own
        assert sorted((row["repetition"], row["usage"].get("cached", False)) for row in read_jsonl(tmp_path / "again.jsonl")) == (
            [(0, True)] * 6 + [(1, False)] * 6 + [(2, False)] * 6
        )
        again = run_cli("run", "suite.yaml", "-o", "again2.jsonl", "-q", "--executor", "ray", "--repeat", "3", cwd=tmp_path, timeout=240)
        assert again.returncode == 0, again.stderr
        assert server.count() == 18  # every repetition came from the cache
        rows = read_jsonl(tmp_path / "again2.jsonl")
        assert sorted((row["case_id"], row["repetition"]) for row in rows) == [(f"q{i}", r) for i in range(6) for r in range(3)]
        assert all(row["usage"]["cached"] is True for row in rows)
        summary = json.loads((tmp_path / "again2.summary.json").read_text())
        assert summary["counts"]["total"] == 18 and summary["repeats"]["repeat"] == 3

        fresh = run_cli("run", "suite.yaml", "-o", "fresh.jsonl", "-q", "--executor", "ray", "--no-cache", cwd=tmp_path, timeout=240)
        assert fresh.returncode == 0, fresh.stderr
        assert server.count() == 24  # --no-cache asks again


def test_the_python_api_runs_a_suite_given_as_data_on_ray(tmp_path):
    import agenteval

    write(tmp_path, "judge.py", JUDGE)
    suite = {
        "name": "data-on-ray",
        "evaluators": [
            {"name": "fields", "type": "field_accuracy", "fields": [{"path": "a"}]},
            {"name": "judge", "type": "code_judge", "command": ["python", "judge.py"], "protocol": "jsonl"},
        ],
        "cases": [{"id": f"c{i}", "expected": {"a": i}, "output": {"a": i if i % 3 else -1}} for i in range(9)],
    }
    local = {result.case_id: (result.verdict, result.score) for result in agenteval.run_suite(suite, base_dir=tmp_path)}
    on_ray = agenteval.run_suite(suite, base_dir=tmp_path, executor="ray", batch_size=2)
    assert {result.case_id: (result.verdict, result.score) for result in on_ray} == local
    assert sorted(case for case, (verdict, _) in local.items() if verdict == "fail") == ["c0", "c3", "c6"]
    assert on_ray.summary["counts"] == {"total": 9, "passed": 6, "failed": 3, "errored": 0}


# One Ray head node (started once for this module, as tests/test_examples_on_ray.py starts it) that a
# run joins with --ray-address: its workers do not inherit the run's environment, as on a cluster.
from test_examples_on_ray import cluster  # noqa: E402,F401 - the fixture


def test_env_file_values_and_transform_modules_reach_ray_workers_and_no_value_is_printed(cluster, tmp_path):
    from agenteval.ray_executor import Shipment

    address, env = cluster
    project = tmp_path / "proj"
    write(project, "shaping.py", "def pick(answer):\n    return answer['words']\n")  # importable from the current folder only
    write(project, "shared.env", "WORD_B=from-outside-file\n")  # an env_file outside the suite's folder
    write(project, "cli.env", "WORD_D=from-cli-file\n")  # given with --env-file
    write(project, "suites/s1/.env", "WORD_A=from-suite-file\nWORD_C=from-file\n")
    write(project, "suites/s1/target.py", """
        import json, os
        names = ["WORD_A", "WORD_B", "WORD_C", "WORD_D"]
        print(json.dumps({"words": " ".join(os.environ.get(name, "-") for name in names)}))
    """)
    write(project, "suites/s1/suite.yaml", """
        name: env-on-ray
        env_file: [.env, ../../shared.env]
        target: {type: command, command: [python, target.py]}
        transform: {python: "shaping:pick"}
        evaluators:
          - {name: words, type: equals, reference: "from-suite-file from-outside-file from-process from-cli-file"}
        cases: [{id: a}, {id: b}]
    """)
    run_env = {**env, "WORD_C": "from-process"}  # the process's own value wins over the file's, on the workers too
    command = [sys.executable, "-m", "agenteval", "run", "suites/s1/suite.yaml", "-q", "--env-file", "cli.env"]
    local = subprocess.run([*command, "-o", "local.jsonl"], cwd=project, env=run_env, capture_output=True, text=True, timeout=120)
    on_ray = subprocess.run([*command, "-o", "ray.jsonl", "--executor", "ray", "--ray-address", address, "--batch-size", "1"],
                            cwd=project, env=run_env, capture_output=True, text=True, timeout=240)
    assert local.returncode == 0, local.stderr
    assert on_ray.returncode == 0, on_ray.stderr[-2000:]
    for name in ("local.jsonl", "ray.jsonl"):
        assert sorted((row["case_id"], row["verdict"], row["score"]) for row in read_jsonl(project / name)) == [("a", "pass", 1.0), ("b", "pass", 1.0)]
    for value in ("from-suite-file", "from-outside-file", "from-file", "from-process", "from-cli-file"):
        assert value not in on_ray.stdout + on_ray.stderr
    assert "from-process" not in repr(Shipment(project, env_vars={"WORD_C": "from-process"}))
