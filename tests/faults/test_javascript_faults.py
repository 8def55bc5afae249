"""Hostile JavaScript checks and answers: each is that case's `error`, bounded in time and memory,
and the cases around it are scored as usual."""

from __future__ import annotations

import json
import shutil
import time

import pytest

import agenteval
from agenteval.evaluators.base import EvaluatorResult

from conftest import read_jsonl, run_cli, write

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

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



def test_a_javascript_transform_that_cuts_an_emoji_in_half_is_read(tmp_path):
    """`transform: {javascript: "output.slice(0, 4)"}` on `hi 👋 there` keeps half of the emoji (a lone
    surrogate): the engine's answer was unreadable, so the evaluator failed (`evaluator failed:
    JSONDecodeError: no low surrogate in string`). Now the transformed text is compared as promptfoo does."""
    suite = write(tmp_path, "suite.yaml", """
        name: jscut
        evaluators:
          - {type: starts_with, name: cut, reference: "hi ", transform: {javascript: "output.slice(0, 4)"}}
          - {type: equals, name: whole, reference: "hi 👋", transform: {javascript: "output.slice(0, 4)"}}
        cases: [{id: emoji, output: "hi 👋 there"}]
    """)
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 1, done.stderr
    cut, whole = read_jsonl(tmp_path / "r.jsonl")[0]["evaluator_results"]
    assert (cut["verdict"], whole["verdict"], whole["error"]) == ("pass", "fail", None)
    assert whole["misses"] == ["answer does not equal 'hi 👋'"]  # half of it is not the whole emoji

# What a check returns, and what both engines make of it: a value that is no verdict (one JSON has no
# form for, a getter or Proxy trap that throws when it is read) is that case's `error`, naming why.
RETURNS = """
module.exports = {
  circular: () => { const a = {pass: true}; a.self = a; return a; },
  circularInside: () => { const a = {}; a.a = a; return {pass: true, a}; },
  bigint: () => 10n,
  bigintInside: () => ({pass: true, score: 1, n: 10n}),
  symbol: () => Symbol('x'),
  aFunction: () => () => 1,
  nothing: () => undefined,
  nothingNull: () => null,
  nan: () => NaN,
  infinity: () => -Infinity,
  nanScore: () => ({pass: true, score: NaN}),
  infiniteScore: () => ({pass: true, score: Infinity}),
  throwingGetter: () => ({pass: true, get score() { throw new Error('boom'); }}),
  throwingToJSON: () => ({pass: true, toJSON() { throw new Error('no JSON'); }}),
  toJSON: () => ({pass: true, toJSON() { return {pass: false, reason: 'as JSON'}; }}),
  proxy: () => new Proxy({pass: true, reason: 'through a proxy'}, {}),
  proxyClaimingPass: () => new Proxy({}, {get: (target, key) => key === 'pass' ? true : undefined}),
  throwingProxy: () => new Proxy({}, {get() { throw new Error('trap'); }, ownKeys() { throw new Error('trap'); }}),
  boxedBoolean: () => new Boolean(true),
  hugeReason: () => ({pass: false, reason: 'x'.repeat(5 * 1024 * 1024)}),
  hugeString: () => 'x'.repeat(5 * 1024 * 1024),
  deep: () => { let o = {pass: true}; for (let i = 0; i < 300; i++) o = {pass: true, o}; return o; },
  reasonNotText: () => ({pass: false, reason: 5}),
  largeNumber: () => 5,
};
"""
NOT_JSON = "the check returned an object that is not JSON: "
NO_PASS = "the check returned an object without a boolean `pass` (a check returns a boolean, a number or {pass, score, reason})"
RETURNED = {  # name: (verdict, the error or reasoning, or {engine: ...} where the engines word an exception their own way)
    "circular": ("error", {"quickjs": NOT_JSON + "TypeError: circular reference",
                           "node": NOT_JSON + "TypeError: Converting circular structure to JSON | --> starting at object with "
                                              "constructor 'Object' | --- property 'self' closes the circle"}),
    "circularInside": ("error", {"quickjs": NOT_JSON + "TypeError: circular reference",
                                 "node": NOT_JSON + "TypeError: Converting circular structure to JSON | --> starting at object "
                                                    "with constructor 'Object' | --- property 'a' closes the circle"}),
    "bigint": ("error", "the check returned bigint 10"),
    "bigintInside": ("error", {"quickjs": NOT_JSON + "TypeError: BigInt are forbidden in JSON.stringify",
                               "node": NOT_JSON + "TypeError: Do not know how to serialize a BigInt"}),
    "symbol": ("error", "the check returned symbol Symbol(x)"),
    "aFunction": ("error", "the check returned function () => 1"),
    "nothing": ("error", "the check returned undefined (no return value)"),
    "nothingNull": ("error", "the check returned null"),
    "nan": ("error", "the check returned NaN"),
    "infinity": ("error", "the check returned -Infinity"),
    "nanScore": ("error", "the check returned an object whose `score` is NaN, not a number"),
    "infiniteScore": ("error", "the check returned an object whose `score` is Infinity, not a number"),
    "throwingGetter": ("error", NOT_JSON + "Error: boom"),
    "throwingToJSON": ("error", NOT_JSON + "Error: no JSON"),
    "toJSON": ("fail", "as JSON"),
    "proxy": ("pass", "through a proxy"),
    "proxyClaimingPass": ("error", NO_PASS),
    "throwingProxy": ("error", NOT_JSON + "Error: trap"),
    "boxedBoolean": ("error", NO_PASS),
    "hugeReason": ("error", "the check returned more than 4 MiB of JSON (5242917 characters)"),
    "hugeString": ("error", "the check returned string " + "x" * 200),
    "deep": ("error", "the check returned JSON nested deeper than 200 levels"),
    "reasonNotText": ("fail", 'returned {"pass":false,"reason":5}'),
    "largeNumber": ("pass", "passed"),
}


