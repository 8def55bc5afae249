"""Text evaluator speed: one evaluation of each text rule and lexical check on a support reply.

    python benchmarks/bench_text.py

Each row is `evaluate()` on a case whose answer is a 610-character, 100-word reply (and, for
the JSON checks, a 200-byte JSON object), timed over many calls after a warm-up call (which
loads lexicons and word lists once). Prints a Markdown table of microseconds per evaluation,
with a field_accuracy evaluation of one exact field first, for scale on a busy machine.
"""

from __future__ import annotations

import json
import timeit
from pathlib import Path

from pydantic import TypeAdapter

from agenteval.evaluators import EvalContext, EvaluatorSpec

REPLY = (
    "Hello Ana, thank you for reaching out about order #48213. I am sorry the blender arrived with a "
    "cracked jar. We have issued a full refund of 89.90 EUR to your original payment method; it "
    "usually appears within 5 business days. You do not need to return the damaged item. If you "
    "would like a replacement instead, reply to this message and we will ship one by express "
    "delivery at no cost. We have also passed your photos to our quality team so this does not "
    "happen again. Is there anything else I can help you with today? Kind regards, Sam from the "
    "support team at Kitchen Goods."
)
ORDER = {"order_id": 48213, "status": "refunded", "amount": 89.9, "currency": "EUR", "items": [{"sku": "BL-200", "qty": 1}], "email": "ana@example.com"}
SCHEMA = {
    "type": "object",
    "required": ["order_id", "status", "amount", "currency", "items"],
    "properties": {
        "order_id": {"type": "integer"},
        "status": {"enum": ["open", "refunded", "shipped"]},
        "amount": {"type": "number", "minimum": 0},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "items": {"type": "array", "items": {"type": "object", "required": ["sku", "qty"]}},
        "email": {"type": "string", "format": "email"},
    },
}
REFERENCE = (
    "Hello Ana, we are sorry your blender arrived damaged. A full refund of 89.90 EUR is on its way "
    "and should reach you within 5 business days; there is no need to send the item back."
)

CHECKS: list[tuple[str, dict]] = [
    ("equals", {"reference": REPLY}),
    ("equals (case and whitespace folded)", {"type": "equals", "reference": REPLY, "case_sensitive": False, "normalize_whitespace": True}),
    ("contains, 3 strings", {"type": "contains", "reference": ["refund", "5 business days", "replacement"]}),
    ("not_contains, 3 strings", {"type": "not_contains", "reference": ["as an AI", "I cannot", "unfortunately"], "case_sensitive": False}),
    ("starts_with", {"reference": "Hello"}),
    ("ends_with", {"reference": "Kitchen Goods."}),
    ("regex", {"pattern": r"#\d{5}"}),
    ("length (words)", {"type": "length", "unit": "words", "min": 20, "max": 150}),
    ("json_valid (200-byte object)", {"type": "json_valid", "path": "json"}),
    ("json_schema (200-byte object, 6 properties)", {"type": "json_schema", "path": "json", "schema": SCHEMA}),
    ("text_similarity sorensen_dice", {"type": "text_similarity", "reference": REFERENCE, "threshold": 0}),
    ("text_similarity levenshtein", {"type": "text_similarity", "reference": REFERENCE, "algorithm": "levenshtein", "threshold": 0}),
    ("text_similarity jaro_winkler", {"type": "text_similarity", "reference": REFERENCE, "algorithm": "jaro_winkler", "threshold": 0}),
    ("text_similarity token_set", {"type": "text_similarity", "reference": REFERENCE, "algorithm": "token_set", "threshold": 0}),
    ("keyword_coverage, 5 keywords", {"type": "keyword_coverage", "keywords": ["refund", ["5 days", "5 business days"], "replacement", "express", "apology"]}),
    ("keyword_coverage, 5 keywords, whole_word", {"type": "keyword_coverage", "whole_word": True, "keywords": ["refund", ["5 days", "5 business days"], "replacement", "express", "apology"]}),
    ("keyword_coverage, 5 keywords from expected", {"type": "keyword_coverage", "keywords_path": "expected.keywords"}),
    ("sentiment vader", {"type": "sentiment"}),
    ("sentiment afinn", {"type": "sentiment", "analyzer": "afinn"}),
    ("toxicity, 10 terms", {"type": "toxicity", "terms": ["idiot", "stupid", "moron", "dumb", "shut up", "hate you", "loser", "jerk", "pathetic", "useless"]}),
    ("toxicity, default list (916 terms)", {"type": "toxicity", "default_list": True}),
]


def evaluator(label: str, config: dict):
    kind = config.get("type") or label.split(" ")[0]
    return TypeAdapter(EvaluatorSpec).validate_python({"type": kind, **config})


def main() -> None:
    output = {"text": REPLY, "json": json.dumps(ORDER)}
    expected = {"keywords": ["refund", ["5 days", "5 business days"], "replacement", "express", "apology"]}
    ctx = EvalContext("c", None, expected, REPLY, {}, Path("."))
    json_ctx = EvalContext("c", None, expected, output, {}, Path("."))
    print("| check | µs per evaluation |")
    print("|---|---:|")
    scale = evaluator("field_accuracy", {"fields": [{"path": "text"}]})
    scale_ctx = EvalContext("c", None, {"text": REPLY}, {"text": REPLY}, {}, Path("."))
    seconds = min(timeit.repeat(lambda: scale.evaluate(scale_ctx), number=5_000, repeat=3)) / 5_000
    print(f"| for scale: field_accuracy, one exact field | {seconds * 1e6:,.1f} |")
    for label, config in CHECKS:
        check = evaluator(label, config)
        case = json_ctx if config.get("path") == "json" else ctx
        result = check.evaluate(case)  # warm-up: lexicons, word lists
        assert result.verdict != "error", (label, result.error)
        number = 500 if "vader" in label or "afinn" in label else 5_000
        seconds = min(timeit.repeat(lambda: check.evaluate(case), number=number, repeat=3)) / number
        print(f"| {label} | {seconds * 1e6:,.1f} |")


if __name__ == "__main__":
    main()
