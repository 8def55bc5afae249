"""iou_score and distance: boxes and points, one at a time or as lists matched 1:1.

At `path` the expected value is either one box/point or a list of them (or of objects holding
one under `item_field`). A single value scores its IoU (or 1 - distance / max_distance). A list
is paired (`index`, `greedy` or `optimal`), unpaired items score 0, and the score is the mean
over the longer list; `details` has the pairs, the unmatched items on each side and
detection-style precision / recall / F1 at the threshold, and `details.metrics` carries the
TP/FP/FN counts (per label with `label_field`) for the dataset-level table.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from agenteval import geometry
from agenteval.evaluators.base import NO_EXPECTED, EvalContext, EvaluatorResult, PathEvaluator, Verdict
from agenteval.extras import missing_warning
from agenteval.metrics import metrics_row
from agenteval.pairing import Pairing, pair, too_many_pairs, unmatched
from agenteval.paths import MISSING

ALL_ITEMS = "(all)"


class _Spatial(PathEvaluator):
    """What iou_score and distance share: where the values are and how lists are paired."""

    path: str = Field("", description="Where the box/point (or list) is in candidate and expected; empty: the whole answer.")
    item_field: str | None = Field(None, description="In a list of objects, the key holding each box/point (e.g. bbox).")
    label_field: str | None = Field(None, description="Pair only items with the same label; metrics per label.")
    matching: Pairing = Field("greedy", description="index: by position; greedy: best pair first; optimal: Hungarian (scipy).")
    max_rows: int = Field(50, ge=0, description="Pairs and unmatched indexes kept in details (the rest are counted).")

    # -- what each evaluator defines ------------------------------------------------------------
    unit: ClassVar[str] = ""
    measure_name: ClassVar[str] = "value"

    def parse(self, value: Any) -> Any:
        raise NotImplementedError

    def is_single(self, value: Any) -> bool:
        raise NotImplementedError

    def measure_one(self, expected: Any, candidate: Any) -> tuple[float | str, float, bool]:
        """(raw measure or why there is none, similarity in [0, 1], accepted) for one pair."""
        raise NotImplementedError

    def measure(self, expected: list[Any], candidate: list[Any]) -> tuple[Any, Any, Any]:
        """(raw measure, similarity in [0, 1], accepted) arrays of shape (len(expected), len(candidate))."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------------
    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        where = self.path or "answer"
        expected, candidate = self.values(ctx)
        if expected is MISSING or expected is None:
            return self.result(0.0, "fail", misses=[f"{where} ({NO_EXPECTED if ctx.expected is None else 'no expected value'})"], reasoning="nothing to score")
        if self.is_single(expected):
            return self._single(where, expected, candidate)
        if not isinstance(expected, list):
            return self.result(0.0, "fail", misses=[f"{where} (expected value is neither one {self.unit} nor a list)"])
        if isinstance(candidate, list) and (too_many := too_many_pairs(len(expected), len(candidate), ctx.limits)):
            return self.error_result(f"{where}: {too_many}")  # before the n x m matrices are allocated
        return self._list(where, expected, candidate)

    def _single(self, where: str, expected: Any, candidate: Any) -> EvaluatorResult:
        want = self.parse(expected)
        if isinstance(want, str):
            return self.result(0.0, "fail", misses=[f"{where} (expected: {want})"])
        if candidate is MISSING or candidate is None:
            return self._single_miss(where, "missing")
        got = self.parse(candidate)
        if isinstance(got, str):
            return self._single_miss(where, got)
        raw, similarity, accepted = self.measure_one(want, got)
        if isinstance(raw, str):
            return self._single_miss(where, raw)
        details = {self.measure_name: float(raw), "metrics": {ALL_ITEMS: {"tp": int(accepted), "fp": int(not accepted), "fn": int(not accepted)}}}
        verdict: Verdict = "pass" if accepted else "fail"
        reasoning = f"{self.measure_name} {float(raw):.4f}"
        if accepted:
            return self.result(float(similarity), verdict, hits=[where], reasoning=reasoning, details=details)
        return self.result(float(similarity), verdict, misses=[where], reasoning=reasoning, details=details)

    def _single_miss(self, where: str, reason: str) -> EvaluatorResult:
        details = {"metrics": {ALL_ITEMS: {"tp": 0, "fp": 0 if reason == "missing" else 1, "fn": 1}}}
        return self.result(0.0, "fail", misses=[f"{where} ({reason})"], details=details)

    def _items(self, values: list[Any], side: str, misses: list[str]) -> tuple[list[int], list[Any], list[Any]]:
        """(indexes of usable items, their parsed values, every item's label)."""
        usable, parsed, labels = [], [], []
        for index, item in enumerate(values):
            labels.append(item.get(self.label_field) if self.label_field and isinstance(item, dict) else None)
            value = item
            if self.item_field is not None:
                value = item.get(self.item_field, MISSING) if isinstance(item, dict) else MISSING
                if value is MISSING:
                    misses.append(f"{side}[{index}] (no `{self.item_field}`)")
                    continue
            result = self.parse(value)
            if isinstance(result, str):
                misses.append(f"{side}[{index}] ({result})")
                continue
            usable.append(index)
            parsed.append(result)
        return usable, parsed, labels

    def _list(self, where: str, expected: list[Any], candidate: Any) -> EvaluatorResult:
        import numpy as np

        misses: list[str] = []
        if not isinstance(candidate, list):
            misses.append(f"{where} ({'missing' if candidate is MISSING or candidate is None else 'not a list'})")
            candidate = []
        rows, want, want_labels = self._items(expected, "expected", misses)
        cols, got, got_labels = self._items(candidate, "candidate", misses)
        shape = (len(expected), len(candidate))
        raw, similarity, accepted = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=bool)
        if want and got:
            measured = self.measure(want, got)
            index = np.ix_(rows, cols)
            for full, part in zip((raw, similarity, accepted), measured):
                full[index] = part
        if self.label_field:
            same = np.array([[a == b for b in got_labels] for a in want_labels], dtype=bool).reshape(shape)
            similarity, accepted = np.where(same, similarity, 0.0), accepted & same
        # index pairs by position whatever the similarity; greedy/optimal only pair accepted items
        scores = similarity if self.matching == "index" else np.where(accepted, similarity, -1.0)
        pairs = pair(scores, self.matching, 0.0)
        hits_pairs = [(i, j, s) for i, j, s in pairs if accepted[i, j]]
        longer = max(shape)
        score = sum(s for _, _, s in pairs) / longer if longer else 1.0
        metrics = self._metrics(hits_pairs, want_labels, got_labels)
        totals = metrics_row(Counter({k: sum(m[k] for m in metrics.values()) for k in ("tp", "fp", "fn")}))
        matched_e = {i for i, _, _ in hits_pairs}
        matched_c = {j for _, j, _ in hits_pairs}
        missed_e, extra_c = unmatched(shape[0], matched_e), unmatched(shape[1], matched_c)
        if missed_e:
            misses.append(f"{len(missed_e)} expected {self.unit}(es) unmatched: {_indexes(missed_e)}")
        if extra_c:
            misses.append(f"{len(extra_c)} extra candidate {self.unit}(es): {_indexes(extra_c)}")
        measures = [float(raw[i, j]) for i, j, _ in hits_pairs]
        details: dict[str, Any] = {
            "pairs": [{"expected": i, "candidate": j, self.measure_name: round(float(raw[i, j]), 6)} for i, j, _ in pairs][: self.max_rows],
            "unmatched_expected": missed_e[: self.max_rows],
            "unmatched_candidate": extra_c[: self.max_rows],
            f"mean_{self.measure_name}": sum(measures) / len(measures) if measures else None,
            "precision": totals["precision"], "recall": totals["recall"], "f1": totals["f1"],
            "metrics": metrics,
        }
        cut = {"pairs": len(pairs), "unmatched_expected": len(missed_e), "unmatched_candidate": len(extra_c)}
        cut = {key: n - self.max_rows for key, n in cut.items() if n > self.max_rows}
        if cut:
            details["cut"] = cut
        tp = len(hits_pairs)
        verdict: Verdict = "pass" if not missed_e and not extra_c else "fail" if not tp else "partial"
        reasoning = f"{tp} of {shape[0]} expected matched ({self.matching}), {len(extra_c)} extra; score {score:.3f}"
        return self.result(score, verdict, misses=misses, reasoning=reasoning, details=details)

    def _metrics(self, pairs: list[tuple[int, int, float]], want_labels: list[Any], got_labels: list[Any]) -> dict[str, dict[str, int]]:
        if not self.label_field:
            tp = len(pairs)
            return {ALL_ITEMS: {"tp": tp, "fp": len(got_labels) - tp, "fn": len(want_labels) - tp}}
        counts: dict[str, Counter[str]] = {}
        for label in want_labels:
            counts.setdefault(str(label), Counter())["fn"] += 1
        for label in got_labels:
            counts.setdefault(str(label), Counter())["fp"] += 1
        for i, _, _ in pairs:
            row = counts[str(want_labels[i])]
            row["tp"] += 1
            row["fn"] -= 1
            row["fp"] -= 1
        return {label: {"tp": c["tp"], "fp": c["fp"], "fn": c["fn"]} for label, c in counts.items()}


