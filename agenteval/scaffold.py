"""`agenteval init`: a small suite that runs as written, to edit into your own: an extraction
suite (the default), a model's answers (`--template llm`) or an agent's tool calls (`--template agent`)."""

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

LLM_SUITE = """\
# yaml-language-server: $schema=suite.schema.json
name: my-llm-suite
description: >
  Questions to a model, scored by text rules. The answers are recorded in the cases so the suite
  runs as written; q-3 fails on purpose (it misses the unit). To ask a live model instead, remove
  the `output` keys and uncomment `target:`.
# target:
#   type: openai                          # OpenAI, with the key in OPENAI_API_KEY
#   model: gpt-4.1-mini
#   # base_url: http://localhost:11434/v1 # any other OpenAI-compatible server (a local one takes no key)
#   messages:
#     - {role: system, content: Answer in one short sentence.}
#     - {role: user, content: "{{ input }}"}
evaluators:
  - name: answer
    type: contains
    path: content
    reference_path: must_say       # in each case's `expected`
    case_sensitive: false
  - name: short
    type: length
    path: content
    max: 200
  - name: no_apology
    type: not_contains
    path: content
    case_sensitive: false
    reference: ["as an ai", "i cannot"]
  # - name: graded              # a model grading the answer (OpenAI unless base_url says otherwise)
  #   type: llm_judge
  #   model: gpt-4.1-mini
  #   criteria: [{name: correct, description: States the expected fact.}]
cases: cases.jsonl
"""

LLM_CASES = """\
{"id": "q-1", "input": "What is the capital of France?", "expected": {"must_say": "Paris"}, "output": {"content": "The capital of France is Paris."}}
{"id": "q-2", "input": "How many legs does a spider have?", "expected": {"must_say": "eight"}, "output": {"content": "A spider has eight legs."}}
{"id": "q-3", "input": "How far is the Moon from the Earth, roughly?", "expected": {"must_say": "384,000 km"}, "output": {"content": "About 384,000 on average."}}
"""

AGENT_SUITE = """\
# yaml-language-server: $schema=suite.schema.json
name: my-agent-suite
description: >
  A support agent's recorded work: the tools it called (OpenAI chat messages at `messages`) and
  its `reply`. order-2 fails on purpose: it refunds before looking the order up.
evaluators:
  - name: tools
    type: tool_calls
    order: in_order                # the expected calls, in this order, possibly with others between
    forbidden: [delete_account]
    path: messages
  - name: reply
    type: regex
    path: reply
    pattern: '\\bA-\\d{4}\\b'        # names the order
cases: cases.jsonl
"""

AGENT_CASES = """\
{"id": "order-1", "input": "Where is my order A-1001?", "expected": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1001"}}]}, "output": {"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\\"order_id\\": \\"A-1001\\"}"}}]}, {"role": "tool", "tool_call_id": "t1", "content": "{\\"status\\": \\"shipped\\"}"}], "reply": "Order A-1001 has shipped."}}
{"id": "order-2", "input": "Refund order A-1002, it arrived broken.", "expected": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1002"}}, {"name": "issue_refund", "arguments": {"order_id": "A-1002"}}]}, "output": {"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "issue_refund", "arguments": "{\\"order_id\\": \\"A-1002\\"}"}}, {"id": "t2", "type": "function", "function": {"name": "lookup_order", "arguments": "{\\"order_id\\": \\"A-1002\\"}"}}]}, {"role": "tool", "tool_call_id": "t1", "content": "{\\"refunded\\": true}"}], "reply": "I refunded order A-1002."}}
"""

TEMPLATES = {
    "extraction": {"suite.yaml": SUITE, "cases.jsonl": CASES, "judges/mentions.py": JUDGE},
    "llm": {"suite.yaml": LLM_SUITE, "cases.jsonl": LLM_CASES},
    "agent": {"suite.yaml": AGENT_SUITE, "cases.jsonl": AGENT_CASES},
}
FILES = TEMPLATES["extraction"]


class ScaffoldExists(Exception):
    pass


def write_scaffold(directory: Path, template: str = "extraction") -> list[Path]:
    """Write `template`'s files (and the suite schema, for editors) into `directory`."""
    import orjson

    from agenteval.schema import schema

    if template not in TEMPLATES:
        raise ScaffoldExists(f"unknown template {template!r}; choose one of {', '.join(TEMPLATES)}")
    files = {**TEMPLATES[template], "suite.schema.json": orjson.dumps(schema("suite"), option=orjson.OPT_INDENT_2).decode() + "\n"}
    targets = [directory / name for name in files]
    existing = [str(path) for path in targets if path.exists()]
    if existing:
        raise ScaffoldExists(f"not overwriting {', '.join(existing)}")
    for path, text in zip(targets, files.values()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return targets
