"""llm_judge: a model grades the candidate against a rubric of weighted criteria.

The reply is requested as JSON matching a schema (`response_format`) and read tolerantly (JSON
inside prose or a code fence is found; of several objects, the last that has every criterion).
A reply that still cannot be used is asked for once more, then the result is verdict `error`
with an excerpt of what the model said. Only a reply that could be read is cached, so a fixed
server is asked again on the next run.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from agenteval.endpoints.settings import EndpointRef, ModelEndpoint
from agenteval.endpoints.templates import check_template
from agenteval.evaluators.base import (
    EvalContext,
    EvaluatorConfig,
    EvaluatorResult,
    graded_verdict,
)
from agenteval.evaluators.model.inputs import CandidateAndReference
from agenteval.evaluators.model.rubric import (
    SYSTEM_PROMPT,
    RubricCriterion,
    ask_judge,
    judge_model,
    default_prompt,
    read_scores,
    reply_format_text,
    response_format,
    rubric_text,
    show,
)
from agenteval.paths import MISSING



class LLMJudge(EvaluatorConfig, CandidateAndReference, ModelEndpoint, EndpointRef):
    """Score = the weighted mean of the criteria, each normalized to [0, 1]. Default verdict: 1 pass, 0 fail, between partial."""

    type: Literal["llm_judge"]
    criteria: list[RubricCriterion] = Field(min_length=1, description="The rubric: [{name, description, scale, weight}].")
    prompt: str | None = Field(
        None,
        description=(
            "A jinja2 template replacing the default prompt; it sees input, candidate, reference, rubric, "
            "reply_format, case and (with `scope: conversation`) transcript."
        ),
    )
    prompt_file: str | None = Field(None, description="The same, from a file relative to the suite.")
    structured_output: bool = Field(
        True, description="Ask for JSON matching a schema via `response_format` (turn off for servers without it)."
    )

    type_name = "llm_judge"
    uses_network = True  # a cases file needs trust_cases, or `endpoint:` of the suite's own models
    replayable = True  # its requests only: a re-run may answer it from the response cache alone

    _prompt_source: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _one_prompt(self) -> LLMJudge:
        if self.prompt is not None and self.prompt_file is not None:
            raise ValueError("give `prompt` or `prompt_file`, not both")
        if self.prompt is not None:
            check_template(self.prompt)
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise ValueError(f"criteria names must be unique, got {names}")
        return self

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        from agenteval.endpoints.templates import TemplateError

        if ctx.endpoints is None:
            return self.error_result("llm_judge needs the run's endpoints")
        candidate, reference = self.candidate_and_reference(ctx)
        if candidate is MISSING:
            return self.result(0.0, "fail", misses=[f"{self.path} (missing)"], reasoning=f"the candidate has no `{self.path}`")
        try:
            settings = judge_model(self, ctx.endpoints.models)
            prompt = self._prompt(ctx, candidate, reference)
        except (ValueError, OSError, TemplateError) as exc:
            return self.error_result(str(exc))
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
        schema = response_format(self.criteria) if self.structured_output else None
        asked = ask_judge(ctx.endpoints, settings, messages, schema, lambda content: read_scores(content, self.criteria),
                          reply_format_text(self.criteria), "llm_judge")
        if len(asked) == 2:
            return self.error_result(asked[0], details=asked[1])
        scores, usage, model = asked
        return self._scored(scores, usage, model)

    def _prompt(self, ctx: EvalContext, candidate: Any, reference: Any) -> str:
        from agenteval.endpoints.templates import compile_template, render

        conversation = ctx.transcript is not None and not self.path  # `scope: conversation`: the dialogue is the candidate
        variables = {
            "input": show(ctx.input),
            "candidate": ctx.transcript if conversation else show(candidate),
            "transcript": ctx.transcript or "",
            "reference": "(none)" if reference is MISSING or ctx.expected is None else show(reference),
            "rubric": rubric_text(self.criteria),
            "reply_format": reply_format_text(self.criteria),
            "case": {"id": ctx.case_id, "metadata": ctx.metadata},
        }
        source = self.prompt
        if self.prompt_file is not None:
            if self._prompt_source is None:
                self._prompt_source = (ctx.base_dir / self.prompt_file).read_text(encoding="utf-8")
            source = self._prompt_source
        if source is None:
            return default_prompt(variables)
        return render(compile_template(source), variables)

    def _scored(self, scores: dict[str, dict[str, Any]], usage: dict[str, Any] | None, model: str | None) -> EvaluatorResult:
        total_weight = sum(c.weight for c in self.criteria)
        if total_weight > 0:
            score = sum(scores[c.name]["score"] * c.weight for c in self.criteria) / total_weight
        else:
            score = sum(entry["score"] for entry in scores.values()) / len(scores)
        hits = [name for name, entry in scores.items() if entry["score"] >= 1.0]
        misses = [f"{name} ({entry['raw_score']})" for name, entry in scores.items() if entry["score"] < 1.0]
        reasoning = "; ".join(f"{name}: {entry['raw_score']}" for name, entry in scores.items())
        return self.result(
            score, graded_verdict(score), hits=hits, misses=misses, reasoning=reasoning,
            details={"criteria": scores, "model": model, "usage": usage},
        )
