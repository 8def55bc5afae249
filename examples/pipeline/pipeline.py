"""The extraction pipeline's evaluation, in Python: load the ground truth as the schema's own
objects, run the async extractor on every document, score each answer with field, line-item and
Python checks, and store the run in SQLite at the end (read it back with `agenteval history`).

    python examples/pipeline/pipeline.py [--db PATH]    # default: pipeline-runs.db here

Offline and quick: the extractor is a stub reading the committed documents (extractor.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from decimal import Decimal
from pathlib import Path

import agenteval

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the pipeline's own modules, as its package would provide them

from extractor import extract  # noqa: E402
from schema import InvoiceSchema  # noqa: E402

# 1. The test data loader: ground truth as InvoiceSchema objects (Decimal amounts, a date).
def load_examples(path: Path) -> list[dict]:
    examples = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line, parse_float=Decimal)  # amounts keep their digits: 45.00
        examples.append({"id": row["id"], "input": row["input"], "expected": InvoiceSchema(**row["expected"])})
    return examples


# 2. The evaluators: built-in field and line-item checks, as the suite writes them ...
HEADER = {
    "name": "header", "type": "field_accuracy",
    "fields": [
        {"path": "invoice_number"},
        {"path": "invoice_date", "match": "date"},
        {"path": "vendor", "match": "fuzzy", "threshold": 0.9},
        {"path": "currency"},
        {"path": "subtotal", "match": "numeric_tolerance", "tolerance": 0.005},
        {"path": "tax", "match": "numeric_tolerance", "tolerance": 0.005},
        {"path": "total", "match": "numeric_tolerance", "tolerance": 0.005},
    ],
}
HEADER_DATASET = {"name": "header_dataset", "type": "field_confusion",
                  "fields": ["invoice_number", "invoice_date", "vendor", "currency", "subtotal", "tax", "total"]}
ITEMS = {"name": "items", "type": "line_items", "path": "line_items", "match_fields": ["description"], "threshold": 0.8}


# ... and a check written in Python, on the schema's own objects (exact Decimal arithmetic).
def totals_add_up(ctx: agenteval.CheckContext) -> dict:
    """The extracted invoice is consistent: items sum to the subtotal, subtotal plus tax to the total."""
    invoice: InvoiceSchema = ctx.output
    items = sum((item.amount for item in invoice.line_items), Decimal(0))
    misses = []
    if items != invoice.subtotal:
        misses.append(f"items sum to {items}, subtotal is {invoice.subtotal}")
    if invoice.subtotal + invoice.tax != invoice.total:
        misses.append(f"subtotal + tax is {invoice.subtotal + invoice.tax}, total is {invoice.total}")
    return {"score": 0.0 if misses else 1.0, "misses": misses}


# 3. The orchestrator: the async extractor at most 4 calls at a time, results stored as they finish.
async def main(db: Path) -> dict:
    examples = load_examples(HERE / "cases.jsonl")
    run = await agenteval.aevaluate(
        examples,
        [HEADER, HEADER_DATASET, ITEMS, agenteval.evaluator(totals_add_up, name="consistency")],
        task=extract, max_concurrency=4, name="invoice-pipeline-py", store=f"sqlite:///{db}",
    )
    return run.summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path("pipeline-runs.db"), help="the SQLite file the run is stored in")
    db = parser.parse_args().db.resolve()
    summary = asyncio.run(main(db))
    counts = summary["counts"]
    print(f"{counts['total']} invoices: {counts['passed']} passed, {counts['failed']} failed, {counts['errored']} errored; "
          f"mean score {summary['mean_score']:.3f}")
    for name, figures in summary["evaluators"].items():
        print(f"  {name:15} mean {figures['mean_score']:.3f}")
    for name, metrics in summary["dataset_metrics"].items():
        print(f"  {name:15} macro-F1 {metrics['macro_f1']:.3f}")
    print(f"stored in {db}: agenteval history --store sqlite:///{db}")
    sys.exit(0 if counts["passed"] == counts["total"] else 1)
