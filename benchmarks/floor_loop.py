"""The floor that `agenteval run` is measured against: a bare Python loop over the same JSONL.

    python benchmarks/floor_loop.py tiny|invoices CASES.jsonl RESULTS.jsonl

It reads each line, makes the same RapidFuzz, number and date calls the suite's checks make
(lower-cased fuzzy texts, tolerances, dates in ISO or US form) and writes one JSON line per case
(its id, score, verdict and the score of each field), and nothing else: no validation, no
limits, no details. It prints the wall and CPU seconds of that loop (without the interpreter's
start-up and imports). `bench_floor.py` runs it side by side with the real CLI.
"""

from __future__ import annotations

import sys
import time
from datetime import date, datetime

import orjson
from rapidfuzz.distance import JaroWinkler, Levenshtein

lev = Levenshtein.normalized_similarity
jaro = JaroWinkler.normalized_similarity


def day(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        try:
            return datetime.strptime(text, "%m/%d/%Y").date()
        except ValueError:
            return None


def tiny(case: dict) -> dict[str, float]:
    out, exp = case["output"], case["expected"]
    return {
        "code": 1.0 if out["code"] == exp["code"] else 0.0,
        "name": lev(out["name"].lower(), exp["name"].lower()),
    }


def invoices(case: dict) -> dict[str, float]:
    out, exp = case["output"], case["expected"]
    oi, ei = out["invoice"], exp["invoice"]
    return {
        "invoice.number": 1.0 if oi["number"] == ei["number"] else 0.0,
        "invoice.currency": 1.0 if oi["currency"] == ei["currency"] else 0.0,
        "vendor.name": lev(out["vendor"]["name"].lower(), exp["vendor"]["name"].lower()),
        "buyer.name": jaro(out["buyer"]["name"].lower(), exp["buyer"]["name"].lower()),
        "invoice.total": 1.0 if abs(oi["total"] - ei["total"]) <= 0.01 else 0.0,
        "invoice.tax": 1.0 if abs(oi["tax"] - ei["tax"]) <= 0.02 * abs(ei["tax"]) else 0.0,
        "invoice.date": 1.0 if day(oi["date"]) == day(ei["date"]) else 0.0,
        "invoice.due_date": 1.0 if day(oi["due_date"]) == day(ei["due_date"]) else 0.0,
    }


def main() -> None:
    kind, cases, results = sys.argv[1:4]
    score = tiny if kind == "tiny" else invoices
    started, cpu = time.perf_counter(), time.process_time()
    with open(cases, "rb") as source, open(results, "wb") as sink:
        for raw in source:
            case = orjson.loads(raw)
            fields = score(case)
            total = sum(fields.values()) / len(fields)
            verdict = "pass" if all(value >= 0.85 for value in fields.values()) else "fail"
            sink.write(orjson.dumps({"id": case["id"], "score": total, "verdict": verdict, "fields": fields}) + b"\n")
    print(orjson.dumps({"loop_wall": time.perf_counter() - started, "loop_cpu": time.process_time() - cpu}).decode())


if __name__ == "__main__":
    main()
