"""A stand-in for the pipeline's async extractor (an LLM call in production): it reads a committed
sample document and parses it with the strict rules a first prompt would follow, so it makes the
mistakes such an extractor makes: a day-first date read month-first, a thousands separator cut
short, an item wrapped over two lines missed, a trailing full stop dropped from a name."""

from __future__ import annotations

import asyncio
import re
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

from schema import InvoiceSchema, LineItem

DOCUMENTS = Path(__file__).resolve().parent / "documents"
_ITEM = re.compile(r"^Item:\s*(.+?)\s*\|\s*(\d+)\s*\|\s*([\d.]+)\s*$", re.MULTILINE)


async def extract(source: dict) -> InvoiceSchema:
    """The document named by `source["file"]`, extracted (after a short await, as a model call would)."""
    await asyncio.sleep(0.002)
    text = (DOCUMENTS / source["file"]).read_text(encoding="utf-8")
    return InvoiceSchema(
        invoice_number=_field(text, "Invoice number"),
        invoice_date=_date(_field(text, "Date")),
        vendor=_field(text, "Vendor").rstrip("."),
        currency=_field(text, "Currency"),
        subtotal=_amount(_field(text, "Subtotal")),
        tax=_amount(_field(text, "Tax")),
        total=_amount(_field(text, "Total")),
        line_items=[
            LineItem(description=description, quantity=int(quantity), amount=Decimal(amount))
            for description, quantity, amount in _ITEM.findall(text)
        ],
    )


def _field(text: str, label: str) -> str:
    found = re.search(rf"^{label}:\s*(.+)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


def _date(text: str) -> date:
    if "/" in text:  # read month first, whatever the document's country
        return datetime.strptime(text, "%m/%d/%Y").date()
    return date.fromisoformat(text)


def _amount(text: str) -> Decimal:
    return Decimal(re.match(r"[\d.]*", text).group(0) or "0")  # stops at a thousands separator
