"""`agenteval init`: a small suite that runs as written, to edit into your own."""

from __future__ import annotations

from pathlib import Path

SUITE = """\
# yaml-language-server: $schema=suite.schema.json
name: my-first-suite
description: >
  Contact details extracted from emails, with recorded answers. email-2 fails on purpose:
  "Robert Stone" is too far from "Bob Stone" for a fuzzy threshold of 0.85.
evaluators:
  - name: contact
    type: field_accuracy
    fields:
      - {path: name, match: fuzzy, threshold: 0.85}
      - {path: email, match: exact}
      - {path: meeting.date, match: date}
      - {path: budget, match: numeric_tolerance, tolerance: 0.05, relative: true}
  - name: polite
    type: code_judge
    command: [python, judges/mentions.py]
    # any key code_judge does not know reaches the judge as `config`
    words: [thanks]
cases: cases.jsonl
"""

CASES = """\
{"id": "email-1", "input": "Hi, Jane Doe here (jane@example.com). Can we meet on 3 March 2025? Budget about $12,000. Thanks!", "expected": {"name": "Jane Doe", "email": "jane@example.com", "meeting": {"date": "2025-03-03"}, "budget": 12000, "note": "thanks"}, "output": {"name": "Jane Doe", "email": "jane@example.com", "meeting": {"date": "March 3, 2025"}, "budget": 12000, "note": "Thanks for reaching out"}}
{"id": "email-2", "input": "This is Bob Stone, bob.stone@example.org. Budget 4.5k, let's talk 2025-04-10. Many thanks", "expected": {"name": "Bob Stone", "email": "bob.stone@example.org", "meeting": {"date": "2025-04-10"}, "budget": 4500, "note": "thanks"}, "output": {"name": "Robert Stone", "email": "bob.stone@example.org", "meeting": {"date": "2025-04-10"}, "budget": 4400, "note": "thanks, Bob"}}
"""

JUDGE = '''\
"""A code_judge: passes when the candidate's `note` mentions every word in config `words`."""

from agenteval.judge import run_judge


def judge(payload):
    note = str((payload["candidate_answer"] or {}).get("note", "")).lower()
    words = payload["config"].get("words", [])
    found = [word for word in words if word.lower() in note]
    missing = [word for word in words if word not in found]
    return {
        "score": len(found) / len(words) if words else 1.0,
        "hits": found,
        "misses": missing,
        "reasoning": f"{len(found)}/{len(words)} words mentioned",
    }


if __name__ == "__main__":
    run_judge(judge)
'''

FILES = {"suite.yaml": SUITE, "cases.jsonl": CASES, "judges/mentions.py": JUDGE}


class ScaffoldExists(Exception):
    pass


def write_scaffold(directory: Path) -> list[Path]:
    import orjson

    from agenteval.schema import schema

    files = {**FILES, "suite.schema.json": orjson.dumps(schema("suite"), option=orjson.OPT_INDENT_2).decode() + "\n"}
    targets = [directory / name for name in files]
    existing = [str(path) for path in targets if path.exists()]
    if existing:
        raise ScaffoldExists(f"not overwriting {', '.join(existing)}")
    for path, text in zip(targets, files.values()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return targets
