"""Pure geometry: boxes in xyxy / xywh (COCO's `bbox`) / polygon form, IoU, and point distances.

A box is parsed once into a `Rect` (x1, y1, x2, y2) or a `Poly` (points); anything degenerate
(wrong arity, non-numbers, NaN, inverted corners, zero area, too few points, self-intersection)
comes back as a reason string instead, so evaluators turn it into a miss, never an exception.
Floats at both ends of their range count as degenerate too: an area or a distance that overflows
(`coordinates overflow`) or underflows to 0 (`zero area`), so every IoU and distance is finite.
Polygon IoU is exact (shapely); `polygon_mode="bbox"` uses the polygons' bounding boxes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

BoxFormat = Literal["xyxy", "xywh", "coco", "polygon"]  # coco: COCO's `bbox`, [x, y, width, height]
_WIDTH_HEIGHT = ("xywh", "coco")
PolygonMode = Literal["exact", "bbox"]
Metric = Literal["euclidean", "manhattan", "cosine"]
OVERFLOW = "coordinates overflow"
_INF = math.inf
_SMALL, _LARGE = 1e-150, 1e150  # vector norms whose products stay exact enough in floats


@dataclass(frozen=True, slots=True)
class Rect:
    x1: float
    y1: float
    x2: float
    y2: float

    @property
    def area(self) -> float:
        return (self.x2 - self.x1) * (self.y2 - self.y1)


@dataclass(frozen=True, slots=True)
class Poly:
    points: tuple[tuple[float, float], ...]

    def bounds(self) -> Rect:
        xs = [x for x, _ in self.points]
        ys = [y for _, y in self.points]
        return Rect(min(xs), min(ys), max(xs), max(ys))


Box = Rect | Poly


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_box(value: Any, default_format: BoxFormat = "xyxy") -> Box | str:
    """A box, or why it is not one. `{"format": ..., "coordinates": ...}` sets the format per box."""
    fmt: Any = default_format
    if isinstance(value, dict):
        if "coordinates" not in value:
            return "box object without `coordinates`"
        fmt, value = value.get("format", default_format), value["coordinates"]
        if fmt not in ("xyxy", "xywh", "coco", "polygon"):
            return f"unknown box format {fmt!r}"
    if not isinstance(value, (list, tuple)):
        return "not a box"
    if fmt == "polygon":
        return _parse_polygon(value)
    if len(value) != 4:
        return f"wrong arity (expected 4 numbers, got {len(value)})"
    coordinates = _coordinates(value)
    if isinstance(coordinates, str):
        return coordinates
    x1, y1, a, b = coordinates
    x2, y2 = (x1 + a, y1 + b) if fmt in _WIDTH_HEIGHT else (a, b)
    if x2 < x1 or y2 < y1:
        return "negative width or height" if fmt in _WIDTH_HEIGHT else "inverted corners"
    if x2 == x1 or y2 == y1:
        return "zero area"
    area = (x2 - x1) * (y2 - y1)
    if area == _INF or area != area:  # a corner beyond the float range after xywh, or a width that is
        return OVERFLOW
    if area == 0.0:  # subnormal sides: the area underflows, and no ratio of areas exists
        return "zero area"
    return Rect(x1, y1, x2, y2)


def _coordinates(value: Any) -> tuple[float, ...] | str:
    """The numbers as floats, or why they are not coordinates (an int beyond the float range overflows)."""
    floats = []
    for item in value:
        if not _number(item):
            return "coordinates are not all numbers"
        try:
            number = float(item)
        except OverflowError:
            return OVERFLOW
        if number - number != 0.0:  # NaN or an infinity
            return "NaN or infinite coordinate"
        floats.append(number)
    return tuple(floats)


def _parse_polygon(value: Any) -> Poly | str:
    points = []
    for point in value:
        if not isinstance(point, (list, tuple)) or len(point) != 2 or not all(_number(v) for v in point):
            return "polygon points must be [x, y] pairs of numbers"
        xy = _coordinates(point)
        if isinstance(xy, str):
            return xy
        points.append(xy)
    if len(points) < 3:
        return f"polygon needs at least 3 points, got {len(points)}"
    if _collinear(points):
        return "zero area"
    polygon = Poly(tuple(points))
    bounds = polygon.bounds()
    if not bounds.area < _INF:
        return OVERFLOW
    if bounds.area == 0.0:
        return "zero area"
    return polygon


def _collinear(points: list[tuple[float, float]]) -> bool:
    (x0, y0), (x1, y1) = points[0], points[1]
    return all((x1 - x0) * (y - y0) - (y1 - y0) * (x - x0) == 0 for x, y in points[2:])


def rect_iou(a: Rect, b: Rect) -> float:
    width = min(a.x2, b.x2) - max(a.x1, b.x1)
    height = min(a.y2, b.y2) - max(a.y1, b.y1)
    if width <= 0 or height <= 0:
        return 0.0
    intersection = width * height
    area_a, area_b = a.area, b.area
    union = area_a + area_b - intersection
    if union == _INF:  # two areas near the float maximum: the same ratio, scaled down
        scale = max(area_a, area_b)
        return (intersection / scale) / (area_a / scale + area_b / scale - intersection / scale)
    return intersection / union if union > 0 else 0.0


def iou(a: Box, b: Box, polygon_mode: PolygonMode = "exact") -> float | str:
    """IoU in [0, 1], or why it cannot be computed (an invalid polygon, coordinates that overflow)."""
    if isinstance(a, Rect) and isinstance(b, Rect):
        value = rect_iou(a, b)
    elif polygon_mode == "bbox":
        value = rect_iou(_as_rect(a), _as_rect(b))
    else:
        shape_a, shape_b = _shape(a), _shape(b)
        if not (shape_a.is_valid and shape_b.is_valid):
            return "invalid polygon (self-intersecting)"
        intersection = shape_a.intersection(shape_b).area
        union = shape_a.area + shape_b.area - intersection
        value = intersection / union if union > 0 else 0.0
    return value if 0.0 <= value <= 1.0 else OVERFLOW if value != value or value > 1.0 else 0.0


def is_valid_polygon(polygon: Poly) -> bool:
    return bool(_shape(polygon).is_valid)


def _as_rect(box: Box) -> Rect:
    return box if isinstance(box, Rect) else box.bounds()


def _shape(box: Box) -> Any:
    from agenteval.extras import require

    shapes = require("shapely.geometry", "exact polygon IoU")
    if isinstance(box, Rect):
        return shapes.box(box.x1, box.y1, box.x2, box.y2)
    return shapes.Polygon(box.points)


def iou_matrix(expected: list[Box], candidate: list[Box], polygon_mode: PolygonMode = "exact") -> Any:
    """IoU of every expected box with every candidate box, vectorized with numpy (shapely for polygons)."""
    import numpy as np

    if not expected or not candidate:
        return np.zeros((len(expected), len(candidate)))
    if polygon_mode == "bbox" or all(isinstance(b, Rect) for b in (*expected, *candidate)):
        return rect_iou_matrix(
            np.array([_corners(_as_rect(b)) for b in expected]), np.array([_corners(_as_rect(b)) for b in candidate])
        )
    from agenteval.extras import require

    shapely = require("shapely", "exact polygon IoU")
    shapes_a = np.array([_shape(b) for b in expected], dtype=object)
    shapes_b = np.array([_shape(b) for b in candidate], dtype=object)
    valid_a, valid_b = shapely.is_valid(shapes_a), shapely.is_valid(shapes_b)
    intersection = shapely.area(shapely.intersection(shapes_a[:, None], shapes_b[None, :]))
    with np.errstate(all="ignore"):
        union = shapely.area(shapes_a)[:, None] + shapely.area(shapes_b)[None, :] - intersection
        result = np.where(union > 0, intersection / union, 0.0)
    usable = valid_a[:, None] & valid_b[None, :] & (result >= 0.0) & (result <= 1.0)  # NaN (overflow) never pairs
    return np.where(usable, result, 0.0)


def _corners(rect: Rect) -> tuple[float, float, float, float]:
    return (rect.x1, rect.y1, rect.x2, rect.y2)


def rect_iou_matrix(a: Any, b: Any) -> Any:
    """IoU of (N, 4) xyxy boxes against (M, 4) xyxy boxes: an (N, M) array."""
    import numpy as np

    width = np.clip(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    height = np.clip(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    intersection = width * height
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    if float(area_a.max()) + float(area_b.max()) == _INF:  # a union may overflow: the same ratios, scaled per pair
        with np.errstate(all="ignore"):
            scale = np.maximum(area_a[:, None], area_b[None, :])
            share = intersection / scale
            return share / (area_a[:, None] / scale + area_b[None, :] / scale - share)
    return intersection / (area_a[:, None] + area_b[None, :] - intersection)


def parse_point(value: Any) -> tuple[float, ...] | str:
    if isinstance(value, dict) and "x" in value and "y" in value:
        value = [value["x"], value["y"], *([value["z"]] if "z" in value else [])]
    if not isinstance(value, (list, tuple)) or not value:
        return "not a point or vector"
    return _coordinates(value)


def distance(a: tuple[float, ...], b: tuple[float, ...], metric: Metric = "euclidean") -> float | str:
    """The distance, or why there is none (dimension mismatch, a distance beyond the float range).
    Cosine distance with a zero vector is 1."""
    if len(a) != len(b):
        return f"dimension mismatch ({len(a)} vs {len(b)})"
    if metric == "euclidean":
        value = math.dist(a, b)
    elif metric == "manhattan":
        value = sum(abs(x - y) for x, y in zip(a, b))
    else:
        return _cosine_distance(a, b)
    return value if value < _INF else OVERFLOW


def _cosine_distance(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    norm_a, norm_b = math.hypot(*a), math.hypot(*b)
    if norm_a == 0 or norm_b == 0:
        return 1.0
    if not (_SMALL < norm_a < _LARGE and _SMALL < norm_b < _LARGE):  # products would under- or overflow:
        a, b = _rescaled(a), _rescaled(b)  # the same angle, from vectors scaled to a largest component of 1
        norm_a, norm_b = math.hypot(*a), math.hypot(*b)
    product = norm_a * norm_b
    return min(2.0, max(0.0, 1.0 - sum(x * y for x, y in zip(a, b)) / product))


def _rescaled(vector: tuple[float, ...]) -> tuple[float, ...]:
    largest = max(abs(x) for x in vector)
    return tuple(x / largest for x in vector)
