"""What a target returns (the candidate answer, or why there is none) and what it is given to work with."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.limits import DEFAULT_LIMITS, Limits
from agenteval.process import MAX_ANSWER_DEPTH

if TYPE_CHECKING:
    from agenteval.endpoints import Endpoints
    from agenteval.process import Processes
    from agenteval.run_context import RunContext


@dataclass(slots=True)
class Answer:
    output: Any = None
    error: str | None = None
    duration_ms: float = 0.0
    usage: dict[str, Any] | None = None  # latency, tokens, cost of getting the answer (see agenteval.usage)
    limit_reached: str | None = None  # a limit ended the answer early (a tool loop's max_steps, budget, timeout): the case fails, naming it
    trace_id: str | None = None  # the W3C trace id the system under test was given (agenteval.traces.propagation)


@dataclass(slots=True)
class TargetRun:
    """The run's resources every target's `answer(case, run)` may use."""

    base_dir: Path
    processes: Processes
    endpoints: Endpoints | None = None
    repetition: int = 0  # which of --repeat N this is (part of a target's cache key when > 0)
    answer_depth: int = MAX_ANSWER_DEPTH  # the suite's `limits.answer_depth`: deepest answer a target may parse
    context: RunContext | None = None  # which run, suite, cell and case (agenteval.run_context)
    limits: Limits = DEFAULT_LIMITS  # the suite's `limits:` (a traces target's bounds)


def template_variables(case: Any) -> dict[str, Any]:
    """What a model target's message templates see of a case (never `expected`: the target must
    not see the answer). Shared by every model target, so one suite's templates mean the same to each."""
    return {
        "input": case.input,
        "metadata": case.metadata,
        "case": {"id": case.id, "tags": case.tags, "metadata": case.metadata},
    }


def parse_json_content(content: str | None) -> tuple[Any, str | None]:
    """`parse_json: true` of a model target: (the reply's text as JSON, None), or (None, why not).
    A fenced block (```json ... ```) is read as its inside, as models often wrap JSON in one."""
    from agenteval.process import decode_json

    if content is None:
        return None, "the reply has no text content"
    text = content.strip()
    if text.startswith("```"):  # a fenced block: ```json ... ```
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    try:
        return decode_json(text.encode()), None
    except (ValueError, RecursionError):
        return None, f"content is not JSON: {content[:200]!r}"


def reply_answer(kind: str, reply: Any, messages: list[dict[str, Any]], parse_json: bool) -> Answer:
    """A model target's answer to one request: `{content, messages, tool_calls, usage, model,
    latency_ms}` from its reply (any API's, read into those attributes), `content` read as JSON
    with `parse_json`. `kind` names the target in errors."""
    content: Any = reply.content
    if parse_json:
        content, problem = parse_json_content(reply.content)
        if problem:
            return Answer(error=f"{kind} target: parse_json: {problem}", duration_ms=reply.latency_ms, usage=reply.usage)
    output = {
        "content": content,
        "messages": [*messages, reply.message],
        "tool_calls": reply.tool_calls,
        "usage": reply.usage,
        "model": reply.model,
        "latency_ms": reply.latency_ms,
    }
    return Answer(output, duration_ms=reply.latency_ms, usage=reply.usage)


def loop_answer(kind: str, answer: Answer, parse_json: bool) -> Answer:
    """A tool loop's answer, its last reply read as JSON with `parse_json` (as a single reply is)."""
    if not parse_json or answer.error is not None or not isinstance(answer.output, dict):
        return answer
    content, problem = parse_json_content(answer.output.get("content"))
    if problem:
        return Answer(error=f"{kind} target: parse_json: {problem}", duration_ms=answer.duration_ms, usage=answer.usage)
    answer.output["content"] = content
    return answer


def tool_definitions(tools: list[Any] | None) -> list[dict[str, Any]] | None:
    """A model target's tools as the model is told of them (a tool given in an API's own shape, as given)."""
    if tools is None:
        return None
    from agenteval.agents.tools import Tool

    return [tool.definition() if isinstance(tool, Tool) else tool for tool in tools]
