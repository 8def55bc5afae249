"""What the claim-level judges share: their prompts, the JSON their replies must hold, a strict reading
of those replies, and the published formulas that turn verdicts into a score (pure functions).

A claims reply lists the claims, then one verdict per claim by number, with the quoted evidence:
`{"claims": ["..."], "verdicts": [{"claim": 1, "verdict": "supported", "evidence": "..."}]}`. A
chunks reply gives one verdict per retrieved chunk: `{"verdicts": [{"chunk": 1, ...}]}`. A claim
without a verdict, a verdict for a claim or chunk that does not exist, two verdicts for one, an
unknown verdict or more claims than `max_claims` make the reply unusable (asked once more, then an
`error`): a score is never computed from a partial reading.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import regex

from agenteval.evaluators.model.rubric import json_objects

SYSTEM_PROMPT = "You are a careful, impartial fact checker. You follow the instructions exactly and reply only with JSON."
CLAIM_CHARS = 2_000  # a claim or a quote is kept in details up to this many characters
SUPPORT = ("supported", "contradicted", "not_found")
RELEVANCE = ("relevant", "irrelevant", "unclear")
USEFUL = ("useful", "not_useful")

_SPLIT = (
    "Split {what} into claims: short statements that each assert one thing and stand alone (write names in "
    "place of pronouns). Leave out greetings and sentences that assert nothing; keep every fact, number and name."
)
_EVIDENCE = "In `evidence`, quote word for word the words of the context that decide the verdict (empty when there are none)."

PROMPTS: dict[str, str] = {
    "faithfulness": (
        _SPLIT.format(what="the answer") + " Then decide each claim from the retrieved context alone, not from what you know:\n"
        "- supported: the context states it, or it follows directly from the context;\n"
        "- contradicted: the context states something that rules it out;\n"
        "- not_found: the context does not settle it.\n" + _EVIDENCE + "\n\n"
        "# Question\n{{ question }}\n\n# Retrieved context\n{{ contexts }}\n\n# Answer\n{{ answer }}\n\n# Reply\n{{ reply_format }}"
    ),
    "context_recall": (
        _SPLIT.format(what="the reference answer") + " Then decide, for each claim, whether the retrieved context holds it:\n"
        "- supported: the context states it, or it follows directly from the context;\n"
        "- contradicted: the context states something that rules it out;\n"
        "- not_found: the context does not hold it.\n" + _EVIDENCE + "\n\n"
        "# Question\n{{ question }}\n\n# Retrieved context\n{{ contexts }}\n\n# Reference answer\n{{ reference }}\n\n"
        "# Reply\n{{ reply_format }}"
    ),
    "answer_relevance": (
        _SPLIT.format(what="the answer") + " Then decide, for each claim, whether it helps answer the question:\n"
        "- relevant: it answers the question or a part of it;\n"
        "- irrelevant: it does not help answer the question;\n"
        "- unclear: it is supporting information that may help.\n"
        "In `evidence`, quote the words of the question the claim answers (empty when there are none).\n\n"
        "# Question\n{{ question }}\n\n# Answer\n{{ answer }}\n\n# Reply\n{{ reply_format }}"
    ),
    "context_relevance": (
        _SPLIT.format(what="the retrieved context") + " Then decide, for each claim, whether it helps answer the question:\n"
        "- relevant: it helps answer the question;\n"
        "- irrelevant: it does not.\n" + _EVIDENCE + "\n\n"
        "# Question\n{{ question }}\n\n# Retrieved context\n{{ contexts }}\n\n# Reply\n{{ reply_format }}"
    ),
    "context_precision": (
        "The retrieved context is split into numbered chunks, in the order they were ranked. For each chunk, decide "
        "whether it was useful in arriving at the reference answer to the question:\n"
        "- useful: it holds information the reference answer uses;\n"
        "- not_useful: it does not.\n" + _EVIDENCE + "\n\n"
        "# Question\n{{ question }}\n\n# Retrieved context\n{{ contexts }}\n\n# Reference answer\n{{ reference }}\n\n"
        "# Reply\n{{ reply_format }}"
    ),
}
"""The default prompt of each judge (jinja2): question, answer, reference, contexts, reply_format, case."""


def claims_format(verdicts: Sequence[str]) -> dict[str, Any]:
    """`response_format` asking for the claims, then a numbered verdict for each."""
    verdict = {
        "type": "object",
        "properties": {"claim": {"type": "integer"}, "verdict": {"type": "string", "enum": list(verdicts)}, "evidence": {"type": "string"}},
        "required": ["claim", "verdict", "evidence"], "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {"claims": {"type": "array", "items": {"type": "string"}}, "verdicts": {"type": "array", "items": verdict}},
        "required": ["claims", "verdicts"], "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "claim_verdicts", "strict": True, "schema": schema}}


def chunks_format(verdicts: Sequence[str]) -> dict[str, Any]:
    """`response_format` asking for a numbered verdict for each chunk."""
    verdict = {
        "type": "object",
        "properties": {"chunk": {"type": "integer"}, "verdict": {"type": "string", "enum": list(verdicts)}, "evidence": {"type": "string"}},
        "required": ["chunk", "verdict", "evidence"], "additionalProperties": False,
    }
    schema = {"type": "object", "properties": {"verdicts": {"type": "array", "items": verdict}}, "required": ["verdicts"], "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": "chunk_verdicts", "strict": True, "schema": schema}}


def claims_reply_text(verdicts: Sequence[str]) -> str:
    example = {"claims": ["<claim 1>", "<claim 2>"], "verdicts": [
        {"claim": 1, "verdict": verdicts[0], "evidence": "<quote>"}, {"claim": 2, "verdict": verdicts[-1], "evidence": ""},
    ]}
    return (
        "Reply with one JSON object and nothing else, for example: " + json.dumps(example) + ". Give exactly one verdict "
        f"for each claim, numbered from 1 in the order of `claims`; a verdict is one of: {', '.join(verdicts)}."
    )


def chunks_reply_text(verdicts: Sequence[str], count: int) -> str:
    example = {"verdicts": [{"chunk": 1, "verdict": verdicts[0], "evidence": "<quote>"}]}
    return (
        "Reply with one JSON object and nothing else, for example: " + json.dumps(example) + f". Give exactly one verdict "
        f"for each of the {count} chunks, numbered from 1; a verdict is one of: {', '.join(verdicts)}."
    )


def numbered_chunks(chunks: Sequence[str]) -> str:
    return "\n\n".join(f"[{number}] {text}" for number, text in enumerate(chunks, 1)) if chunks else "(none)"


def _reply_object(reply: str | None, key: str) -> tuple[dict[str, Any] | None, str | None]:
    if not reply:
        return None, "the reply is empty"
    objects = json_objects(reply)
    if not objects:
        return None, "no JSON object in the reply"
    holding = [found for found in objects if key in found]
    if not holding:
        return None, f"the reply has no `{key}`"
    return holding[-1], None


def _verdicts(found: dict[str, Any], key: str, count: int, allowed: Sequence[str]) -> tuple[list[dict[str, Any]], str | None]:
    """One verdict per item 1..count, in order, each {verdict, evidence}; or the first problem."""
    raw = found.get("verdicts")
    if not isinstance(raw, list):
        return [], "the reply has no `verdicts` list"
    seen: dict[int, dict[str, Any]] = {}
    for entry in raw:
        if not isinstance(entry, dict):
            return [], f"a verdict is {type(entry).__name__}, not an object"
        number = entry.get(key)
        if type(number) is not int:
            return [], f"a verdict names {key} {_short(number)}, not a number"
        if not 1 <= number <= count:
            return [], f"a verdict for {key} {number}, but the reply has {count} {key}s" if key == "claim" else (
                f"a verdict for chunk {number}, but there are {count} chunks"
            )
        if number in seen:
            return [], f"two verdicts for {key} {number}"
        verdict = entry.get("verdict")
        if verdict not in allowed:
            return [], f"{key} {number}: the verdict {_short(verdict)} is not one of {', '.join(allowed)}"
        evidence = entry.get("evidence")
        if evidence is not None and not isinstance(evidence, str):
            return [], f"{key} {number}: `evidence` is {type(evidence).__name__}, not a quote"
        seen[number] = {"verdict": verdict, "evidence": _clipped(evidence or "")}
    for number in range(1, count + 1):
        if number not in seen:
            return [], f"{key} {number} has no verdict"
    return [seen[number] for number in range(1, count + 1)], None


def read_claims(reply: str | None, allowed: Sequence[str], max_claims: int) -> tuple[list[dict[str, Any]], str | None]:
    """[{claim, verdict, evidence}] from a claims reply, or the first reason it cannot be used."""
    found, problem = _reply_object(reply, "claims")
    if found is None:
        return [], problem
    claims = found["claims"]
    if not isinstance(claims, list) or not all(isinstance(claim, str) for claim in claims):
        return [], "`claims` is not a list of texts"
    if len(claims) > max_claims:
        return [], f"the reply lists {len(claims):,} claims, more than max_claims ({max_claims:,})"
    verdicts, problem = _verdicts(found, "claim", len(claims), allowed)
    if problem is not None:
        return [], problem
    return [{"claim": _clipped(claim), **verdict} for claim, verdict in zip(claims, verdicts)], None


def read_chunks(reply: str | None, allowed: Sequence[str], count: int) -> tuple[list[dict[str, Any]], str | None]:
    """[{chunk, verdict, evidence}] for chunks 1..count from a chunks reply, or the first reason it cannot be used."""
    found, problem = _reply_object(reply, "verdicts")
    if found is None:
        return [], problem
    verdicts, problem = _verdicts(found, "chunk", count, allowed)
    if problem is not None:
        return [], problem
    return [{"chunk": number, **verdict} for number, verdict in enumerate(verdicts, 1)], None


def share(verdicts: Sequence[str], counted: Sequence[str]) -> float:
    """The share of claims whose verdict is one of `counted` (ragas' faithfulness and context recall:
    supported / claims). Callers handle zero claims before asking."""
    return sum(1 for verdict in verdicts if verdict in counted) / len(verdicts)


def context_precision(useful: Sequence[bool]) -> float:
    """ragas' context precision: sum over ranks k of precision@k x v_k, divided by the number of
    useful chunks (v_k is 1 for a useful chunk at rank k); 0 when no chunk is useful (ragas divides
    by that number + 1e-10, which gives 0 there and a hair under the exact value elsewhere)."""
    total = 0.0
    found = 0
    for rank, flag in enumerate(useful, 1):
        if flag:
            found += 1
            total += found / rank
    return total / found if found else 0.0


_SPACE = regex.compile(r"\s+")


def normalized(text: str) -> str:
    """Text as quotes are matched: case folded, every run of white space one space."""
    return _SPACE.sub(" ", text).strip().casefold()


def quote_found(evidence: str, context: str) -> bool | None:
    """Whether the quoted evidence is in the (normalized) context; None when nothing was quoted."""
    quote = normalized(evidence).strip("\"'“”‘’ .…")
    if not quote:
        return None
    return all(part.strip() in context for part in regex.split(r"\.\.\.|…", quote) if part.strip())


def _clipped(text: str) -> str:
    return text if len(text) <= CLAIM_CHARS else text[:CLAIM_CHARS - 1] + "…"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
