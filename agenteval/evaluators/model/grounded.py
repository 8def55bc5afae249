"""Claim-level judges of retrieval-augmented answers: faithfulness, answer_relevance, context_precision,
context_recall and context_relevance.

A model splits the answer (or the reference, or the context) into claims and gives each a verdict
with the quoted evidence, in one request on the run's endpoints (cache, retries, pacing, cost, as
llm_judge). The score is then computed here from the verdicts by the published formula
(agenteval.evaluators.model.claims), never by the model, and `details` keeps every claim, verdict
and quote. Every edge has a stated outcome (docs/rag.md): no claims, an empty context, a reply
without verdicts; never NaN, never a silent 0.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, PrivateAttr, model_validator

from agenteval.config import StrictModel
from agenteval.endpoints.settings import EndpointRef, ModelEndpoint
from agenteval.endpoints.templates import check_template
from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.model import claims as claim_kit
from agenteval.evaluators.model.inputs import CandidateAndReference
from agenteval.evaluators.model.rubric import ask_judge, judge_model, show
from agenteval.paths import MISSING, compile_path, resolve

MAX_CHUNKS = 1_000  # chunks of context one judge may be shown
LISTED = 20  # claims named in hits and misses (details keeps them all)
Outcome = Literal["pass", "fail", "error"]


class ContextSource(StrictModel):
    """Where the retrieved context is: a path in the answer (default `contexts`) or in the case's input."""

    contexts: str = Field("contexts", min_length=1, description="Path of the retrieved context: a text, or a list of chunks (texts or objects).")
    contexts_from: Literal["answer", "input"] = Field("answer", description="Read `contexts` in the answer (default) or in the case's input.")
    context_key: str = Field("text", min_length=1, description="The key of a chunk's text when chunks are objects.")

    _context_keys: Any = PrivateAttr(())

    @model_validator(mode="after")
    def _context_path_compiles(self) -> ContextSource:
        keys = compile_path(self.contexts)
        if keys is None:
            raise ValueError(f"contexts: malformed path {self.contexts!r}")
        self._context_keys = keys
        return self

    def chunks(self, ctx: EvalContext) -> tuple[list[str] | None, str | None, str | None]:
        """(chunk texts, why the case fails, why it is an error): missing context fails, a context
        that is not text or past `limits.context_chars` is an error."""
        found = resolve(ctx.output if self.contexts_from == "answer" else ctx.input, self._context_keys)
        where = f"{self.contexts} (in the {self.contexts_from})"
        if found is MISSING or found is None:
            return None, f"{where} (missing)", None
        items = [found] if isinstance(found, str) else found
        if not isinstance(items, list):
            return None, None, f"{where} is {type(found).__name__}: the context is a text or a list of chunks"
        if len(items) > MAX_CHUNKS:
            return None, None, f"{where} holds {len(items):,} chunks, more than {MAX_CHUNKS:,}"
        chunks: list[str] = []
        size = 0
        for position, item in enumerate(items):
            text = item.get(self.context_key, MISSING) if isinstance(item, dict) else item
            if not isinstance(text, str):
                key = f".{self.context_key}" if isinstance(item, dict) else ""
                shown = "missing" if text is MISSING else type(text).__name__
                return None, None, f"{self.contexts}[{position}]{key} (in the {self.contexts_from}) is {shown}, not a text"
            size += len(text)
            if size > ctx.limits.context_chars:
                return None, None, ctx.limits.message("context_chars", f"{where} holds more than {ctx.limits.context_chars:,} characters")
            chunks.append(text)
        return chunks, None, None


