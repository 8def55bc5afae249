"""Every example suite, and a suite naming files outside its folder, gives the same results on a
Ray cluster as locally: every file a suite references reaches the workers. One real Ray head
node (on 127.0.0.1, with a token, as a cluster has) serves the whole module; each run joins it
with `--ray-address`, so the suite's files travel the way they do to a remote cluster."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from conftest import EXAMPLES, read_jsonl, stop_processes_of, write

ray = pytest.importorskip("ray", reason="Ray is in the dev extra; install it with pip install -e '.[dev]'")

SUITES = sorted(path.parent.name for path in EXAMPLES.glob("*/suite.yaml"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(address, environment for agenteval) of a Ray head node started once for the module."""
    home = tmp_path_factory.mktemp("ray_home")
    ray_tmp = Path(tempfile.mkdtemp(prefix="rx", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env.update(HOME=str(home), RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=f"agenteval-{uuid.uuid4().hex}")
    head = subprocess.run(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats", "--node-ip-address=127.0.0.1", f"--temp-dir={ray_tmp}",
         f"--ray-client-server-port={_free_port()}"],
        env=env, capture_output=True, text=True, timeout=120, start_new_session=True,
    )
    try:
        assert head.returncode == 0, head.stderr[-2000:]
        yield f"127.0.0.1:{port}", env
    finally:
        stop_processes_of(ray_tmp)


def _command(*args):
    return [sys.executable, "-m", "agenteval", "run", *map(str, args), "-q"]


def _run(env, *args, cwd):
    return subprocess.run(_command(*args), cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


def _outcomes(path: Path) -> dict[tuple, tuple]:
    """Per case (and cell, in a matrix run): verdict, score and each evaluator's (name, verdict, score)."""
    return {
        (row["case_id"], row.get("target"), row.get("prompt")): (row["verdict"], row["score"], [(e["name"], e["verdict"], e["score"]) for e in row["evaluator_results"]])
        for row in read_jsonl(path)
    }


def test_every_example_gives_the_same_results_locally_and_on_a_ray_cluster(cluster, tmp_path):
    address, env = cluster
    assert len(SUITES) >= 8
    runs = {}  # all at once: a Ray run mostly waits for its workers to start
    for name in SUITES:
        suite = EXAMPLES / name / "suite.yaml"
        for where, extra in (("local", []), ("ray", ["--executor", "ray", "--ray-address", address])):
            command = _command(suite, "-o", tmp_path / f"{name}.{where}.jsonl", *extra)
            runs[name, where] = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    done = {key: (run.wait(timeout=240), run.stderr.read()) for key, run in runs.items()}
    for name in SUITES:
        (local, _), (on_ray, stderr) = done[name, "local"], done[name, "ray"]
        assert local in (0, 1) and on_ray == local, (name, stderr[-2000:])
        expected = _outcomes(tmp_path / f"{name}.local.jsonl")
        assert expected and not any(verdict == "error" for verdict, _, _ in expected.values()), name
        assert _outcomes(tmp_path / f"{name}.ray.jsonl") == expected, name
        assert "Traceback" not in stderr, name


JUDGE = """
import os
from common import same
from agenteval.judge import run_judge

def judge(payload):
    shipped = sorted(os.listdir(os.path.join("..", "..")))  # the workers' copy of the project
    ok = same(payload["candidate_answer"], payload["reference_answer"])
    return {"score": 1.0 if ok else 0.0, "reasoning": " ".join(shipped)}

if __name__ == "__main__":
    run_judge(judge)
"""


def _project(tmp_path: Path) -> Path:
    """proj/suites/s1/suite.yaml whose judge (and the helper it imports) is in proj/judges/, whose
    target reads proj/data/prices.json by a `--prices=` option, and whose python evaluator's module
    is in proj/ itself (importable from the current folder only); proj/other/ is named by nothing."""
    project = tmp_path / "proj"
    write(project, "judges/judge.py", JUDGE)
    write(project, "judges/common.py", "def same(a, b):\n    return a == b\n")
    write(project, "data/prices.json", json.dumps({"a": 1, "b": 2, "c": 30}))
    write(project, "other/unrelated.txt", "not shipped\n")
    write(project, "checks.py", "def even(payload):\n    return {'score': 1.0 if payload['candidate_answer']['price'] % 2 == 0 else 0.0}\n")
    write(project, "suites/s1/target.py", """
        import json, sys
        prices = json.load(open(sys.argv[1].split("=", 1)[1]))
        item = json.load(sys.stdin)["item"]
        print(json.dumps({"price": prices[item]}))
    """)
    write(project, "suites/s1/suite.yaml", """
        name: outside
        target: {type: command, command: [python, target.py, "--prices=../../data/prices.json"]}
        evaluators:
          - {name: judge, type: code_judge, command: [python, ../../judges/judge.py], protocol: jsonl}
          - {name: even, type: python, function: "checks:even"}
        cases:
          - {id: a, input: {item: a}, expected: {price: 1}}
          - {id: b, input: {item: b}, expected: {price: 2}}
          - {id: c, input: {item: c}, expected: {price: 3}}
    """)
    return project


def test_files_a_suite_names_outside_its_folder_reach_the_workers_and_nothing_else_does(cluster, tmp_path):
    address, env = cluster
    project = _project(tmp_path)
    local = _run(env, "suites/s1/suite.yaml", "-o", "local.jsonl", cwd=project)
    on_ray = _run(env, "suites/s1/suite.yaml", "-o", "ray.jsonl", "--executor", "ray", "--ray-address", address, "--batch-size", "1", cwd=project)
    assert local.returncode == on_ray.returncode == 1, on_ray.stderr[-2000:]
    expected = {
        "a": ("fail", [("judge", "pass", 1.0), ("even", "fail", 0.0)]),
        "b": ("pass", [("judge", "pass", 1.0), ("even", "pass", 1.0)]),
        "c": ("fail", [("judge", "fail", 0.0), ("even", "pass", 1.0)]),
    }
    for path in ("local.jsonl", "ray.jsonl"):
        assert {case: (verdict, evaluators) for (case, _, _), (verdict, _, evaluators) in _outcomes(project / path).items()} == expected
    [reasoning] = {e["reasoning"] for row in read_jsonl(project / "ray.jsonl") for e in row["evaluator_results"] if e["name"] == "judge"}
    assert reasoning == "data judges suites"  # the project's root on the workers: what the suite names, not other/ or checks.py
    assert "local.jsonl" not in reasoning


def test_an_absolute_path_in_a_command_is_refused_for_a_cluster_before_anything_runs(cluster, tmp_path):
    address, env = cluster
    judge = write(tmp_path, "elsewhere/judge.py", "print('{\"score\": 1}')\n")
    write(tmp_path, "suite/suite.yaml", f"""
        name: absolute
        evaluators:
          - {{name: far, type: code_judge, command: [python, "{judge}"]}}
        cases:
          - {{id: a, expected: x, output: x}}
    """)
    done = _run(env, "suite.yaml", "-o", "r.jsonl", "--executor", "ray", "--ray-address", address, cwd=tmp_path / "suite")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line == (
        f"error: --executor ray: evaluator 'far' runs 'python {judge}', whose {judge} is an absolute path the cluster's "
        "workers may not have (Ray ships the suite's folder and what it names by relative paths); name it relative to "
        "the suite's folder (../elsewhere/judge.py)"
    )
    assert not (tmp_path / "suite" / "r.jsonl").exists()


def test_the_shipment_of_a_suite_holds_its_folder_and_the_folders_it_names(tmp_path):
    from agenteval.ray_executor import plan_shipment
    from agenteval.suite.loader import load_suite

    invoices = plan_shipment(load_suite(EXAMPLES / "invoices" / "suite.yaml"), cluster=True)
    assert (invoices.root, invoices.folder, invoices.py_modules) == (EXAMPLES, "invoices", ())
    # every other example folder is left out (suites, and examples/github-ci, which has none); judges/ is one it names
    others = [path.name for path in EXAMPLES.iterdir() if path.is_dir() and path.name not in ("invoices", "judges")]
    assert sorted(invoices.excludes) == sorted(f"/{name}" for name in others)
    layout = plan_shipment(load_suite(EXAMPLES / "layout" / "suite.yaml"), cluster=True)
    assert (layout.root, layout.folder, layout.excludes, layout.py_modules) == (EXAMPLES / "layout", ".", (), ())
    assert layout.runtime_env(local=True)["excludes"][-1] == ".agenteval/"  # a local instance's workers use the driver's cache

    project = _project(tmp_path)
    write(project, "suites/s2/suite.yaml", """
        name: odd-names
        evaluators:
          - {name: j, type: code_judge, command: [python, "../[x]*/j.py", "-v"]}
          - {name: near, type: code_judge, command: [python, ../near.py]}
        cases: [{id: a, expected: x, output: x}]
    """)
    write(project, "suites/[x]*/j.py", "")
    write(project, "suites/near.py", "")
    write(project, "suites/far?[1]/unrelated.txt", "")
    shipment = plan_shipment(load_suite(project / "suites" / "s2" / "suite.yaml"), cluster=True)
    assert (shipment.root, shipment.folder) == (project / "suites", "s2")
    # near.py alone from the folder that holds the suite's own; the rest left out, by patterns matching their names only
    assert sorted(shipment.excludes) == [r"/far\?\[1\]", "/s1"]
    from ray._private.thirdparty.pathspec import PathSpec  # what Ray reads `excludes` with

    spec = PathSpec.from_lines("gitwildmatch", [*shipment.runtime_env(local=False)["excludes"]])
    assert [name for name in ("far?[1]", "far?[1]/unrelated.txt", "farx1", "s1/suite.yaml", "s2/suite.yaml", "[x]*/j.py", "near.py")
            if spec.match_file(name)] == ["far?[1]", "far?[1]/unrelated.txt", "s1/suite.yaml"]
    absolute = write(project, "suites/s3/suite.yaml", f"""
        name: absolute
        evaluators: [{{name: j, type: code_judge, command: [python, "{project / 'judges' / 'judge.py'}"]}}]
        cases: [{{id: a, expected: x, output: x}}]
    """)
    local = plan_shipment(load_suite(absolute), cluster=False)  # this machine's workers have the file where it is
    assert (local.root, local.folder, local.excludes) == (absolute.parent, ".", ())