def _indexes(indexes: list[int], shown: int = 10) -> str:
    text = ", ".join(map(str, indexes[:shown]))
    return text + (f", ... ({len(indexes) - shown} more)" if len(indexes) > shown else "")


class IoUScore(_Spatial):
    """Boxes compared by intersection over union. Verdict: pass when IoU >= threshold (lists: every box matched)."""

    type: Literal["iou_score"]
    format: geometry.BoxFormat = Field(
        "xyxy", description="Box format unless a box says {format, coordinates}: xyxy corners, xywh or coco ([x, y, width, "
        "height] in image coordinates; coco also reads list items' `bbox` and pairs them by `category_id` unless "
        "item_field and label_field say otherwise), or polygon.",
    )
    threshold: float = Field(0.5, gt=0, le=1, description="IoU a pair needs to match (and a single box to pass).")
    polygon_mode: geometry.PolygonMode = Field("exact", description="exact polygon IoU (shapely) or their bounding boxes.")

    type_name = "iou_score"
    unit = "box"
    measure_name = "iou"

    @model_validator(mode="after")
    def _coco_fields(self) -> IoUScore:
        """format: coco reads COCO detection annotations and results as they are written."""
        if self.format == "coco":
            if self.item_field is None:
                self.item_field = "bbox"
            if self.label_field is None:
                self.label_field = "category_id"
        return self

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found = super().warnings()
        if self.format == "polygon" and self.polygon_mode == "exact" and (message := missing_warning("shapely", "exact polygon IoU")):
            found.append((("format",), message))
        return found

    def parse(self, value: Any) -> geometry.Box | str:
        box = geometry.parse_box(value, self.format)
        if isinstance(box, geometry.Poly) and self.polygon_mode == "exact" and not geometry.is_valid_polygon(box):
            return "invalid polygon (self-intersecting)"
        return box

    def is_single(self, value: Any) -> bool:
        if isinstance(value, dict):
            return "coordinates" in value
        if not isinstance(value, list) or not value:
            return False
        if self.format == "polygon":
            return isinstance(value[0], list) and bool(value[0]) and not isinstance(value[0][0], (list, dict))
        return not isinstance(value[0], (list, dict))

    def measure_one(self, expected: Any, candidate: Any) -> tuple[float | str, float, bool]:
        value = geometry.iou(expected, candidate, self.polygon_mode)
        if isinstance(value, str):
            return value, 0.0, False
        return value, value, value >= self.threshold

    def measure(self, expected: list[Any], candidate: list[Any]) -> tuple[Any, Any, Any]:
        matrix = geometry.iou_matrix(expected, candidate, self.polygon_mode)
        return matrix, matrix, matrix >= self.threshold