class GroundedJudge(EvaluatorConfig, CandidateAndReference, ModelEndpoint, EndpointRef):
    """What the five judges share: the endpoint, the answer and question, the prompt, the threshold."""

    path: str = Field("answer", description="Where the generated answer is in the answer (default `answer`); empty: all of it.")
    question_path: str = Field("", description="Where the question is in the case's input; empty: the whole input.")
    prompt: str | None = Field(
        None, description="A jinja2 template replacing the default prompt (docs/rag.md shows each); it sees question, answer, "
        "reference, contexts, reply_format and case.",
    )
    prompt_file: str | None = Field(None, description="The same, from a file relative to the suite.")
    structured_output: bool = Field(True, description="Ask for JSON matching a schema via `response_format` (turn off for servers without it).")

    uses_network = True  # a cases file needs trust_cases, or `endpoint:` of the suite's own models
    replayable = True  # its requests only: a re-run may answer it from the response cache alone
    default_threshold: ClassVar[float]

    _question_keys: Any = PrivateAttr(())
    _prompt_source: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _prompt_and_question(self) -> GroundedJudge:
        if self.prompt is not None and self.prompt_file is not None:
            raise ValueError("give `prompt` or `prompt_file`, not both")
        if self.prompt is not None:
            check_template(self.prompt)
        if self.question_path and compile_path(self.question_path) is None:
            raise ValueError(f"question_path: malformed path {self.question_path!r}")
        self._question_keys = compile_path(self.question_path) if self.question_path else ()
        return self

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        if ctx.endpoints is None:
            return self.error_result(f"{self.type} needs the run's endpoints")
        return self.judge(ctx)

    def judge(self, ctx: EvalContext) -> EvaluatorResult:
        raise NotImplementedError

    # What a prompt is shown ----------------------------------------------------------------

    def question(self, ctx: EvalContext) -> str:
        found = resolve(ctx.input, self._question_keys) if self._question_keys else ctx.input
        return "(none)" if found is MISSING or found is None else show(found)

    def answer(self, ctx: EvalContext) -> Any:
        """The generated answer; MISSING where `path` finds nothing. A trace's answer (`--traces`,
        `traces: {receive: true}`) keeps the reply in `content`: read there when `path` is not given."""
        from agenteval.targets.openai import what_was_said

        if not self._keys:
            return what_was_said(ctx.output)
        found = resolve(ctx.output, self._keys)
        output = ctx.output
        if found is MISSING and "path" not in self.model_fields_set and isinstance(output, dict) and "trace_id" in output and "spans" in output:
            return output.get("content", MISSING)
        return found

    def reference(self, ctx: EvalContext) -> Any:
        if ctx.expected is None:
            return MISSING
        return resolve(ctx.expected, self._reference_keys)

    def _prompt(self, ctx: EvalContext, variables: dict[str, Any]) -> str:
        from agenteval.endpoints.templates import compile_template, render

        variables = {"case": {"id": ctx.case_id, "metadata": ctx.metadata}, **variables}
        source = self.prompt
        if self.prompt_file is not None:
            if self._prompt_source is None:
                self._prompt_source = (ctx.base_dir / self.prompt_file).read_text(encoding="utf-8")
            source = self._prompt_source
        return render(compile_template(source if source is not None else claim_kit.PROMPTS[self.type]), variables)

    # Asking ------------------------------------------------------------------------------

    def ask(self, ctx: EvalContext, variables: dict[str, Any], schema: dict[str, Any], reply_text: str, read: Any) -> Any:
        """(what `read` found, usage, model) or an error result: one request, asked once more when
        the reply cannot be read (only a readable reply is cached), as llm_judge does."""
        from agenteval.endpoints.templates import TemplateError

        try:
            settings = judge_model(self, ctx.endpoints.models)  # type: ignore[union-attr]
            prompt = self._prompt(ctx, {**variables, "reply_format": reply_text})
        except (ValueError, OSError, TemplateError) as exc:
            return self.error_result(str(exc))
        messages: list[dict[str, Any]] = [{"role": "system", "content": claim_kit.SYSTEM_PROMPT}, {"role": "user", "content": prompt}]
        asked = ask_judge(ctx.endpoints, settings, messages, schema if self.structured_output else None, read, reply_text, self.type)
        if len(asked) == 2:
            return self.error_result(asked[0], details=asked[1])
        return asked

    def scored(self, score: float, formula: str, details: dict[str, Any], hits: list[str], misses: list[str]) -> EvaluatorResult:
        threshold = self.threshold  # type: ignore[attr-defined]
        passed = score >= threshold
        details = {**details, "formula": formula, "threshold": threshold}
        reasoning = f"{formula} = {score:.4g} ({'>=' if passed else '<'} threshold {threshold:g})"
        return self.result(score, "pass" if passed else "fail", hits=hits[:LISTED], misses=misses[:LISTED], reasoning=reasoning, details=details)


def _threshold(default: float) -> Any:
    return Field(default, gt=0, le=1, allow_inf_nan=False, description=f"The least score that passes (default {default:g}; never 0).")


def _no_claims(default: Outcome, meaning: str) -> Any:
    return Field(default, description=f"What a case is when the judge finds no claims: pass (score 1), fail (score 0) or error. Default {default}: {meaning}.")


