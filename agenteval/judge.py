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
with one line per case), echoes the payload's `case_id` in each answer so agenteval can check
that it lands on the right case, and turns an exception into a clean `error` result instead of
a crash. A judge may start once per case, so importing this module loads nothing beyond what
a bare interpreter has: `json` is loaded when serving, `traceback` only when a judge raises,
and `typing` never.
"""

import os
import sys

PROTOCOL_ENV = "AGENTEVAL_JUDGE_PROTOCOL"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

    JudgeFunction = Callable[[dict[str, Any]], "dict[str, Any] | float | int | bool"]


def judge_once(function: "JudgeFunction", payload: "Any") -> "dict[str, Any]":
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
        import traceback

        tail = "".join(traceback.format_exception(exc)[-3:]).strip()
        return {"score": 0.0, "verdict": "error", "error": f"{type(exc).__name__}: {exc}\n{tail}"}


def run_judge(function: "JudgeFunction", stdin: "IO[str] | None" = None, stdout: "IO[str] | None" = None) -> None:
    """Serve `function` as a judge: one payload, or one line per case when agenteval asks for jsonl."""
    source = stdin or sys.stdin
    sink = stdout or sys.stdout
    if os.environ.get(PROTOCOL_ENV) == "jsonl":
        for line in source:
            if line.strip():
                sink.write(answer_line(function, line))
                sink.flush()
        return
    sink.write(answer_line(function, source.read()))
    sink.flush()


def answer_line(function: "JudgeFunction", text: str) -> str:
    """The judge's answer to one payload as a JSON line, echoing the payload's `case_id`."""
    import json

    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        payload = _BadPayload(str(exc))
    answer = judge_once(function, payload)
    if isinstance(payload, dict) and "case_id" in payload:
        answer = {**answer, "case_id": payload["case_id"]}
    try:
        return json.dumps(answer) + "\n"
    except (TypeError, ValueError) as exc:  # e.g. a set in `details`: still one clean answer line
        problem = {"score": 0.0, "verdict": "error", "error": f"the judge's result is not JSON: {exc}"}
        return json.dumps({**problem, "case_id": answer.get("case_id")}) + "\n"


class _BadPayload:
    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __repr__(self) -> str:
        return f"invalid JSON ({self.problem})"
