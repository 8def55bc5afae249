"""code_judge: any program that reads a JSON payload on stdin and prints a score.

Keys the type does not know are passed to the program as `config`, so one script serves many
suites. Every failure (cannot start, non-zero exit, timeout, garbage output) becomes a verdict
`error` carrying the judge's stderr tail; the run goes on.
"""

from __future__ import annotations

import difflib
import threading
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult, Verdict, graded_verdict
from agenteval.evaluators.judge_process import PersistentJudge
from agenteval.evaluators.scales import RangeScale, Scale, ScaleName, rescale_answer
from agenteval.process import (
    DEFAULT_MAX_OUTPUT_MB, MAX_ANSWER_DEPTH, JSONTooDeep, decode_json, max_output_bytes, resolve_command, stderr_tail,
)
from agenteval.config import Command

PROTOCOL_VERSION = 1


class JudgeOutput(BaseModel):
    """What a judge prints on stdout: one JSON object."""

    model_config = ConfigDict(extra="ignore", title="JudgeOutput")

    score: float = Field(ge=0, le=1, allow_inf_nan=False, strict=True)
    verdict: Verdict | None = None
    hits: list[str] = Field(default_factory=list)
    misses: list[str] = Field(default_factory=list)
    reasoning: str | None = None
    details: dict[str, Any] | None = Field(None, description="Any JSON object; kept verbatim in the results.")
    error: str | None = Field(None, description="Why the judge could not score the case (use with verdict: error).")
    case_id: str | None = Field(
        None, description="The payload's case_id, echoed back; under protocol jsonl an answer for another case is refused."
    )


class CodeJudge(EvaluatorConfig):
    """Runs a user program per case. Default verdict: the judge's own, else 1 pass, 0 fail, between partial."""

    model_config = ConfigDict(extra="allow", strict=True)

    type: Literal["code_judge"]
    command: Command = Field(
        min_length=1,
        description="Program and arguments (no shell); relative to the suite file. A .py script runs with the current Python."
    )
    timeout: float = Field(
        30.0, gt=0, description="Seconds before the judge is stopped and the case errors (sending the payload included)."
    )
    max_output_mb: float = Field(
        DEFAULT_MAX_OUTPUT_MB, gt=0, description="An answer larger than this (MiB) stops the judge; the case errors."
    )
    protocol: Literal[1, "jsonl"] = Field(
        1, description="1: one process per case; jsonl: one long-lived process per worker, one line per case."
    )
    config: dict[str, Any] = Field(default_factory=dict, description="Passed to the judge; unknown keys are merged in.")
    scale: Scale = "unit"
    payload_fields: Literal["agenteval", "agentv"] = Field(
        "agenteval",
        alias="payload",
        description="agentv: the payload also carries AgentV's code-grader fields `output` (the candidate) and "
        "`expected_output` (the reference), so an AgentV grader runs unchanged.",
    )

    type_name = "code_judge"
    runs_programs = True

    _local: threading.local = PrivateAttr(default_factory=threading.local)
    _persistent: list[PersistentJudge] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def judge_config(self) -> dict[str, Any]:
        return {**self.config, **(self.model_extra or {})}

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        return config_key_warnings(self)

    def payload(self, ctx: EvalContext) -> bytes:
        return judge_payload(ctx, self.judge_config, agentv=self.payload_fields == "agentv")

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        if ctx.processes is None:
            return self.error_result("code_judge needs a run context to start processes")
        if self.protocol == "jsonl":
            line, failure = self._judge_for_thread(ctx).ask(self.payload(ctx), self.timeout, ctx.case_id)
            return self.error_result(failure) if failure else self.from_output(line or b"")
        done = ctx.processes.run(
            resolve_command(self.command), self.payload(ctx), self.timeout, ctx.base_dir,
            None if ctx.run is None else ctx.run.environment(), max_output=max_output_bytes(self.max_output_mb),
        )
        failure = done.failure("judge", self.timeout)
        if failure:
            return self.error_result(failure)
        return self.from_output(done.stdout, done.stderr)

    def _judge_for_thread(self, ctx: EvalContext) -> PersistentJudge:
        judge = getattr(self._local, "judge", None)
        if judge is None:
            assert ctx.processes is not None
            run = {} if ctx.run is None else {"AGENTEVAL_RUN_ID": ctx.run.run_id, "AGENTEVAL_SUITE": ctx.run.suite}
            judge = PersistentJudge(
                resolve_command(self.command), ctx.base_dir, ctx.processes, max_output_bytes(self.max_output_mb),
                {name: value for name, value in run.items() if "\0" not in value},
            )
            self._local.judge = judge
            with self._lock:
                self._persistent.append(judge)
        return judge

    def close(self) -> None:
        with self._lock:
            judges, self._persistent = self._persistent, []
        for judge in judges:
            judge.close()
        self._local = threading.local()

    def from_output(self, stdout: bytes, stderr: bytes = b"") -> EvaluatorResult:
        """Turn what the judge printed into a result; anything malformed is an `error` verdict."""
        parsed = parse_judge_output(stdout, self.scale)
        if isinstance(parsed, str):
            return self.error_result(parsed + stderr_tail(stderr))
        return judged_result(self, parsed)


