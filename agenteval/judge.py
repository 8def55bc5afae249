"""Write a code_judge in Python as one function.

    from agenteval.judge import run_judge

    def judge(payload):
        same = payload["candidate_answer"] == payload["reference_answer"]
        return {"score": 1.0 if same else 0.0, "reasoning": "exact comparison"}

    if __name__ == "__main__":
        run_judge(judge)

The function gets the payload agenteval sends (`case_id`, `input`, `candidate_answer`,
`reference_answer`, `config`, `metadata`) and returns a result dict or a bare score. The helper
reads stdin and writes stdout in both protocols (one payload per process, or `protocol: jsonl`
with one line per case), and turns an exception into a clean `error` result instead of a crash.
Only the standard library is imported here, so a judge process starts fast.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any

PROTOCOL_ENV = "AGENTEVAL_JUDGE_PROTOCOL"

JudgeFunction = Callable[[dict[str, Any]], "dict[str, Any] | float | int | bool"]


def judge_once(function: JudgeFunction, payload: Any) -> dict[str, Any]:
    """Call the judge on one payload; always returns a result dict (an `error` one if it raised)."""
    try:
        if not isinstance(payload, dict):
            raise TypeError(f"the payload is not a JSON object: {payload!r:.80}")
        result = function(payload)
        if isinstance(result, bool):
            return {"score": 1.0 if result else 0.0}
        if isinstance(result, (int, float)):
            return {"score": float(result)}
        if not isinstance(result, dict):
            raise TypeError(f"the judge function returned {type(result).__name__}; return a dict or a score")
        return result
    except Exception as exc:  # noqa: BLE001 - reported to the runner as an `error` verdict
        tail = "".join(traceback.format_exception(exc)[-3:]).strip()
        return {"score": 0.0, "verdict": "error", "error": f"{type(exc).__name__}: {exc}\n{tail}"}


def run_judge(function: JudgeFunction, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> None:
    """Serve `function` as a judge: one payload, or one line per case when agenteval asks for jsonl."""
    source = stdin or sys.stdin
    sink = stdout or sys.stdout
    if os.environ.get(PROTOCOL_ENV) == "jsonl":
        for line in source:
            if line.strip():
                sink.write(json.dumps(judge_once(function, _parse(line))) + "\n")
                sink.flush()
        return
    sink.write(json.dumps(judge_once(function, _parse(source.read()))) + "\n")
    sink.flush()


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return _BadPayload(str(exc))


class _BadPayload:
    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __repr__(self) -> str:
        return f"invalid JSON ({self.problem})"
