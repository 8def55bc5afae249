"""People's reviews of a run, kept beside its results, and how far each judge agrees with them.

A review is one JSON line in `<run>.reviews.jsonl` beside `<run>.jsonl` (appended, never
rewritten, so a review costs the same in a run of a million cases): who, when, which run, case,
repetition and cell; per evaluator whether its verdict was right or wrong (and the verdict it
gave then); per criterion a score on that criterion's own scale; a note; and whether the
expected answer itself is wrong (with a corrected one). Several reviewers may review one case;
a reviewer's later review of the same case and cell replaces their earlier one.

`feedback add` folds scores into the results as `human:<criterion>` results; those count as
reviews of the criterion too, so both ways of giving feedback feed `report --agreement`.
"""

from __future__ import annotations

import fcntl
import math
import os
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from agenteval.agreement import Agreement, judge_agreement
from agenteval.results import CaseResult, ResultsFileError

SUFFIX = ".reviews.jsonl"
HUMAN = "human"
NOTE_CHARS = 10_000
_KEYS = {
    "run_id", "case_id", "repetition", "target", "prompt", "reviewer", "time", "verdicts", "judged", "scores",
    "note", "expected_wrong", "corrected_expected",
}
ReviewKey = tuple[str, int, "str | None", "str | None"]  # case id, repetition, target, prompt


class ReviewError(ResultsFileError, ValueError):
    """A review that cannot be kept (nothing was written), or a reviews file that cannot be read
    (a ResultsFileError, so a command reading the run says it in one line and exits 2)."""


def reviews_path(results: Path) -> Path:
    """`run.jsonl` -> `run.reviews.jsonl`."""
    name = results.name[: -len(".jsonl")] if results.name.endswith(".jsonl") else results.name
    return results.with_name(name + SUFFIX)


def names_one(value: Any) -> bool:
    """Whether a review can hold `value` as its case id or reviewer: a text, not blank, of at most 200 characters."""
    return isinstance(value, str) and bool(value.strip()) and len(value) <= 200


def checked_review(record: Any) -> dict[str, Any]:
    """A review record with its types checked, or ReviewError saying what is wrong with it."""
    if not isinstance(record, dict):
        raise ReviewError("a review is a JSON object {case_id, reviewer, verdicts?, scores?, note?}")
    unknown = sorted(set(record) - _KEYS)
    if unknown:
        raise ReviewError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    review = dict(record)
    for key in ("case_id", "reviewer"):
        if not names_one(review.get(key)):
            raise ReviewError(f"{key} must be a non-empty string of at most 200 characters")
    for key in ("run_id", "target", "prompt", "time", "note"):
        if review.get(key) is not None and not isinstance(review[key], str):
            raise ReviewError(f"{key} must be a string or null")
    if len(review.get("note") or "") > NOTE_CHARS:
        raise ReviewError(f"note is longer than {NOTE_CHARS} characters")
    repetition = review.setdefault("repetition", 0)
    if type(repetition) is not int or repetition < 0:
        raise ReviewError("repetition must be a whole number >= 0")
    verdicts = review.setdefault("verdicts", {})
    if not isinstance(verdicts, dict) or any(value not in ("right", "wrong") for value in verdicts.values()):
        raise ReviewError("verdicts maps an evaluator's name to \"right\" or \"wrong\"")
    judged = review.setdefault("judged", {})
    if not isinstance(judged, dict) or any(value not in ("pass", "fail", "partial", "error") for value in judged.values()):
        raise ReviewError("judged maps an evaluator's name to the verdict it gave: pass, fail, partial or error")
    scores = review.setdefault("scores", {})
    if not isinstance(scores, dict):
        raise ReviewError("scores maps a criterion's name to a score on its scale")
    for name, value in scores.items():
        if type(value) is bool or value in ("pass", "fail"):
            continue
        if type(value) not in (int, float) or not math.isfinite(value) or abs(value) > 1e9:
            raise ReviewError(f"scores.{name} must be a finite number, true/false or pass/fail, got {value!r}")
    if type(review.setdefault("expected_wrong", False)) is not bool:
        raise ReviewError("expected_wrong must be true or false")
    if not (verdicts or scores or review.get("note") or review["expected_wrong"]):
        raise ReviewError("a review marks a verdict, gives a score, notes something or marks the expected answer wrong")
    return review


