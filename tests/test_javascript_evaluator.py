"""The `javascript` evaluator: promptfoo's assertion code run unchanged, in QuickJS and under node."""

from __future__ import annotations

import shutil

import pytest

import agenteval
from agenteval.evaluators.javascript import function_body
from agenteval.suite.loader import SuiteInvalid, load_suite

from conftest import read_jsonl, run_cli, write

node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def score(code_or_file: dict, output, **case) -> agenteval.CaseResult:
    [result] = list(agenteval.evaluate([{"id": "c", "output": output, **case}], [{"type": "javascript", **code_or_file}],
                                       base_dir=case.pop("base_dir", None) if "base_dir" in case else None))
    return result


@pytest.mark.parametrize("code, body", [
    ("output === 'test'", "return output === 'test'"),
    ("output === 'test';", "return output === 'test'"),
    ("const s = JSON.parse(output).score; s > 0.5", "const s = JSON.parse(output).score; return s > 0.5"),
    ("const s = output; s === 'a;b'", "const s = output; return s === 'a;b'"),
    ("const x = 1;", "const x = 1"),
    ("const a = 1;\nreturn a > 0", "const a = 1;\nreturn a > 0"),
])
def test_inline_code_reads_as_promptfoo_reads_it(code, body):
    assert function_body(code) == body


@pytest.mark.parametrize("code, output, verdict, value", [
    ("output.includes('Hello')", "Hello, World", "pass", 1.0),
    ("output.includes('Hello')", "Bye", "fail", 0.0),
    ("const n = output.length; n > 3", "four", "pass", 1.0),
    ("const words = output.split(' ');\nreturn words.length >= 3;", "one two", "fail", 0.0),
    ("output.length / 10", "abcde", "pass", 0.5),
    ("0", "x", "fail", 0.0),
    ("({pass: false, score: 0.25, reason: 'too short'})", "x", "fail", 0.25),
    ("({pass: true, reason: 'fine'})", "x", "pass", 1.0),
    ("5", "x", "pass", 1.0),  # a number past 1 passes and scores 1 (the number itself is in details)
])
def test_a_check_returns_a_boolean_a_number_or_a_grading_result(code, output, verdict, value):
    result = score({"code": code}, output)
    [evaluator] = result.evaluator_results
    assert (evaluator.verdict, evaluator.score) == (verdict, value)


def test_a_number_passes_at_the_threshold():
    assert score({"code": "0.6", "threshold": 0.7}, "x").verdict == "fail"
    assert score({"code": "0.7", "threshold": 0.7}, "x").verdict == "pass"
    assert score({"code": "0.6", "threshold": 0.7}, "x").evaluator_results[0].details == {"returned": 0.6}


def test_the_check_sees_vars_prompt_test_expected_and_config():
    code = ("context.vars.city === 'Paris' && context.prompt === 'Capital?' && context.test.description === 'c'"
            " && context.expected === 'Paris' && context.config.strict === true && output === 'It is Paris'")
    answer = {"content": "It is Paris", "messages": [{"role": "user", "content": "Capital?"}, {"role": "assistant", "content": "It is Paris"}]}
    result = score({"code": code, "path": "content", "config": {"strict": True}}, answer, input={"city": "Paris"}, expected="Paris")
    assert result.verdict == "pass", result.evaluator_results[0]


def test_a_reason_is_kept_and_a_failure_says_what_was_returned():
    [evaluator] = score({"code": "({pass: false, score: 0, reason: 'no greeting'})"}, "x").evaluator_results
    assert evaluator.reasoning == "no greeting" and evaluator.misses == ["no greeting"]
    [evaluator] = score({"code": "output.length > 10"}, "x").evaluator_results
    assert evaluator.reasoning == "returned false"


@pytest.mark.parametrize("code, message", [
    ("'yes'", "the check returned string yes"),
    ("undefined", "the check returned undefined (no return value)"),
    ("NaN", "the check returned NaN"),
    ("({score: 1})", "an object without a boolean `pass`"),
    ("({pass: true, score: 'high'})", "an object whose `score` is str"),
    ("Promise.resolve(true)", "a Promise"),
    ("(() => { const a = {}; a.a = a; return {pass: true, a}; })()", "an object that is not JSON"),
])
def test_an_unusable_check_is_an_error_naming_why(code, message):
    [evaluator] = score({"code": code}, "x").evaluator_results
    assert evaluator.verdict == "error" and message in evaluator.error, evaluator.error


def test_a_check_that_throws_fails_the_answer_as_in_promptfoo():
    [evaluator] = score({"code": "JSON.parse(output).color === 'yellow'"}, "I don't know.").evaluator_results
    assert (evaluator.verdict, evaluator.score, evaluator.error) == ("fail", 0.0, None)
    assert evaluator.reasoning.startswith("the check threw: SyntaxError: unexpected token")
    assert evaluator.misses == [evaluator.reasoning]
    [evaluator] = score({"code": "output.nope.deeper"}, "x").evaluator_results
    assert (evaluator.verdict, evaluator.reasoning.split(" | ")[0]) == ("fail", "the check threw: TypeError: cannot read property 'deeper' of undefined")


