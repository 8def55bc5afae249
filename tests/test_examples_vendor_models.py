"""examples/bedrock and examples/azure-openai: each runs offline from its committed cache, with no
credentials in the environment; the output its README shows is what the run prints, a replay
leaves the cache as it was, and make_cache.py rebuilds a cache that gives the same answers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, assert_same_run_output, read_jsonl
from test_doc_examples import console_blocks

CACHE = Path(".agenteval") / "cache" / "responses.sqlite"
ENV = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "AZURE_"))}
ENV |= {"CI": "1", "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb", "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/nonexistent/aws-config", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials"}
EXAMPLES_HERE = ["bedrock", "azure-openai"]
# (case id) -> (the reply, the verdict): the stand-in answers three cases right and misreads A-1003
EXPECTED = {
    "where-is-a1001": ("Your order A-1001 is shipped.", "pass"),
    "has-a1002-arrived": ("Your order A-1002 is delivered.", "pass"),
    "where-is-a1003": ("I could not find that order; could you check its number?", "fail"),
    "returns-window": ("You have 30 days from delivery to return an item.", "pass"),
}


def _copy(root: Path, name: str) -> Path:
    shutil.copytree(EXAMPLES / name, root / "examples" / name, ignore=shutil.ignore_patterns("agenteval-results"))
    return root / "examples" / name


@pytest.mark.parametrize("name", EXAMPLES_HERE)
def test_the_readme_shows_what_the_run_prints_offline_without_credentials(tmp_path, name):
    folder = _copy(tmp_path, name)
    cache_before = (folder / CACHE).read_bytes()
    steps = [(step.command, step.status, step.output) for block in console_blocks([EXAMPLES / name / "README.md"]) for step in block.steps]
    assert [(command, status) for command, status, _ in steps] == [(f"agenteval run examples/{name}/suite.yaml -o orders.jsonl", 1)]
    for command, status, shown in steps:
        done = subprocess.run(["bash", "-c", command.replace("agenteval ", f"{sys.executable} -m agenteval ", 1)], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        assert done.returncode == status, done.stdout
        assert_same_run_output(done.stdout.splitlines(), shown, latency_within=2)  # (the mock tools are timed again)
    assert (folder / CACHE).read_bytes() == cache_before  # a replay writes nothing
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "orders.jsonl")}
    assert {case: (line["output"]["content"], line["verdict"]) for case, line in lines.items()} == EXPECTED
    assert all(step["usage"].get("cached") for line in lines.values() for step in line["output"]["steps"] if step["kind"] == "model")


@pytest.mark.parametrize("name", EXAMPLES_HERE)
def test_make_cache_rebuilds_a_cache_with_the_same_answers(tmp_path, name):
    folder = _copy(tmp_path, name)
    made = subprocess.run([sys.executable, str(folder / "make_cache.py")], env=ENV, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith(f"wrote examples/{name}/.agenteval/cache/responses.sqlite (")
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", f"examples/{name}/suite.yaml", "-q", "-o", "r.jsonl"],
                          cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    lines = read_jsonl(tmp_path / "r.jsonl")
    assert {line["case_id"]: (line["output"]["content"], line["verdict"]) for line in lines} == EXPECTED
    assert all(line["usage"]["cached"] for line in lines)