class _ClaimJudge(GroundedJudge):
    """A judge whose reply lists claims with a verdict each; score = the share of claims counted."""

    max_claims: int = Field(200, ge=1, le=10_000, description="Most claims a reply may list; a reply with more is unusable (then an error).")

    verdicts: ClassVar[tuple[str, ...]]
    counted: ClassVar[tuple[str, ...]]
    claims_of: ClassVar[str]  # what is split into claims, in words
    quotes_context: ClassVar[bool] = True

    def judge(self, ctx: EvalContext) -> EvaluatorResult:
        variables, early = self.inputs(ctx)
        if early is not None:
            return early
        read = lambda reply: claim_kit.read_claims(reply, self.verdicts, self.max_claims)  # noqa: E731
        asked = self.ask(ctx, variables, claim_kit.claims_format(self.verdicts), claim_kit.claims_reply_text(self.verdicts), read)
        if isinstance(asked, EvaluatorResult):
            return asked
        found, usage, model = asked
        details: dict[str, Any] = {"claims": found, "model": model, "usage": usage}
        if not found:
            return self._no_claims(details)
        if self.quotes_context:
            context = claim_kit.normalized("\n".join(variables["chunks"]))
            for claim in found:
                claim["quote_found"] = claim_kit.quote_found(claim["evidence"], context)
        verdicts = [claim["verdict"] for claim in found]
        details["counts"] = {verdict: verdicts.count(verdict) for verdict in self.verdicts}
        score = claim_kit.share(verdicts, self.counted)
        counted = sum(1 for verdict in verdicts if verdict in self.counted)
        formula = f"{' + '.join(self.counted)} / claims = {counted} / {len(verdicts)}"
        hits = [f"{c['verdict']}: {c['claim'][:120]}" for c in found if c["verdict"] in self.counted]
        misses = [f"{c['verdict']}: {c['claim'][:120]}" for c in found if c["verdict"] not in self.counted]
        return self.scored(score, formula, details, hits, misses)

    def inputs(self, ctx: EvalContext) -> tuple[dict[str, Any], EvaluatorResult | None]:
        raise NotImplementedError

    def _no_claims(self, details: dict[str, Any]) -> EvaluatorResult:
        outcome: Outcome = self.no_claims  # type: ignore[attr-defined]
        why = f"the judge found no claims in {self.claims_of}"
        if outcome == "error":
            return self.error_result(f"{self.type}: {why} (`no_claims: error`)", details=details)
        score = 1.0 if outcome == "pass" else 0.0
        return self.result(score, outcome, reasoning=f"{why}: `no_claims: {outcome}`", details=details,
                           **({"hits": [why]} if outcome == "pass" else {"misses": [why]}))

    def context_inputs(self, ctx: EvalContext, variables: dict[str, Any]) -> tuple[dict[str, Any], EvaluatorResult | None]:
        """`variables` with the chunks and contexts; or the result of a case without a usable context."""
        chunks, fails, error = self.chunks(ctx)  # type: ignore[attr-defined]
        if error is not None:
            return variables, self.error_result(error)
        if fails is not None:
            return variables, self.result(0.0, "fail", misses=[fails], reasoning="no retrieved context to judge")
        if not any(chunk.strip() for chunk in chunks):  # type: ignore[union-attr]
            why = "the retrieved context is empty: no claim can be found in it"
            return variables, self.result(0.0, "fail", misses=[why], reasoning=why, details={"claims": [], "formula": "empty context = 0"})
        return {**variables, "chunks": chunks, "contexts": claim_kit.numbered_chunks(chunks)}, None  # type: ignore[arg-type]

    def answer_inputs(self, ctx: EvalContext, variables: dict[str, Any]) -> tuple[dict[str, Any], EvaluatorResult | None]:
        answer = self.answer(ctx)
        if answer is MISSING:
            return variables, self.result(0.0, "fail", misses=[f"{self.path} (missing)"], reasoning=f"the answer has no `{self.path}`")
        return {**variables, "answer": show(answer)}, None


class Faithfulness(_ClaimJudge, ContextSource):
    """Score = supported claims / claims of the answer (ragas). Default: pass at 1.0, every claim supported by the context."""

    type: Literal["faithfulness"]
    threshold: float = _threshold(1.0)
    no_claims: Outcome = _no_claims("pass", "an answer that asserts nothing asserts nothing unsupported")

    type_name = "faithfulness"
    verdicts = claim_kit.SUPPORT
    counted = ("supported",)
    claims_of = "the answer"

    def inputs(self, ctx: EvalContext) -> tuple[dict[str, Any], EvaluatorResult | None]:
        variables, early = self.answer_inputs(ctx, {"question": self.question(ctx), "reference": ""})
        if early is not None:
            return variables, early
        return self.context_inputs(ctx, variables)