def append_review(path: Path, record: Any, now: datetime | None = None) -> dict[str, Any]:
    """Check a review, stamp its time, and append it to the reviews file (locked, flushed to disk),
    on a line of its own: a file whose last line has no newline (saved by an editor) gets one first."""
    review = checked_review(record)
    review["time"] = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds").replace("+00:00", "Z")
    line = orjson.dumps(review) + b"\n"
    try:
        with path.open("a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            end = handle.seek(0, os.SEEK_END)
            if end:
                handle.seek(end - 1)
                if handle.read(1) != b"\n":
                    line = b"\n" + line
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise ReviewError(f"{path}: cannot write the review: {exc.strerror or exc}") from None
    return review


def read_reviews(path: Path) -> list[dict[str, Any]]:
    """Every review in a reviews file ([] when there is none), a reviewer's latest per case and
    cell; ReviewError names the first bad line."""
    if not path.exists():
        return []
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise ReviewError(f"{path}: cannot read: {exc.strerror or exc}") from None
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            review = checked_review(orjson.loads(raw))
        except (orjson.JSONDecodeError, ReviewError) as exc:
            raise ReviewError(f"{path}:{number}: not a review: {exc}") from None
        latest[(*key_of(review), review["reviewer"])] = review
    return list(latest.values())


def key_of(review: dict[str, Any]) -> ReviewKey:
    return review["case_id"], review.get("repetition", 0), review.get("target"), review.get("prompt")


def result_key(result: CaseResult) -> ReviewKey:
    return result.case_id, result.repetition, result.target, result.prompt


def export_reviews(reviews: Iterable[dict[str, Any]]) -> bytes:
    """Reviews as JSONL, one per line."""
    return b"".join(orjson.dumps(review, option=orjson.OPT_SORT_KEYS) + b"\n" for review in reviews)


def _passed(verdict: str) -> str:
    return "pass" if verdict == "pass" else "fail"


def _flipped(label: str) -> str:
    return "fail" if label == "pass" else "pass"


def _criterion_scores(result: CaseResult) -> dict[tuple[str, str], tuple[Any, float, str | None]]:
    """(evaluator, criterion) -> (raw score, normalized score, scale) of every automatic criterion score."""
    found: dict[tuple[str, str], tuple[Any, float, str | None]] = {}
    for evaluator in result.evaluator_results:
        if evaluator.type == HUMAN or evaluator.verdict == "error":
            continue
        criteria = (evaluator.details or {}).get("criteria")
        if evaluator.type == "llm_judge" and isinstance(criteria, dict):
            for name, entry in criteria.items():
                if isinstance(entry, dict) and isinstance(entry.get("score"), (int, float)):
                    found[(evaluator.name, name)] = (entry.get("raw_score", entry["score"]), float(entry["score"]), entry.get("scale"))
        elif evaluator.criterion and evaluator.criterion.get("name"):
            raw = (evaluator.details or {}).get("raw_score", evaluator.score)
            found[(evaluator.name, evaluator.criterion["name"])] = (raw, evaluator.score, None)
    return found


def graded(scale: str | None, raws: Iterable[Any]) -> bool:
    """A criterion scored on more than pass/fail: compared by level, with weighted kappa."""
    if scale is not None:
        return not scale.startswith(("binary", "pass_fail"))
    return any(type(raw) in (int, float) and raw not in (0, 1) for raw in raws)


def _label(raw: Any, normalized: float | None, is_graded: bool) -> Any:
    if type(raw) is bool:
        return ("pass" if raw else "fail") if not is_graded else float(raw)
    if raw in ("pass", "fail"):
        return raw if not is_graded else float(raw == "pass")
    if type(raw) in (int, float):
        return float(raw) if is_graded else ("pass" if raw >= 0.5 else "fail")
    return None if normalized is None else (normalized if is_graded else "pass" if normalized >= 0.5 else "fail")


def agreements(results: Iterable[CaseResult], reviews: list[dict[str, Any]]) -> list[Agreement]:
    """For every evaluator and criterion that people reviewed: its agreement with them, and with
    repeated runs its self-consistency. Results are streamed; only reviewed cases are kept."""
    by_key: dict[ReviewKey, list[dict[str, Any]]] = {}
    for review in reviews:
        by_key.setdefault(key_of(review), []).append(review)
    verdict_pairs: dict[str, list[tuple[Any, list[Any]]]] = {}
    criterion_pairs: dict[str, list[tuple[Any, list[Any]]]] = {}
    criterion_raw: dict[str, tuple[str | None, list[Any]]] = {}
    repeated: dict[tuple[str, str | None, str | None, str], list[str]] = {}
    for result in results:
        for evaluator in result.evaluator_results:
            if evaluator.type != HUMAN and evaluator.verdict != "error":
                repeated.setdefault((result.case_id, result.target, result.prompt, evaluator.name), []).append(_passed(evaluator.verdict))
        case_reviews = by_key.get(result_key(result), [])
        folded = {e.name[len(HUMAN) + 1:]: e for e in result.evaluator_results
                  if e.type == HUMAN and e.name.startswith(HUMAN + ":") and e.name != REVIEW_RESULT}
        if not case_reviews and not folded:
            continue
        for evaluator in result.evaluator_results:
            if evaluator.type == HUMAN or evaluator.verdict == "error":
                continue
            humans = []
            for review in case_reviews:
                mark = review["verdicts"].get(evaluator.name)
                if mark is not None:
                    then = _passed(review["judged"].get(evaluator.name, evaluator.verdict))
                    humans.append(then if mark == "right" else _flipped(then))
            if humans:
                verdict_pairs.setdefault(evaluator.name, []).append((_passed(evaluator.verdict), humans))
        for (evaluator_name, criterion), (raw, normalized, scale) in _criterion_scores(result).items():
            human_raws = [review["scores"][criterion] for review in case_reviews if criterion in review["scores"]]
            human = folded.get(criterion)
            if human is not None:
                human_raws += [entry.get("raw_score", entry.get("score")) for entry in (human.details or {}).get("reviews", []) if isinstance(entry, dict)]
            if not human_raws:
                continue
            name = f"{evaluator_name}/{criterion}"
            known = criterion_raw.setdefault(name, (scale, []))
            known[1].extend([raw, *human_raws])
            criterion_pairs.setdefault(name, []).append((raw, human_raws))
    consistency: dict[str, list[list[str]]] = {}
    for (_, _, _, name), labels in repeated.items():
        consistency.setdefault(name, []).append(labels)
    found = [
        judge_agreement(name, pairs, labels=("fail", "pass"), repetitions=consistency.get(name) if any(len(r) > 1 for r in consistency.get(name, [])) else None)
        for name, pairs in verdict_pairs.items()
    ]
    for name, pairs in criterion_pairs.items():
        scale, raws = criterion_raw[name]
        is_graded = graded(scale, raws)
        labelled = [(_label(raw, None, is_graded), [_label(h, None, is_graded) for h in humans]) for raw, humans in pairs]
        found.append(judge_agreement(name, labelled, graded=is_graded))
    return found


def below(found: list[Agreement], minimum: float) -> list[str]:
    """Why each agreement misses a --min-agreement gate (too few cases counts as missing it)."""
    from agenteval.agreement import MIN_CASES

    reasons = []
    for agreement in found:
        if agreement.small_sample:
            reasons.append(f"{agreement.name}: only {agreement.cases} reviewed case{'s' if agreement.cases != 1 else ''} ({MIN_CASES} needed to check kappa >= {minimum:g})")
        elif agreement.kappa is None or agreement.kappa < minimum:
            shown = "undefined" if agreement.kappa is None else f"{agreement.kappa:.2f}"
            reasons.append(f"{agreement.name}: kappa {shown} < {minimum:g}")
    return reasons


def case_from_result(result: CaseResult, correction: dict[str, Any] | None = None) -> dict[str, Any]:
    """A suite case (id, input, expected, tags) from a result, the reviewer's corrected expected
    answer in place of the old one when they gave one."""
    case: dict[str, Any] = {"id": result.case_id, "input": result.input}
    expected = result.expected
    if correction is not None and correction.get("corrected_expected") is not None:
        expected = correction["corrected_expected"]
    if expected is not None:
        case["expected"] = expected
    if result.tags:
        case["tags"] = list(result.tags)
    return case


def write_cases(destination: Path, cases: list[dict[str, Any]]) -> tuple[int, int]:
    """Add cases to the cases file the user named (JSONL, or YAML with a list), creating it when
    absent; a case whose id is already there replaces it (a corrected case). (added, replaced)."""
    import yaml

    suffix = destination.suffix.lower()
    if suffix not in (".jsonl", ".yaml", ".yml"):
        raise ReviewError(f"{destination}: cases are written as .jsonl or .yaml, not {suffix or 'a file without a suffix'}")
    existing: list[dict[str, Any]] = []
    if destination.exists():
        try:
            text = destination.read_text(encoding="utf-8")
            if suffix == ".jsonl":
                existing = [orjson.loads(line) for line in text.splitlines() if line.strip()]
            else:
                loaded = yaml.safe_load(text) or []
                existing = loaded.get("cases", []) if isinstance(loaded, dict) else loaded
        except (OSError, ValueError, yaml.YAMLError) as exc:
            raise ReviewError(f"{destination}: cannot read its cases ({exc}); nothing was written") from None
        if not isinstance(existing, list) or not all(isinstance(case, dict) for case in existing):
            raise ReviewError(f"{destination}: not a list of cases; nothing was written")
    positions = {case.get("id"): index for index, case in enumerate(existing)}
    added = replaced = 0
    for case in cases:
        if case["id"] in positions:
            existing[positions[case["id"]]] = case
            replaced += 1
        else:
            positions[case["id"]] = len(existing)
            existing.append(case)
            added += 1
    if suffix == ".jsonl":
        body = b"".join(orjson.dumps(case) + b"\n" for case in existing)
    else:
        body = yaml.safe_dump(existing, sort_keys=False, allow_unicode=True).encode()
    temporary = destination.with_name(f".{destination.name}.tmp")
    try:
        temporary.write_bytes(body)
        os.replace(temporary, destination)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ReviewError(f"{destination}: cannot write: {exc.strerror or exc}") from None
    return added, replaced


def cases_from_reviews(results: Iterable[CaseResult], reviews: list[dict[str, Any]], case_ids: set[str] | None = None) -> list[dict[str, Any]]:
    """Cases for the given ids (one per case id, its first cell), and for every review that marks
    the expected answer wrong, with the correction it gives."""
    corrections = {review["case_id"]: review for review in reviews if review.get("expected_wrong")}
    wanted = set(case_ids or ()) | set(corrections)
    cases: dict[str, dict[str, Any]] = {}
    for result in results:
        if result.case_id in wanted and result.case_id not in cases:
            cases[result.case_id] = case_from_result(result, corrections.get(result.case_id))
    return list(cases.values())


REVIEW_RESULT = f"{HUMAN}:review"


def review_result(reviews: list[dict[str, Any]]) -> Any:
    """People's reviews of one case as an evaluator result `human:review` (type `human`), so every
    report shows them beside the automatic verdicts: the share of the verdicts they marked right
    (1 when they marked none), their notes as the reasoning, every review in `details.reviews`."""
    from agenteval.evaluators.base import EvaluatorResult

    marks = [mark for review in reviews for mark in review["verdicts"].values()]
    score = sum(mark == "right" for mark in marks) / len(marks) if marks else 1.0
    wrong = sorted({name for review in reviews for name, mark in review["verdicts"].items() if mark == "wrong"})
    notes = [f"{review['reviewer']}: {review['note']}" for review in reviews if review.get("note")]
    return EvaluatorResult(
        REVIEW_RESULT, HUMAN, score, "pass" if score >= 1.0 else "fail", hits=[], misses=[f"{name} marked wrong" for name in wrong],
        reasoning="; ".join(notes) or None, details={"reviews": [dict(review) for review in reviews]},
    )


def with_reviews(results: Iterable[CaseResult], reviews: list[dict[str, Any]]) -> Iterable[CaseResult]:
    """The results with each reviewed cell's `human:review` result, made from its own reviews only
    (one already there, as an older version kept them in a store, is replaced or dropped)."""
    by_key: dict[ReviewKey, list[dict[str, Any]]] = {}
    for review in reviews:
        by_key.setdefault(key_of(review), []).append(review)
    for result in results:
        found = by_key.get(result_key(result))
        kept = [e for e in result.evaluator_results if e.name != REVIEW_RESULT]  # the reviews given are the whole truth
        result.evaluator_results = kept + [review_result(found)] if found else kept
        yield result


def store_review(store: Any, run_id: str, record: Any, now: datetime | None = None) -> dict[str, Any]:
    """Check a review, stamp its time, and append it to a SQL store's reviews table (one row per
    review, so reviewers saving at once never overwrite each other)."""
    review = checked_review(record)
    review["time"] = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds").replace("+00:00", "Z")
    review["run_id"] = review.get("run_id") or run_id
    store.add_review(run_id, review)
    return review


def stored_reviews(source: Any) -> list[dict[str, Any]]:
    """The reviews of a run in a store (agenteval.stores.base.StoredRun): each reviewer's latest
    per case and cell. A store without a reviews table (one written outside agenteval) is read for
    `human:review` results, where reviews were kept before."""
    kept = getattr(source.store, "reviews", None)
    if callable(kept):
        items: Iterable[tuple[str, Any]] = kept(source.run_id)
    else:
        items = ((f"the {REVIEW_RESULT} result of case {result.case_id!r}", item) for result in source.results()
                 for evaluator in result.evaluator_results if evaluator.name == REVIEW_RESULT
                 for item in (evaluator.details or {}).get("reviews", []))
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for where, item in items:
        try:
            review = checked_review(item)
        except ReviewError as exc:
            raise ReviewError(f"{source}: {where} is not a review: {exc}") from None
        latest[(*key_of(review), review["reviewer"])] = review
    return list(latest.values())
