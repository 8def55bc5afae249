"""IoU, distances, list pairing and the layout example."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from agenteval import geometry
from agenteval.evaluators import EvalContext
from agenteval.evaluators.geometry import Distance, IoUScore
from agenteval.pairing import greedy_pairs, index_pairs, optimal_pairs
from agenteval.suite.loader import SuiteInvalid, load_suite

from conftest import EXAMPLES, read_jsonl, run_cli, write


def box(*values, fmt="xyxy"):
    parsed = geometry.parse_box(list(values) if fmt != "polygon" else values[0], fmt)
    assert not isinstance(parsed, str), parsed
    return parsed


def ctx(output, expected):
    return EvalContext("c", None, expected, output, {}, Path("."))


def iou_eval(**config):
    return IoUScore.model_validate({"type": "iou_score", **config})


# --- IoU values --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((0, 0, 2, 2), (0, 0, 2, 2), 1.0),          # identical
        ((0, 0, 1, 1), (2, 2, 3, 3), 0.0),          # disjoint
        ((0, 0, 1, 1), (1, 0, 2, 1), 0.0),          # touching edges
        ((0, 0, 4, 4), (1, 1, 3, 3), 0.25),         # contained
        ((0, 0, 2, 2), (1, 0, 3, 2), 1 / 3),        # half overlap
    ],
)
def test_known_iou_values(a, b, expected):
    assert geometry.rect_iou(box(*a), box(*b)) == pytest.approx(expected)


def test_xywh_and_polygon_formats_describe_the_same_box():
    xyxy = box(10, 20, 50, 80)
    assert box(10, 20, 40, 60, fmt="xywh") == xyxy
    square = box([[10, 20], [50, 20], [50, 80], [10, 80]], fmt="polygon")
    assert geometry.iou(square, xyxy) == pytest.approx(1.0)
    assert geometry.iou(square, box(30, 20, 70, 80)) == pytest.approx(1 / 3)


def test_rotated_square_iou_is_one_over_root_two():
    square = box([[0, 0], [2, 0], [2, 2], [0, 2]], fmt="polygon")
    r = math.sqrt(2)
    diamond = box([[1, 1 - r], [1 + r, 1], [1, 1 + r], [1 - r, 1]], fmt="polygon")
    assert geometry.iou(square, diamond) == pytest.approx(1 / math.sqrt(2))
    assert geometry.iou(square, diamond, "bbox") == pytest.approx(4 / (2 * r) ** 2)


def _raster_iou(a, b, step=0.005):
    """An independent IoU: count grid cells inside each polygon (even-odd ray casting in numpy)."""
    points = np.array(a + b)
    xs = np.arange(points[:, 0].min(), points[:, 0].max(), step) + step / 2
    ys = np.arange(points[:, 1].min(), points[:, 1].max(), step) + step / 2
    gx, gy = np.meshgrid(xs, ys)

    def inside(polygon):
        result = np.zeros(gx.shape, dtype=bool)
        for (x1, y1), (x2, y2) in zip(polygon, polygon[1:] + polygon[:1]):
            crosses = (y1 > gy) != (y2 > gy)
            with np.errstate(divide="ignore", invalid="ignore"):
                at = (x2 - x1) * (gy - y1) / (y2 - y1) + x1
            result ^= crosses & (gx < at)
        return result

    in_a, in_b = inside(a), inside(b)
    return (in_a & in_b).sum() / (in_a | in_b).sum()


def test_rotated_polygon_iou_matches_an_independent_raster_computation():
    triangle = [(0.0, 0.0), (4.0, 0.0), (1.0, 3.0)]
    angle = math.radians(30)
    rectangle = [(1 + x * math.cos(angle) - y * math.sin(angle), 0.5 + x * math.sin(angle) + y * math.cos(angle))
                 for x, y in [(0, 0), (3, 0), (3, 1.5), (0, 1.5)]]
    exact = geometry.iou(box([list(p) for p in triangle], fmt="polygon"), box([list(p) for p in rectangle], fmt="polygon"))
    assert exact == pytest.approx(_raster_iou(triangle, rectangle), abs=2e-3)
    assert 0.2 < exact < 0.6


@pytest.mark.parametrize(
    ("value", "fmt", "reason"),
    [
        ([1, 2, 3], "xyxy", "wrong arity (expected 4 numbers, got 3)"),
        ([3, 0, 1, 2], "xyxy", "inverted corners"),
        ([0, 0, 0, 5], "xyxy", "zero area"),
        ([0, 0, math.nan, 1], "xyxy", "NaN or infinite coordinate"),
        ([0, 0, "1", 1], "xyxy", "coordinates are not all numbers"),
        ([0, 0, True, 1], "xyxy", "coordinates are not all numbers"),
        ([0, 0, -1, 1], "xywh", "negative width or height"),
        ([[0, 0], [1, 1]], "polygon", "polygon needs at least 3 points, got 2"),
        ([[0, 0], [1, 1], [2, 2]], "polygon", "zero area"),
        ([[0, 0], [1], [2, 2]], "polygon", "polygon points must be [x, y] pairs of numbers"),
        ("0,0,1,1", "xyxy", "not a box"),
        ({"format": "xyxz", "coordinates": [0, 0, 1, 1]}, "xyxy", "unknown box format 'xyxz'"),
        ([0, 0, 5e-324, 5e-324], "xyxy", "zero area"),  # subnormal sides: the area underflows to 0
        ([-1e308, -1e308, 1e308, 1e308], "xyxy", "coordinates overflow"),  # the width is infinite
        ([0, 0, 1e308, 1e308], "xyxy", "coordinates overflow"),  # the area is infinite
        ([0, 0, 10**400, 1], "xyxy", "coordinates overflow"),  # an integer beyond the float range
        ([1e308, 0, 1e308, 1], "xywh", "coordinates overflow"),  # x + width is infinite
        ([[0, 0], [5e-324, 0], [0, 5e-324]], "polygon", "zero area"),
        ([[-1e308, 0], [1e308, 0], [0, 1e308]], "polygon", "coordinates overflow"),
    ],
)
def test_degenerate_boxes_are_reasons_not_exceptions(value, fmt, reason):
    assert geometry.parse_box(value, fmt) == reason


def test_boxes_with_areas_near_the_float_maximum_get_their_exact_iou():
    small, large = box(0, 0, 1e300, 1e8), box(0, 0, 1.3e300, 1.3e8)  # each area fits, their sum does not
    assert geometry.iou(small, large) == pytest.approx(1 / 1.69)
    assert geometry.iou_matrix([small], [large, small])[0].tolist() == pytest.approx([1 / 1.69, 1.0])
    result = iou_eval(path="b").evaluate(ctx({"b": [-1e308, -1e308, 1e308, 1e308]}, {"b": [0, 0, 1, 1]}))
    assert (result.score, result.verdict, result.misses) == (0.0, "fail", ["b (coordinates overflow)"])


def test_distances_that_overflow_are_misses_and_cosine_is_exact_for_tiny_and_huge_vectors():
    assert geometry.distance((1e308, 0.0), (-1e308, 0.0)) == "coordinates overflow"
    assert geometry.distance((1e308,), (-1e308,), "manhattan") == "coordinates overflow"
    assert geometry.distance((1.0, 0.0), (5e-324, 5e-324), "cosine") == pytest.approx(1 - math.sqrt(0.5))
    assert geometry.distance((1e308, 1e308), (1e308, -1e308), "cosine") == pytest.approx(1.0)
    assert geometry.distance((1e-320, 0.0), (1e300, 0.0), "cosine") == 0.0
    assert geometry.parse_point([10**400, 0]) == "coordinates overflow"
    far = Distance.model_validate({"type": "distance", "path": "p", "max_distance": 10}).evaluate(ctx({"p": [1e308, 0]}, {"p": [-1e308, 0]}))
    assert (far.score, far.verdict, far.misses) == (0.0, "fail", ["p (coordinates overflow)"])


def test_degenerate_candidate_scores_zero_with_a_clear_miss():
    result = iou_eval(path="b").evaluate(ctx({"b": [3, 0, 1, 2]}, {"b": [0, 0, 2, 2]}))
    assert (result.score, result.verdict, result.misses) == (0.0, "fail", ["b (inverted corners)"])
    missing = iou_eval(path="b").evaluate(ctx({}, {"b": [0, 0, 2, 2]}))
    assert missing.misses == ["b (missing)"]
    bowtie = iou_eval(path="b", format="polygon").evaluate(ctx({"b": [[0, 0], [2, 2], [2, 0], [0, 2]]}, {"b": [[0, 0], [2, 0], [2, 2], [0, 2]]}))
    assert bowtie.misses == ["b (invalid polygon (self-intersecting))"]


def test_single_box_passes_at_the_threshold_and_scores_its_iou():
    evaluator = iou_eval(path="b", threshold=0.3)
    result = evaluator.evaluate(ctx({"b": [1, 0, 3, 2]}, {"b": [0, 0, 2, 2]}))
    assert (result.score, result.verdict) == (pytest.approx(1 / 3), "pass")
    assert result.details["iou"] == pytest.approx(1 / 3)
    assert iou_eval(path="b").evaluate(ctx({"b": [1, 0, 3, 2]}, {"b": [0, 0, 2, 2]})).verdict == "fail"


def test_per_box_format_objects_override_the_evaluator_format():
    result = iou_eval(path="b").evaluate(ctx({"b": {"format": "xywh", "coordinates": [0, 0, 2, 2]}}, {"b": [0, 0, 2, 2]}))
    assert result.score == 1.0


def test_iou_matrix_matches_pairwise_iou():
    rng = np.random.default_rng(3)
    corners = rng.uniform(0, 100, size=(30, 2))
    sizes = rng.uniform(1, 40, size=(30, 2))
    boxes = [geometry.Rect(x, y, x + w, y + h) for (x, y), (w, h) in zip(corners, sizes)]
    matrix = geometry.iou_matrix(boxes[:12], boxes[12:])
    expected = [[geometry.rect_iou(a, b) for b in boxes[12:]] for a in boxes[:12]]
    assert np.allclose(matrix, expected)
    polygons = [geometry.Poly(((b.x1, b.y1), (b.x2, b.y1), (b.x2, b.y2), (b.x1, b.y2))) for b in boxes[:5]]
    assert np.allclose(geometry.iou_matrix(polygons, boxes[12:]), expected[:5])


# --- distances ---------------------------------------------------------------------------------

def test_distance_metrics():
    assert geometry.distance((0, 0), (3, 4)) == 5.0
    assert geometry.distance((0, 0), (3, 4), "manhattan") == 7.0
    assert geometry.distance((1, 0), (0, 1), "cosine") == pytest.approx(1.0)
    assert geometry.distance((1, 1), (2, 2), "cosine") == pytest.approx(0.0)
    assert geometry.distance((0, 0, 0), (1, 2, 2)) == 3.0


def test_zero_magnitude_cosine_distance_is_one():
    assert geometry.distance((0, 0), (1, 1), "cosine") == 1.0


def test_dimension_mismatch_is_a_miss_not_a_crash():
    evaluator = Distance.model_validate({"type": "distance", "path": "p", "max_distance": 10})
    result = evaluator.evaluate(ctx({"p": [1, 2, 3]}, {"p": [1, 2]}))
    assert (result.score, result.verdict, result.misses) == (0.0, "fail", ["p (dimension mismatch (2 vs 3))"])


def test_distance_score_and_verdict():
    evaluator = Distance.model_validate({"type": "distance", "path": "p", "max_distance": 50, "threshold": 10})
    near = evaluator.evaluate(ctx({"p": {"x": 3, "y": 4}}, {"p": [0, 0]}))
    assert (near.score, near.verdict, near.details["distance"]) == (0.9, "pass", 5.0)
    far = evaluator.evaluate(ctx({"p": [30, 40]}, {"p": [0, 0]}))
    assert (far.score, far.verdict) == (0.0, "fail")
    middle = evaluator.evaluate(ctx({"p": [12, 16]}, {"p": [0, 0]}))
    assert (middle.score, middle.verdict) == (pytest.approx(0.6), "fail")


def test_distance_passes_by_default_only_within_half_of_max_distance():
    evaluator = Distance.model_validate({"type": "distance", "path": "p", "max_distance": 10})
    outcomes = {d: evaluator.evaluate(ctx({"p": [d, 0]}, {"p": [0, 0]})) for d in (0, 4.999, 5, 5.001, 10, 12)}
    assert {d: (r.score, r.verdict) for d, r in outcomes.items()} == {
        0: (1.0, "pass"), 4.999: (pytest.approx(0.5001), "pass"), 5: (0.5, "pass"),
        5.001: (pytest.approx(0.4999), "fail"), 10: (0.0, "fail"), 12: (0.0, "fail"),
    }


def test_a_score_of_zero_never_passes_by_default_with_cosine():
    evaluator = Distance.model_validate({"type": "distance", "path": "v", "metric": "cosine"})
    orthogonal = evaluator.evaluate(ctx({"v": [0, 1]}, {"v": [1, 0]}))
    assert (orthogonal.score, orthogonal.verdict) == (0.0, "fail")
    sixty_degrees = evaluator.evaluate(ctx({"v": [0.5, math.sqrt(3) / 2]}, {"v": [1, 0]}))
    assert sixty_degrees.score == pytest.approx(0.5) and sixty_degrees.verdict == "pass"
    seventy_degrees = evaluator.evaluate(ctx({"v": [math.cos(math.radians(70)), math.sin(math.radians(70))]}, {"v": [1, 0]}))
    assert seventy_degrees.verdict == "fail"


def test_default_threshold_also_decides_which_points_of_a_list_pair():
    evaluator = Distance.model_validate({"type": "distance", "path": "p", "max_distance": 10})
    result = evaluator.evaluate(ctx({"p": [[0, 4], [100, 0]]}, {"p": [[0, 0], [100, 6]]}))
    assert result.details["pairs"] == [{"expected": 0, "candidate": 0, "distance": 4.0}]
    assert result.verdict == "partial"


def test_a_threshold_at_max_distance_is_a_load_time_warning(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: d
        evaluators: [{type: distance, path: p, max_distance: 10, threshold: 10}]
        cases: [{id: a, expected: {p: [0, 0]}}]
    """)
    assert [w.render() for w in load_suite(suite).warnings] == [
        f"{suite}:2: warning: evaluators[0].threshold: threshold 10 >= max_distance 10: a score of 0 passes",
        f"{suite}:3: warning: cases[0]: case 'a' has no `output`, which the recorded target answers with: the run fails it "
        "unless --predictions gives its answer",
    ]


