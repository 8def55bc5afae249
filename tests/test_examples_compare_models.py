"""examples/compare-models: four cells from the committed cache, offline. The output its README
shows is what the run prints, the comparisons are pinned, a replay leaves the cache as it was, and
make_cache.py rebuilds a cache that gives the same answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, normalized_run_output, read_jsonl
from test_doc_examples import console_blocks

FOLDER = EXAMPLES / "compare-models"
CACHE = Path(".agenteval") / "cache" / "responses.sqlite"
ENV = {**os.environ, "CI": "1", "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
ENV.pop("COMPARE_MODELS_BASE_URL", None)  # the cache is keyed by the default base_url


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(FOLDER, tmp_path / "examples" / "compare-models", ignore=shutil.ignore_patterns("agenteval-results"))
    return tmp_path / "examples" / "compare-models"


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenteval", "run", "examples/compare-models/suite.yaml", *args],
        cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
    )




def test_the_readme_shows_what_the_commands_print_offline_from_the_cache(tmp_path):
    folder = _copy(tmp_path)
    cache_before = (folder / CACHE).read_bytes()
    steps = [(step.command, step.status, step.output) for block in console_blocks([FOLDER / "README.md"]) for step in block.steps]
    assert [(command, status) for command, status, _ in steps] == [
        ("agenteval run examples/compare-models/suite.yaml --show-failures 0 -o compare.jsonl", 1),
        ("agenteval compare compare.jsonl --cells small/terse large/terse", 0),
    ]
    for command, status, shown in steps:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=ENV, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        assert done.returncode == status, done.stdout
        assert normalized_run_output(done.stdout.splitlines()) == normalized_run_output(shown), command
    assert (folder / CACHE).read_bytes() == cache_before  # a replay writes nothing

    lines = read_jsonl(tmp_path / "compare.jsonl")
    assert len(lines) == 80 and not [line for line in lines if line["verdict"] == "error"]
    assert all(line["usage"]["cached"] for line in lines)  # no request was sent
    summary = json.loads((tmp_path / "compare.summary.json").read_text())
    assert summary["usage"]["target"]["requests"] == summary["usage"]["target"]["cached"] == 80
    cells = {cell["label"]: (cell["counts"]["passed"], cell["gate"]["passed"]) for cell in summary["cells"]}
    assert cells == {"small/terse": (13, False), "small/careful": (13, False), "large/terse": (19, False), "large/careful": (20, True)}
    comparisons = {(c["a"], c["b"]): (c["significant"], c["mcnemar"], c["pass_rate"]["low"], c["pass_rate"]["high"])
                   for c in summary["comparisons"]}
    assert comparisons == {
        ("small/terse", "small/careful"): (False, {"a_only": 2, "b_only": 2, "p_value": 1.0}, pytest.approx(-0.2), pytest.approx(0.2)),
        ("small/terse", "large/terse"): (True, {"a_only": 0, "b_only": 6, "p_value": 0.03125}, pytest.approx(0.1), pytest.approx(0.5)),
        ("small/careful", "large/careful"): (True, {"a_only": 0, "b_only": 7, "p_value": 0.015625}, pytest.approx(0.15), pytest.approx(0.55)),
        ("large/terse", "large/careful"): (False, {"a_only": 0, "b_only": 1, "p_value": 1.0}, pytest.approx(0.0), pytest.approx(0.15)),
    }


def test_make_cache_rebuilds_a_cache_with_the_same_answers(tmp_path, example_port):
    _copy(tmp_path / "committed")
    committed = _run(tmp_path / "committed", "-q", "-o", "r.jsonl")
    folder = _copy(tmp_path / "rebuilt")
    made = subprocess.run([sys.executable, str(folder / "make_cache.py")], env=ENV, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("wrote examples/compare-models/.agenteval/cache/responses.sqlite (")
    replayed = _run(tmp_path / "rebuilt", "-q", "-o", "r.jsonl")
    assert (committed.returncode, replayed.returncode) == (1, 1), replayed.stdout

    def answers(path: Path) -> dict[tuple, tuple]:
        return {(r["case_id"], r["target"], r["prompt"]): (r["output"]["content"], r["verdict"], r["usage"]["cached"])
                for r in read_jsonl(path)}

    rebuilt = answers(tmp_path / "rebuilt" / "r.jsonl")
    assert len(rebuilt) == 80 and rebuilt == answers(tmp_path / "committed" / "r.jsonl")
