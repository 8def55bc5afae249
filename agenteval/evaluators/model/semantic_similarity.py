"""semantic_similarity: cosine similarity of the candidate's and the reference's embeddings.

Embeddings come from an OpenAI-compatible `/embeddings` endpoint, batched across the cases that
run at the same time and cached per text, so a re-run sends nothing; or, with `endpoint: NAME` of a
`models:` entry of another type, from that model target's `embed()` (a type without one is refused at load).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from agenteval.endpoints.settings import Connection, EndpointRef
from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.evaluators.model.inputs import CandidateAndReference
from agenteval.evaluators.model.rubric import show
from agenteval.paths import MISSING


class SemanticSimilarity(EvaluatorConfig, CandidateAndReference, Connection, EndpointRef):
    """Score = the cosine similarity (negative counts as 0). Default verdict: pass iff it reaches `threshold`."""

    type: Literal["semantic_similarity"]
    threshold: float = Field(0.8, ge=-1, le=1, description="Cosine similarity a candidate needs to pass.")
    batch_size: int = Field(64, ge=1, le=2048, description="Most texts in one /embeddings request.")

    type_name = "semantic_similarity"
    model_use = "embed"  # `endpoint: NAME` must name a model with embeddings (checked at load)
    uses_network = True  # a cases file needs trust_cases, or `endpoint:` of the suite's own models

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        from agenteval.endpoints.chat import EmbeddingBatcher
        from agenteval.endpoints.client import EndpointError
        from agenteval.endpoints.settings import merged_settings
        from agenteval.targets.model_entries import embed_texts, is_chat, judge_target

        if ctx.endpoints is None:
            return self.error_result("semantic_similarity needs the run's endpoints")
        if ctx.expected is None:
            return self.result(0.0, "fail", misses=[NO_EXPECTED], reasoning="no reference to compare with")
        candidate, reference = self.candidate_and_reference(ctx)
        for what, value, path in (("candidate", candidate, self.path), ("reference", reference, self.reference_path)):
            if value is MISSING or value is None or value == "":
                why = "missing" if value is MISSING else "empty"
                return self.result(0.0, "fail", misses=[f"{path or what} ({why})"], reasoning=f"the {what} is {why}")
        usage = None
        entry = ctx.endpoints.models.get(self.endpoint) if self.endpoint is not None else None
        if entry is not None and not is_chat(entry):  # a model target with embed() (checked at load)
            reply = embed_texts(judge_target(entry, self), ctx.endpoints, [show(candidate), show(reference)], ctx.base_dir)
            if reply.error is not None or len(reply.vectors) != 2:
                return self.error_result(f"semantic_similarity: {reply.error or f'{len(reply.vectors)} embeddings for 2 texts'}")
            (candidate_vector, reference_vector), usage = reply.vectors, reply.usage
        else:
            try:
                settings = merged_settings(self, ctx.endpoints.models)
            except ValueError as exc:
                return self.error_result(str(exc))
            cache = True if settings.cache is None else settings.cache
            batcher = ctx.endpoints.shared(
                ("embeddings", settings.base_url, settings.model, cache, self.batch_size),
                lambda: EmbeddingBatcher(ctx.endpoints, settings, self.batch_size, cache),
            )
            try:
                candidate_vector, reference_vector = batcher.embed([show(candidate), show(reference)])
            except EndpointError as exc:
                return self.error_result(f"semantic_similarity: {exc}")
        similarity = cosine(candidate_vector, reference_vector)
        if similarity is None:
            why = "one is all zeros" if len(candidate_vector) == len(reference_vector) else (
                f"they differ in length ({len(candidate_vector)} and {len(reference_vector)})"
            )
            return self.error_result(f"semantic_similarity: the server's embeddings cannot be compared: {why}")
        score = max(0.0, similarity)
        passed = similarity >= self.threshold
        return self.result(
            score, "pass" if passed else "fail",
            hits=[] if not passed else [self.path or "(answer)"], misses=[] if passed else [self.path or "(answer)"],
            reasoning=f"cosine similarity {similarity:.3f} ({'>=' if passed else '<'} {self.threshold:g})",
            details={"similarity": similarity, "threshold": self.threshold, **({"usage": usage} if usage else {})},
        )


def cosine(a: list[float], b: list[float]) -> float | None:
    """Cosine similarity; None when the lengths differ, a vector is zero, or the result is not a
    finite number. Each vector is scaled by its largest magnitude first, so values near the ends
    of the float range (1e200) neither overflow nor vanish."""
    if len(a) != len(b) or not a:
        return None
    scale_a, scale_b = max(map(abs, a)), max(map(abs, b))
    if not (0 < scale_a < math.inf and 0 < scale_b < math.inf):
        return None
    a = [x / scale_a for x in a]
    b = [y / scale_b for y in b]
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if not norm > 0:
        return None
    value = math.fsum(x * y for x, y in zip(a, b)) / norm
    return max(-1.0, min(1.0, value)) if math.isfinite(value) else None
