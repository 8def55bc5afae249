"""Geometry speed: IoU per box pair, the vectorized IoU matrix, and pairing 200 x 200 boxes.

    python benchmarks/bench_geometry.py

Prints microseconds per operation for: one xyxy IoU (pure Python), one exact polygon IoU
(shapely), an N x N IoU matrix with numpy, and a whole iou_score evaluation of 200 expected
against 200 shuffled, jittered candidate boxes with greedy and optimal pairing.
"""

from __future__ import annotations

import random
import time
import timeit
from pathlib import Path

from agenteval import geometry
from agenteval.evaluators import EvalContext
from agenteval.evaluators.geometry import IoUScore


def boxes(count: int, rng: random.Random) -> list[list[float]]:
    out = []
    for _ in range(count):
        x, y = rng.uniform(0, 2000), rng.uniform(0, 2000)
        out.append([x, y, x + rng.uniform(10, 200), y + rng.uniform(10, 80)])
    return out


def jitter(values: list[list[float]], rng: random.Random) -> list[list[float]]:
    moved = [[v + rng.uniform(-3, 3) for v in b] for b in values]
    rng.shuffle(moved)
    return moved


def per_call(function, number: int) -> float:
    return timeit.timeit(function, number=number) / number * 1e6


def main() -> None:
    rng = random.Random(5)
    a, b = (geometry.parse_box(v) for v in boxes(2, rng))
    square = geometry.parse_box([[0, 0], [2, 0], [2, 2], [0, 2]], "polygon")
    diamond = geometry.parse_box([[1, -0.4], [2.4, 1], [1, 2.4], [-0.4, 1]], "polygon")
    print("| operation | µs |")
    print("|---|---:|")
    print(f"| IoU, one xyxy pair | {per_call(lambda: geometry.rect_iou(a, b), 200_000):.2f} |")
    print(f"| parse + IoU, one xyxy pair | {per_call(lambda: geometry.rect_iou(geometry.parse_box([0, 0, 10, 10]), geometry.parse_box([5, 5, 15, 15])), 100_000):.2f} |")
    print(f"| IoU, one polygon pair (exact, shapely) | {per_call(lambda: geometry.iou(square, diamond), 5_000):.1f} |")
    for size in (200, 1000):
        rects = [geometry.parse_box(v) for v in boxes(size, rng)]
        seconds = per_call(lambda: geometry.iou_matrix(rects, rects), 20) / 1e6
        print(f"| IoU matrix {size} x {size} (numpy) | {seconds * 1e6:,.0f} ({seconds * 1e9 / size / size:.1f} ns per pair) |")
    expected = boxes(200, rng)
    candidate = jitter(expected, rng)
    for mode in ("greedy", "optimal"):
        evaluator = IoUScore.model_validate({"type": "iou_score", "path": "b", "matching": mode})
        ctx = EvalContext("c", None, {"b": expected}, {"b": candidate}, {}, Path("."))
        result = evaluator.evaluate(ctx)  # warm up imports
        assert result.details["metrics"]["(all)"]["tp"] == 200, result.details["metrics"]
        started = time.perf_counter()
        for _ in range(10):
            evaluator.evaluate(ctx)
        print(f"| iou_score, 200 vs 200 boxes, {mode} | {(time.perf_counter() - started) / 10 * 1e6:,.0f} |")


if __name__ == "__main__":
    main()
