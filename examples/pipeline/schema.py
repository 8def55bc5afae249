"""The pipeline's schema: what the extractor returns and what the ground truth holds."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from pydantic import BaseModel


class LineItem(BaseModel):
    description: str
    quantity: int
    amount: Decimal


class InvoiceSchema(BaseModel):
    invoice_number: str
    invoice_date: date
    vendor: str
    currency: str
    subtotal: Decimal
    tax: Decimal
    total: Decimal
    line_items: list[LineItem]
