"""A code_judge that runs a promptfoo Python assertion file unchanged: `get_assert(output, context)`.

The importer writes `command: [python, -m, agenteval.importers.promptfoo_python]` with the file
and function in `config`, so a suite's `assert.py` keeps working as promptfoo calls it: `output`
is the answer's text, `context` has `vars` (the case input), `test` and `config`. What it returns
reads as promptfoo reads it: a bool passes or fails, a number is the score (it passes above 0, or
at `threshold`), a dict `{pass, score, reason}` (also `pass_`) is a grading result.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from agenteval.judge import run_judge


def script_function(file: str, name: str, kind: str = "assert") -> Any:
    """`name` from the Python file promptfoo names (`file://check.py:name`), imported as promptfoo
    does: with the file's folder on sys.path while it loads."""
    path = Path(file)
    spec = importlib.util.spec_from_file_location(f"_promptfoo_{kind}_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {file}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    if not hasattr(module, name):
        raise AttributeError(f"{file} has no function {name!r}")
    return getattr(module, name)


def _text(answer: Any, path: str | None) -> Any:
    if path and isinstance(answer, dict):
        answer = answer.get(path)
    return answer if isinstance(answer, str) else json.dumps(answer)


def judge(payload: dict[str, Any]) -> dict[str, Any]:
    config = payload.get("config") or {}
    function = script_function(config["file"], config.get("function") or "get_assert")
    output = _text(payload.get("candidate_answer"), config.get("text_path"))
    context = {
        "vars": payload.get("input") or {},
        "test": {"vars": payload.get("input") or {}, "metadata": payload.get("metadata") or {}},
        "config": config.get("assertion_config") or {},
        "prompt": None,
    }
    result = function(output, context)
    threshold = config.get("threshold")
    if isinstance(result, bool):
        return {"score": 1.0 if result else 0.0}
    if isinstance(result, (int, float)):
        score = float(result)
        passed = score >= threshold if isinstance(threshold, (int, float)) else score > 0
        return {"score": min(max(score, 0.0), 1.0), "verdict": "pass" if passed else "fail"}
    if isinstance(result, dict):
        passed = bool(result.get("pass", result.get("pass_", False)))
        score = result.get("score")
        score = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else (1.0 if passed else 0.0)
        out: dict[str, Any] = {"score": min(max(score, 0.0), 1.0), "verdict": "pass" if passed else "fail"}
        if isinstance(result.get("reason"), str):
            out["reasoning"] = result["reason"]
        return out
    raise TypeError(f"{config['file']}: {config.get('function') or 'get_assert'} returned {type(result).__name__}; "
                    "return a bool, a number or a dict")


if __name__ == "__main__":
    run_judge(judge)
