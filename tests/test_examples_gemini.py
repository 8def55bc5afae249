"""examples/gemini: a tool loop on the gemini target from the committed cache, offline and without
a key. The output its README shows is what the run prints, a replay leaves the cache as it was, and
make_cache.py (against the fake Gemini API that holds requests to the SDK's types) rebuilds a cache
that gives the same answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLES, assert_same_run_output, read_jsonl
from test_doc_examples import console_blocks

FOLDER = EXAMPLES / "gemini"
CACHE = Path(".agenteval") / "cache" / "responses.sqlite"
ENV = {key: value for key, value in os.environ.items() if key not in ("GEMINI_API_KEY", "GEMINI_BASE_URL")}
ENV.update({"CI": "1", "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"})


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(FOLDER, tmp_path / "examples" / "gemini", ignore=shutil.ignore_patterns("agenteval-results"))
    return tmp_path / "examples" / "gemini"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agenteval", "run", "examples/gemini/suite.yaml", *args],
                          cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


def test_the_readme_shows_what_the_run_prints_offline_without_a_key(tmp_path):
    folder = _copy(tmp_path)
    cache_before = (folder / CACHE).read_bytes()
    steps = [(step.command, step.status, step.output) for block in console_blocks([FOLDER / "README.md"]) for step in block.steps]
    assert [(command, status) for command, status, _ in steps] == [("agenteval run examples/gemini/suite.yaml -o gemini.jsonl", 1)]
    for command, status, shown in steps:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        assert done.returncode == status, done.stdout
        assert_same_run_output(done.stdout.splitlines(), shown, latency_within=2)  # (the mock tools are timed again)
    assert (folder / CACHE).read_bytes() == cache_before  # a replay writes nothing
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "gemini.jsonl")}
    assert {case: line["verdict"] for case, line in lines.items()} == {
        "shipped": "pass", "delivered": "pass", "two-orders": "pass", "unknown-order": "pass", "no-order-number": "pass", "misread-id": "fail",
    }
    assert all(line["usage"]["cached"] for line in lines.values())  # no request was sent
    two = lines["two-orders"]["output"]
    assert [(call["name"], call["arguments"], call["step"]) for call in two["tool_calls"]] == [
        ("get_order", {"order_id": "A-2001"}, 1), ("get_order", {"order_id": "A-2002"}, 1)]
    assert two["messages"][2]["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "Q2lvQkFZOU9UaW5r"}}
    summary = json.loads((tmp_path / "gemini.summary.json").read_text())
    assert summary["usage"]["target"]["requests"] == summary["usage"]["target"]["cached"] == 6


def test_without_a_cache_or_a_key_the_run_stops_naming_the_variable(tmp_path):
    folder = _copy(tmp_path)
    (folder / CACHE).unlink()
    done = _run(tmp_path, "-o", "r.jsonl")
    assert done.returncode == 2 and not (tmp_path / "r.jsonl").exists()
    assert done.stdout.splitlines() == [
        "examples/gemini/suite.yaml: target: environment variable GEMINI_API_KEY is not set: set it to a Gemini API key "
        "(api_key_env), or give `vertex: {project, location}` to use Google Cloud credentials"
    ]


def test_make_cache_rebuilds_a_cache_with_the_same_answers(tmp_path):
    _copy(tmp_path / "committed")
    committed = _run(tmp_path / "committed", "-q", "-o", "r.jsonl")
    folder = _copy(tmp_path / "rebuilt")
    made = subprocess.run([sys.executable, str(folder / "make_cache.py")], env=ENV, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert made.stdout == "wrote examples/gemini/.agenteval/cache/responses.sqlite (11 replies)\n"
    replayed = _run(tmp_path / "rebuilt", "-q", "-o", "r.jsonl")
    assert (committed.returncode, replayed.returncode) == (1, 1), replayed.stdout

    def answers(path: Path) -> dict[str, tuple]:
        return {r["case_id"]: (r["output"]["messages"], r["verdict"], r["usage"]["cached"], r["usage"]["total_tokens"]) for r in read_jsonl(path)}

    rebuilt = answers(tmp_path / "rebuilt" / "r.jsonl")
    assert len(rebuilt) == 6 and rebuilt == answers(tmp_path / "committed" / "r.jsonl")
