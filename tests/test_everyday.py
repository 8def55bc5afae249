"""Small things a newcomer meets in the first ten minutes: help texts, the progress bar, --otel without a collector."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from conftest import read_jsonl, run_cli, write


def test_help_shows_metavars_not_python_types_and_never_cuts_a_command_description():
    top = subprocess.run([sys.executable, "-m", "agenteval", "--help"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"})
    assert top.returncode == 0
    commands = top.stdout.split("Commands:")[1]
    assert "..." not in commands
    assert "run         Run a suite and stream one JSON line per case." in commands
    report = subprocess.run(
        [sys.executable, "-m", "agenteval", "report", "--help"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"}
    )
    assert "Usage: agenteval report [OPTIONS] RESULTS.jsonl..." in report.stdout
    assert "<list[Path]>" not in report.stdout and "<path>" not in report.stdout and "{" not in report.stdout.splitlines()[0]
    run = subprocess.run([sys.executable, "-m", "agenteval", "run", "--help"], capture_output=True, text=True)
    assert run.stdout.startswith("Usage: agenteval run [OPTIONS] [SUITE.yaml|DIR]\n")


def test_the_progress_bar_labels_elapsed_and_remaining_time(tmp_path):
    write(tmp_path, "judges.py", "import time\ndef slow(payload):\n    time.sleep(0.05)\n    return 1.0\n")
    cases = [{"id": f"c{i}", "expected": "x", "output": "x"} for i in range(40)]
    suite = write(tmp_path, "s.yaml", json.dumps({"name": "bar", "evaluators": [{"type": "python", "function": "judges:slow"}], "cases": cases}))
    leader, follower = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key != "CI"} | {"COLUMNS": "120", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(tmp_path / "r.jsonl")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower, cwd=tmp_path, env=env,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(leader)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))  # without colours
    assert proc.returncode == 0
    assert re.search(r"running .* \d+/40 \d+ passed  elapsed 0:00:\d\d  left 0:00:\d\d", text), text[-2000:]


def test_otel_without_a_collector_says_so_in_one_line_and_does_not_slow_the_run(tmp_path):
    cases = [{"id": f"c{i}", "expected": "x", "output": "x"} for i in range(8)]
    suite = write(tmp_path, "s.yaml", json.dumps({"name": "otel", "evaluators": [{"type": "equals"}], "cases": cases}))
    env_port = "http://127.0.0.1:9"  # the discard port: nothing listens on it here
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(tmp_path / "r.jsonl"), "-q", "--otel"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": env_port},
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Transient error" not in done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: --otel")]
    assert warnings == [
        f"warning: --otel: no OpenTelemetry collector answers at {env_port} (Connection refused); "
        "set OTEL_EXPORTER_OTLP_ENDPOINT, or run without --otel; the run goes on without spans"
    ]
    assert len(read_jsonl(tmp_path / "r.jsonl")) == 8
    assert took < 5, f"the run took {took:.1f} s"
    assert run_cli("run", suite, "-o", tmp_path / "r2.jsonl", "-q").returncode == 0


@pytest.mark.parametrize(
    ("template", "verdicts", "code"),
    [
        ("llm", {"q-1": "pass", "q-2": "pass", "q-3": "fail"}, 1),
        ("agent", {"order-1": "pass", "order-2": "fail"}, 1),
        ("extraction", {"email-1": "pass", "email-2": "fail"}, 1),
    ],
)
def test_init_templates_write_suites_that_run_as_written(tmp_path, template, verdicts, code):
    done = run_cli("init", tmp_path / template, "--template", template)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"next: agenteval run {tmp_path / template / 'suite.yaml'}"
    assert run_cli("validate", tmp_path / template / "suite.yaml").returncode == 0
    ran = run_cli("run", tmp_path / template / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q")
    assert ran.returncode == code, ran.stderr
    assert {line["case_id"]: line["verdict"] for line in read_jsonl(tmp_path / "r.jsonl")} == verdicts


def test_init_names_the_templates_when_given_an_unknown_one(tmp_path):
    done = run_cli("init", tmp_path / "x", "--template", "chat")
    assert done.returncode == 2
    assert "unknown template 'chat'; choose one of extraction, llm, agent" in done.stderr
    assert not (tmp_path / "x").exists()


def test_history_in_a_fresh_folder_says_no_runs_yet_and_exits_0(tmp_path):
    done = run_cli("history", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == (
        "no runs yet in agenteval-results/ or the current folder: `agenteval run SUITE.yaml` writes them to agenteval-results/; "
        "for runs written with -o elsewhere give --store DIR (the folder of their .summary.json files) or --store URL\n"
    )
    as_json = run_cli("history", "--format", "json", cwd=tmp_path)
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == {"runs": [], "trends": {}}
    assert run_cli("history", "--store", "nope", cwd=tmp_path).returncode == 2  # a folder that was named must exist


def test_history_keeps_run_ids_whole_on_one_line_when_piped(tmp_path):
    suite = write(tmp_path, "s.yaml", json.dumps({
        "name": "a-suite-with-a-rather-long-name", "evaluators": [{"type": "equals"}],
        "cases": [{"id": "c", "expected": "x", "output": "x"}],
    }))
    assert run_cli("run", suite, "-q", cwd=tmp_path).returncode == 0
    (run_id,) = {line["run_id"] for line in read_jsonl(next((tmp_path / "agenteval-results").glob("*.jsonl")))}
    for columns in ("60", "80", "200"):
        done = subprocess.run(
            [sys.executable, "-m", "agenteval", "history"], cwd=tmp_path, capture_output=True, text=True,
            env={**os.environ, "COLUMNS": columns},
        )
        assert done.returncode == 0, done.stderr
        assert run_id in done.stdout, (columns, done.stdout)


def test_a_mean_score_does_not_depend_on_the_order_cases_finish_in():
    """With several workers results arrive in any order; 1.0, 1/3, 2/3, 0.75 summed as floats give
    0.6875 in some orders and 0.68749999 (printed 0.687) in others."""
    import itertools

    from agenteval.metrics import ExactSum, ratio

    scores = [1.0, 1 / 3, 2 / 3, 0.75]
    naive = set()
    for order in itertools.permutations(scores):
        running = 0.0
        for score in order:
            running += score  # a plain float sum, as the summary kept it (not Python 3.12's compensated sum())
        naive.add(running / 4)
    assert naive == {0.6875, 0.6874999999999999}  # the float sum does depend on the order
    means = set()
    for order in itertools.permutations(scores):
        total = ExactSum()
        for score in order:
            total += score
        means.add(ratio(total, 4))
    assert means == {0.6875}
    assert ratio(ExactSum(), 0) is None