def engine_results(engine: str, folder, source: str, names, **options) -> dict[str, EvaluatorResult]:
    write(folder, "check.js", source)
    evaluators = [{"name": name, "type": "javascript", "file": f"check.js:{name}", "engine": engine, **options} for name in names]
    [result] = agenteval.evaluate([{"id": "c", "output": "x"}], evaluators, base_dir=folder)
    return {e.name: e for e in result.evaluator_results}


@pytest.fixture(scope="module", params=["quickjs", pytest.param("node", marks=needs_node)])
def returned(request, tmp_path_factory):
    return request.param, engine_results(request.param, tmp_path_factory.mktemp(request.param), RETURNS, RETURNED)


@pytest.mark.parametrize("name", RETURNED)
def test_a_check_returning_a_circular_object_a_bigint_or_another_odd_value_gets_one_verdict_in_both_engines(returned, name):
    """A circular object or a BigInt was `error` in the embedded engine but `fail` under node (its
    answer could not be written, and that read as the check throwing); a getter, `toJSON` or Proxy
    read differently, a NaN score, `null`, a deep or huge value, a number's reasoning differed too.
    Both engines now read the returned value alike, with the same reason."""
    engine, results = returned
    verdict, reason = RETURNED[name]
    got = results[name]
    assert (got.verdict, got.error or got.reasoning) == (verdict, reason if isinstance(reason, str) else reason[engine])


THROWS = """
module.exports = {
  recurses: () => { const f = (n) => f(n + 1) + 1; return f(0); },
  tooDeepToWrite: () => { let o = {pass: true}; for (let i = 0; i < 100000; i++) o = {pass: true, o}; return o; },
  hugeMessage: () => { throw new Error('y'.repeat(20 * 1024 * 1024)); },
  noText: () => { throw Object.create(null); },
  text: () => { throw 'plain'; },
};
"""
THROWN = {  # name: (verdict, the first line of the error or reasoning)
    "recurses": ("error", "the check threw: RangeError: Maximum call stack size exceeded"),
    "tooDeepToWrite": ("error", NOT_JSON + "RangeError: Maximum call stack size exceeded"),
    "hugeMessage": ("fail", "the check threw: Error: " + "y" * 993),
    "noText": ("fail", "the check threw: [object Object]"),
    "text": ("fail", "the check threw: plain"),
}


@pytest.mark.parametrize("engine", ["quickjs", pytest.param("node", marks=needs_node)])
def test_a_check_that_recurses_or_throws_an_odd_value_gets_one_verdict_in_both_engines(tmp_path, engine):
    """Unbounded recursion was `error` in the embedded engine and `fail` under node; a 20 MB message
    was a 20 MB reason there and `judge output larger than 16 MiB` under node; a thrown object with no
    text was `the check failed: TypeError: toPrimitive` there and killed node's runner."""
    results = engine_results(engine, tmp_path, THROWS, THROWN, memory_mb=256)
    assert {name: (e.verdict, (e.error or e.reasoning).split(" | ")[0]) for name, e in results.items()} == THROWN
