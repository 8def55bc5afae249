"""The conveniences promptfoo and AgentV users rely on: `negate`, a case `threshold`, `python`
expressions, CSV/TSV and several cases files, `defaults:`, env files and `transform:`."""

from __future__ import annotations

import json

from conftest import read_jsonl, run_cli, write


def _results(tmp_path, suite_text: str, *args: str):
    suite = write(tmp_path, "suite.yaml", suite_text)
    out = tmp_path / "r.jsonl"
    proc = run_cli("run", suite, "-o", out, *args, cwd=tmp_path)
    assert out.exists(), proc.stderr + proc.stdout
    return proc, {row["case_id"]: row for row in read_jsonl(out)}


def test_negate_turns_verdicts_scores_and_hits_around_and_keeps_errors(tmp_path):
    write(tmp_path, "judges.py", "def boom(payload):\n    raise ValueError('broken judge')\n")
    _, rows = _results(tmp_path, """
        name: neg
        trust_cases: true
        evaluators:
          - {type: contains, reference: refund, negate: true}
        cases:
          - {id: said, output: "we refund you", expected: x}
          - {id: unsaid, output: "no money back", expected: x}
          - id: partly
            output: "refund now"
            evaluators: [{type: contains, name: both, reference: [refund, today], negate: true}]
          - id: broken
            output: "anything"
            evaluators: [{type: python, function: "judges:boom", negate: true}]
    """)
    said = rows["said"]["evaluator_results"][0]
    assert (said["verdict"], said["score"], said["hits"], said["misses"]) == ("fail", 0.0, [], ["not: 'refund'"])
    assert rows["said"]["verdict"] == "fail"
    unsaid = rows["unsaid"]["evaluator_results"][0]
    assert (unsaid["verdict"], unsaid["score"], unsaid["hits"], unsaid["misses"]) == ("pass", 1.0, ["not: 'refund'"], [])
    assert rows["unsaid"]["verdict"] == "pass"
    both = rows["partly"]["evaluator_results"][1]
    assert (both["verdict"], both["score"]) == ("partial", 0.5)
    # the miss says why a list half found fails (docs/evaluators.md, contains); turned around, it is the hit
    assert both["hits"] == ["not: 'today' not found (1 of 2 found; every one is needed, `mode: any` passes with one)"]
    assert both["misses"] == ["not: 'refund'"]
    broken = rows["broken"]["evaluator_results"][1]
    assert broken["verdict"] == "error" and broken["score"] == 0.0 and "broken judge" in broken["error"]
    assert rows["broken"]["verdict"] == "error"


def test_negate_applies_after_min_score(tmp_path):
    _, rows = _results(tmp_path, """
        name: neg
        evaluators:
          - {type: text_similarity, algorithm: levenshtein, reference: "hello world", min_score: 0.8, negate: true}
        cases:
          - {id: close, output: "hello world!"}
          - {id: far, output: "goodbye"}
    """)
    assert rows["close"]["verdict"] == "fail"
    assert rows["far"]["verdict"] == "pass"
    close = rows["close"]["evaluator_results"][0]  # a negated fail scores 0; the check's own score is kept
    assert close["score"] == 0.0 and abs(close["details"]["score_before_negate"] - 11 / 12) < 1e-9
    assert rows["far"]["evaluator_results"][0]["score"] == 1.0


def test_a_case_threshold_passes_on_the_weighted_score_and_errors_stay_errors(tmp_path):
    write(tmp_path, "judges.py", "def boom(payload):\n    raise ValueError('broken judge')\n")
    _, rows = _results(tmp_path, """
        name: thr
        trust_cases: true
        evaluators:
          - {type: contains, reference: refund, weight: 3}
          - {type: contains, name: apology, reference: sorry}
        cases:
          - {id: above, output: "a refund", threshold: 0.75}
          - {id: below, output: "a refund", threshold: 0.8}
          - {id: strict, output: "a refund"}
          - id: broken
            output: "a refund, sorry"
            threshold: 0.1
            evaluators: [{type: python, function: "judges:boom", weight: 0}]
    """)
    assert (rows["above"]["verdict"], rows["above"]["score"]) == ("pass", 0.75)
    assert (rows["below"]["verdict"], rows["below"]["score"]) == ("fail", 0.75)
    assert rows["strict"]["verdict"] == "fail"
    assert rows["broken"]["verdict"] == "error"


