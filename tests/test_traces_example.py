"""examples/traces-support: an agent's production traces scored offline by tool_calls and llm_judge from
the committed cache. The output its README shows is what the run prints, each case fails what the README
says, a replay leaves the cache as it was, and make_example.py records an export (through the real
instrumentation) and a cache giving the same verdicts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, normalized_run_output, read_jsonl
from test_doc_examples import console_blocks

FOLDER = EXAMPLES / "traces-support"
CACHE = Path(".agenteval") / "cache" / "responses.sqlite"
ENV = {**os.environ, "CI": "1", "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
ENV.pop("TRACES_JUDGE_BASE_URL", None)  # the cache is keyed by the default base_url
FAILING = {"where-7": [], "cancel-12": [], "where-9": ["tools", "reply"], "refund-3": ["tools", "reply"]}


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(FOLDER, tmp_path / "examples" / "traces-support", ignore=shutil.ignore_patterns("agenteval-results", "__pycache__"))
    return tmp_path / "examples" / "traces-support"


def _failing(lines: list[dict]) -> dict[str, list[str]]:
    return {line["case_id"]: [e["name"] for e in line["evaluator_results"] if e["verdict"] != "pass"] for line in lines}


def test_the_readme_shows_what_the_run_prints_offline_and_which_case_fails_what(tmp_path):
    folder = _copy(tmp_path)
    cache_before = (folder / CACHE).read_bytes()
    (block,) = console_blocks([FOLDER / "README.md"])
    (step,) = block.steps
    assert (step.command, step.status) == ("agenteval run examples/traces-support/suite.yaml -o traces.jsonl", 1)
    done = subprocess.run(["bash", "-c", step.command], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    assert done.returncode == 1, done.stdout
    assert normalized_run_output(done.stdout.splitlines()) == normalized_run_output(step.output)
    assert (folder / CACHE).read_bytes() == cache_before  # a replay writes nothing
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "traces.jsonl")}
    assert _failing(list(lines.values())) == FAILING
    judged = {case: {e["name"]: e for e in line["evaluator_results"]}["reply"] for case, line in lines.items()}
    assert all(result["details"]["usage"]["cached"] for result in judged.values())
    assert judged["refund-3"]["details"]["criteria"]["grounded"]["reasoning"] == "No tool was called: nothing in the reply is backed by a result."
    assert lines["where-9"]["output"]["tool_calls"][0]["arguments"] == {"id": 6}
    assert lines["cancel-12"]["output"]["usage"]["total_tokens"] > 0


def test_make_example_records_an_export_and_a_cache_with_the_same_verdicts(tmp_path, example_port):
    pytest.importorskip("openinference.instrumentation.openai")
    folder = _copy(tmp_path)
    (tmp_path / "tests").mkdir()
    shutil.copy(Path(__file__).parent / "llm_server.py", tmp_path / "tests")  # the stand-in model, where the script looks
    (folder / "spans.jsonl").unlink()
    made = subprocess.run([sys.executable, str(folder / "make_example.py")], env=ENV, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("wrote spans.jsonl and examples/traces-support/.agenteval/cache/responses.sqlite (")
    assert len((folder / "spans.jsonl").read_text().splitlines()) == 4
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", "examples/traces-support/suite.yaml", "-q", "-o", "r.jsonl"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout
    assert _failing(read_jsonl(tmp_path / "r.jsonl")) == FAILING
