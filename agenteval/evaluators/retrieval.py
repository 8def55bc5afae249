"""retrieval: the ranked ids a system retrieved against the relevant ids of `expected`, by trec_eval's metrics.

Each chosen metric is kept in `details.criteria` as `{score, verdict, min}`, so the summary gives
its dataset mean (MRR is the mean of reciprocal_rank, MAP of average_precision) per run and per
cell, and `compare` its change. The metrics themselves are agenteval.retrieval's pure functions.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from agenteval import retrieval
from agenteval.config import StrictModel
from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorConfig, EvaluatorResult
from agenteval.paths import MISSING, compile_path, resolve

MetricName = Literal["precision", "recall", "hit_rate", "reciprocal_rank", "average_precision", "ndcg", "r_precision"]
GRADE_LIMIT = 1_000_000  # grades are small integers in practice; a bound keeps every gain a finite float
SHOWN_IDS = 20  # ranked ids (with their grades) kept in details


class RetrievalMetric(StrictModel):
    """One metric, its cutoff and the least value a case needs."""

    metric: MetricName = Field(description="precision, recall, hit_rate, reciprocal_rank, average_precision, ndcg or r_precision.")
    k: int | None = Field(
        None, ge=1, le=1_000_000,
        description="Cutoff: only the first k ids count (needed by precision, recall and hit_rate; optional for "
        "reciprocal_rank, average_precision and ndcg; r_precision uses R).",
    )
    min: float | None = Field(
        None, gt=0, le=1, allow_inf_nan=False,
        description="The case passes only if this metric reaches `min`; without it the metric is reported, not gated.",
    )

    @model_validator(mode="after")
    def _cutoff_fits(self) -> RetrievalMetric:
        if self.k is None and self.metric in retrieval.NEEDS_K:
            raise ValueError(f"{self.metric} needs a cutoff `k` (e.g. {{metric: {self.metric}, k: 5}})")
        if self.k is not None and self.metric not in retrieval.TAKES_K:
            raise ValueError(f"{self.metric} takes no `k` (it is measured at R, the number of relevant ids)")
        return self

    @property
    def label(self) -> str:
        return retrieval.label(self.metric, self.k)


class Retrieval(EvaluatorConfig):
    """Score = the mean of the chosen metrics. Default verdict: pass iff every metric with a `min` reaches it."""

    type: Literal["retrieval"]
    path: str = Field("retrieved", description="Where the ranked list is in the answer: ids, or objects holding one (`id_key`).")
    id_key: str = Field("id", min_length=1, description="The key of an object's id in the ranked list.")
    score_key: str | None = Field(
        None, min_length=1,
        description="Rank by this key of each object, highest first, ties by id in reverse order (trec_eval's rule); "
        "without it the list's order is the ranking.",
    )
    relevant_path: str = Field(
        "", description="Where the relevant ids are in `expected`: a list of ids (grade 1 each) or a mapping id: grade; "
        "empty: `expected` itself.",
    )
    metrics: list[RetrievalMetric] = Field(min_length=1, max_length=64, description="The metrics, each {metric, k, min}.")

    type_name = "retrieval"

    _keys: Any = PrivateAttr(())
    _relevant_keys: Any = PrivateAttr(())

    @model_validator(mode="after")
    def _paths_and_metrics(self) -> Retrieval:
        for key in ("path", "relevant_path"):
            value = getattr(self, key)
            if value and compile_path(value) is None:
                raise ValueError(f"{key}: malformed path {value!r}")
        self._keys = compile_path(self.path) if self.path else ()
        self._relevant_keys = compile_path(self.relevant_path) if self.relevant_path else ()
        labels = [m.label for m in self.metrics]
        repeated = sorted({name for name in labels if labels.count(name) > 1})
        if repeated:
            raise ValueError(f"each metric once: {', '.join(repeated)} is listed twice")
        if all(m.min is None for m in self.metrics):
            raise ValueError("no metric has a `min`: give at least one (e.g. {metric: ndcg, k: 10, min: 0.7}) so a case can fail")
        return self

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        if ctx.expected is None:
            return self.result(0.0, "fail", misses=[NO_EXPECTED], reasoning="no relevant ids to compare with")
        found = resolve(ctx.output, self._keys) if self._keys else ctx.output
        if found is MISSING:
            return self.result(0.0, "fail", misses=[f"{self.path} (missing)"], reasoning=f"the answer has no `{self.path}`")
        judged = resolve(ctx.expected, self._relevant_keys) if self._relevant_keys else ctx.expected
        if judged is MISSING:
            return self.error_result(f"`expected` has no `{self.relevant_path}` (relevant_path)")
        judgments, problem = _judgments(judged)
        if problem is None:
            ranking, duplicates, problem = self._ranking(found)
        if problem is not None:
            return self.error_result(problem)
        relevant = retrieval.relevant_count(judgments)
        grades = retrieval.ranked_grades(ranking, judgments)
        criteria: dict[str, dict[str, Any]] = {}
        hits, misses = [], []
        for chosen in self.metrics:
            value = retrieval.metric(chosen.metric, grades, judgments, relevant, chosen.k)
            entry: dict[str, Any] = {"score": value}
            if chosen.min is not None:
                passed = value >= chosen.min
                entry.update(verdict="pass" if passed else "fail", min=chosen.min)
                (hits if passed else misses).append(f"{chosen.label} {value:.4g} {'>=' if passed else '<'} {chosen.min:g}")
            criteria[chosen.label] = entry
        if not relevant:
            misses.insert(0, "no relevant id in `expected`: every metric is 0 (trec_eval's value for such a query)")
        score = math.fsum(entry["score"] for entry in criteria.values()) / len(criteria)
        details: dict[str, Any] = {
            "criteria": criteria, "retrieved": len(ranking), "relevant": relevant,
            "relevant_retrieved": sum(1 for grade in grades if grade >= 1),
            "unjudged": sum(1 for doc in ranking if doc not in judgments),
            "ranking": [[doc, judgments.get(doc)] for doc in ranking[:SHOWN_IDS]],
        }
        if duplicates:
            details["duplicates"] = duplicates
        gated = [entry for entry in criteria.values() if "verdict" in entry]
        verdict = "pass" if all(entry["verdict"] == "pass" for entry in gated) and relevant else "fail"
        reasoning = "; ".join(f"{name} {entry['score']:.4g}" for name, entry in criteria.items())
        return self.result(score, verdict, hits=hits, misses=misses, reasoning=reasoning, details=details)

    def _ranking(self, found: Any) -> tuple[list[str], int, str | None]:
        """(ranked unique ids, how many repeats were dropped, problem)."""
        where = self.path or "the answer"
        if not isinstance(found, list):
            return [], 0, f"{where} is {type(found).__name__}, not a list of ids"
        ids: list[str] = []
        scores: list[float] | None = [] if self.score_key is not None else None
        for position, item in enumerate(found):
            if isinstance(item, dict):
                doc = item.get(self.id_key, MISSING)
                if scores is not None:
                    value = item.get(self.score_key, MISSING)  # type: ignore[arg-type]
                    if type(value) not in (int, float) or not math.isfinite(value):
                        return [], 0, f"{where}[{position}].{self.score_key} is {_shown(value)}, not a finite number"
                    scores.append(value)
            elif scores is not None:
                return [], 0, f"{where}[{position}] is {type(item).__name__}, not an object with `{self.score_key}` (score_key)"
            else:
                doc = item
            text = _id(doc)
            if text is None:
                what = f"{where}[{position}]" + (f".{self.id_key}" if isinstance(item, dict) else "")
                return [], 0, f"{what} is {_shown(doc)}, not an id (a string or an integer)"
            ids.append(text)
        ranking = retrieval.ranked_ids(ids, scores)
        return ranking, len(ids) - len(ranking), None


def _id(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if type(value) is int:
        return str(value)
    return None


def _judgments(value: Any) -> tuple[dict[str, int], str | None]:
    """id -> grade from a list of ids (grade 1) or a mapping of grades (integers from 0 to GRADE_LIMIT)."""
    if isinstance(value, list):
        judgments: dict[str, int] = {}
        for position, item in enumerate(value):
            text = _id(item)
            if text is None:
                return {}, f"relevant id [{position}] in `expected` is {_shown(item)}, not an id (a string or an integer)"
            judgments[text] = 1
        return judgments, None
    if isinstance(value, dict):
        for doc, grade in value.items():
            if type(grade) is not int or not 0 <= grade <= GRADE_LIMIT:
                hint = " (if the relevant ids are under a key of `expected`, name it with `relevant_path`)" if isinstance(grade, (dict, list)) else ""
                return {}, f"the grade of {doc!r} in `expected` is {_shown(grade)}: a grade is an integer from 0 to {GRADE_LIMIT:,}{hint}"
        return {str(doc): grade for doc, grade in value.items()}, None
    return {}, f"`expected` holds {type(value).__name__}: relevant ids are a list of ids or a mapping id: grade"


def _shown(value: Any) -> str:
    if value is MISSING:
        return "missing"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
