"""Importing a public example config and running the result offline, for the importer tests.

The run uses `--predictions` made from fixed answers (the suite's target is never called) and a
local model server (tests/llm_server.py) standing in for the grader and embeddings endpoints: it
grades every criterion at full marks, so model-graded checks pass and the rule checks decide.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from llm_server import LLMServer

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "importers"


def full_marks(body: dict[str, Any]) -> dict[str, Any]:
    """A grader reply giving each requested criterion its best score."""
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {})
    grades = {}
    for name, item in schema.get("properties", {}).items():
        score = item.get("properties", {}).get("score", {})
        value = score["enum"][0] if "enum" in score else True if score.get("type") == "boolean" else score.get("maximum", 1)
        grades[name] = {"reasoning": "graded by the test server", "score": value}
    return {"role": "assistant", "content": json.dumps(grades)}


@dataclass
class Proof:
    suites: list[str]
    listed: int
    notes: int
    stderr: str
    run_exit: int | None = None
    cases: int = 0
    passed: int = 0
    errored: int = 0


def prove(tool: str, config: Path, out: Path, answers: dict[str, Any], default: Any = "I don't know.", root: Path | None = None) -> Proof:
    """Import `config` into `out` (reading files under `root`, as `--root` lets it), then run its
    first suite on fixed answers with a local grader (in every cell of a suite with several
    targets or prompts)."""
    widen = ["--root", str(root)] if root is not None else []
    done = subprocess.run([sys.executable, "-m", "agenteval", "import", tool, str(config), "-o", str(out), *widen],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    counts = re.search(r"(\d+) keys? not carried over, (\d+) notes?", done.stderr)
    assert counts, done.stderr
    suites = sorted(path.name for path in out.glob("suite*.yaml"))
    proof = Proof(suites, int(counts.group(1)), int(counts.group(2)), done.stderr)
    suite = out / suites[0]
    openai = "type: openai" in suite.read_text()
    data = yaml.safe_load(suite.read_text())
    cells = [{**({"target": target} if target else {}), **({"prompt": prompt} if prompt else {})}
             for target in data.get("targets") or [None] for prompt in data.get("prompts") or [None]]
    cases = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    with (out / "predictions.jsonl").open("w") as handle:
        for case in cases:
            answer = answers.get(case["id"], answers.get("*", default))
            for cell in cells:  # the same answer in every (target, prompt) cell of a comparison
                output = {"content": answer} if openai and isinstance(answer, str) else answer
                handle.write(json.dumps({"id": case["id"], "output": output, **cell}) + "\n")
    with LLMServer(chat=full_marks) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key"}
        run = subprocess.run(
            [sys.executable, "-m", "agenteval", "run", str(suite), "--predictions", str(out / "predictions.jsonl"),
             "-o", str(out / "results.jsonl"), "-q", "--no-cache"],
            capture_output=True, text=True, timeout=300, env=env,
        )
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    proof.run_exit = run.returncode
    proof.cases = len(rows)
    proof.passed = sum(row["verdict"] == "pass" for row in rows)
    proof.errored = sum(row["verdict"] == "error" for row in rows)
    return proof