def config_key_warnings(evaluator: EvaluatorConfig) -> list[tuple[tuple[str | int, ...], str]]:
    """An unknown key close to a known one is probably a typo, though it reaches the judge as config."""
    known = list(type(evaluator).model_fields)
    found: list[tuple[tuple[str | int, ...], str]] = []
    for key in evaluator.model_extra or {}:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
        if close:
            found.append(((key,), f"`{key}` is passed to the judge as config; did you mean `{close[0]}`?"))
    return found


def judge_payload(ctx: EvalContext, config: dict[str, Any], agentv: bool = False) -> bytes:
    """What a judge receives, as JSON: the same bytes for a program and a Python function.
    `agentv` adds AgentV's code-grader names for the same values (`input` is already shared)."""
    payload = {
        "protocol": PROTOCOL_VERSION,
        "case_id": ctx.case_id,
        "input": ctx.input,
        "candidate_answer": ctx.output,
        "reference_answer": ctx.expected,
        "config": config,
        "metadata": ctx.metadata,
    }
    if ctx.run is not None:  # run_id, suite, cell, repetition
        payload.update(ctx.run.fields())
    if agentv:
        payload["output"] = ctx.output
        payload["expected_output"] = ctx.expected
    return orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


def judged_result(evaluator: EvaluatorConfig, parsed: JudgeOutput) -> EvaluatorResult:
    """A judge's validated answer as a result. Default verdict: the judge's own, else graded by score."""
    default = parsed.verdict or graded_verdict(parsed.score)
    verdict = default if default == "error" else evaluator.verdict(parsed.score, default)
    return EvaluatorResult(
        evaluator.label, evaluator.type, parsed.score, verdict, parsed.hits, parsed.misses,
        parsed.reasoning, parsed.details, parsed.error,
    )


def parse_judge_output(stdout: bytes, scale: ScaleName | RangeScale = "unit") -> JudgeOutput | str:
    """The judge's JSON object (the whole stdout, or its last line), or what is wrong with it."""
    data: Any = None
    try:
        data = decode_json(stdout, MAX_ANSWER_DEPTH)
    except ValueError:
        lines = [line for line in stdout.splitlines() if line.strip()]
        if lines:
            try:
                data = decode_json(lines[-1], MAX_ANSWER_DEPTH)
            except JSONTooDeep as exc:
                return f"judge printed {exc}"
            except ValueError:
                data = None
    if not isinstance(data, dict):
        shown = stdout.decode("utf-8", "replace").strip()
        shown = (shown[:200] + "...") if len(shown) > 200 else shown
        return f"judge printed no JSON object (stdout: {shown!r})"
    return check_judge_answer(data, scale)


def check_judge_answer(data: dict[str, Any], scale: ScaleName | RangeScale = "unit") -> JudgeOutput | str:
    """A judge's answer object, its score normalized from `scale` and validated, or what is wrong with it."""
    if "assertions" in data:
        data = agentv_assertions(data)
        if isinstance(data, str):
            return f"judge output is invalid: {data}"
    data = rescale_answer(data, scale)
    if isinstance(data, str):
        return f"judge output is invalid: {data}"
    try:
        return JudgeOutput.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_judge_problem(error) for error in exc.errors())
        return f"judge output is invalid: {problems}"


def agentv_assertions(data: dict[str, Any]) -> dict[str, Any] | str:
    """AgentV's grader answer `{score, assertions: [{text, passed, evidence?}]}`: passed assertions are
    hits, the others misses (with their evidence); hits or misses the judge gave itself come first."""
    items = data["assertions"]
    if not isinstance(items, list):
        return f"assertions: expected a list of {{text, passed, evidence}}, got {type(items).__name__}"
    hits, misses = list(data.get("hits") or []), list(data.get("misses") or [])
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not isinstance(item.get("passed"), bool):
            return f"assertions[{index}]: expected {{text: string, passed: true|false, evidence?: string}}, got {str(item)[:80]!r}"
        evidence = item.get("evidence")
        if evidence is not None and not isinstance(evidence, str):
            return f"assertions[{index}].evidence: expected a string, got {type(evidence).__name__}"
        if item["passed"]:
            hits.append(item["text"])
        else:
            misses.append(f"{item['text']}: {evidence}" if evidence else item["text"])
    rest = {key: value for key, value in data.items() if key != "assertions"}
    return {**rest, "hits": hits, "misses": misses}


def _judge_problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "output"
    if where == "score" and error["type"] in ("greater_than_equal", "less_than_equal", "finite_number"):
        return f"score {error['input']!r} is outside [0, 1]"
    if where == "score" and error["type"] == "missing":
        return "no `score`"
    return f"{where}: {error['msg']}"