def test_a_file_exports_the_check(tmp_path):
    write(tmp_path, "checks.js", """
        module.exports = (output, context) => output.startsWith(context.vars.prefix);
    """)
    write(tmp_path, "named.js", """
        function isLong(output) { return {pass: output.length > 3, score: Math.min(1, output.length / 10), reason: 'length ' + output.length}; }
        module.exports = { isLong };
    """)
    cases = [{"id": "a", "input": {"prefix": "ab"}, "output": "abc"}, {"id": "b", "input": {"prefix": "x"}, "output": "abcdef"}]
    run = agenteval.evaluate(cases, [{"name": "prefix", "type": "javascript", "file": "file://checks.js"},
                                     {"name": "long", "type": "javascript", "file": "named.js:isLong"}], base_dir=tmp_path)
    verdicts = {r.case_id: [(e.name, e.verdict, e.score) for e in r.evaluator_results] for r in run}
    assert verdicts == {"a": [("prefix", "pass", 1.0), ("long", "fail", 0.3)], "b": [("prefix", "fail", 0.0), ("long", "pass", 0.6)]}


@node
def test_a_file_that_requires_modules_runs_under_node(tmp_path):
    write(tmp_path, "uses_node.js", """
        const assert = require('assert');
        const { isDeepStrictEqual } = require('util');
        module.exports.same = (output, context) => ({pass: isDeepStrictEqual(JSON.parse(output), context.expected), score: 1, reason: 'compared'});
        module.exports.asynchronous = async (output) => output.length > 2;
        module.exports.throws = () => { assert.fail('nope'); };
    """)
    cases = [{"id": "a", "output": '{"k": [1, 2]}', "expected": {"k": [1, 2]}}, {"id": "b", "output": '{"k": 1}', "expected": {"k": 2}}]
    evaluators = [{"name": n, "type": "javascript", "file": f"uses_node.js:{n}"} for n in ("same", "asynchronous", "throws")]
    run = agenteval.evaluate(cases, evaluators, base_dir=tmp_path, workers=2)
    got = {r.case_id: {e.name: (e.verdict, e.error) for e in r.evaluator_results} for r in run}
    assert got["a"]["same"] == ("pass", None) and got["b"]["same"][0] == "fail"
    assert got["a"]["asynchronous"] == ("pass", None)
    assert got["a"]["throws"] == ("fail", None)  # a check that throws fails the answer, as in promptfoo


def test_a_file_that_requires_modules_is_refused_in_the_embedded_engine(tmp_path):
    write(tmp_path, "uses_node.js", "const fs = require('fs');\nmodule.exports = () => true;\n")
    suite = write(tmp_path, "suite.yaml", """
        name: js
        evaluators: [{type: javascript, file: uses_node.js, engine: quickjs}]
        cases: [{id: a, output: x}]
    """)
    with pytest.raises(SuiteInvalid) as invalid:
        load_suite(suite)
    [problem] = invalid.value.problems
    assert problem.line == 2
    assert 'the check does not compile: Error: require("fs") is not available in the embedded engine: set engine: node' in problem.render()


def test_load_errors_are_reported_at_their_line(tmp_path):
    write(tmp_path, "../outside.js", "module.exports = () => true;\n")
    suite = write(tmp_path, "suite.yaml", """
        name: js
        evaluators:
          - {name: syntax, type: javascript, code: "output.includes("}
          - {name: outside, type: javascript, file: ../outside.js}
          - {name: both, type: javascript, code: "true", file: a.js}
          - {name: nothing, type: javascript}
          - {name: exports, type: javascript, file: "empty.js:check"}
        cases: [{id: a, output: x}]
    """)
    write(tmp_path, "empty.js", "module.exports = {};\n")
    done = run_cli("validate", suite)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert any(":3: evaluators[0]: the check does not compile: SyntaxError" in line for line in lines), done.stderr
    assert any(":4:" in line and "outside the suite's folder" in line for line in lines), done.stderr
    assert any(":5:" in line and "one of them" in line for line in lines), done.stderr
    assert any(":6:" in line and "one of them" in line for line in lines), done.stderr
    assert any(":7:" in line and "exports no function named check" in line for line in lines), done.stderr


def test_a_cases_file_cannot_bring_javascript_without_trust(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "output": "x", "evaluators": [{"type": "javascript", "code": "true"}]}\n')
    suite = write(tmp_path, "suite.yaml", "name: js\nevaluators: [{type: length, min: 0}]\ncases: cases.jsonl\n")
    done = run_cli("validate", suite)
    assert done.returncode == 2 and "a `javascript` evaluator in a cases file runs a program or code" in done.stderr
    write(tmp_path, "suite.yaml", "name: js\ntrust_cases: true\nevaluators: [{type: length, min: 0}]\ncases: cases.jsonl\n")
    assert run_cli("validate", suite).returncode == 0


def test_a_run_with_workers_gives_each_thread_its_engine(tmp_path):
    lines = "\n".join(f'{{"id": "c{i}", "input": {{"n": {i}}}, "output": "{"x" * (i % 7)}"}}' for i in range(200))
    (tmp_path / "cases.jsonl").write_text(lines + "\n")
    suite = write(tmp_path, "suite.yaml", """
        name: js
        evaluators: [{type: javascript, code: "output.length === context.vars.n % 7"}]
        cases: cases.jsonl
    """)
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--workers", "4", "-q")
    assert done.returncode == 0, done.stderr
    assert {line["verdict"] for line in read_jsonl(tmp_path / "r.jsonl")} == {"pass"}
