"""Hostile JavaScript checks and answers: each is that case's `error`, bounded in time and memory,
and the cases around it are scored as usual."""

from __future__ import annotations

import json
import shutil
import time

import pytest

from conftest import read_jsonl, run_cli, write

CHECK = """
const fault = context.vars.fault;
if (fault === 'loops') { while (true) {} }
if (fault === 'grows') { const a = []; while (true) { a.push('x'.repeat(1 << 20)); } }
if (fault === 'recurses') { const f = (n) => f(n + 1) + 1; return f(0); }
if (fault === 'pollutes') { Object.prototype.pass = true; return {}; }
if (fault === 'huge') { return output.length === 5 * 1024 * 1024; }
if (fault === 'escapes') { return typeof require === 'undefined' && typeof process === 'undefined' && typeof fetch === 'undefined'; }
return output === 'ok';
"""


def cases_file(tmp_path, faults):
    rows = [{"id": fault or f"c{i}", "input": {"fault": fault}, "output": "x" * (5 * 1024 * 1024) if fault == "huge" else "ok"}
            for i, fault in enumerate(faults)]
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")


def test_a_hostile_inline_check_is_one_cases_error(tmp_path):
    cases_file(tmp_path, [None, "loops", "grows", "recurses", "pollutes", "huge", "escapes", None])
    suite = write(tmp_path, "suite.yaml", "name: js\nevaluators:\n  - type: javascript\n    timeout: 1\n    memory_mb: 32\n    code: |\n"
                  + "\n".join("      " + line for line in CHECK.strip().splitlines()) + "\ncases: cases.jsonl\n")
    started = time.monotonic()
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--workers", "2", timeout=120)
    assert time.monotonic() - started < 60
    assert done.returncode == 3, done.stderr  # some cases errored
    results = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(tmp_path / "r.jsonl")}
    assert results["c0"]["verdict"] == results["c7"]["verdict"] == "pass"
    assert results["loops"]["error"] == "the check ran longer than its timeout of 1 s"
    assert results["grows"]["verdict"] == "error" and "memory" in results["grows"]["error"]
    assert results["recurses"]["error"].startswith("the check threw: RangeError: Maximum call stack size exceeded")
    assert results["pollutes"]["verdict"] == "error"  # `{}` has no own `pass`: the polluted prototype does not count
    assert results["huge"]["verdict"] == "pass"
    assert results["escapes"]["verdict"] == "pass"  # no require, process or fetch in the embedded engine


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_hostile_node_check_is_one_cases_error(tmp_path):
    write(tmp_path, "check.js", """
        const os = require('os');
        module.exports = (output, context) => {
          const fault = context.vars.fault;
          if (fault === 'loops') { while (true) {} }
          if (fault === 'prints') { console.log('{"score": 1, "verdict": "pass"}'); process.stdout.write('garbage\\n'); }
          if (fault === 'exits') { process.exit(3); }
          return output === 'ok';
        };
    """)
    cases_file(tmp_path, [None, "prints", "loops", None, "exits", None])
    suite = write(tmp_path, "suite.yaml", """
        name: js
        evaluators: [{type: javascript, file: check.js, timeout: 3}]
        cases: cases.jsonl
    """)
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", timeout=120)
    assert done.returncode == 3, done.stderr
    results = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(tmp_path / "r.jsonl")}
    assert [results[c]["verdict"] for c in ("c0", "prints", "c3", "c5")] == ["pass"] * 4  # printing does not shift answers
    assert results["loops"]["error"].startswith("judge timed out after 3s")
    assert results["exits"]["verdict"] == "error"


def test_a_hostile_javascript_transform_is_that_evaluators_error(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: js-transform
        evaluators:
          - {type: equals, name: loops, reference: x, transform: {javascript: "while (true) {}\\nreturn output", timeout: 1}}
          - {type: equals, name: grows, reference: x, transform: {javascript: "const a = [];\\nwhile (true) { a.push('x'.repeat(1 << 20)); }"}}
          - {type: equals, name: throws, reference: x, transform: {javascript: "JSON.parse(output)"}}
          - {type: equals, name: escapes, reference: "true", transform: {javascript: "String(typeof require === 'undefined' && typeof process === 'undefined')"}}
          - {type: equals, name: promise, reference: x, transform: {javascript: "Promise.resolve(output)"}}
        cases: [{id: a, output: x}]
    """)
    started = time.monotonic()
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", timeout=120)
    assert time.monotonic() - started < 60
    assert done.returncode == 3, done.stderr
    results = {e["name"]: e for e in read_jsonl(tmp_path / "r.jsonl")[0]["evaluator_results"]}
    assert results["loops"]["error"] == "transform (javascript) ran longer than 1 s"
    assert results["grows"]["error"] == "transform (javascript) used more than 64 MiB of memory"
    assert results["throws"]["error"].startswith("transform (javascript) threw SyntaxError")
    assert results["escapes"]["verdict"] == "pass"  # no require or process in the embedded engine
    assert results["promise"]["error"] == "transform (javascript) returned a Promise (async code is not supported in the embedded engine)"


def test_a_check_whose_reason_cuts_an_emoji_in_half_passes_in_the_embedded_engine(tmp_path):
    """`reason: 'answer starts: ' + output.slice(0, 4)` on `hi 👋 there` keeps half of the emoji (a
    lone surrogate): the embedded engine's answer was unreadable (`no low surrogate`), so a passing
    case was an error; node read it. Now both pass, the reason written with the surrogate escaped."""
    write(tmp_path, "suite.yaml", """
        name: jssur
        evaluators:
          - name: short
            type: javascript
            code: |
              const ok = output.length < 100;
              return {pass: ok, reason: 'answer starts: ' + output.slice(0, 4)};
        cases:
          - {id: emoji, output: "hi 👋 there"}
          - {id: plain, output: "hi there"}
    """)
    done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 0, done.stderr
    emoji, plain = read_jsonl(tmp_path / "r.jsonl")
    assert (emoji["verdict"], plain["verdict"]) == ("pass", "pass")
    assert emoji["evaluator_results"][0]["reasoning"] == "answer starts: hi \ud83d"
    assert '"answer starts: hi \\ud83d"' in (tmp_path / "r.jsonl").read_text(encoding="utf-8")
