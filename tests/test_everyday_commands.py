"""The first minutes at the command line: `run` finds ./suite.yaml, `history` finds runs written
with -o, a base URL read from the environment shows as the URL it is, and help texts are whole."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from conftest import read_jsonl, run_cli, write

SUITE = """
    name: everyday
    evaluators: [{type: equals}]
    cases:
      - {id: a, expected: x, output: x}
      - {id: b, expected: y, output: z}
"""


def test_run_without_a_suite_runs_the_suite_yaml_of_the_current_folder(tmp_path):
    write(tmp_path, "suite.yaml", SUITE)
    done = run_cli("run", "-q", "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stderr == "everyday: 2 cases, 1 passed, 1 failed, 0 errored, pass rate 50.0%\n"
    assert [row["case_id"] for row in read_jsonl(tmp_path / "r.jsonl")] == ["a", "b"]
    dot = run_cli("run", ".", "-q", "-o", "dot.jsonl", cwd=tmp_path)
    folder = run_cli("run", tmp_path.name, "-q", "-o", "folder.jsonl", cwd=tmp_path.parent)
    assert (dot.returncode, folder.returncode) == (1, 1)
    assert len(read_jsonl(tmp_path / "dot.jsonl")) == len(read_jsonl(tmp_path.parent / "folder.jsonl")) == 2


def test_run_without_a_suite_yaml_names_the_suite_files_it_sees(tmp_path):
    write(tmp_path, "invoices.yaml", SUITE)
    write(tmp_path, "agents.yml", SUITE.replace("everyday", "agents"))
    write(tmp_path, "settings.yaml", "colour: blue\n")  # YAML, but not a suite
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "error: no suite.yaml in the current folder; suite files there: agents.yml, invoices.yaml "
        "(give one: agenteval run agents.yml)\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    there = run_cli("run", "empty", cwd=tmp_path)
    assert there.returncode == 2
    assert there.stderr == "error: no suite.yaml in empty, and no suite file there: give SUITE.yaml (`agenteval init` writes one)\n"
    assert not (tmp_path / "agenteval-results").exists()  # nothing ran, nothing written


def test_history_finds_runs_written_with_o_and_says_how_to_point_it_at_others(tmp_path):
    write(tmp_path, "suite.yaml", SUITE)
    assert run_cli("run", "-q", "-o", "results.jsonl", cwd=tmp_path).returncode == 1
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1  # agenteval-results/
    assert run_cli("run", "-q", "-o", "elsewhere/r.jsonl", cwd=tmp_path).returncode == 1
    runs = json.loads(run_cli("history", "--format", "json", cwd=tmp_path).stdout)["runs"]
    here = json.loads((tmp_path / "results.summary.json").read_text())["run_id"]
    default = json.loads(next((tmp_path / "agenteval-results").glob("*.summary.json")).read_text())["run_id"]
    assert sorted(run["run_id"] for run in runs) == sorted([here, default])
    elsewhere = json.loads(run_cli("history", "--store", "elsewhere", "--format", "json", cwd=tmp_path).stdout)["runs"]
    assert [run["run_id"] for run in elsewhere] == [json.loads((tmp_path / "elsewhere" / "r.summary.json").read_text())["run_id"]]
    (tmp_path / "nothing").mkdir()
    none = run_cli("history", cwd=tmp_path / "nothing")
    assert none.returncode == 0 and none.stdout == ""
    assert "no runs yet in agenteval-results/ or the current folder" in none.stderr
    assert "for runs written with -o elsewhere give --store DIR" in none.stderr


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_base_url_read_from_the_environment_shows_as_the_url_while_keys_stay_hidden(tmp_path):
    port = _closed_port()
    write(tmp_path, "suite.yaml", """
        name: url
        target: {type: openai, model: m, base_url: "${MY_BASE}", api_key_env: MY_KEY, retries: 0}
        evaluators: [{type: equals}]
        cases: [{id: a, input: hi, expected: x}]
    """)
    errors = {}
    for name, base in {
        "plain": f"http://127.0.0.1:{port}/v1",
        "credentials": f"http://user:pw-9f3c2a@127.0.0.1:{port}/v1?api_key=ak-77e1b0&region=eu",
    }.items():
        env = {**os.environ, "MY_BASE": base, "MY_KEY": "sk-4d1e5f6a7b"}
        done = subprocess.run([sys.executable, "-m", "agenteval", "run", "-q", "-o", f"{name}.jsonl"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 3, done.stderr
        errors[name] = read_jsonl(tmp_path / f"{name}.jsonl")[0]["error"]
        everything = done.stdout + done.stderr + (tmp_path / f"{name}.jsonl").read_text() + (tmp_path / f"{name}.summary.json").read_text()
        assert "sk-4d1e5f6a7b" not in everything and "pw-9f3c2a" not in everything and "ak-77e1b0" not in everything
    assert errors["plain"].startswith(f"openai target: POST http://127.0.0.1:{port}/v1/chat/completions")
    assert errors["credentials"].startswith(f"openai target: POST http://user:***@127.0.0.1:{port}/v1?api_key=***&region=eu/chat/completions")


def test_group_help_shows_whole_subcommand_descriptions():
    for group in ([], ["import"], ["feedback"]):
        for columns in ("80", "120"):
            done = subprocess.run([sys.executable, "-m", "agenteval", *group, "--help"], capture_output=True, text=True,
                                  env={**os.environ, "COLUMNS": columns}, timeout=60)
            assert done.returncode == 0
            listed = done.stdout.split("Commands:")[1].strip().splitlines()
            assert listed and not [line for line in listed if line.rstrip().endswith("...")], (group, columns, listed)
    imports = run_cli("import", "--help").stdout
    assert "promptfoo  A promptfoo config as a suite; lists what is not carried over." in imports
    assert "agentv     An AgentV eval file as a suite; lists what is not carried over." in imports


def _piped(args: list[str], cwd: Path) -> tuple[int, str]:
    """`agenteval ARGS | head -c 1`: the exit code and stderr of agenteval once its reader has gone."""
    proc = subprocess.Popen([sys.executable, "-m", "agenteval", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.read(1)
    proc.stdout.close()
    stderr = proc.stderr.read()
    return proc.wait(timeout=60), stderr


def test_a_reader_that_stops_early_changes_no_exit_code(tmp_path):
    """`report`, `compare`, `history` and `evaluators` piped to `head` exit as they do when read whole
    (rich's console exited 1 when its reader left, which read as a failed gate under pipefail)."""
    cases = "".join(f"      - {{id: c{n:03d}, expected: x, output: {'x' if n % 3 else 'y'}}}\n" for n in range(300))
    write(tmp_path, "suite.yaml", "name: piped\nevaluators: [{type: equals}]\ncases:\n" + cases)
    assert run_cli("run", "-q", "-o", "a.jsonl", cwd=tmp_path).returncode == 1
    assert run_cli("run", "-q", "-o", "b.jsonl", cwd=tmp_path).returncode == 1
    for args, code in [
        (["report", "a.jsonl", "--show-failures", "300"], 1), (["report", "a.jsonl", "--min-pass-rate", "0.6"], 0),
        (["report", "a.jsonl", "--format", "json", "--min-pass-rate", "0.6"], 0),
        (["compare", "a.jsonl", "b.jsonl"], 0), (["history"], 0), (["history", "--format", "json"], 0), (["evaluators"], 0),
    ]:
        assert run_cli(*args, cwd=tmp_path).returncode == code, args
        piped, stderr = _piped(args, tmp_path)
        assert (piped, "Traceback" in stderr) == (code, False), (args, stderr)


def test_validate_takes_what_run_takes_a_folder_or_nothing(tmp_path):
    write(tmp_path, "s/suite.yaml", "name: one\nevaluators: [{type: equals}]\ncases: [{id: a, expected: x, output: x}]\n")
    done = run_cli("validate", "s", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "s/suite.yaml: ok (1 case, 1 evaluator)\n"), done.stderr
    done = run_cli("validate", cwd=tmp_path / "s")
    assert (done.returncode, done.stdout) == (0, "suite.yaml: ok (1 case, 1 evaluator)\n"), done.stderr
    done = run_cli("validate", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, (
        "error: no suite.yaml in the current folder; folders there that hold one: s (give one: agenteval validate s)\n"))
    write(tmp_path, "two/a.yaml", "name: a\nevaluators: [{type: equals}]\ncases: [{id: a, expected: x, output: x}]\n")
    done = run_cli("validate", cwd=tmp_path / "two")
    assert (done.returncode, done.stderr) == (2, "error: no suite.yaml in the current folder; suite files there: a.yaml (give one: agenteval validate a.yaml)\n")
    (tmp_path / "empty").mkdir()
    done = run_cli("validate", "empty", "s", cwd=tmp_path)  # a folder without a suite is its own problem; the others are checked
    assert (done.returncode, done.stdout) == (2, "s/suite.yaml: ok (1 case, 1 evaluator)\n")
    assert done.stderr == ("empty: no suite.yaml in empty, and no suite file there: give SUITE.yaml (`agenteval init` writes one)\n"
                           "empty: 1 error\n")


def test_view_without_its_extra_or_without_runs_says_what_to_do(tmp_path):
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['starlette'] = None\nsys.modules['uvicorn'] = None\n")
    write(tmp_path, "r.jsonl", "")
    for extra in ([], ["--export", "site"]):
        done = subprocess.run([sys.executable, "-m", "agenteval", "view", "r.jsonl", "--no-open", *extra], cwd=tmp_path, capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(blocker)}, timeout=60)
        assert (done.returncode, done.stderr) == (
            2, "error: agenteval view needs the `view` extra (starlette, uvicorn not installed): pip install 'agenteval[view]'\n")
    (tmp_path / "empty").mkdir()
    done = run_cli("view", "--no-open", cwd=tmp_path / "empty")
    assert (done.returncode, done.stderr) == (2, (
        "error: no runs here: no agenteval-results/ in the current folder (`agenteval run SUITE.yaml` writes runs to "
        "agenteval-results/ in the folder it runs in); name a results file or a folder of them, or give --store\n"))


