"""Human feedback folded into finished results, beside the automatic scores.

A feedback file has one JSON object per line: `{case_id, criterion, score, note?, reviewer?,
repetition?}`. The reviews of one case and criterion become one evaluator result named
`human:<criterion>` (type `human`): the mean of the reviewers' scores, their notes as the
reasoning, every review in `details.reviews`. Adding feedback again replaces a reviewer's earlier
review, so folding the same file twice changes nothing. Case verdicts are left as they were.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from agenteval.evaluators.base import EvaluatorResult, graded_verdict
from agenteval.evaluators.scales import ScaleName, normalize
from agenteval.results import CaseResult, Summary

HUMAN = "human"
PROBLEMS_SHOWN = 20

CaseKey = tuple[str, int]  # case id, repetition
Feedback = dict[CaseKey, dict[str, list["Review"]]]  # per case: criterion -> reviews


class FeedbackError(Exception):
    """The feedback cannot be folded in; nothing was changed."""


@dataclass(frozen=True, slots=True)
class Review:
    reviewer: str | None
    score: float  # normalized to [0, 1]
    raw_score: Any
    note: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"reviewer": self.reviewer, "score": self.score, "raw_score": self.raw_score, "note": self.note}


def read_feedback(path: Path, scale: ScaleName = "unit") -> Feedback:
    """Every record of a feedback JSONL file, checked; FeedbackError lists every bad line."""
    feedback: Feedback = {}
    problems: list[str] = []
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise FeedbackError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                key, criterion, review = parse_record(orjson.loads(raw), scale)
            except (orjson.JSONDecodeError, ValueError) as exc:
                problems.append(f"{path}:{number}: {exc}")
                continue
            feedback.setdefault(key, {}).setdefault(criterion, []).append(review)
    if problems:
        more = f"\n... and {len(problems) - PROBLEMS_SHOWN} more" if len(problems) > PROBLEMS_SHOWN else ""
        raise FeedbackError("\n".join(problems[:PROBLEMS_SHOWN]) + more)
    if not feedback:
        raise FeedbackError(f"{path}: no feedback records")
    return feedback


_KEYS = {"case_id", "criterion", "score", "note", "reviewer", "repetition"}


def parse_record(record: Any, scale: ScaleName) -> tuple[CaseKey, str, Review]:
    """One feedback record, or ValueError saying what is wrong with it."""
    if not isinstance(record, dict):
        raise ValueError("a feedback record is a JSON object {case_id, criterion, score, note?, reviewer?}")
    unknown = sorted(set(record) - _KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    case_id = record.get("case_id")
    if type(case_id) is int:
        case_id = str(case_id)
    if not isinstance(case_id, str) or not case_id:
        raise ValueError("case_id must be a non-empty string")
    criterion = record.get("criterion")
    if not isinstance(criterion, str) or not criterion:
        raise ValueError("criterion must be a non-empty string, e.g. \"tone\"")
    for key in ("note", "reviewer"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise ValueError(f"{key} must be a string or null")
    repetition = record.get("repetition", 0)
    if type(repetition) is not int or repetition < 0:
        raise ValueError("repetition must be a whole number >= 0")
    if "score" not in record:
        raise ValueError("score is missing")
    raw = record["score"]
    score = (1.0 if raw else 0.0) if type(raw) is bool else normalize(raw, scale)
    if isinstance(score, str):
        raise ValueError(score + ("" if scale != "unit" else " (give --scale for another range)"))
    return (case_id, repetition), criterion, Review(record.get("reviewer"), score, raw, record.get("note"))


def human_result(criterion: str, reviews: list[Review], earlier: EvaluatorResult | None = None) -> EvaluatorResult:
    """The `human:<criterion>` result of a case: earlier reviews kept unless the same reviewer reviews again."""
    merged: dict[str | None, dict[str, Any]] = {}
    for review in (earlier.details or {}).get("reviews", []) if earlier is not None else []:
        if isinstance(review, dict) and isinstance(review.get("score"), (int, float)):
            merged[review.get("reviewer")] = review
    for review in reviews:
        merged[review.reviewer] = review.as_dict()
    kept = list(merged.values())
    score = sum(review["score"] for review in kept) / len(kept)
    notes = [f"{review['reviewer'] or 'reviewer'}: {review['note']}" for review in kept if review.get("note")]
    return EvaluatorResult(
        f"{HUMAN}:{criterion}", HUMAN, score, graded_verdict(score), reasoning="; ".join(notes) or None,
        details={"reviews": kept}, criterion={"name": criterion},
    )


def folded(result: CaseResult, criteria: dict[str, list[Review]]) -> CaseResult:
    """The case result with its human results added or updated (in place of those of the same name)."""
    by_name = {evaluator.name: index for index, evaluator in enumerate(result.evaluator_results)}
    for criterion, reviews in criteria.items():
        name = f"{HUMAN}:{criterion}"
        index = by_name.get(name)
        earlier = result.evaluator_results[index] if index is not None else None
        human = human_result(criterion, reviews, earlier)
        if index is None:
            by_name[name] = len(result.evaluator_results)
            result.evaluator_results.append(human)
        else:
            result.evaluator_results[index] = human
    return result


def refreshed_summary(summary: dict[str, Any], results: Iterable[CaseResult]) -> dict[str, Any]:
    """A run's summary with its figures counted again (the run's own keys, such as times, kept)."""
    counted = Summary((summary.get("repeats") or {}).get("repeat", 1))
    for result in results:
        counted.add(result)
    return {**summary, **counted.to_dict()}


def _missing(feedback: Feedback, found: set[CaseKey], where: str) -> FeedbackError:
    absent = sorted(set(feedback) - found)
    shown = ", ".join(repr(case) if repetition == 0 else f"{case!r} (repetition {repetition})" for case, repetition in absent[:10])
    return FeedbackError(f"{where} has no case {shown}" + (f" and {len(absent) - 10} more" if len(absent) > 10 else "") + "; nothing was changed")


def fold_into_file(results: Path, feedback: Feedback) -> int:
    """Rewrite a results JSONL file (and its summary) with the feedback folded in; how many human
    results were written. The file is replaced at once, and only when every case was found."""
    import fcntl
    import tempfile

    from agenteval.results import ResultsFileError, case_from_dict, dump_line
    from agenteval.stores.jsonl import summary_path

    try:
        source = results.open("rb")
    except OSError as exc:
        raise FeedbackError(f"{results}: cannot read: {exc.strerror or exc}") from None
    with source:
        try:
            fcntl.flock(source.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise FeedbackError(f"{results} is being written by an agenteval run; add the feedback when it has finished") from None
        handle, temporary = tempfile.mkstemp(dir=results.parent, prefix=f".{results.name}.", suffix=".tmp")
        found: set[CaseKey] = set()
        written = 0
        try:
            with os.fdopen(handle, "wb") as out:
                for number, raw in enumerate(source, start=1):
                    if not raw.strip():
                        continue
                    try:
                        result = case_from_dict(orjson.loads(raw))
                    except (orjson.JSONDecodeError, ValueError, TypeError) as exc:
                        raise ResultsFileError(f"{results}:{number}: not a result line: {exc}") from None
                    key = (result.case_id, result.repetition)
                    criteria = feedback.get(key)
                    if criteria is None:
                        out.write(raw if raw.endswith(b"\n") else raw + b"\n")
                        continue
                    found.add(key)
                    written += len(criteria)
                    out.write(dump_line(folded(result, criteria)))
            if found != set(feedback):
                raise _missing(feedback, found, str(results))
            os.chmod(temporary, os.stat(results).st_mode & 0o777)
            os.replace(temporary, results)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    _refresh_summary_file(summary_path(results), results)
    return written


def _refresh_summary_file(path: Path, results: Path) -> None:
    from agenteval.results import read_results

    if not path.exists():
        return
    try:
        summary = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise FeedbackError(f"the results were updated, but {path} could not be read to update it: {exc}") from None
    path.write_bytes(orjson.dumps(refreshed_summary(summary, read_results(results)), option=orjson.OPT_INDENT_2))


def fold_into_store(store: Any, run_id: str, feedback: Feedback) -> int:
    """Add the feedback to a run in a SQL store, in one transaction; how many human results were written."""
    found = store.case_keys(run_id, {case_id for case_id, _ in feedback})
    if not set(feedback) <= found:
        raise _missing(feedback, found & set(feedback), f"run {run_id} in {store.url}")

    def human_results() -> Iterator[tuple[str, int, EvaluatorResult]]:
        for (case_id, repetition), criteria in feedback.items():
            for criterion, reviews in criteria.items():
                earlier = store.evaluator_result(run_id, case_id, repetition, f"{HUMAN}:{criterion}")
                yield case_id, repetition, human_result(criterion, reviews, earlier)

    written = store.put_evaluator_results(run_id, list(human_results()))
    store.refresh_summary(run_id, refreshed_summary(store.summary(run_id) or {}, store.read_run(run_id)))
    return written
