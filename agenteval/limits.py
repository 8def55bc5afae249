"""Bounds on the work one answer can cause: what a hostile pattern, answer or cases file cannot defeat.

Every limit has a default that ordinary suites never reach and can be raised in the suite's
`limits:` block. A case past a limit is an `error` that names the evaluator and the limit.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from agenteval.config import StrictModel


class Limits(StrictModel):
    """The suite's `limits:` block (all optional)."""

    model_config = ConfigDict(frozen=True)

    case_seconds: float = Field(
        300.0, gt=0, allow_inf_nan=False,
        description="Seconds the evaluators may spend on one case, all together (the last line: a case past it is an error).",
    )
    pattern_seconds: float = Field(
        1.0, gt=0, allow_inf_nan=False,
        description="Seconds one regular expression may spend on one text (regex, json_schema patterns, tool_calls match: regex).",
    )
    edit_distance_chars: int = Field(
        100_000, gt=0, description="Longest text an edit distance (levenshtein, fuzzy, jaro_winkler) is computed on.",
    )
    pairs: int = Field(
        4_000_000, gt=0, description="Most expected x candidate pairs one pairing (line_items, iou_score, distance) may weigh.",
    )
    answer_depth: int = Field(200, gt=0, description="Deepest nesting of an answer, from any target or --predictions.")
    context_chars: int = Field(
        400_000, gt=0, description="Most characters of retrieved context one claim-level judge sends (faithfulness, context_*).",
    )
    trace_spans: int = Field(
        10_000, gt=0, description="Most spans one trace may have to be read into an answer (traces target, --traces, received spans).",
    )
    trace_document_mb: float = Field(
        64.0, gt=0, le=4096, allow_inf_nan=False,
        description="Largest OTLP/JSON document (one line of an export) read, in MiB; a longer one is skipped and named.",
    )
    receive_body_mb: float = Field(
        16.0, gt=0, le=4096, allow_inf_nan=False,
        description="Largest OTLP request the span receiver (`traces: {receive: true}`) accepts, in MiB; a larger one is refused (413).",
    )
    receive_mb: float = Field(
        256.0, gt=0, le=65536, allow_inf_nan=False,
        description="Most span data the receiver holds for the cases in flight, in MiB; past it a sender is refused (413) and the case errs.",
    )

    def message(self, key: str, what: str) -> str:
        """The error text for a case past limit `key`: what happened, the limit and how to raise it."""
        return f"{what} (limit `limits.{key}: {getattr(self, key)}`; raise it in the suite's `limits:` if this is expected)"


DEFAULT_LIMITS = Limits()
