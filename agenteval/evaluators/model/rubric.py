"""A judge's rubric: the criteria, the prompt that shows them, the JSON schema of the reply, and
a tolerant reading of what the model actually sent back."""

from __future__ import annotations

import json
from typing import Any

import orjson
from pydantic import Field

from agenteval.config import StrictModel
from agenteval.evaluators.scales import RangeScale, Scale, describe, normalize

SYSTEM_PROMPT = "You are a careful, impartial grader. You follow the rubric exactly and reply only with JSON."


class RubricCriterion(StrictModel):
    """One thing the judge scores, on its own scale; weights combine the criteria."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$", description="A short key, e.g. `correct`.")
    description: str = Field(min_length=1, description="What the judge checks, in words it can act on.")
    scale: Scale = "pass_fail"
    weight: float = Field(1.0, ge=0, le=1_000_000, allow_inf_nan=False, description="Weight of this criterion in the judge's score.")


def score_schema(scale: Any) -> dict[str, Any]:
    """The JSON schema of one criterion's score on `scale`."""
    if isinstance(scale, RangeScale):
        return {"type": "number", "minimum": scale.range[0], "maximum": scale.range[1]}
    return {
        "binary": {"type": "boolean"},
        "pass_fail": {"type": "string", "enum": ["pass", "fail"]},
        "likert5": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        "percent": {"type": "number", "minimum": 0, "maximum": 100},
        "unit": {"type": "number", "minimum": 0, "maximum": 1},
    }[scale]


def response_format(criteria: list[RubricCriterion]) -> dict[str, Any]:
    """`response_format` asking for `{criterion: {reasoning, score}}` (reasoning first, so it comes before the score)."""
    item = lambda c: {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "score": score_schema(c.scale)},
        "required": ["reasoning", "score"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {c.name: item(c) for c in criteria},
        "required": [c.name for c in criteria],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "rubric_scores", "strict": True, "schema": schema}}


def _answer_hint(scale: Any) -> str:
    if isinstance(scale, RangeScale):
        return f"a number from {scale.range[0]:g} to {scale.range[1]:g}"
    return {
        "binary": "true or false",
        "pass_fail": '"pass" or "fail"',
        "likert5": "an integer from 1 (worst) to 5 (best)",
        "percent": "a number from 0 to 100",
        "unit": "a number from 0 to 1",
    }[scale]


def rubric_text(criteria: list[RubricCriterion]) -> str:
    return "\n".join(f"- {c.name} (score: {_answer_hint(c.scale)}): {c.description}" for c in criteria)


def reply_format_text(criteria: list[RubricCriterion]) -> str:
    example = {c.name: {"reasoning": "...", "score": "..."} for c in criteria[:2]}
    return (
        "Reply with one JSON object and nothing else. Its keys are the criterion names; each value is "
        '{"reasoning": "<one or two sentences>", "score": <the score>}, for example: '
        + json.dumps(example)
    )


def show(value: Any) -> str:
    """A value as the judge reads it: text as is, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def default_prompt(variables: dict[str, Any]) -> str:
    return (
        "Grade the candidate answer against the rubric. Judge only what each criterion asks; the reference "
        "answer shows what a good answer contains.\n\n"
        f"# Input\n{variables['input']}\n\n"
        f"# Candidate answer\n{variables['candidate']}\n\n"
        f"# Reference answer\n{variables['reference']}\n\n"
        f"# Rubric\n{variables['rubric']}\n\n"
        f"# Reply\n{variables['reply_format']}"
    )


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text` (whole, fenced, or embedded in prose), in order.
    An object found is skipped whole, so objects nested in it are not listed again."""
    decoder = json.JSONDecoder()
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    else:
        if isinstance(whole, dict):
            return [whole]
    found: list[dict[str, Any]] = []
    start = stripped.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(stripped, start)
        except (ValueError, RecursionError):
            start = stripped.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        start = stripped.find("{", max(end, start + 1))
    return found


def _grade_entries(found: dict[str, Any]) -> dict[str, Any]:
    """`found` with `{"criteria": [{name, ...}]}` turned into `{name: entry}`."""
    if isinstance(found.get("criteria"), list):
        return {item.get("name"): item for item in found["criteria"] if isinstance(item, dict)}
    return found


def _has_every_criterion(found: dict[str, Any], criteria: list[RubricCriterion]) -> bool:
    entries = _grade_entries(found)
    lowered = {str(key).lower() for key in entries}
    return all(c.name in entries or c.name.lower() in lowered for c in criteria)


