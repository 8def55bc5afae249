"""COCO detection data (`bbox: [x, y, width, height]` in image coordinates, category ids) read by
iou_score with `format: coco`, checked against pycocotools' own IoU on the same boxes."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys

import pytest

import agenteval
from agenteval import geometry
from conftest import EXAMPLES, read_jsonl, run_cli

mask = pytest.importorskip("pycocotools.mask", reason="pycocotools is in the dev extra: pip install -e '.[dev]'")
COCO = EXAMPLES / "coco-detection"


def test_the_example_cases_are_what_to_cases_writes_from_the_coco_files(tmp_path):
    copy = tmp_path / "coco"
    shutil.copytree(COCO, copy)
    (copy / "cases.jsonl").unlink()
    done = subprocess.run([sys.executable, "to_cases.py"], cwd=copy, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (copy / "cases.jsonl").read_text() == (COCO / "cases.jsonl").read_text()


def test_the_example_pairs_boxes_by_category_with_cocos_iou(tmp_path):
    done = run_cli("run", COCO, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 1, done.stderr
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    assert {case: line["verdict"] for case, line in lines.items()} == {"street-001": "pass", "street-002": "pass", "street-003": "fail"}
    checked = 0
    for line in lines.values():
        truth, found = line["expected"]["annotations"], line["output"]["annotations"]
        for pair in line["evaluator_results"][0]["details"]["pairs"]:
            gt, dt = truth[pair["expected"]], found[pair["candidate"]]
            assert gt["category_id"] == dt["category_id"]  # paired within a category only
            reference = mask.iou([dt["bbox"]], [gt["bbox"]], [0])[0][0]
            assert pair["iou"] == pytest.approx(reference, abs=1e-6)  # details keep 6 decimals
            checked += 1
    assert checked == 5  # street-003's person is found as a car: no pair across categories
    per_category = json.loads((tmp_path / "r.summary.json").read_text())["dataset_metrics"]["boxes"]["attributes"]
    assert {category: (row["tp"], row["fp"], row["fn"]) for category, row in per_category.items()} == {
        "1": (3, 0, 1),  # persons: street-003's is missed
        "3": (2, 1, 0),  # cars: street-003's person taken for one
    }


def test_box_iou_equals_pycocotools_on_random_boxes():
    rng = random.Random(29)
    boxes = [[rng.uniform(0, 600), rng.uniform(0, 400), rng.uniform(1, 200), rng.uniform(1, 200)] for _ in range(60)]
    ground, detected = boxes[:30], boxes[30:]
    ours = geometry.iou_matrix([geometry.parse_box(b, "coco") for b in detected], [geometry.parse_box(b, "coco") for b in ground])
    reference = mask.iou(detected, ground, [0] * len(ground))
    assert ours.shape == reference.shape == (30, 30)
    assert (abs(ours - reference) < 1e-12).all()
    assert (reference > 0).sum() > 10  # overlapping pairs were compared, not only disjoint ones
    for dt, gt in zip(detected, ground):
        single = geometry.iou(geometry.parse_box(dt, "coco"), geometry.parse_box(gt, "coco"))
        assert single == pytest.approx(mask.iou([dt], [gt], [0])[0][0], abs=1e-12)


def test_coco_format_defaults_and_explicit_fields():
    gt = [{"bbox": [10, 10, 20, 20], "category_id": 1}, {"bbox": [50, 50, 10, 10], "category_id": 2}]
    dt = [{"bbox": [50, 50, 10, 10], "category_id": 1, "score": 0.9}, {"bbox": [10, 10, 20, 20], "category_id": 1, "score": 0.8}]
    (by_category,) = list(agenteval.evaluate([{"id": "i", "expected": gt, "output": dt}], [{"type": "iou_score", "format": "coco"}]))
    assert by_category.score == 0.5  # the category-2 box is not taken by a category-1 detection at the same place
    (any_label,) = list(agenteval.evaluate(
        [{"id": "i", "expected": gt, "output": dt}], [{"type": "iou_score", "format": "coco", "label_field": "none"}],
    ))
    assert any_label.score == 1.0  # a label field no item has: every box pairs with every other
    (single,) = list(agenteval.evaluate([{"id": "s", "expected": [0, 0, 10, 10], "output": [5, 0, 10, 10]}],
                                        [{"type": "iou_score", "format": "coco"}]))
    assert single.score == pytest.approx(mask.iou([[5, 0, 10, 10]], [[0, 0, 10, 10]], [0])[0][0])


def test_hostile_coco_boxes_are_misses_never_crashes():
    gt = [{"bbox": [0, 0, 10, 10], "category_id": 1}, {"bbox": [20, 20, 5, 5], "category_id": 1}]
    dt = [
        {"bbox": [0, 0, -10, 10], "category_id": 1}, {"bbox": [float("nan"), 0, 1, 1], "category_id": 1},
        {"bbox": [0, 0, 1e308, 1e308], "category_id": 1}, {"category_id": 1}, {"bbox": "0 0 1 1", "category_id": 1},
    ]
    (result,) = list(agenteval.evaluate([{"id": "h", "expected": gt, "output": dt}], [{"type": "iou_score", "format": "coco"}]))
    assert (result.verdict, result.score) == ("fail", 0.0)
    assert result.evaluator_results[0].misses[:5] == [
        "candidate[0] (negative width or height)", "candidate[1] (NaN or infinite coordinate)",
        "candidate[2] (coordinates overflow)", "candidate[3] (no `bbox`)", "candidate[4] (not a box)",
    ]