def test_report_takes_q_and_names_what_to_give_for_a_folder_or_a_summary(tmp_path):
    write(tmp_path, "suite.yaml", SUITE)
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1
    assert run_cli("run", "-q", "-o", "r.jsonl", cwd=tmp_path).returncode == 1
    done = run_cli("report", "r.jsonl", "-q", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "everyday: 2 cases, 1 passed, 1 failed, 0 errored, pass rate 50.0%\n")
    [newest] = (tmp_path / "agenteval-results").glob("*.jsonl")
    done = run_cli("report", "agenteval-results", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, f"error: agenteval-results: a folder; give results files (its newest: agenteval-results/{newest.name})\n")
    done = run_cli("compare", "r.jsonl", "r.summary.json", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, "error: r.summary.json: a run's summary, not its results: give r.jsonl\n")
    summary = f"agenteval-results/{newest.stem}.summary.json"
    done = run_cli("report", summary, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, f"error: {summary}: a run's summary, not its results: give agenteval-results/{newest.name}\n")
    write(tmp_path, "one/suite.yaml", SUITE.replace("      - {id: b, expected: y, output: z}\n", ""))
    done = run_cli("run", "one", "-q", "-o", "one.jsonl", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "everyday: 1 case, 1 passed, 0 failed, 0 errored, pass rate 100.0%\n")


