"""Assertions on a run's results for test code: a failure says which cases failed and why, as
briefly as a test runner's own assertion report (the pytest plugin shows the same text)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ANSWER_WIDTH = 100  # characters of the answer shown on its one line


def failure_text(result: Any) -> str:
    """A failing or errored case in a few lines: its verdict and score, each evaluator that did not
    pass with its misses (or error, or the judge's reasoning), and the answer cut to one line."""
    from agenteval.reports.failures import describe, show_value

    failure = describe(result)
    lines = [f"{failure.case_id}: {failure.verdict} (score {failure.score:.2f})"]
    if failure.error:
        lines.append(f"  error: {_one_line(failure.error)}")
    for evaluator in failure.evaluators:
        lines.append(f"  {evaluator.name} ({evaluator.type}): {evaluator.verdict} {evaluator.score:.2f}")
        lines.extend(f"    - {_one_line(line)}" for line in evaluator.lines)
        if evaluator.more:
            lines.append(f"    … and {evaluator.more} more")
        shown = set(evaluator.lines)
        for item in result.evaluator_results:
            if item.name == evaluator.name and item.reasoning and item.reasoning not in shown:
                criterion = (item.criterion or {}).get("name") if isinstance(item.criterion, dict) else None
                label = f"reasoning ({criterion})" if criterion else "reasoning"
                lines.append(f"    {label}: {_one_line(item.reasoning)}")
    answer = result.output
    if isinstance(answer, dict) and isinstance(answer.get("content"), str):
        answer = answer["content"]  # a model's reply: its text, not the messages that led to it
    lines.append(f"  answer: {show_value(answer, ANSWER_WIDTH)}")
    return "\n".join(lines)


def _one_line(text: str, width: int = 300) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def assert_passed(results: Iterable[Any], min_pass_rate: float | None = None) -> None:
    """Raise AssertionError listing every failing case's misses, unless every case passed (or, with
    `min_pass_rate`, at least that fraction did). `results`: a SuiteRun, or any iterable of CaseResult."""
    if min_pass_rate is not None and not 0 <= min_pass_rate <= 1:
        raise ValueError(f"min_pass_rate must be between 0 and 1, got {min_pass_rate}")
    total = 0
    failing = []
    for result in results:
        total += 1
        if result.verdict != "pass":
            failing.append(result)
    if total == 0:
        raise AssertionError("no case was run")
    passed = total - len(failing)
    if not failing or (min_pass_rate is not None and passed >= min_pass_rate * total):
        return
    wanted = "every case to pass" if min_pass_rate is None else f"a pass rate of at least {min_pass_rate:.0%}"
    head = f"{passed} of {total} cases passed ({passed / total:.0%}); wanted {wanted}"
    raise AssertionError("\n".join([head, *(failure_text(result) for result in failing)]))