class Distance(_Spatial):
    """Points or vectors compared by distance. Score: 1 - distance / max_distance (at least 0). Verdict: pass when distance <= threshold."""

    type: Literal["distance"]
    metric: geometry.Metric = "euclidean"
    max_distance: float | None = Field(
        None, gt=0, description="The distance that scores 0 (required for euclidean and manhattan; cosine default 1)."
    )
    threshold: float | None = Field(
        None, ge=0, description="Largest distance that passes (and pairs); default half of max_distance, a score of 0.5."
    )

    type_name = "distance"
    unit = "point"
    measure_name = "distance"

    @model_validator(mode="after")
    def _needs_scale(self) -> Distance:
        if self.max_distance is None and self.metric != "cosine":
            raise ValueError(f"`max_distance` is required for metric {self.metric} (the distance that scores 0)")
        return self

    @property
    def scale(self) -> float:
        return self.max_distance if self.max_distance is not None else 1.0

    def warnings(self) -> list[tuple[tuple[str | int, ...], str]]:
        found = super().warnings()
        if self.threshold is not None and self.threshold >= self.scale:
            found.append((("threshold",), f"threshold {self.threshold:g} >= max_distance {self.scale:g}: a score of 0 passes"))
        return found

    def parse(self, value: Any) -> tuple[float, ...] | str:
        return geometry.parse_point(value)

    def is_single(self, value: Any) -> bool:
        if isinstance(value, dict):
            return "x" in value and "y" in value
        return isinstance(value, list) and bool(value) and not isinstance(value[0], (list, dict))

    @property
    def limit(self) -> float:
        """Like iou_score's 0.5 by default: a point must score at least 0.5 to pass, never 0."""
        return self.threshold if self.threshold is not None else self.scale / 2

    def measure_one(self, expected: Any, candidate: Any) -> tuple[float | str, float, bool]:
        value = geometry.distance(expected, candidate, self.metric)
        if isinstance(value, str):
            return value, 0.0, False
        return value, max(0.0, 1.0 - value / self.scale), value <= self.limit

    def measure(self, expected: list[Any], candidate: list[Any]) -> tuple[Any, Any, Any]:
        import numpy as np

        distances = np.array(
            [[_or_inf(geometry.distance(a, b, self.metric)) for b in candidate] for a in expected], dtype=float
        )
        similarity = np.clip(1.0 - distances / self.scale, 0.0, 1.0)
        return distances, similarity, distances <= self.limit


def _or_inf(value: float | str) -> float:
    """A pair with no distance (dimension mismatch) never matches."""
    return float("inf") if isinstance(value, str) else value