def _history_rows(tmp_path):
    done = subprocess.run([sys.executable, "-m", "agenteval", "history"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    rows = [[cell.strip() for cell in line.strip("│").split("│")] for line in lines if line.startswith("│")]
    return lines, rows


def test_history_counts_a_baseline_copy_once_and_marks_shards_apart_from_whole_runs(tmp_path):
    write(tmp_path, "suite.yaml", SUITE)
    assert run_cli("run", "-q", "-o", "baseline.jsonl", cwd=tmp_path).returncode == 1
    assert run_cli("run", "-q", "-o", "new.jsonl", cwd=tmp_path).returncode == 1
    assert run_cli("compare", "baseline.jsonl", "new.jsonl", "--update-baseline", cwd=tmp_path).returncode == 0
    new = read_jsonl(tmp_path / "new.jsonl")[0]["run_id"]
    assert [run["run_id"] for run in json.loads(run_cli("history", "--format", "json", cwd=tmp_path).stdout)["runs"]] == [new]
    lines, rows = _history_rows(tmp_path)
    assert "everyday: 1 run" in lines and [row[0] for row in rows if row[0].startswith("2")] == [new]

    for name in ("baseline", "new"):
        for suffix in (".jsonl", ".summary.json"):
            (tmp_path / (name + suffix)).unlink()
    for options in (["--shard", "1/2"], ["--shard", "2/2"], [], []):
        run_cli("run", "-q", *options, cwd=tmp_path)
    runs = json.loads(run_cli("history", "--format", "json", cwd=tmp_path).stdout)["runs"]
    assert [run.get("shard") for run in runs] == ["1/2", "2/2", None, None]
    ids = [run["run_id"] for run in runs]
    lines, rows = _history_rows(tmp_path)
    assert [[row[0], *row[2:]] for row in rows[:4]] == [
        [f"{ids[0]} (shard 1/2)", "1", "100.0%", "n/a", "1.000"],
        [f"{ids[1]} (shard 2/2)", "1", "0.0%", "n/a", "0.000"],
        [ids[2], "2", "50.0%", "n/a", "0.500"],  # a whole run is compared with whole runs only
        [ids[3], "2", "50.0%", "+0.0 pts", "0.500"],
    ]
    titles = [line for line in lines if "mean score by evaluator" in line]  # (a title wraps at its table's width)
    assert titles == [
        "everyday: mean score by evaluator, oldest to newest",
        "everyday (shard 1/2): mean score by evaluator, oldest",
        "everyday (shard 2/2): mean score by evaluator, oldest",
    ]
    for options in (["--shard", "1/2"], []):  # a SQL store's runs say their shard too
        run_cli("run", "-q", "--store", "sqlite:///r.db", *options, cwd=tmp_path)
    stored = json.loads(run_cli("history", "--store", "sqlite:///r.db", "--format", "json", cwd=tmp_path).stdout)
    assert [run.get("shard") for run in stored["runs"]] == ["1/2", None] and list(stored["trends"]) == ["everyday (shard 1/2)", "everyday"]
