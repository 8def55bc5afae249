"""The function under test: reads an invoice's header lines and returns its fields."""

import re


def extract(text: str) -> dict:
    fields = dict(re.findall(r"^(\w+): *(.+)$", text, re.M))
    total = fields.get("Total", "").replace(",", "")
    return {
        "number": fields.get("Invoice"),
        "vendor": fields.get("From"),
        "total": float(total) if re.fullmatch(r"\d+(\.\d+)?", total) else total or None,
    }