def test_max_distance_is_required_except_for_cosine(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: d
        evaluators:
          - {type: distance, path: p}
          - {name: cos, type: distance, path: v, metric: cosine}
        cases: [{id: a, expected: {p: [0, 0]}}]
    """)
    with pytest.raises(SuiteInvalid) as caught:
        load_suite(suite)
    assert [p.render() for p in caught.value.problems] == [
        f"{suite}:3: evaluators[0]: `max_distance` is required for metric euclidean (the distance that scores 0)"
    ]


# --- lists -------------------------------------------------------------------------------------

EXPECTED = [[0, 0, 10, 10], [20, 0, 30, 10], [40, 0, 50, 10]]
REORDERED = [[40, 0, 50, 10], [0, 0, 10, 10], [21, 0, 31, 10]]


def test_index_pairing_fails_on_reordered_boxes_greedy_and_optimal_do_not():
    by_index = iou_eval(path="b", matching="index").evaluate(ctx({"b": REORDERED}, {"b": EXPECTED}))
    assert by_index.score == 0.0 and by_index.details["f1"] == 0.0
    for mode in ("greedy", "optimal"):
        result = iou_eval(path="b", matching=mode).evaluate(ctx({"b": REORDERED}, {"b": EXPECTED}))
        assert result.verdict == "pass", mode
        assert [(p["expected"], p["candidate"]) for p in result.details["pairs"]] == [(0, 1), (1, 2), (2, 0)]
        assert result.score == pytest.approx((1 + 90 / 110 + 1) / 3)
        assert (result.details["precision"], result.details["recall"], result.details["f1"]) == (1.0, 1.0, 1.0)


def test_index_pairing_is_the_seed_behaviour_mean_over_the_longer_list():
    result = iou_eval(path="b", matching="index").evaluate(ctx({"b": [[0, 0, 10, 10]]}, {"b": [[0, 0, 10, 10], [0, 0, 5, 5]]}))
    assert result.score == 0.5
    assert result.details["unmatched_expected"] == [1]


def test_greedy_strands_a_box_that_optimal_keeps():
    expected = {"b": [[60, 400, 540, 700], [60, 440, 540, 700]]}
    output = {"b": [[60, 410, 540, 700], [60, 380, 540, 640]]}
    greedy = iou_eval(path="b", matching="greedy", threshold=0.7).evaluate(ctx(output, expected))
    optimal = iou_eval(path="b", matching="optimal", threshold=0.7).evaluate(ctx(output, expected))
    assert greedy.details["metrics"] == {"(all)": {"tp": 1, "fp": 1, "fn": 1}}
    assert optimal.details["metrics"] == {"(all)": {"tp": 2, "fp": 0, "fn": 0}}
    assert (greedy.verdict, optimal.verdict) == ("partial", "pass")


def test_missing_extra_and_degenerate_items_are_reported():
    output = {"b": [[0, 0, 10, 10], [0, 0, 10, 10], [5, 5, 5, 9]]}
    result = iou_eval(path="b").evaluate(ctx(output, {"b": EXPECTED}))
    assert result.misses == [
        "candidate[2] (zero area)",
        "2 expected box(es) unmatched: 1, 2",
        "2 extra candidate box(es): 1, 2",
    ]
    assert result.details["metrics"] == {"(all)": {"tp": 1, "fp": 2, "fn": 2}}
    assert result.score == pytest.approx(1 / 3)
    assert result.verdict == "partial"


def test_labels_restrict_pairing_and_split_the_metrics():
    expected = {"r": [{"label": "table", "box": [0, 0, 10, 10]}, {"label": "figure", "box": [20, 0, 30, 10]}]}
    output = {"r": [{"label": "figure", "box": [0, 0, 10, 10]}, {"label": "figure", "box": [20, 0, 30, 10]}]}
    result = iou_eval(path="r", item_field="box", label_field="label").evaluate(ctx(output, expected))
    assert result.details["metrics"] == {"table": {"tp": 0, "fp": 0, "fn": 1}, "figure": {"tp": 1, "fp": 1, "fn": 0}}
    unlabeled = iou_eval(path="r", item_field="box").evaluate(ctx(output, expected))
    assert unlabeled.details["metrics"] == {"(all)": {"tp": 2, "fp": 0, "fn": 0}}


def test_candidate_list_missing_or_wrong_shape():
    for output, why in (({}, "missing"), ({"b": "boxes"}, "not a list")):
        result = iou_eval(path="b").evaluate(ctx(output, {"b": EXPECTED}))
        assert result.misses[0] == f"b ({why})" and result.score == 0.0
    empty = iou_eval(path="b").evaluate(ctx({"b": []}, {"b": []}))
    assert (empty.score, empty.verdict) == (1.0, "pass")


def test_points_lists_pair_within_the_threshold():
    evaluator = Distance.model_validate({"type": "distance", "path": "p", "max_distance": 10, "threshold": 2, "matching": "optimal"})
    result = evaluator.evaluate(ctx({"p": [[10, 10], [0, 1], [50, 50]]}, {"p": [[0, 0], [10, 10]]}))
    assert [(p["expected"], p["candidate"], p["distance"]) for p in result.details["pairs"]] == [(0, 1, 1.0), (1, 0, 0.0)]
    assert result.details["metrics"] == {"(all)": {"tp": 2, "fp": 1, "fn": 0}}
    assert result.score == pytest.approx((0.9 + 1.0) / 3)


def test_pairing_functions():
    matrix = [[0.9, 0.85], [0.85, 0.0]]
    assert index_pairs(matrix) == [(0, 0, 0.9), (1, 1, 0.0)]
    assert greedy_pairs(matrix, 0.5) == [(0, 0, 0.9)]
    assert optimal_pairs(matrix, 0.5) == [(0, 1, 0.85), (1, 0, 0.85)]


def test_details_are_bounded():
    boxes = [[i * 20, 0, i * 20 + 10, 10] for i in range(30)]
    result = iou_eval(path="b", max_rows=5).evaluate(ctx({"b": boxes}, {"b": boxes}))
    assert len(result.details["pairs"]) == 5 and result.details["cut"] == {"pairs": 25}


# --- the layout example ------------------------------------------------------------------------

def test_layout_example_shows_why_optimal_matching_matters(tmp_path):
    out = tmp_path / "r.jsonl"
    done = run_cli("run", EXAMPLES / "layout" / "suite.yaml", "-o", out)
    assert done.returncode == 1, done.stderr
    metrics = json.loads((tmp_path / "r.summary.json").read_text())["dataset_metrics"]
    totals = {name: (m["attributes"]["(all)"]["tp"], m["attributes"]["(all)"]["fp"], m["attributes"]["(all)"]["fn"])
              for name, m in metrics.items() if "(all)" in m["attributes"]}
    # 18 expected boxes, 19 predicted: index pairing collapses on the reordered page, greedy
    # strands the table body on page 4, optimal misses only the footnote of page 3
    assert totals["regions_index"] == (6, 13, 12)
    assert totals["regions_greedy"] == (16, 3, 2)
    assert totals["regions_optimal"] == (17, 2, 1)
    assert metrics["regions_by_label"]["attributes"]["footnote"] == {
        "tp": 0, "fp": 0, "fn": 1, "tn": 0, "precision": None, "recall": 0.0, "f1": 0.0}
    lines = {line["case_id"]: {e["name"]: e for e in line["evaluator_results"]} for line in read_jsonl(out)}
    assert lines["page-2-xywh-and-stamp"]["stamp"]["verdict"] == "pass"
    assert lines["page-2-xywh-and-stamp"]["stamp"]["details"]["iou"] == pytest.approx(0.88, abs=0.01)
    assert "stamp" not in lines["page-1-reordered"]
    assert lines["page-3-missing-and-extra"]["regions_optimal"]["misses"][0] == "candidate[4] (zero area)"


def test_missing_geometry_extra_gives_an_install_hint(tmp_path):
    """With shapely and scipy unimportable, the suite is refused when it loads, naming each evaluator
    and what to install; where it is built without the checks (as a Ray worker builds it), each
    case says so instead of crashing."""
    import subprocess
    import sys

    suite = write(tmp_path, "s.yaml", """
        name: g
        evaluators:
          - {name: poly, type: iou_score, path: p, format: polygon}
          - {name: pairs, type: iou_score, path: b, matching: optimal}
        cases:
          - id: a
            expected: {p: [[0, 0], [2, 0], [2, 2]], b: [[0, 0, 1, 1]]}
            output: {p: [[0, 0], [2, 0], [2, 2]], b: [[0, 0, 1, 1]]}
    """)
    blocker = tmp_path / "blocked"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['shapely'] = None\nsys.modules['scipy'] = None\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(blocker)}
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(suite), "-o", "-"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.splitlines()[:2] == [
        f"{suite}:3: evaluators[0].format: evaluator 'poly' (iou_score): exact polygon IoU needs shapely, which is not installed: pip install 'agenteval[geometry]'",
        f"{suite}:4: evaluators[1].matching: evaluator 'pairs' (iou_score): matching: optimal needs scipy, which is not installed: pip install 'agenteval[geometry]'",
    ]
    unchecked = (
        "import json, sys\nfrom pathlib import Path\nfrom agenteval.evaluators import EvalContext\n"
        "from agenteval.evaluators.base import run_evaluator\nfrom agenteval.suite.loader import load_definition\n"
        "loaded = load_definition(Path(sys.argv[1]))\ncase = {'p': [[0, 0], [2, 0], [2, 2]], 'b': [[0, 0, 1, 1]]}\n"
        "ctx = EvalContext('a', None, case, case, {}, loaded.base_dir)\n"
        "print(json.dumps([{'name': e.label, 'error': run_evaluator(e, ctx).error} for e in loaded.suite.evaluators]))"
    )
    done = subprocess.run([sys.executable, "-c", unchecked, str(suite)], capture_output=True, text=True, env=env, timeout=60)
    results = {e["name"]: e for e in json.loads(done.stdout)}
    assert results["poly"]["error"] == "exact polygon IoU needs shapely: pip install 'agenteval[geometry]'"
    assert results["pairs"]["error"] == "optimal matching needs scipy: pip install 'agenteval[geometry]'"
