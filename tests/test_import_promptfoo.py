"""`agenteval import promptfoo`: each key mapped or listed with its line, and the result validates and runs.

The importer is called as a function on real files in tmp dirs, and the CLI in a fresh process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval.importers import read_config
from agenteval.importers.output import write_import
from agenteval.importers.promptfoo import import_promptfoo, rewrite_template
from agenteval.suite.loader import load_suite

from conftest import read_jsonl, run_cli, write
from importer_proofs import FIXTURES, prove


def imported(tmp_path: Path, text: str, **files: str):
    for name, body in files.items():
        write(tmp_path, name.replace("__", "/"), body)
    config = write(tmp_path, "promptfooconfig.yaml", text)
    parsed, source = read_config(config)
    return import_promptfoo(parsed, source, tmp_path / "out")


def listed(result) -> list[str]:
    return [item.render() for item in result.not_carried]


def test_assertions_map_to_built_in_evaluators(tmp_path):
    result = imported(tmp_path, """
        prompts: ['Answer: {{question}}']
        providers: [openai:gpt-4.1-mini]
        tests:
          - vars: {question: 'capital of France?'}
            assert:
              - {type: equals, value: Paris}
              - {type: icontains, value: paris, metric: Accuracy, weight: 2}
              - {type: contains-any, value: [Paris, Lutetia]}
              - {type: contains-all, value: 'Paris, France'}
              - {type: not-contains, value: London}
              - {type: starts-with, value: P}
              - {type: not-starts-with, value: Sorry}
              - {type: regex, value: '^P\\w+'}
              - {type: is-json, value: {type: object}}
              - {type: llm-rubric, value: Names one city, threshold: 0.8}
              - {type: cost, threshold: 0.01}
              - {type: latency, threshold: 2000}
              - {type: not-equals, value: ''}
    """)
    evaluators = result.cases[0]["evaluators"]
    assert evaluators == [
        {"name": "equals", "type": "equals", "path": "content", "reference": "Paris"},
        {"name": "Accuracy", "type": "contains", "path": "content", "reference": "paris", "case_sensitive": False,
         "weight": 2, "criterion": {"name": "Accuracy"}},
        {"name": "contains-any", "type": "contains", "path": "content", "reference": ["Paris", "Lutetia"], "mode": "any"},
        {"name": "contains-all", "type": "contains", "path": "content", "reference": ["Paris", "France"]},
        {"name": "not-contains", "type": "not_contains", "path": "content", "reference": "London"},
        {"name": "starts-with", "type": "starts_with", "path": "content", "reference": "P"},
        {"name": "not-starts-with", "type": "regex", "path": "content", "pattern": "^Sorry", "must_match": False},
        {"name": "regex", "type": "regex", "path": "content", "pattern": "^P\\w+"},
        {"name": "is-json", "type": "json_schema", "path": "content", "schema": {"type": "object"}},
        {"name": "llm-rubric", "type": "llm_judge", "endpoint": "grader", "path": "content", "min_score": 0.8,
         "criteria": [{"name": "llm_rubric", "description": "Names one city", "scale": "unit"}]},
        {"name": "cost", "type": "cost", "max_usd": 0.01},
        {"name": "latency", "type": "latency", "max_ms": 2000},
        {"name": "not-equals", "type": "length", "path": "content", "min": 1},
    ]
    assert listed(result) == []
    suite = result.suites["suite.yaml"]
    assert suite["target"] == {"type": "openai", "base_url": "${OPENAI_BASE_URL:-https://api.openai.com/v1}", "model": "gpt-4.1-mini",
                               "api_key_env": "OPENAI_API_KEY", "messages": [{"role": "user", "content": "Answer: {{input.question}}"}]}
    assert suite["models"]["grader"]["model"] == "gpt-4.1-mini"


# a transform's value as the text promptfoo's checks (other than javascript and python) read
AS_TEXT = "const __value = (() => {{\nreturn {}\n}})();\nreturn typeof __value === 'string' ? __value : JSON.stringify(__value);"


def test_what_has_no_equivalent_is_listed_with_its_line(tmp_path):
    result = imported(tmp_path, """
        prompts: ['{{q}}']
        providers: [openai:gpt-4.1-mini, vertex:gemini-2.0-flash]
        derivedMetrics: [{name: x, value: a * 2}]
        tests:
          - vars: {q: hi}
            assert:
              - type: javascript
                value: output.length > 3
              - type: python
                value: "context['vars']['q'] in output"
              - {type: contains-json}
              - {type: equals, value: hi, transform: JSON.parse(output).answer}
              - {type: is-valid-openai-tools-call}
          - vars: {q: there}
            options: {transform: JSON.parse(output)}
            assert: [{type: equals, value: x}]
            threshold: 0.5
    """)
    assert listed(result) == [
        "promptfooconfig.yaml:2: providers[1]: provider 'vertex:gemini-2.0-flash' is not OpenAI-compatible, Anthropic or http; "
        "answers come from --predictions or recorded outputs",
        "promptfooconfig.yaml:3: derivedMetrics: agenteval computes no metrics from other metrics",
        "promptfooconfig.yaml:9: tests[0].assert[1]: `python` with inline code: only a one-line expression of `output` is carried "
        "(as `expression:`); move this one into a file with get_assert(output, context)",
        "promptfooconfig.yaml:11: tests[0].assert[2]: `contains-json`: agenteval's json_valid needs the whole answer to be one JSON document; "
        "no check finds JSON inside text",
        "promptfooconfig.yaml:13: tests[0].assert[4]: `is-valid-openai-tools-call`: agenteval does not check calls against the declared tools' "
        "parameter schemas; a tool_calls evaluator with the expected calls says more",
    ]
    assert result.cases[1]["threshold"] == 0.5  # carried as the case's threshold
    assert list(result.suites) == ["suite.yaml"]  # the vertex provider is listed, not written
    # the javascript check and the JavaScript transforms convert (agenteval runs them as they are); the rest is listed above
    assert result.cases[0]["evaluators"] == [
        {"name": "javascript", "type": "javascript", "path": "content", "code": "output.length > 3"},
        {"name": "equals", "type": "equals", "reference": "hi", "transform": {"javascript": AS_TEXT.format("JSON.parse(output).answer"), "path": "content"}},
    ]
    assert result.cases[1]["evaluators"] == [
        {"name": "equals", "type": "equals", "reference": "x", "transform": {"javascript": AS_TEXT.format("JSON.parse(output)"), "path": "content"}}]
    assert result.suites["suite.yaml"]["trust_cases"] is True  # a case brings code


def test_tests_from_csv_jsonl_json_and_yaml_files(tmp_path):
    result = imported(
        tmp_path,
        """
        prompts: ['{{a}}']
        providers: [openai:gpt-4.1-mini]
        tests: [file://t.csv, file://t.jsonl, file://more/*.yaml, file://t.json]
        """,
        **{
            "t.csv": 'a,__expected,__expected2,__description\nx,icontains:X,"contains-any:y,z",first\n"{""k"": 1}",similar(0.9):near,fn:output.ok,second\n',
            "t.jsonl": '{"vars": {"a": "j1"}, "assert": [{"type": "equals", "value": "j1"}]}\n\n{"vars": {"a": "j2"}}\n',
            "more__one.yaml": "- vars: {a: y1}\n  assert: [{type: starts-with, value: y}]\n",
            "t.json": '[{"vars": {"a": "n1"}, "assert": [{"type": "javascript", "value": "1"}]}]',
        },
    )
    assert [case["input"] for case in result.cases] == [{"a": "x"}, {"a": '{"k": 1}'}, {"a": "j1"}, {"a": "j2"}, {"a": "y1"}, {"a": "n1"}]
    assert result.cases[0]["evaluators"] == [
        {"name": "icontains", "type": "contains", "path": "content", "reference": "X", "case_sensitive": False},
        {"name": "contains-any", "type": "contains", "path": "content", "reference": ["y", "z"], "mode": "any"},
    ]
    assert result.cases[0]["metadata"] == {"description": "first"}
    assert result.cases[1]["evaluators"][0]["type"] == "semantic_similarity"
    assert result.cases[1]["evaluators"][0]["threshold"] == 0.9
    assert result.cases[1]["expected"] == {"similar": {"similar": "near"}}
    assert result.cases[4]["evaluators"][0]["type"] == "starts_with"
    assert listed(result) == []  # `fn:` and `javascript` checks convert
    assert [e for e in result.cases[1]["evaluators"] if e["type"] == "javascript"] == [
        {"name": "javascript", "type": "javascript", "path": "content", "code": "output.ok"}]
    assert result.cases[5]["evaluators"] == [{"name": "javascript", "type": "javascript", "path": "content", "code": "1"}]


def test_default_test_vars_and_assertions_reach_every_case(tmp_path):
    result = imported(tmp_path, """
        prompts: ['{{greeting}} {{name}}']
        providers: [openai:gpt-4.1-mini]
        defaultTest:
          vars: {greeting: Hello}
          metadata: {suite: demo}
          assert:
            - {type: not-icontains, value: sorry}
            - {type: icontains, value: '{{name}}'}
        tests:
          - vars: {name: Ann}
          - vars: {name: Bob, greeting: Hi}
    """)
    suite = result.suites["suite.yaml"]
    assert suite["evaluators"] == [{"name": "not-icontains", "type": "not_contains", "path": "content", "reference": "sorry", "case_sensitive": False}]
    assert suite["defaults"] == {"input": {"greeting": "Hello"}, "metadata": {"suite": "demo"}}  # said once, not copied into each case
    assert [case["input"] for case in result.cases] == [{"name": "Ann"}, {"name": "Bob", "greeting": "Hi"}]
    assert [case["evaluators"][0]["reference"] for case in result.cases] == ["Ann", "Bob"]  # a templated assertion, rendered per case
    assert "metadata" not in result.cases[0]
    write_import(result, tmp_path / "out", "promptfooconfig.yaml", "promptfoo")
    loaded = load_suite(tmp_path / "out" / "suite.yaml")  # the defaults merged in as each case is read: promptfoo's cases
    assert [(case.input, case.metadata) for case in loaded.iter_cases()] == [
        ({"greeting": "Hello", "name": "Ann"}, {"suite": "demo"}), ({"greeting": "Hi", "name": "Bob"}, {"suite": "demo"}),
    ]


def test_default_test_threshold_and_list_vars(tmp_path):
    result = imported(tmp_path, """
        prompts: ['{{tone}} {{q}}']
        defaultTest:
          threshold: 0.5
          vars: {tone: [calm, brisk], lang: en}
        tests:
          - vars: {q: one}
            providerOutput: x
            assert: [{type: equals, value: x}, {type: equals, value: y}]
          - vars: {q: two}
            threshold: 1
            providerOutput: x
            assert: [{type: equals, value: x}, {type: equals, value: y}]
    """)
    assert result.suites["suite.yaml"]["defaults"] == {"input": {"lang": "en"}, "threshold": 0.5}
    # a list var makes one case per value, so its values stay in the cases
    assert [case["input"] for case in result.cases] == [{"tone": "calm", "q": "one"}, {"tone": "brisk", "q": "one"},
                                                        {"tone": "calm", "q": "two"}, {"tone": "brisk", "q": "two"}]
    assert listed(result) == []
    write_import(result, tmp_path / "out", "promptfooconfig.yaml", "promptfoo")
    run = run_cli("run", tmp_path / "out" / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q")
    rows = {row["case_id"]: row["verdict"] for row in read_jsonl(tmp_path / "r.jsonl")}
    assert rows == {"001": "pass", "002": "pass", "003": "fail", "004": "fail"}  # half the score passes at 0.5, not at 1
    assert run.returncode == 1, run.stderr


def test_list_vars_make_one_case_per_value(tmp_path):
    result = imported(tmp_path, """
        prompts: ['Say {{word}} in {{language}}']
        tests:
          - vars: {word: [hi, bye], language: [French, German]}
            assert: [{type: icontains, value: '{{word}}'}]
    """)
    assert [case["input"] for case in result.cases] == [
        {"word": "hi", "language": "French"}, {"word": "hi", "language": "German"},
        {"word": "bye", "language": "French"}, {"word": "bye", "language": "German"},
    ]
    assert [case["evaluators"][0]["reference"] for case in result.cases] == ["hi", "hi", "bye", "bye"]
    assert result.suites["suite.yaml"]["target"] == {"type": "recorded"}  # no providers: recorded answers


def test_prompts_times_providers_become_the_targets_and_prompts_of_one_suite(tmp_path):
    result = imported(tmp_path, """
        prompts: [file://prompts.txt]
        providers:
          - openai:gpt-4.1-mini
          - {id: 'groq:meta/llama-3.1-8b', config: {temperature: 0, max_tokens: 50, frequency_penalty: 1}}
          - {id: 'openai:gpt-4.1-mini', label: mini/json, config: {response_format: {type: json_object}}}
          - https://api.example.com/chat
        tests: [{vars: {x: 1}, assert: [{type: contains, value: '1'}]}]
    """, **{"prompts.txt": "One {{x}}\n---\nTwo {{ x | string }}\n"})
    assert sorted(result.suites) == ["suite-http.yaml", "suite.yaml"]  # an http target takes no prompt: a suite of its own
    suite = result.suites["suite.yaml"]
    assert "target" not in suite
    assert suite["targets"] == {
        "openai:gpt-4.1-mini": {"type": "openai", "base_url": "${OPENAI_BASE_URL:-https://api.openai.com/v1}", "model": "gpt-4.1-mini",
                                "api_key_env": "OPENAI_API_KEY"},
        "groq:meta/llama-3.1-8b": {"type": "openai", "base_url": "https://api.groq.com/openai/v1", "model": "meta/llama-3.1-8b",
                                   "api_key_env": "GROQ_API_KEY", "temperature": 0, "max_tokens": 50},
        "mini/json": {"type": "openai", "base_url": "${OPENAI_BASE_URL:-https://api.openai.com/v1}", "model": "gpt-4.1-mini",
                      "api_key_env": "OPENAI_API_KEY", "response_format": {"type": "json_object"}},
    }
    assert suite["prompts"] == {"prompts-1": [{"role": "user", "content": "One {{input.x}}"}],
                                "prompts-2": [{"role": "user", "content": "Two {{ input.x | string }}"}]}
    assert result.suites["suite-http.yaml"]["target"] == {"type": "http", "url": "https://api.example.com/chat"}
    assert result.suites["suite-http.yaml"]["name"] == "promptfooconfig-http"
    assert listed(result) == ["promptfooconfig.yaml:4: providers[1].config.frequency_penalty: provider option `frequency_penalty` has no agenteval target form"]


def test_an_imported_comparison_runs_every_provider_with_every_prompt(tmp_path):
    from llm_server import LLMServer

    with LLMServer() as server:
        write(tmp_path, "promptfooconfig.yaml", f"""
            prompts: ['Say {{{{word}}}}', {{label: shout, raw: 'SHOUT {{{{word}}}}'}}]
            providers:
              - {{id: 'openai:chat:m1', label: fast, config: {{apiBaseUrl: '{server.base_url}'}}}}
              - {{id: 'openai:m2', config: {{apiBaseUrl: '{server.base_url}'}}}}
            tests:
              - vars: {{word: hi}}
                assert: [{{type: icontains, value: 'say hi'}}]
        """)
        done = run_cli("import", "promptfoo", "promptfooconfig.yaml", "-o", "out", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert sorted(path.name for path in (tmp_path / "out").glob("suite*.yaml")) == ["suite.yaml"]
        run = subprocess.run([sys.executable, "-m", "agenteval", "run", "out/suite.yaml", "-o", "r.jsonl", "-q"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120, env={**os.environ, "OPENAI_API_KEY": "k"})
        assert run.returncode == 1, run.stderr
        rows = sorted((row["target"], row["prompt"], row["verdict"]) for row in read_jsonl(tmp_path / "r.jsonl"))
        assert rows == [("fast", "prompt1", "pass"), ("fast", "shout", "fail"), ("openai:m2", "prompt1", "pass"), ("openai:m2", "shout", "fail")]
        assert sorted((request.body["model"], request.body["messages"][-1]["content"]) for request in server.received) == [
            ("m1", "SHOUT hi"), ("m1", "Say hi"), ("m2", "SHOUT hi"), ("m2", "Say hi"),
        ]


def test_http_provider_becomes_an_http_target(tmp_path):
    result = imported(tmp_path, """
        providers:
          - id: https://api.example.com/chat
            config:
              method: post
              headers: {Authorization: 'Bearer {{env.API_TOKEN}}'}
              transformResponse: json.data.answer
        tests: [{vars: {q: hi}, assert: [{type: contains, value: hi}]}]
    """)
    assert result.suites["suite.yaml"]["target"] == {
        "type": "http", "url": "https://api.example.com/chat", "method": "POST",
        "headers": {"Authorization": "Bearer ${API_TOKEN}"}, "response_path": "data.answer",
    }
    assert result.cases[0]["evaluators"][0] == {"name": "contains", "type": "contains", "reference": "hi"}  # no `path`: the answer is the text


def test_recorded_provider_outputs_run_offline(tmp_path):
    write(tmp_path, "promptfooconfig.yaml", """
        prompts: ['{{q}}']
        providers: [openai:gpt-4.1-mini]
        tests:
          - vars: {q: capital of France}
            providerOutput: Paris is the capital.
            assert: [{type: icontains, value: paris}, {type: levenshtein, value: Paris is the capital, threshold: 2}]
          - vars: {q: capital of Spain}
            providerOutput: Lisbon
            assert: [{type: icontains, value: madrid}]
    """)
    done = run_cli("import", "promptfoo", tmp_path / "promptfooconfig.yaml", "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "note: " in done.stderr and "provider 'openai:gpt-4.1-mini' not called" in done.stderr
    suite = (tmp_path / "out" / "suite.yaml").read_text()
    assert "type: recorded" in suite
    run = run_cli("run", tmp_path / "out" / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q")
    assert run.returncode == 1, run.stderr
    rows = {row["case_id"]: row for row in read_jsonl(tmp_path / "r.jsonl")}
    assert (rows["001"]["verdict"], rows["002"]["verdict"]) == ("pass", "fail")
    assert rows["001"]["output"] == "Paris is the capital."


def test_python_file_assertion_runs_through_code_judge(tmp_path):
    write(tmp_path, "checks/grade.py", """
        def get_assert(output, context):
            if context["config"].get("word", "") in output and context["vars"]["q"]:
                return {"pass": True, "score": 0.9, "reason": "has the word"}
            return 0.0
    """)
    write(tmp_path, "promptfooconfig.yaml", """
        tests:
          - vars: {q: one}
            providerOutput: a banana
            assert: [{type: python, value: 'file://checks/grade.py', config: {word: banana}}]
          - vars: {q: two}
            providerOutput: an apple
            assert: [{type: python, value: 'file://checks/grade.py:get_assert', config: {word: banana}}]
    """)
    out = tmp_path / "suites" / "imported"
    done = run_cli("import", "promptfoo", tmp_path / "promptfooconfig.yaml", "-o", out)
    assert done.returncode == 0, done.stderr
    case = json.loads((out / "cases.jsonl").read_text().splitlines()[0])
    assert case["evaluators"][0]["config"] == {"file": "../../checks/grade.py", "function": "get_assert", "assertion_config": {"word": "banana"}}
    run = run_cli("run", out / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q")
    rows = {row["case_id"]: row["evaluator_results"][0] for row in read_jsonl(tmp_path / "r.jsonl")}
    assert (rows["001"]["score"], rows["001"]["verdict"], rows["001"]["reasoning"]) == (0.9, "pass", "has the word")
    assert (rows["002"]["score"], rows["002"]["verdict"]) == (0.0, "fail")
    assert run.returncode == 1


def test_template_variables_are_read_from_the_input():
    assert rewrite_template("Hi {{name}}, {{ items | join(', ') }} {% for x in list %}{{ x }}{% endfor %} {{ a.b }}") == (
        "Hi {{input.name}}, {{ input[\"items\"] | join(', ') }} {% for x in input.list %}{{ x }}{% endfor %} {{ input.a.b }}"
    )


def test_a_prompt_with_a_nunjucks_only_filter_is_listed(tmp_path):
    result = imported(tmp_path, """
        prompts: ['Tone: {{ (style | load).tone }}', 'Plain {{style}}']
        providers: [openai:gpt-4.1-mini]
        tests: [{vars: {style: '{}'}, assert: [{type: contains, value: a}]}]
    """)
    assert list(result.suites) == ["suite.yaml"]
    assert result.suites["suite.yaml"]["target"]["messages"] == [{"role": "user", "content": "Plain {{input.style}}"}]
    assert listed(result) == ["promptfooconfig.yaml:1: prompts[0]: prompt 'prompt1' uses the template filter load, which agenteval's templates lack; not carried"]


def test_cli_exits_2_when_the_written_suite_is_invalid(tmp_path):
    write(tmp_path, "promptfooconfig.yaml", """
        tests:
          - vars: {q: x}
            providerOutput: x
            assert: [{type: regex, value: '(unclosed'}]
    """)
    done = run_cli("import", "promptfoo", tmp_path / "promptfooconfig.yaml", "-o", tmp_path / "out")
    assert done.returncode == 2
    assert "cases.jsonl:1" in done.stderr and "invalid regular expression" in done.stderr
    assert (tmp_path / "out" / "suite.yaml").is_file()  # written, so it can be fixed by hand


def test_cli_never_replaces_files_without_force(tmp_path):
    write(tmp_path, "promptfooconfig.yaml", "tests: [{vars: {q: x}, providerOutput: x, assert: [{type: equals, value: x}]}]\n")
    write(tmp_path, "out/suite.yaml", "name: mine\n")
    done = run_cli("import", "promptfoo", tmp_path / "promptfooconfig.yaml", "-o", tmp_path / "out")
    assert done.returncode == 2
    assert "already exists; give --force to replace" in done.stderr
    assert (tmp_path / "out" / "suite.yaml").read_text() == "name: mine\n"
    assert run_cli("import", "promptfoo", tmp_path / "promptfooconfig.yaml", "-o", tmp_path / "out", "--force").returncode == 0


def test_cli_bad_config_is_one_line(tmp_path):
    write(tmp_path, "promptfooconfig.yaml", "prompts: [a\n")
    done = run_cli("import", "promptfoo", tmp_path / "promptfooconfig.yaml")
    assert done.returncode == 2
    assert done.stderr.startswith("error: promptfooconfig.yaml:") and "Traceback" not in done.stderr
    missing = run_cli("import", "promptfoo", tmp_path / "nope.yaml")
    assert missing.returncode == 2 and "cannot read" in missing.stderr


# -- proof on promptfoo's own example configs (tests/fixtures/importers/promptfoo, MIT, LICENSE beside them) --------
# (config, suites written, keys listed, notes, exit of the offline run of the first suite, cases passed, cases run)
# Offline: --predictions from the fixed answers below ("I don't know." otherwise), and a local server grading
# every llm_judge criterion at full marks (tests/importer_proofs.py). cost and latency checks fail on
# predictions, which record neither.
ANSWERS = {
    "simple-csv/promptfooconfig.yaml": {"001": "Bonjour le monde", "002": "J'ai faim", "003": "Ahoy, world!", "004": "Where be the grub?"},
    "getting-started/promptfooconfig.yaml": {"001": "Bonjour le monde", "002": "¿Dónde está la biblioteca?"},
    # a test's description is its case id
    "simple-test/promptfooconfig.yaml": {"Check for exact match": "Yarr", "Another basic substring check": "Where be me grub?",
                                         "Check if output is JSON": '{"life": "at sea"}', "Check for semantic similarity": "Ahoy, world",
                                         "Use LLM to evaluate output": "Arrr, the quick brown fox"},
    "named-metrics/promptfooconfig.yaml": {"Check for exact match": "Yarr", "Another basic substring check": "Where be me grub?",
                                           "Check if output is JSON": '{"life": "at sea"}', "Check for semantic similarity": "Ahoy, world",
                                           "Use LLM to evaluate output": "Arrr"},
    "python-assert/promptfooconfig-external.yaml": {"001": "Bananas are yellow", "002": "Bananas, potatoes, avocados", "003": "bananas",
                                                    "004": "Durian smells", "005": "Passion fruit, guava, banana"},
    "external-defaulttest/promptfooconfig.yaml": {"001": "Paris", "002": "Plants use sunlight to make energy.", "003": "4", "004": "Code flows"},
    "claude-vs-gpt/promptfooconfig.yaml": {"001": "An echo", "003": "Darkness", "004": "A keyboard"},
    "json-output/promptfooconfig.yaml": {"002": '{"color": "purple", "countries": ["Brazil", "India"]}'},  # its test transform parses it
}
# A transform that throws on "I don't know." (`JSON.parse(output.arguments)`, `output[0].function.name`) is the test's
# error, as in promptfoo: the New York test in each of the two cells, and the two transformed tests.
ERRORED = {"openai-function-call/promptfooconfig.yaml": 2, "openai-tools-call/promptfooconfig.yaml": 2}
PROOFS = [
    ("assertion-scoring-override/promptfooconfig.yaml", 1, 3, 0, 1, 1, 3),  # its grader provider is `models.grader`
    ("claude-vs-gpt/promptfooconfig.yaml", 1, 0, 0, 1, 0, 30),  # its javascript check converts
    ("conversation-relevance/promptfooconfig.yaml", 1, 4, 1, 0, 8, 8),  # a list var of objects (`_conversation`) is one value
    ("external-defaulttest/promptfooconfig.yaml", 1, 2, 1, 1, 0, 8),  # two javascript checks convert; transformVars runs at import (a note)
    ("g-eval/promptfooconfig.yaml", 1, 0, 0, 0, 5, 5),
    ("getting-started/promptfooconfig.yaml", 1, 0, 0, 0, 12, 12),
    ("gpt-4o-vs-4o-mini/promptfooconfig.yaml", 1, 0, 0, 1, 0, 30),
    ("http-provider-tls/promptfooconfig-mock.yaml", 1, 12, 0, 1, 4, 12),  # its javascript checks run: "I don't know." is not the reply shape they read
    ("json-output/promptfooconfig.yaml", 1, 0, 0, 1, 1, 2),  # JSON.parse("I don't know.") in a check throws: a fail, as in promptfoo
    ("max-score-selection/promptfooconfig.yaml", 1, 5, 0, 0, 12, 12),
    ("multiple-translations/promptfooconfig.yaml", 1, 0, 0, 0, 150, 150),
    ("named-metrics/promptfooconfig.yaml", 1, 1, 0, 1, 8, 10),  # the carried `max(0, len(output) - 300)` is 0 for "Ahoy, world"
    ("openai-eval-factuality/promptfooconfig.yaml", 1, 0, 0, 0, 2, 2),
    ("openai-function-call/promptfooconfig.yaml", 1, 3, 1, 3, 4, 8),  # its transforms convert
    ("openai-tools-call/promptfooconfig.yaml", 1, 3, 1, 3, 1, 4),
    ("python-assert/promptfooconfig-external.yaml", 1, 0, 0, 1, 4, 5),
    ("python-assert/promptfooconfig-inline.yaml", 1, 2, 1, 0, 2, 2),
    ("self-grading/promptfooconfig.yaml", 1, 0, 0, 0, 20, 20),
    ("separate-test-configs/promptfooconfig.yaml", 1, 3, 1, 1, 60, 69),  # its javascript checks run on "I don't know." and fail 9 cases
    ("simple-csv/promptfooconfig.yaml", 1, 1, 0, 0, 4, 4),
    ("simple-test/promptfooconfig.yaml", 1, 1, 0, 1, 8, 10),  # the same python assertion; its javascript check converts
    ("sql-validation/promptfooconfig.yaml", 1, 3, 1, 1, 4, 6),
]


@pytest.mark.parametrize(("config", "suites", "listed_keys", "notes", "run_exit", "passed", "cases"), PROOFS, ids=[p[0] for p in PROOFS])
def test_public_promptfoo_examples_import_validate_and_run_offline(tmp_path, config, suites, listed_keys, notes, run_exit, passed, cases):
    proof = prove("promptfoo", FIXTURES / "promptfoo" / config, tmp_path / "out", ANSWERS.get(config, {}))
    assert (len(proof.suites), proof.listed, proof.notes) == (suites, listed_keys, notes), proof.stderr
    assert (proof.run_exit, proof.passed, proof.cases, proof.errored) == (run_exit, passed, cases, ERRORED.get(config, 0))


def test_not_forms_without_a_built_in_opposite_carry_negate(tmp_path):
    result = imported(tmp_path, """
        prompts: ['{{q}}']
        providers: [openai:gpt-4.1-mini]
        tests:
          - vars: {q: hi}
            assert:
              - {type: not-equals, value: hello}
              - {type: not-is-json}
              - {type: not-levenshtein, value: hello, threshold: 2}
    """)
    evaluators = result.cases[0]["evaluators"]
    assert [(e["type"], e.get("negate")) for e in evaluators] == [("equals", True), ("json_valid", True), ("text_similarity", True)]
    assert evaluators[0]["reference"] == "hello"
    assert [item.render() for item in result.not_carried if "negate" in item.render()] == []


def test_a_one_line_inline_python_assertion_becomes_an_expression_that_runs(tmp_path):
    result = imported(tmp_path, """
        prompts: ['{{q}}']
        providers: [openai:gpt-4.1-mini]
        tests:
          - vars: {q: hi}
            assert:
              - {type: python, value: "'refund' in output.lower()"}
              - {type: not-python, value: "len(output) > 100"}
    """)
    assert result.cases[0]["evaluators"] == [
        {"name": "python", "type": "python", "expression": "(lambda output: 'refund' in output.lower())(output['content'])"},
        {"name": "not-python", "type": "python", "expression": "(lambda output: len(output) > 100)(output['content'])", "negate": True},
    ]
    suite = write(tmp_path, "run.yaml", json.dumps({
        "name": "carried", "evaluators": result.cases[0]["evaluators"],
        "cases": [{"id": "a", "output": {"content": "A Refund is on its way"}}, {"id": "b", "output": {"content": "No."}}],
    }))
    proc = run_cli("run", suite, "-o", tmp_path / "r.jsonl", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert [row["verdict"] for row in read_jsonl(tmp_path / "r.jsonl")] == ["pass", "fail"]


def test_a_string_method_transform_on_an_assertion_becomes_a_jinja_transform_that_runs(tmp_path):
    result = imported(tmp_path, """
        prompts: ['{{q}}']
        providers: [openai:gpt-4.1-mini]
        tests:
          - vars: {q: hi}
            assert:
              - {type: equals, value: refund, transform: output.trim().toLowerCase()}
    """)
    assert result.cases[0]["evaluators"] == [
        {"name": "equals", "type": "equals", "reference": "refund", "transform": "output.content | trim | lower"},
    ]
    suite = write(tmp_path, "run.yaml", json.dumps({
        "name": "carried", "evaluators": result.cases[0]["evaluators"],
        "cases": [{"id": "a", "output": {"content": "  REFUND "}}, {"id": "b", "output": {"content": "no"}}],
    }))
    proc = run_cli("run", suite, "-o", tmp_path / "r.jsonl", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert [row["verdict"] for row in read_jsonl(tmp_path / "r.jsonl")] == ["pass", "fail"]


def _without_openai_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}


def test_model_outputs_become_predictions_one_per_test_in_order(tmp_path):
    write(tmp_path, "promptfooconfig.yaml", """
        prompts: ['Capital of {{country}}?']
        providers: [openai:gpt-4.1-mini]
        tests:
          - vars: {country: [France, Spain]}
            assert: [{type: icontains, value: a}]
          - vars: {country: Peru}
            assert: [{type: is-json}]
    """)
    write(tmp_path, "outputs.json", '["Paris", {"output": "Madrid", "tags": ["eu", "south"]}, {"output": {"capital": "Lima"}}]')
    out = tmp_path / "out"
    done = run_cli("import", "promptfoo", "promptfooconfig.yaml", "--model-outputs", "outputs.json", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_jsonl(out / "predictions.jsonl") == [  # a chat target's answer is the message
        {"id": "001", "output": {"content": "Paris"}}, {"id": "002", "output": {"content": "Madrid"}},
        {"id": "003", "output": {"content": '{"capital":"Lima"}'}},
    ]
    assert f"not carried over: {tmp_path / 'outputs.json'}: [1].tags: promptfoo passes an output's `tags` to its assertions " \
           "as the var `tags`; not carried" in done.stderr
    command = "agenteval run out/suite.yaml --predictions out/predictions.jsonl"
    assert f"score the model outputs: {command}" in done.stdout
    run = subprocess.run([sys.executable, "-m", *command.split(), "-o", "r.jsonl", "-q"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=_without_openai_env())
    assert run.returncode == 0, run.stderr
    assert sorted((row["case_id"], row["verdict"]) for row in read_jsonl(tmp_path / "r.jsonl")) == [("001", "pass"), ("002", "pass"), ("003", "pass")]


@pytest.mark.parametrize(("outputs", "message"), [
    ('["Paris"]', "outputs.json: 1 model output for 3 tests (001 to 003): --model-outputs gives one output per test, in the config's "
                  "order; nothing was written"),
    ('["a", "b", "c", "d"]', "outputs.json: 4 model outputs for 3 tests (001 to 003)"),
    ('{"output": "Paris"}', "outputs.json: expected a JSON list with one output per test, each a string or an object with `output`; "
                            "got a JSON object"),
    ('["a", 7, "c"]', "outputs.json: item [1] is a JSON number; expected a JSON list"),
    ('["a", {"text": "b"}, "c"]', "outputs.json: item [1] is an object without `output`; expected"),
    ('[\n"a",\n"b" "c"]', "outputs.json:3: the model outputs file is not valid JSON: Expecting ',' delimiter"),
])
def test_model_outputs_that_do_not_fit_are_one_line_and_nothing_is_written(tmp_path, outputs, message):
    write(tmp_path, "promptfooconfig.yaml", """
        tests:
          - vars: {q: [a, b]}
          - vars: {q: c}
    """)
    write(tmp_path, "outputs.json", outputs)
    done = run_cli("import", "promptfoo", "promptfooconfig.yaml", "--model-outputs", "outputs.json", "-o", "out", cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {message}"), line
    assert not (tmp_path / "out").exists()


def test_env_values_go_to_a_private_env_file_the_suite_reads(tmp_path):
    from llm_server import LLMServer

    from agenteval.suite.env_files import read_env_file

    key = "sk-'quoted' \"both\" back\\slash # not a comment"
    with LLMServer() as server:
        write(tmp_path, "promptfooconfig.yaml", f"""
            env:
              OPENAI_BASE_URL: {server.base_url}
              OPENAI_API_KEY: {json.dumps(key)}
              RETRIES: 3
              BAD-NAME: x
              NESTED: {{a: 1}}
            prompts: ['Say {{{{word}}}}']
            providers: [openai:gpt-4.1-mini]
            tests: [{{vars: {{word: hi}}, assert: [{{type: icontains, value: say hi}}]}}]
        """)
        done = run_cli("import", "promptfoo", "promptfooconfig.yaml", "-o", "out", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        env_file = tmp_path / "out" / ".env"
        assert env_file.stat().st_mode & 0o777 == 0o600
        assert read_env_file(env_file) == {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": key, "RETRIES": "3"}
        assert "env_file: .env" in (tmp_path / "out" / "suite.yaml").read_text()
        assert "sk-" not in done.stdout + done.stderr and server.base_url not in done.stdout + done.stderr  # names only
        assert "note: promptfooconfig.yaml:1: env: OPENAI_BASE_URL, OPENAI_API_KEY, RETRIES written to .env beside the suite" in done.stderr
        assert "promptfooconfig.yaml:5: env.BAD-NAME: not a variable name a .env file can hold" in done.stderr
        assert "promptfooconfig.yaml:6: env.NESTED: only a text, number or true/false value can go into a .env file" in done.stderr

        run = subprocess.run([sys.executable, "-m", "agenteval", "run", "out/suite.yaml", "-o", "r.jsonl", "-q"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120, env=_without_openai_env())
        assert run.returncode == 0, run.stderr
        assert [row["verdict"] for row in read_jsonl(tmp_path / "r.jsonl")] == ["pass"]
        [request] = server.received
        assert request.headers["Authorization"] == f"Bearer {key}"  # the imported suite ran with the config's env


def test_model_outputs_for_a_comparison_answer_its_first_cell(tmp_path):
    write(tmp_path, "promptfooconfig.yaml", """
        prompts: ['Say {{word}}', {label: shout, raw: 'SHOUT {{word}}'}]
        providers: [openai:m1, {id: 'openai:m2', label: second}]
        tests:
          - vars: {word: hi}
            assert: [{type: icontains, value: hi}]
          - vars: {word: bye}
            assert: [{type: icontains, value: bye}]
    """)
    write(tmp_path, "outputs.json", '[{"output": "hi there"}, "so long"]')
    done = run_cli("import", "promptfoo", "promptfooconfig.yaml", "--model-outputs", "outputs.json", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_jsonl(tmp_path / "out" / "predictions.jsonl") == [
        {"id": "001", "output": {"content": "hi there"}, "target": "openai:m1", "prompt": "prompt1"},
        {"id": "002", "output": {"content": "so long"}, "target": "openai:m1", "prompt": "prompt1"},
    ]
    command = "agenteval run out/suite.yaml --predictions out/predictions.jsonl --target openai:m1 --prompt prompt1"
    assert f"score the model outputs: {command}" in done.stdout
    run = subprocess.run([sys.executable, "-m", *command.split(), "-o", "r.jsonl", "-q"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=_without_openai_env())
    assert run.returncode == 1, run.stderr
    # (in the order the cases finish: the target's requests run concurrently)
    assert sorted((row["case_id"], row["target"], row["prompt"], row["verdict"]) for row in read_jsonl(tmp_path / "r.jsonl")) == [
        ("001", "openai:m1", "prompt1", "pass"), ("002", "openai:m1", "prompt1", "fail"),
    ]


def test_anthropic_providers_become_anthropic_targets(tmp_path):
    result = imported(tmp_path, """
        prompts: ['{{q}}']
        providers:
          - anthropic:messages:claude-sonnet-4-20250514
          - id: anthropic:claude-3-5-haiku-latest
            label: haiku
            config: {temperature: 0, max_tokens: 300, apiKeyEnvar: TEAM_ANTHROPIC_KEY, seed: 3}
          - anthropic:completion:claude-2
        tests: [{vars: {q: hi}, assert: [{type: contains, value: hi}]}]
    """)
    targets = result.suites["suite.yaml"]["targets"]
    asked = [{"role": "user", "content": "{{input.q}}"}]
    assert targets == {
        "anthropic:messages:claude-sonnet-4-20250514": {"type": "anthropic", "model": "claude-sonnet-4-20250514", "messages": asked},
        "haiku": {
            "type": "anthropic", "model": "claude-3-5-haiku-latest", "temperature": 0, "max_tokens": 300,
            "api_key_env": "TEAM_ANTHROPIC_KEY", "messages": asked,
        },
    }
    assert listed(result) == [
        "promptfooconfig.yaml:6: providers[1].config.seed: provider option `seed` has no agenteval target form",
        "promptfooconfig.yaml:7: providers[2]: provider 'anthropic:completion:claude-2': only the Messages API has an agenteval "
        "target; answers come from --predictions",
    ]


def test_a_list_var_of_objects_is_one_value_and_a_description_is_the_case_id(tmp_path):
    result = imported(tmp_path, """
        prompts: ['{{q}}']
        tests:
          - description: "Two  words"
            vars: {q: [a, b], turns: [{input: hi, output: hello}, {input: bye, output: ciao}]}
          - description: Two words
            vars: {q: c}
          - vars: {q: d}
    """)
    assert [case["id"] for case in result.cases] == ["Two words", "Two words-2", "Two words-3", "004"]
    assert [case["input"]["q"] for case in result.cases] == ["a", "b", "c", "d"]
    assert result.cases[0]["input"]["turns"] == [{"input": "hi", "output": "hello"}, {"input": "bye", "output": "ciao"}]


def test_file_config_values_labels_and_the_grader_provider_are_carried(tmp_path):
    result = imported(tmp_path, """
        prompts:
          - {label: careful, raw: file://careful.txt}
          - {label: terse, raw: 'Answer {{q}}'}
        providers:
          - id: openai:chat:gpt-4o
            config: {response_format: file://format.json, tools: file://tools.yaml, apiKeyEnvar: MY_KEY}
          - id: openai:chat:gpt-4o-mini
            config: {response_format: file://../outside.json}
        defaultTest:
          options:
            provider: {id: 'openai:chat:judge-model', config: {apiBaseUrl: 'http://127.0.0.1:8000/v1', temperature: 0.2}}
        tests: [{vars: {q: a}, assert: [{type: llm-rubric, value: polite}]}]
    """, **{"careful.txt": "Think, then answer {{q}}", "format.json": '{"type": "json_object"}',
            "tools.yaml": "- {type: function, function: {name: get}}\n"})
    suite = result.suites["suite.yaml"]
    assert list(suite["prompts"]) == ["careful", "terse"]
    first, second = suite["targets"].values()
    assert (first["response_format"], first["tools"], first["api_key_env"]) == (
        {"type": "json_object"}, [{"type": "function", "function": {"name": "get"}}], "MY_KEY")
    assert "response_format" not in second
    assert suite["models"]["grader"] == {"base_url": "http://127.0.0.1:8000/v1", "model": "judge-model", "api_key_env": "OPENAI_API_KEY",
                                         "temperature": 0.2}
    assert [line.split(": ", 1)[1][:60] for line in listed(result)] == [
        "providers[1].config.response_format: provider option `respon"]
    assert "../outside.json is outside the config's folder" in listed(result)[0]


def test_promptfoo_and_agentv_type_names_typed_into_a_suite_name_the_agenteval_evaluator_and_option(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: typed
        cases: [{id: a, output: hi}]
        evaluators:
          - {name: a, type: icontains, reference: hi}
          - {name: b, type: contains-any, reference: [hi]}
          - {name: c, type: llm-rubric, reference: polite}
          - {name: d, type: code_grader, command: [python, j.py]}
          - {name: e, type: starts-with, reference: h}
    """)
    done = run_cli("validate", suite)
    hints = [line.split("; did you mean ")[1].split("?")[0] for line in done.stderr.splitlines() if "did you mean" in line]
    assert (done.returncode, hints) == (2, ["`contains` with `case_sensitive: false`", "`contains` with `mode: any`",
                                            "`llm_judge` with the rubric as a criterion", "`code_judge`", "'starts_with'"]), done.stderr


def test_script_providers_become_command_targets_with_promptfoos_calling_convention(tmp_path):
    write(tmp_path, "provider.py", """
        def call_api(prompt, options, context):
            key = options["config"]["apiKey"]
            return {"output": f"{prompt} / {context['vars']['q']} / key ends {key[-4:]}"}

        def broken(prompt, options, context):
            return {"error": "the backend is down"}
    """)
    write(tmp_path, "run.sh", '#!/bin/sh\necho "exec got: $1"\n')
    (tmp_path / "run.sh").chmod(0o755)
    config = write(tmp_path, "promptfooconfig.yaml", """
        description: scripts
        prompts:
          - {label: short, raw: 'Say {{q}}'}
          - {label: long, raw: 'Please say {{q}}'}
        providers:
          - {id: 'file://provider.py', label: py, config: {apiKey: sk-script-SECRET-4321}}
          - {id: 'python:provider.py:broken', label: down}
          - {id: 'exec: ./run.sh', label: sh}
          - file://../elsewhere.py
          - file://provider.js
        tests: [{vars: {q: apples}, assert: [{type: contains, value: apples}]}]
    """)
    done = run_cli("import", "promptfoo", config, "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "sk-script-SECRET-4321" not in (tmp_path / "out" / "suite.yaml").read_text() + done.stdout + done.stderr
    assert "providers[3]: provider 'file://../elsewhere.py': ../elsewhere.py is outside the config's folder" in done.stderr
    assert "providers[4]: provider 'file://provider.js': a JavaScript provider runs code agenteval does not run" in done.stderr
    run = run_cli("run", tmp_path / "out" / "suite.yaml", "-o", tmp_path / "r.jsonl", "--no-cache")
    rows = {(row["target"], row.get("prompt")): row for row in read_jsonl(tmp_path / "r.jsonl")}
    assert sorted(rows) == [("down long", None), ("down short", None), ("py long", None), ("py short", None), ("sh long", None), ("sh short", None)]
    assert rows[("py short", None)]["output"] == "Say apples / apples / key ends 4321"
    assert rows[("py long", None)]["output"] == "Please say apples / apples / key ends 4321"
    assert rows[("sh short", None)]["output"] == "exec got: Say apples"
    assert rows[("down short", None)]["verdict"] == "error" and "the backend is down" in rows[("down short", None)]["error"]
    assert run.returncode == 3, run.stdout + run.stderr
    assert "sk-script-SECRET-4321" not in (tmp_path / "r.jsonl").read_text() + run.stdout + run.stderr


def test_tests_made_by_code_are_listed_not_run_unless_asked(tmp_path):
    write(tmp_path, "gen.py", "import pathlib\npathlib.Path('RAN').write_text('x')\ndef make_tests():\n    return []\n")
    result = imported(tmp_path, """
        providers: [openai:chat:gpt-4o]
        tests:
          - file://gen.py:make_tests
          - {vars: {q: a}}
    """)
    assert not (tmp_path / "RAN").exists()
    assert listed(result) == ["promptfooconfig.yaml:3: tests[0]: tests made by code (gen.py:make_tests) are not run unless you ask (a downloaded "
                              "config's code runs only when you choose to): import with --run-generators to run it once now and write its tests as cases"]


def test_a_providers_label_keeps_its_slash_and_the_suite_runs_with_it(tmp_path):
    result = imported(tmp_path, """
        prompts: [{label: terse/v1, raw: 'Say {{q}}'}, 'Please say {{q}}']
        providers: [{id: 'openai:chat:gpt-4o', label: openai/gpt-4o}, {id: 'openrouter:meta-llama/llama-3.1-8b'}]
        tests: [{vars: {q: a}, assert: [{type: contains, value: a}]}]
    """)
    suite = result.suites["suite.yaml"]
    assert list(suite["targets"]) == ["openai/gpt-4o", "openrouter:meta-llama/llama-3.1-8b"]
    assert list(suite["prompts"]) == ["terse-v1", "prompt2"]  # a prompt's name ends the cell label: no "/" in it
    assert [item.render() for item in result.notes] == [
        "promptfooconfig.yaml:1: prompts[0]: prompt 'terse/v1' is named 'terse-v1': a cell's label ends with `/PROMPT`, "
        "so a prompt's name cannot hold one (a target's can)"]
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"id": result.cases[0]["id"], "target": "openai/gpt-4o", "prompt": "terse-v1",
                                       "output": {"content": "a"}}) + "\n")
    write_import(result, tmp_path / "out", "promptfooconfig.yaml", "promptfoo", False)
    run = run_cli("run", tmp_path / "out" / "suite.yaml", "--predictions", predictions, "--target", "openai/gpt-4o",
                  "--prompt", "terse-v1", "-o", tmp_path / "r.jsonl")
    assert run.returncode == 0, run.stdout + run.stderr
    assert [(row["target"], row["prompt"], row["verdict"]) for row in read_jsonl(tmp_path / "r.jsonl")] == [("openai/gpt-4o", "terse-v1", "pass")]
    assert "[openai/gpt-4o/terse-v1]" in run.stdout or "openai/gpt-4o/terse-v1" in run.stdout


GENERATOR_PY = """\
def make_tests(config=None):
    topics = (config or {}).get("topics", ["apples"])
    return [{"description": f"about {t}", "vars": {"q": t}, "assert": [{"type": "icontains", "value": t}]} for t in topics]

def generate_tests():
    return [{"vars": {"q": "pears"}}, "not a test"]

def broken():
    raise ValueError("the database is down")

def hangs():
    import time
    time.sleep(30)

def garbage():
    return {"vars": {"q": "x"}}

def not_json():
    return [{"vars": {"q": {1, 2}}}]
"""

GENERATOR_JS = """\
module.exports = async (config) => [{description: 'from js', vars: {q: (config && config.word) || 'plums'},
                                      assert: [{type: 'javascript', value: 'output.includes(context.vars.q)'}]}];
"""


def test_tests_generators_run_once_when_asked_and_their_tests_become_cases(tmp_path, monkeypatch):
    from agenteval.importers import promptfoo_generator

    monkeypatch.setattr(promptfoo_generator, "GENERATOR_TIMEOUT_S", 8.0)  # (each generator's bound: node or Python starting on a loaded machine takes it, the hanging one waits it out)
    write(tmp_path, "gen.py", GENERATOR_PY)
    write(tmp_path, "gen.js", GENERATOR_JS)
    write(tmp_path, "gen.ts", "export default () => []\n")
    config = write(tmp_path, "promptfooconfig.yaml", """
        providers: [openai:chat:gpt-4o]
        tests:
          - file://gen.py:make_tests
          - {path: 'file://gen.py:make_tests', config: {topics: [kiwis, figs]}}
          - file://gen.py
          - file://gen.py:broken
          - file://gen.py:hangs
          - file://gen.py:garbage
          - file://gen.py:not_json
          - {path: file://gen.js, config: {word: dates}}
          - file://gen.ts
          - file://../outside.py:make_tests
    """)
    said: list[str] = []
    parsed, source = read_config(config)
    result = import_promptfoo(parsed, source, tmp_path / "out", run_generators=said.append)
    assert [(case["id"], case["input"]) for case in result.cases] == [
        ("about apples", {"q": "apples"}), ("about kiwis", {"q": "kiwis"}), ("about figs", {"q": "figs"}),
        ("004", {"q": "pears"}), ("from js", {"q": "dates"}),
    ]
    assert result.cases[0]["evaluators"] == [{"name": "icontains", "type": "contains", "path": "content", "reference": "apples", "case_sensitive": False}]
    assert result.cases[4]["evaluators"] == [{"name": "javascript", "type": "javascript", "path": "content", "code": "output.includes(context.vars.q)"}]
    assert said == [f"running the tests generator {name} (code from the config's folder; --run-generators), at most 8s" for name in (
        "gen.py:make_tests", "gen.py:make_tests", "gen.py", "gen.py:broken", "gen.py:hangs", "gen.py:garbage", "gen.py:not_json", "gen.js")]
    assert listed(result) == [
        "promptfooconfig.yaml:6: tests[3]: tests generator gen.py:broken gave no tests: it failed: ValueError: the database is down",
        "promptfooconfig.yaml:7: tests[4]: tests generator gen.py:hangs gave no tests: it timed out after 8s",
        "promptfooconfig.yaml:8: tests[5]: tests generator gen.py:garbage gave no tests: it returned an object, not a list of tests",
        "promptfooconfig.yaml:9: tests[6]: tests generator gen.py:not_json gave no tests: it failed: not_json returned a value that is "
        "not JSON: Object of type set is not JSON serializable",
        "promptfooconfig.yaml:11: tests[8]: tests made by code (gen.ts): a TypeScript generator needs a TypeScript runtime, which the "
        "import does not run: compile it to .js, or write its tests out",
        "promptfooconfig.yaml:12: tests[9]: tests generator ../outside.py is outside the config's folder; not read (an import reads files "
        "inside that folder only: copy the file there, or widen it with --root DIR)",
        "gen.py: [1]: a generated test that is not an object is not converted",
    ]
    assert [item.render() for item in result.notes][1:3] == [
        "promptfooconfig.yaml:3: tests[0]: 1 test made by running gen.py:make_tests once, at import; run the import again to make them anew",
        "promptfooconfig.yaml:4: tests[1]: 2 tests made by running gen.py:make_tests once, at import; run the import again to make them anew",
    ]


def test_a_javascript_generator_without_node_is_listed_naming_node(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no node on it
    write(tmp_path, "gen.js", GENERATOR_JS)
    config = write(tmp_path, "promptfooconfig.yaml", "tests: [file://gen.js]\n")
    parsed, source = read_config(config)
    said: list[str] = []
    result = import_promptfoo(parsed, source, tmp_path / "out", run_generators=said.append)
    assert (said, result.cases) == ([], [])
    assert listed(result) == ["promptfooconfig.yaml:1: tests[0]: tests made by code (gen.js): a JavaScript generator runs under `node`, "
                              "which is not installed (install Node.js, or write its tests out)"]


def test_the_cli_runs_a_generator_only_with_run_generators_and_says_so(tmp_path):
    write(tmp_path, "gen.py", GENERATOR_PY)
    config = write(tmp_path, "promptfooconfig.yaml", "providers: [openai:chat:gpt-4o]\ntests: [file://gen.py:make_tests, {vars: {q: b}}]\n")
    refused = run_cli("import", "promptfoo", config, "-o", tmp_path / "a")
    assert refused.returncode == 0 and "import with --run-generators" in refused.stderr and "running the tests generator" not in refused.stderr
    assert [case["id"] for case in read_jsonl(tmp_path / "a" / "cases.jsonl")] == ["001"]
    done = run_cli("import", "promptfoo", config, "-o", tmp_path / "b", "--run-generators")
    assert done.returncode == 0, done.stderr
    assert "running the tests generator gen.py:make_tests (code from the config's folder; --run-generators), at most 60s" in done.stderr
    assert [case["id"] for case in read_jsonl(tmp_path / "b" / "cases.jsonl")] == ["about apples", "002"]
