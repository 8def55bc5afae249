"""COCO ground truth (annotations.json) and detection results (detections.json) as one case per
image: `expected` the image's annotations, `output` its detections, both as COCO writes them
(`bbox: [x, y, width, height]` in pixels, `category_id`). Writes cases.jsonl next to this file.

    python to_cases.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent


def cases(annotations: dict, detections: list) -> list[dict]:
    rows = []
    for image in annotations["images"]:
        truth = [a for a in annotations["annotations"] if a["image_id"] == image["id"]]
        found = [d for d in detections if d["image_id"] == image["id"]]
        rows.append({
            "id": image["file_name"].rsplit(".", 1)[0],
            "input": {"image_id": image["id"], "file_name": image["file_name"], "width": image["width"], "height": image["height"]},
            "expected": {"annotations": truth},
            "output": {"annotations": found},
        })
    return rows


if __name__ == "__main__":
    rows = cases(json.loads((HERE / "annotations.json").read_text()), json.loads((HERE / "detections.json").read_text()))
    (HERE / "cases.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
