"""A tiny receipt extractor standing in for the system under test.

Reads the case input ({"text": ...}) as JSON on stdin and prints the fields it finds as JSON.
"""

import json
import re
import sys

text = json.load(sys.stdin)["text"]
merchant = text.strip().splitlines()[0].strip()
total = re.search(r"TOTAL\s+([\d.,]+)", text, re.IGNORECASE)
date = re.search(r"\b(\d{4}-\d{2}-\d{2}|\d{2}/\d{2}/\d{4})\b", text)
print(json.dumps({
    "merchant": merchant,
    "total": float(total.group(1).replace(",", "")) if total else None,
    "date": date.group(1) if date else None,
}))