def test_a_threshold_outside_zero_to_one_is_a_located_problem(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: thr
        evaluators: [{type: contains, reference: x}]
        cases:
          - {id: a, output: x, threshold: 1.5}
    """)
    proc = run_cli("validate", suite, cwd=tmp_path)
    assert proc.returncode != 0
    assert "suite.yaml:4" in proc.stdout + proc.stderr and "threshold" in proc.stdout + proc.stderr


def test_a_python_expression_is_a_one_line_assertion(tmp_path):
    _, rows = _results(tmp_path, """
        name: expr
        evaluators:
          - {type: python, name: refund, expression: "'refund' in output.lower()"}
          - {type: python, name: names, expression: "all(w in output for w in input['words']) and expected == 'x' and case_id in ('a', 'b')"}
          - {type: python, name: graded, expression: "{'score': 0.5, 'reasoning': metadata['why']}", min_score: 0.5}
        cases:
          - {id: a, input: {words: [we]}, expected: x, metadata: {why: half}, output: "We REFUND you, we do"}
          - {id: b, input: {words: [never]}, expected: x, metadata: {why: half}, output: "no money back"}
          - id: c
            metadata: {why: half}
            output: 42
            evaluators: [{type: python, name: refund, expression: "output.lower()"}]
    """)
    a = {r["name"]: r for r in rows["a"]["evaluator_results"]}
    assert (a["refund"]["verdict"], a["refund"]["score"]) == ("pass", 1.0)
    assert a["names"]["verdict"] == "pass"
    assert (a["graded"]["verdict"], a["graded"]["score"], a["graded"]["reasoning"]) == ("pass", 0.5, "half")
    assert rows["a"]["verdict"] == "pass"
    b = {r["name"]: r for r in rows["b"]["evaluator_results"]}
    assert (b["refund"]["verdict"], b["names"]["verdict"]) == ("fail", "fail")
    c = {r["name"]: r for r in rows["c"]["evaluator_results"]}
    assert c["refund"]["verdict"] == "error"
    assert c["refund"]["error"].startswith("expression 'output.lower()' raised AttributeError: 'int' object has no attribute 'lower'")


def test_a_bad_expression_or_both_keys_are_load_time_problems_and_a_cases_file_needs_trust(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: expr
        evaluators:
          - {type: python, expression: "output ==", name: broken}
          - {type: python, expression: "True", function: "m:f", name: both}
        cases: [{id: a, output: x}]
    """)
    proc = run_cli("validate", suite, cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "suite.yaml:3" in text and "the expression is not valid Python" in text
    assert "suite.yaml:4" in text and "give either `function` (module:function) or `expression`" in text
    write(tmp_path, "cases.jsonl", json.dumps({"id": "a", "output": "x", "evaluators": [{"type": "python", "expression": "True"}]}) + "\n")
    suite = write(tmp_path, "suite.yaml", "name: expr\ncases: cases.jsonl\n")
    proc = run_cli("validate", suite, cwd=tmp_path)
    assert proc.returncode != 0 and "cases.jsonl:1" in proc.stdout + proc.stderr and "trust_cases" in proc.stdout + proc.stderr


def test_cases_from_csv_and_tsv_with_json_cells_and_dotted_columns(tmp_path):
    write(tmp_path, "cases.csv", '''
        id,input.question,input.context,expected,tags,threshold,metadata
        a,"What is 2+2?","{""lang"": ""en""}",4,"math, easy",,
        b,Capital of France?,,Paris,geo,0.5,"{""source"": ""atlas""}"
    ''')
    write(tmp_path, "cases.tsv", "id\tinput\texpected\toutput\nt1\t[1, 2]\tok\tok\n")
    suite = write(tmp_path, "suite.yaml", """
        name: table
        evaluators: [{type: contains}]
        cases: cases.csv
    """)
    write(tmp_path, "answers.jsonl", '{"id": "a", "output": "it is 4"}\n{"id": "b", "output": "Lyon"}\n')
    proc = run_cli("run", suite, "--predictions", tmp_path / "answers.jsonl", "-o", tmp_path / "r.jsonl", cwd=tmp_path)
    rows = {row["case_id"]: row for row in read_jsonl(tmp_path / "r.jsonl")}
    assert proc.returncode == 1, proc.stderr
    assert rows["a"]["input"] == {"question": "What is 2+2?", "context": {"lang": "en"}}
    assert rows["a"]["expected"] == "4" and rows["a"]["tags"] == ["math", "easy"] and rows["a"]["verdict"] == "pass"
    assert rows["b"]["metadata"] == {"source": "atlas"} and rows["b"]["verdict"] == "fail"
    tsv = write(tmp_path, "tsv.yaml", "name: tsv\nevaluators: [{type: equals}]\ncases: cases.tsv\n")
    proc = run_cli("run", tsv, "-o", tmp_path / "t.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert read_jsonl(tmp_path / "t.jsonl")[0]["input"] == [1, 2]


def test_a_bad_row_in_a_csv_cases_file_names_its_line(tmp_path):
    write(tmp_path, "cases.csv", "id,expected,colour\na,x,\n,y,\nc,z,red\n")
    suite = write(tmp_path, "suite.yaml", "name: t\nevaluators: [{type: equals}]\ncases: cases.csv\n")
    proc = run_cli("validate", suite, cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "cases.csv:3" in text and "id" in text
    assert "cases.csv:1: the header's column 'colour' is no case key" in text  # once, at the header, not at each row using it


def test_cases_from_several_files_and_a_glob_stream_jsonl_and_keep_file_lines(tmp_path):
    write(tmp_path, "cases/a.jsonl", '{"id": "a1", "output": "x"}\n{"id": "a2", "output": "y"}\n')
    write(tmp_path, "cases/b.jsonl", '{"id": "b1", "output": "x"}\n')
    write(tmp_path, "more.csv", "id,output\nc1,x\n")
    _, rows = _results(tmp_path, """
        name: many
        evaluators: [{type: regex, pattern: "^x$"}]
        cases: ["cases/*.jsonl", more.csv]
    """)
    assert list(rows) == ["a1", "a2", "b1", "c1"]
    assert [rows[c]["verdict"] for c in rows] == ["pass", "fail", "pass", "pass"]
    proc = run_cli("run", tmp_path / "suite.yaml", "--filter", "b1", "-o", tmp_path / "one.jsonl", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [row["case_id"] for row in read_jsonl(tmp_path / "one.jsonl")] == ["b1"]
    write(tmp_path, "cases/c.jsonl", '{"id": "c2", "output": "x"}\n{"id": "a2", "output": "x"}\n{"id": 5\n')
    proc = run_cli("validate", tmp_path / "suite.yaml", cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "c.jsonl:2" in text and "duplicate case id 'a2' (first in a.jsonl:2)" in text
    assert "c.jsonl:3" in text and "invalid JSON" in text
    glob_only = write(tmp_path, "none.yaml", "name: none\ncases: 'nothing/*.jsonl'\n")
    proc = run_cli("validate", glob_only, cwd=tmp_path)
    assert proc.returncode != 0 and "none.yaml:2" in proc.stdout + proc.stderr
    assert "no cases file matches 'nothing/*.jsonl'" in proc.stdout + proc.stderr


def test_defaults_are_merged_into_every_case_and_the_case_wins(tmp_path):
    write(tmp_path, "cases.jsonl", "\n".join(json.dumps(c) for c in [
        {"id": "a", "input": {"q": "hi"}, "output": "hello there", "tags": ["mine"]},
        {"id": "b", "input": {"q": "bye", "lang": "fr"}, "output": "x", "metadata": {"team": "b"}, "threshold": 0.0},
        {"id": "c", "output": "hello"},
    ]) + "\n")
    _, rows = _results(tmp_path, """
        name: defaults
        defaults:
          input: {lang: en}
          tags: [smoke]
          metadata: {team: support, tier: 1}
          threshold: 0.5
        evaluators: [{type: contains, reference: hello}]
        cases: cases.jsonl
    """)
    assert rows["a"]["input"] == {"lang": "en", "q": "hi"} and rows["a"]["tags"] == ["smoke", "mine"]
    assert rows["a"]["metadata"] == {"team": "support", "tier": 1} and rows["a"]["verdict"] == "pass"
    assert rows["b"]["input"] == {"lang": "fr", "q": "bye"} and rows["b"]["metadata"] == {"team": "b", "tier": 1}
    assert rows["b"]["verdict"] == "pass"  # its own threshold of 0 wins over the default 0.5
    assert rows["c"]["input"] == {"lang": "en"}
    proc = run_cli("run", tmp_path / "suite.yaml", "--tag", "smoke", "-o", tmp_path / "tagged.jsonl", cwd=tmp_path)
    assert len(read_jsonl(tmp_path / "tagged.jsonl")) == 3, proc.stderr
    write(tmp_path, "bad.yaml", """
        name: defaults
        defaults: {input: {lang: en}}
        evaluators: [{type: contains, reference: hello}]
        cases:
          - {id: a, input: "plain text", output: hello}
    """.replace("\n        ", "\n"))
    proc = run_cli("validate", tmp_path / "bad.yaml", cwd=tmp_path)
    assert proc.returncode != 0
    assert "bad.yaml:5" in proc.stdout + proc.stderr and "this input is a str, not a mapping" in proc.stdout + proc.stderr


def _env_run(tmp_path, *args: str, env: dict[str, str] | None = None):
    import os
    import subprocess
    import sys

    out = tmp_path / "env.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "agenteval", "run", str(tmp_path / "suite.yaml"), "-o", str(out), *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k not in ("GREETING", "FROM_SUITE")} | (env or {}),
    )
    return proc, read_jsonl(out) if out.exists() else []


def test_env_files_fill_the_environment_without_overriding_it_unless_asked(tmp_path):
    write(tmp_path, "one.env", "# comment\nexport GREETING='hello there'\nFROM_SUITE=file\n")
    write(tmp_path, "two.env", 'GREETING="second\\tfile"  # a later file wins\n')
    write(tmp_path, ".env", "FROM_SUITE=suite\n")
    write(tmp_path, "suite.yaml", """
        name: env
        env_file: .env
        evaluators:
          - {type: python, name: seen, expression: "{'score': 1.0, 'reasoning': __import__('os').environ.get('GREETING', '-') + '|' + __import__('os').environ.get('FROM_SUITE', '-')}"}
        cases: [{id: a, output: x}]
    """)
    proc, rows = _env_run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert rows[0]["evaluator_results"][0]["reasoning"] == "-|suite"
    proc, rows = _env_run(tmp_path, "--env-file", "one.env")
    assert rows[0]["evaluator_results"][0]["reasoning"] == "hello there|file"  # --env-file comes before the suite's own
    proc, rows = _env_run(tmp_path, "--env-file", "one.env", "--env-file", "two.env")
    assert rows[0]["evaluator_results"][0]["reasoning"] == "second\tfile|file"
    proc, rows = _env_run(tmp_path, "--env-file", "one.env", env={"GREETING": "from the shell"})
    assert rows[0]["evaluator_results"][0]["reasoning"] == "from the shell|file"
    proc, rows = _env_run(tmp_path, "--env-file", "one.env", "--env-override", env={"GREETING": "from the shell"})
    assert rows[0]["evaluator_results"][0]["reasoning"] == "hello there|file"


def test_a_key_in_the_env_file_satisfies_the_credential_checks_and_the_environment_still_wins(tmp_path):
    """Validation asks for each `models:` entry's key, and a run for its target's, in the suite's
    `env_file:` as well as the environment; a variable the environment sets, even empty, is its value."""
    import os
    import subprocess
    import sys

    write(tmp_path, "suite.yaml", """
        name: keys
        env_file: .env
        models:
          judge: {type: anthropic, model: claude, api_key_env: JUDGE_KEY}
        target: {type: anthropic, model: claude, api_key_env: TARGET_KEY, base_url: "http://127.0.0.1:9", retries: 0}
        evaluators: [{type: length, min: 0}]
        cases: [{id: a, input: hi}]
    """)
    clean = {k: v for k, v in os.environ.items() if k not in ("JUDGE_KEY", "TARGET_KEY")}

    def agenteval(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "agenteval", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env=clean | env)

    write(tmp_path, ".env", "JUDGE_KEY=from-file\nTARGET_KEY=from-file\n")
    assert agenteval("validate", "suite.yaml").returncode == 0
    done = agenteval("run", "suite.yaml", "-o", "r.jsonl", "--no-cache")  # the key found: the request is made (and refused)
    assert done.returncode == 3 and "Connection refused" in read_jsonl(tmp_path / "r.jsonl")[0]["error"], done.stderr
    done = agenteval("run", "suite.yaml", "-o", "r2.jsonl", "--no-cache", TARGET_KEY="")  # the environment's own (empty) value
    assert done.returncode == 2 and "target: environment variable TARGET_KEY is not set" in done.stderr, done.stderr
    write(tmp_path, ".env", "TARGET_KEY=from-file\n")
    missing = ("suite.yaml:4: models.judge.api_key_env: environment variable JUDGE_KEY is not set: it holds the Anthropic API key "
               "(`api_key_env`); set it, or name another variable")
    done = agenteval("validate", "suite.yaml")  # told, as a warning: validate often runs where the secrets are not
    assert done.returncode == 0 and done.stderr.splitlines() == [
        missing.replace(" models.", " warning: models.") + " (agenteval run will refuse to start until it is set)"], done.stderr
    done = agenteval("run", "suite.yaml", "-o", "r3.jsonl", "--no-cache")  # which it refuses to start without
    assert done.returncode == 2 and missing in done.stderr.splitlines() and not (tmp_path / "r3.jsonl").exists(), done.stderr
    assert agenteval("validate", "suite.yaml", JUDGE_KEY="from-shell").stderr == ""


def test_a_bad_env_file_names_its_line_and_never_shows_a_value(tmp_path):
    write(tmp_path, "bad.env", "API_TOKEN='sk-very-secret-value\nthis line is not an assignment\n")
    write(tmp_path, "suite.yaml", "name: env\nevaluators: [{type: length, min: 0}]\ncases: [{id: a, output: x}]\n")
    proc, rows = _env_run(tmp_path, "--env-file", "bad.env")
    assert proc.returncode == 2 and rows == []
    assert "bad.env:1: the value of API_TOKEN has no closing '" in proc.stderr
    assert "sk-very-secret" not in proc.stderr + proc.stdout
    write(tmp_path, "suite.yaml", "name: env\nenv_file: [missing.env]\nevaluators: [{type: length, min: 0}]\ncases: [{id: a, output: x}]\n")
    proc, rows = _env_run(tmp_path)
    assert proc.returncode == 2 and "suite.yaml:2" in proc.stderr and "env file not found: missing.env" in proc.stderr


def test_a_secret_from_an_env_file_is_redacted_from_a_target_error(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write(tmp_path, "keys.env", "TOKEN=sk-test-0123456789abcdef\n")
    write(tmp_path, "suite.yaml", f"""
        name: env
        target: {{type: http, url: "http://127.0.0.1:{port}/sk-test-0123456789abcdef/${{TOKEN}}", headers: {{Authorization: "Bearer ${{TOKEN}}"}}}}
        evaluators: [{{type: length, min: 0}}]
        cases: [{{id: a, input: hi}}]
    """)
    proc, rows = _env_run(tmp_path, "--env-file", "keys.env")
    assert rows[0]["verdict"] == "error"
    assert "sk-test-0123456789abcdef" not in json.dumps(rows) + proc.stdout + proc.stderr


def test_transform_per_suite_and_per_evaluator_changes_what_evaluators_see(tmp_path):
    write(tmp_path, "shapes.py", "def first_word(answer):\n    return answer['content'].split()[0]\n\ndef boom(answer):\n    raise KeyError('nope')\n")
    _, rows = _results(tmp_path, """
        name: transform
        transform: "output.content | trim | lower"
        evaluators:
          - {type: equals, reference: "a refund is coming"}
          - {type: equals, name: word, reference: "A", transform: {python: "shapes:first_word"}}
          - {type: equals, name: broken, reference: "x", transform: {python: "shapes:boom"}, weight: 0}
        cases:
          - {id: a, output: {content: "  A Refund is coming "}}
          - id: b
            output: {content: "B"}
            evaluators: [{type: contains, name: own, reference: "b"}]
          - {id: c, output: "plain text"}
    """)
    a = {r["name"]: r for r in rows["a"]["evaluator_results"]}
    assert a["equals"]["verdict"] == "pass" and a["word"]["verdict"] == "pass"
    assert a["broken"]["verdict"] == "error" and a["broken"]["error"].startswith("transform shapes:boom raised KeyError: 'nope'")
    assert rows["a"]["output"] == {"content": "  A Refund is coming "}  # results keep the answer as it came
    b = {r["name"]: r for r in rows["b"]["evaluator_results"]}
    assert b["own"]["verdict"] == "pass"  # the case's own evaluator gets the suite's transform
    c = {r["name"]: r for r in rows["c"]["evaluator_results"]}
    assert c["equals"]["verdict"] == "error"
    assert c["equals"]["error"] == "transform 'output.content | trim | lower' failed: UndefinedError: 'str object' has no attribute 'content'"


def test_a_bad_transform_is_a_load_time_problem_and_a_python_transform_in_a_cases_file_needs_trust(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: transform
        evaluators:
          - {type: equals, reference: x, transform: "output |"}
        cases: [{id: a, output: x}]
    """)
    proc = run_cli("validate", suite, cwd=tmp_path)
    assert proc.returncode != 0 and "suite.yaml:3" in proc.stdout + proc.stderr
    assert "the transform is not a valid jinja2 expression" in proc.stdout + proc.stderr
    write(tmp_path, "cases.jsonl", json.dumps({"id": "a", "output": "x", "evaluators": [
        {"type": "equals", "name": "mine", "reference": "x", "transform": {"python": "os:getcwd"}},
        {"type": "equals", "name": "safe", "reference": "X", "transform": "output | upper"}]}) + "\n")
    suite = write(tmp_path, "suite.yaml", "name: transform\ncases: cases.jsonl\n")
    proc = run_cli("validate", suite, cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "cases.jsonl:1" in text and "a `python:` transform in a cases file runs code (os:getcwd)" in text
    assert text.count("transform in a cases file") == 1  # the sandboxed expression is allowed


def test_a_python_expression_past_its_timeout_is_that_cases_error(tmp_path):
    _, rows = _results(tmp_path, """
        name: expr
        evaluators:
          - {type: python, name: slow, expression: "__import__('time').sleep(5) or True", timeout: 0.2}
        cases: [{id: a, output: x}]
    """)
    slow = rows["a"]["evaluator_results"][0]
    assert slow["verdict"] == "error"
    assert slow["error"].startswith("expression \"__import__('time').sleep(5) or True\" took longer than its timeout of 0.2 s")


def test_a_javascript_transform_runs_promptfoos_code_on_the_answer_and_needs_trust_in_a_cases_file(tmp_path):
    _, rows = _results(tmp_path, """
        name: js-transform
        transform: {javascript: "output.trim().toLowerCase()", path: content}
        evaluators:
          - {type: equals, reference: "a refund is coming"}
          - {type: equals, name: second, reference: "Refund", transform: {javascript: "output.content.split(' ')[3] + context.vars.suffix"}}
        cases:
          - {id: a, input: {suffix: ""}, output: {content: "  A Refund is coming "}}
          - {id: b, input: {suffix: "!"}, output: {content: "not a refund"}}
    """)
    a = {r["name"]: r for r in rows["a"]["evaluator_results"]}
    assert (a["equals"]["verdict"], a["second"]["verdict"]) == ("pass", "pass")
    b = {r["name"]: r for r in rows["b"]["evaluator_results"]}
    assert b["equals"]["verdict"] == "fail" and b["second"]["verdict"] == "fail"  # "refund!" is not "Refund"
    assert rows["a"]["output"] == {"content": "  A Refund is coming "}  # results keep the answer as it came
    write(tmp_path, "cases.jsonl", json.dumps({"id": "a", "output": "x", "evaluators": [
        {"type": "equals", "name": "mine", "reference": "X", "transform": {"javascript": "output.toUpperCase()"}}]}) + "\n")
    suite = write(tmp_path, "suite.yaml", "name: transform\ncases: cases.jsonl\n")
    proc = run_cli("validate", suite, cwd=tmp_path)
    assert proc.returncode != 0 and "cases.jsonl:1" in proc.stdout + proc.stderr
    assert "a `javascript:` transform in a cases file runs code" in proc.stdout + proc.stderr