def find_grade(text: str, criteria: list[RubricCriterion]) -> dict[str, Any]:
    """The grade in a reply: the LAST JSON object that has every criterion (a model that quotes the
    format, or reasons in JSON before it answers, puts its grade last), else the last object (whose
    problems are then reported). ValueError if there is no object."""
    objects = json_objects(text)
    if not objects:
        raise ValueError("no JSON object in the reply")
    complete = [found for found in objects if _has_every_criterion(found, criteria)]
    return complete[-1] if complete else objects[-1]


def read_scores(reply: str | None, criteria: list[RubricCriterion]) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Per criterion `{score (normalized), raw_score, reasoning}`, or the first reason the reply cannot be used.

    Reads the last JSON object that has every criterion (find_grade). Accepts `{name: {score, reasoning}}`, `{name: score}` and `{"criteria": [{name, score, reasoning}]}`.
    """
    if not reply:
        return {}, "the reply is empty"
    try:
        found = find_grade(reply, criteria)
    except (ValueError, RecursionError) as exc:
        return {}, str(exc)
    found = _grade_entries(found)
    lowered = {str(key).lower(): value for key, value in found.items()}
    scores: dict[str, dict[str, Any]] = {}
    for criterion in criteria:
        entry = found.get(criterion.name, lowered.get(criterion.name.lower()))
        if entry is None:
            return {}, f"criterion {criterion.name!r} is missing"
        raw, reasoning = (entry.get("score"), entry.get("reasoning")) if isinstance(entry, dict) else (entry, None)
        score = normalize(raw, criterion.scale)
        if isinstance(score, str):
            return {}, f"criterion {criterion.name!r}: {score}"
        scores[criterion.name] = {
            "score": score, "raw_score": raw, "reasoning": reasoning if isinstance(reasoning, str) else None,
            "weight": criterion.weight, "scale": describe(criterion.scale),
        }
    return scores, None


def judge_model(config: Any, models: dict[str, Any]) -> Any:
    """What a judge asks: chat-completions settings (`endpoint: NAME`'s with the judge's own keys over
    them) at temperature 0 unless set, or the model target that a `models:` entry of another type is
    (agenteval.targets.model_entries.judge_target). Raises ValueError."""
    from agenteval.endpoints.settings import merged_settings
    from agenteval.targets.model_entries import is_chat, judge_target

    name = getattr(config, "endpoint", None)
    if name is not None and name in models and not is_chat(models[name]):
        return judge_target(models[name], config)
    settings = merged_settings(config, models)
    if settings.temperature is None:
        settings = settings.model_copy(update={"temperature": 0.0})
    return settings


def ask_judge(
    endpoints: Any, settings: Any, messages: list[dict[str, Any]], schema: dict[str, Any] | None, read: Any,
    reply_text: str, label: str,
) -> tuple[Any, dict[str, Any] | None, Any] | tuple[str, dict[str, Any] | None]:
    """Ask a model judge: one request, asked once more (the unusable reply and why, then `reply_text`)
    when `read(content)` gives a problem; only a readable reply is cached. (what `read` found,
    usage, model), or (the error message, its details) after the retry or an endpoint failure.
    `settings` is judge_model's: chat-completions settings, or a model target asked through its step()."""
    from agenteval.endpoints.chat import chat_body, complete
    from agenteval.endpoints.client import EndpointError, excerpt
    from agenteval.usage import combine_usage

    asks_target = callable(getattr(settings, "step", None))
    cache = True if settings.cache is None else settings.cache
    usage: dict[str, Any] | None = None
    try:
        for attempt in range(2):
            if asks_target:
                from agenteval.targets.model_entries import ask_model

                reply: Any = ask_model(settings, endpoints, messages, usable=lambda content: read(content)[1] is None, response_format=schema)
                if reply.error is not None:
                    return f"{label}: {reply.error}", {"usage": usage} if usage else None
            else:
                body = chat_body(settings, messages, response_format=schema)
                usable = lambda chat: read(chat.content)[1] is None  # noqa: E731 - only such a reply is cached
                reply = complete(endpoints, settings, body, cache=cache, usable=usable)
            usage = combine_usage(usage, reply.usage)
            found, problem = read(reply.content)
            if problem is None:
                return found, usage, reply.model
            if attempt == 0:
                messages = [
                    *messages,
                    {"role": "assistant", "content": reply.content or ""},
                    {"role": "user", "content": f"That reply could not be used: {problem}. {reply_text}"},
                ]
    except EndpointError as exc:
        return f"{label}: {exc}", {"usage": usage} if usage else None
    raw = excerpt(reply.content or "", RAW_REPLY_CHARS)
    return f"{label}: the reply could not be read after a retry ({problem}): {raw!r}", {"raw_reply": raw, "usage": usage}


RAW_REPLY_CHARS = 500  # of an unusable judge reply, kept in the result