class ContextRecall(_ClaimJudge, ContextSource):
    """Score = claims of the reference found in the context / claims of the reference (ragas). Default: pass at 1.0."""

    type: Literal["context_recall"]
    threshold: float = _threshold(1.0)
    no_claims: Outcome = _no_claims("error", "a reference without claims is a mistake in the case")

    type_name = "context_recall"
    verdicts = claim_kit.SUPPORT
    counted = ("supported",)
    claims_of = "the reference answer"

    def inputs(self, ctx: EvalContext) -> tuple[dict[str, Any], EvaluatorResult | None]:
        reference = self.reference(ctx)
        if reference is MISSING or reference is None or reference == "":
            why = NO_EXPECTED if ctx.expected is None else f"{self.reference_path or 'expected'} (missing)"
            return {}, self.result(0.0, "fail", misses=[why], reasoning="no reference answer to recall")
        return self.context_inputs(ctx, {"question": self.question(ctx), "reference": show(reference), "answer": ""})


class AnswerRelevance(_ClaimJudge):
    """Score = claims of the answer that are relevant or unclear / claims (deepeval's answer relevancy). Default: pass at 0.8."""

    type: Literal["answer_relevance"]
    threshold: float = _threshold(0.8)
    no_claims: Outcome = _no_claims("fail", "an answer that says nothing does not answer")

    type_name = "answer_relevance"
    verdicts = claim_kit.RELEVANCE
    counted = ("relevant", "unclear")
    claims_of = "the answer"
    quotes_context = False

    def inputs(self, ctx: EvalContext) -> tuple[dict[str, Any], EvaluatorResult | None]:
        return self.answer_inputs(ctx, {"question": self.question(ctx), "reference": "", "contexts": ""})


class ContextRelevance(_ClaimJudge, ContextSource):
    """Score = claims of the context relevant to the question / claims of the context (deepeval's contextual relevancy). Default: pass at 0.5."""

    type: Literal["context_relevance"]
    threshold: float = _threshold(0.5)
    no_claims: Outcome = _no_claims("fail", "a context that states nothing holds nothing relevant")

    type_name = "context_relevance"
    verdicts = ("relevant", "irrelevant")
    counted = ("relevant",)
    claims_of = "the retrieved context"

    def inputs(self, ctx: EvalContext) -> tuple[dict[str, Any], EvaluatorResult | None]:
        return self.context_inputs(ctx, {"question": self.question(ctx), "reference": "", "answer": ""})


class ContextPrecision(GroundedJudge, ContextSource):
    """Score = ragas' context precision: the mean of precision@k over the ranks k of useful chunks. Default: pass at 0.5."""

    type: Literal["context_precision"]
    threshold: float = _threshold(0.5)

    type_name = "context_precision"

    def judge(self, ctx: EvalContext) -> EvaluatorResult:
        reference = self.reference(ctx)
        against = "reference"
        if reference is MISSING or reference is None or reference == "":
            reference, against = self.answer(ctx), "answer"  # ragas' variant without a reference: the answer stands in
            if reference is MISSING:
                return self.result(0.0, "fail", misses=[f"{self.path} (missing)"], reasoning="neither a reference nor an answer to judge chunks by")
        chunks, fails, error = self.chunks(ctx)
        if error is not None:
            return self.error_result(error)
        if fails is not None or not any(chunk.strip() for chunk in chunks):  # type: ignore[union-attr]
            why = fails or "the retrieved context is empty: no chunk can be useful"
            return self.result(0.0, "fail", misses=[why], reasoning=why, details={"chunks": [], "formula": "empty context = 0"})
        variables = {"question": self.question(ctx), "reference": show(reference), "answer": "", "contexts": claim_kit.numbered_chunks(chunks)}
        read = lambda reply: claim_kit.read_chunks(reply, claim_kit.USEFUL, len(chunks))  # noqa: E731
        asked = self.ask(ctx, variables, claim_kit.chunks_format(claim_kit.USEFUL), claim_kit.chunks_reply_text(claim_kit.USEFUL, len(chunks)), read)
        if isinstance(asked, EvaluatorResult):
            return asked
        found, usage, model = asked
        useful = [entry["verdict"] == "useful" for entry in found]
        seen = 0
        for rank, (entry, flag, chunk) in enumerate(zip(found, useful, chunks), 1):
            seen += flag
            entry["precision_at_k"] = seen / rank
            entry["quote_found"] = claim_kit.quote_found(entry["evidence"], claim_kit.normalized(chunk))
        score = claim_kit.context_precision(useful)
        terms = [f"{entry['precision_at_k']:.3g}" for entry in found if entry["verdict"] == "useful"]
        formula = f"({' + '.join(terms)}) / {len(terms)}" if terms else "no useful chunk = 0"
        details = {"chunks": found, "judged_against": against, "model": model, "usage": usage}
        hits = [f"chunk {e['chunk']} useful" for e in found if e["verdict"] == "useful"]
        misses = [f"chunk {e['chunk']} not useful" for e in found if e["verdict"] != "useful"]
        return self.scored(score, formula, details, hits, misses)
