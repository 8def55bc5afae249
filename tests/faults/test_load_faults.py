"""Hostile data at load time: templates and transforms that would compute without end, tables and
env files that are not what they seem, `--set` values, roles, includes. Each is refused at its
file and line (exit 2) or bounded at run time as that case's error; nothing hangs or blows up.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import MEASURE, read_jsonl, run_cli, write
from fault_suites import assert_no_traceback, assert_problem_lines

SUITE = "name: load\nevaluators: [{type: contains, reference: x}]\ncases: %s\n"


def _lines(done) -> list[str]:
    return [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


# --- G4: jinja2 folds constant arithmetic while compiling ------------------------------------------

@pytest.mark.parametrize("transform", ["7**300000000", "'a' * 300000000", "(2**64)**(2**64)", "'%0999999999d' % 1"])
def test_constant_arithmetic_in_a_cases_file_transform_is_refused_at_load_at_once(tmp_path, transform):
    case = {"id": "evil", "input": {}, "output": "x", "evaluators": [{"name": "t", "type": "contains", "reference": "x", "transform": transform}]}
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}, "output": "x"}) + "\n" + json.dumps(case) + "\n")
    suite = write(tmp_path, "suite.yaml", SUITE % "cases.jsonl")
    done = run_cli("validate", suite, cwd=tmp_path, timeout=30)
    lines = assert_problem_lines(done, "cases.jsonl:2", "evaluators[0].transform", "too large")
    assert len(lines) == 2, lines  # the problem and `suite.yaml: 1 error`


def test_a_first_message_folding_a_huge_power_is_refused_at_load(tmp_path):
    write(tmp_path, "suite.yaml", """
        name: fm
        models:
          agent: {base_url: "http://127.0.0.1:9/v1", model: m}
        target: {type: openai, endpoint: agent}
        evaluators: [{type: conversation}]
        cases: cases.jsonl
    """)
    case = {"id": "evil", "input": {}, "user": {"endpoint": "agent", "goal": "g", "first_message": "{{ (2**64)**(2**64) }}"}}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
    done = run_cli("validate", tmp_path / "suite.yaml", cwd=tmp_path, timeout=30)
    assert_problem_lines(done, "cases.jsonl:1", "user.first_message: template too large to build")


def test_growth_at_run_time_is_that_cases_error_in_bounded_memory(tmp_path):
    """`output * 300000000` cannot be folded (the answer is known only at run time): the case errors
    naming the bound before 3 GB are allocated; a template looping to gigabytes is cut at 16 Mi characters."""
    write(tmp_path, "echo.py", "import json, sys\nprint(json.dumps(json.load(sys.stdin)))\n")
    write(tmp_path, "suite.yaml", f"""
        name: grow
        target: {{type: command, command: [{sys.executable}, echo.py]}}
        evaluators: [{{type: contains, reference: x, transform: "output.q * 300000000"}}]
        cases:
          - {{id: big, input: {{q: xy}}}}
          - {{id: small, input: {{q: x}}, evaluators: [{{type: contains, reference: x, transform: "output.q * 3"}}]}}
    """)
    peak, out = tmp_path / "peak", tmp_path / "r.jsonl"
    import subprocess

    done = subprocess.run([*MEASURE, str(peak), sys.executable, "-m", "agenteval", "run", str(tmp_path / "suite.yaml"), "-o", str(out), "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert_no_traceback(done)
    assert done.returncode == 3, done.stderr
    rows = {row["case_id"]: row for row in read_jsonl(out)}
    assert rows["small"]["verdict"] == "pass"
    [result] = rows["big"]["evaluator_results"]
    assert result["verdict"] == "error" and "300,000,000 times makes more than 16,777,216" in result["error"], result
    assert float(peak.read_text()) < 300, "the product was built"


def test_a_prompt_template_rendering_past_the_bound_is_that_cases_error(tmp_path):
    from agenteval.endpoints.templates import TemplateError, compile_template, render

    looping = compile_template("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}")
    with pytest.raises(TemplateError, match="rendered text is longer than 16,777,216 characters"):
        render(looping, {})
    for source, says in [("{{ 'a'.ljust(999999999) }}", "str.ljust"), ("{{ '{:999999999}'.format(1) }}", "format width"),
                         ("{{ 'x'|center(999999999) }}", "center"), ("{% set x = 'a' * 9000000 %}{{ x ~ x }}", "`~`")]:
        with pytest.raises(TemplateError, match=says):
            render(compile_template(source), {})
    assert render(compile_template("{{ input.q * 2 }}{{ 2**64 }}"), {"input": {"q": "ab"}}) == "abab18446744073709551616"


# --- G11, G24: CSV cases --------------------------------------------------------------------------

@pytest.mark.parametrize("suffix, delimiter", [(".csv", b","), (".tsv", b"\t")])
def test_a_table_that_is_not_utf8_is_refused_at_its_line(tmp_path, suffix, delimiter):
    (tmp_path / f"cases{suffix}").write_bytes(delimiter.join([b"id", b"input.q", b"output"]) + b"\nc1" + delimiter + b"hi" + delimiter
                                              + b"x\nc2" + delimiter + b"caf\xe9" + delimiter + b"x\n")
    suite = write(tmp_path, "suite.yaml", SUITE % f"cases{suffix}")
    for command in (["validate", suite], ["run", suite, "-o", tmp_path / "r.jsonl"]):
        done = run_cli(*command, cwd=tmp_path)
        assert_problem_lines(done, f"cases{suffix}:3", "not valid UTF-8 (byte 0xe9 at column 7)")
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("header", ["id,input,input.q,output", "id,metadata.a,output,metadata"])
def test_a_table_naming_a_key_whole_and_by_its_parts_is_refused_naming_both(tmp_path, header):
    (tmp_path / "cases.csv").write_text(header + '\nc1,"{""q"": 1}",2,x\n')
    suite = write(tmp_path, "suite.yaml", SUITE % "cases.csv")
    done = run_cli("validate", suite, cwd=tmp_path)
    scope = "input" if "input" in header else "metadata"
    assert_problem_lines(done, "cases.csv:1", f"both a '{scope}' column and '{scope}.")


def test_a_large_csv_validates_and_runs_in_flat_memory_like_jsonl(tmp_path):
    rows = 100_000
    with (tmp_path / "cases.csv").open("w") as handle:
        handle.write("id,input.q,output,threshold\n")
        handle.writelines(f"c{i},q{i},x,0.5\n" for i in range(rows))
    suite = write(tmp_path, "suite.yaml", SUITE % "cases.csv")
    import subprocess

    peaks = []
    for command in (["validate", str(suite)], ["run", str(suite), "-q", "-o", str(tmp_path / "r.jsonl"), "--shard", "1/50"]):
        peak = tmp_path / "peak"
        done = subprocess.run([*MEASURE, str(peak), sys.executable, "-m", "agenteval", *command], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        peaks.append(float(peak.read_text()))
    assert f"ok ({rows} cases" in done.stdout or len(read_jsonl(tmp_path / "r.jsonl")) == rows // 50
    assert len(read_jsonl(tmp_path / "r.jsonl")) == rows // 50
    assert max(peaks) < 150, peaks  # held whole it took about 230 MB


def test_a_csv_edited_after_validation_stops_the_run_at_that_row(tmp_path):
    from agenteval.suite.loader import CasesChanged, load_suite

    (tmp_path / "cases.csv").write_text("id,output\na,x\nb,x\n")
    loaded = load_suite(write(tmp_path, "suite.yaml", SUITE % "cases.csv"))
    assert loaded.cases is None, "a table is streamed, not held"
    (tmp_path / "cases.csv").write_text("id,output\na,x\nb,changed\n")
    cases = loaded.iter_cases()
    assert next(cases).id == "a"
    with pytest.raises(CasesChanged, match=r"cases.csv:3: the cases file changed"):
        next(cases)


# --- G13: --set -----------------------------------------------------------------------------------

def test_a_set_value_goes_through_the_yaml_alias_guard(tmp_path):
    suite = write(tmp_path, "suite.yaml", "name: s\nevaluators: [{type: contains, reference: x}]\ncases: [{id: c1, output: x}]\n")
    bomb = "{a: &a [x,x,x,x,x,x,x,x,x,x], " + ", ".join(
        f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]" for prev, name in zip("abcdefg", "bcdefgh")) + "}"
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--set", f"cases[0].metadata={bomb}", cwd=tmp_path, timeout=30)
    assert_problem_lines(done, "suite.yaml", "--set cases[0].metadata=...: YAML aliases expand to more than")
    assert not (tmp_path / "r.jsonl").exists()
    assert bomb not in done.stderr
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--set", "cases[0].metadata={a: 1, b: [x, y]}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert read_jsonl(tmp_path / "r.jsonl")[0]["metadata"] == {"a": 1, "b": ["x", "y"]}


# --- G15: roles and templates at their own key ----------------------------------------------------

@pytest.mark.parametrize("kind, url", [("openai", "http://127.0.0.1:9/v1"), ("anthropic", "http://127.0.0.1:9"), ("gemini", "http://127.0.0.1:9")])
def test_an_unknown_message_role_is_a_load_error_at_its_key(tmp_path, kind, url):
    suite = write(tmp_path, "suite.yaml", f"""
        name: roles
        target:
          type: {kind}
          base_url: "{url}"
          model: m
          messages:
            - {{role: system, content: be brief}}
            - {{role: wizard, content: "{{{{ input.q }}}}"}}
        evaluators: [{{type: contains, path: content, reference: x}}]
        cases: [{{id: c1, input: {{q: hi}}}}]
    """)
    done = run_cli("validate", suite, cwd=tmp_path)
    assert_problem_lines(done, "suite.yaml:8", "target.messages[1].role: invalid value 'wizard' (valid: system, developer, user, assistant, tool)")


def test_a_broken_prompt_template_is_reported_at_its_own_key_and_line(tmp_path):
    suite = write(tmp_path, "tpl.yaml", """
        name: tpl
        targets: {a: {type: openai, base_url: "http://127.0.0.1:9/v1", model: m}}
        prompts:
          ok: "fine {{ input.q }}"
          short: "{{ unclosed"
          r:
            - {role: system, content: x}
            - {role: user, content: "{{ broken"}
        evaluators: [{type: contains, path: content, reference: x}]
        cases: [{id: c1, input: {q: hi}}]
    """)
    lines = assert_problem_lines(run_cli("validate", suite, cwd=tmp_path), "tpl.yaml:5")
    assert lines[0].startswith(f"{suite}:5: prompts.short: template syntax error"), lines
    assert lines[1].startswith(f"{suite}:8: prompts.r[1].content: template syntax error"), lines


# --- G16, G17: env files --------------------------------------------------------------------------

def _env_suite(tmp_path: Path) -> Path:
    write(tmp_path, "t.py", "import sys, os, json\nsys.stdin.read()\nprint(json.dumps({k: os.environ.get(k) for k in ('F4_A', 'F4_H', 'F4_B')}))\n")
    return write(tmp_path, "suite.yaml", f"""
        name: env
        target: {{type: command, command: [{sys.executable}, t.py]}}
        evaluators: [{{type: length, min: 0}}]
        cases: [{{id: c1, input: {{}}}}]
    """)


def test_a_nul_in_an_env_file_value_is_refused_at_its_line(tmp_path):
    suite = _env_suite(tmp_path)
    (tmp_path / "nul.env").write_bytes(b"F4_B=fine\nF4_A=a\x00b\n")
    done = run_cli("run", suite, "--env-file", tmp_path / "nul.env", "-o", tmp_path / "r.jsonl", "-q", cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2, done.stderr
    assert "nul.env:2: the value of F4_A holds a NUL byte" in done.stderr
    assert not (tmp_path / "r.jsonl").exists()
    with (tmp_path / "suite.yaml").open("a") as handle:
        handle.write("env_file: nul.env\n")
    assert_problem_lines(run_cli("validate", suite, cwd=tmp_path), "suite.yaml", "nul.env:2: the value of F4_A holds a NUL byte")


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c"])
def test_unicode_line_separators_do_not_split_an_env_file_line(tmp_path, separator):
    suite = _env_suite(tmp_path)
    (tmp_path / "sep.env").write_text(f"F4_A=a{separator}F4_H=injected\r\nF4_B=b\rF4_C=c\n", encoding="utf-8")
    done = run_cli("run", suite, "--env-file", tmp_path / "sep.env", "-o", tmp_path / "r.jsonl", "-q", cwd=tmp_path)
    assert_no_traceback(done)
    assert "env: 1 case, " in done.stderr, done.stderr
    [row] = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().split("\n") if line]  # U+2028 is no line end in JSONL either
    assert row["output"] == {"F4_A": f"a{separator}F4_H=injected", "F4_H": None, "F4_B": "b"}


# --- G28: every problem of a case-level judge at once -----------------------------------------------

def test_a_case_judge_reading_outside_the_folder_reports_its_other_problems_at_once(tmp_path):
    (tmp_path / "private.txt").write_text("private\n")
    (tmp_path / "data").mkdir()
    suite = write(tmp_path / "data", "suite.yaml", "name: one\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    judge = {"name": "g", "type": "llm_judge", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "AWS_SECRET_ACCESS_KEY",
             "headers": {"X-Token": "${GITHUB_TOKEN}"}, "prompt_file": "../private.txt", "criteria": [{"name": "c", "description": "x"}]}
    (tmp_path / "data" / "cases.jsonl").write_text(json.dumps({"id": "c1", "expected": "x", "output": "x", "evaluators": [judge]}) + "\n")
    lines = assert_problem_lines(run_cli("validate", suite, cwd=tmp_path), "cases.jsonl:1")
    keys = [line.split(": ")[1] for line in lines[:-1]]
    assert keys == ["evaluators[0].prompt_file", "evaluators[0].base_url", "evaluators[0].api_key_env", "evaluators[0].headers.X-Token"], lines
    assert lines[-1] == f"{suite}: 4 errors"
    assert "private" not in "\n".join(lines).replace("private.txt", "")


# --- #29: a misspelled evaluators key, Unicode property escapes -------------------------------------

def test_a_misspelled_evaluators_key_is_told_once_not_once_per_case(tmp_path):
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "expected": 1, "output": 1}) + "\n" for i in range(50)))
    suite = write(tmp_path, "suite.yaml", "name: t\nevaluator: [{type: equals}]\ncases: c.jsonl\n")
    lines = assert_problem_lines(run_cli("validate", suite, cwd=tmp_path), "suite.yaml:2")
    assert lines == [f"{suite}:2: evaluator: unknown key 'evaluator'; did you mean 'evaluators'?", f"{suite}: 1 error"]
    write(tmp_path, "none.yaml", "name: t\ncases: c.jsonl\n")  # no evaluators at all: told once too, at the first case
    lines = assert_problem_lines(run_cli("validate", tmp_path / "none.yaml", cwd=tmp_path), "c.jsonl:1", "have no evaluators")
    assert lines == [f"{tmp_path / 'c.jsonl'}:1: case 'c0' and 49 other cases have no evaluators, and the suite defines none",
                     f"{tmp_path / 'none.yaml'}: 1 error"]


def test_json_schema_patterns_with_unicode_property_escapes_are_valid(tmp_path):
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "pattern": r"^\p{Letter}+$"},
        "city": {"type": "string", "pattern": r"^\p{Lu}\p{Ll}+$"},
    }, "patternProperties": {r"^\p{L}+_id$": {"type": "integer"}}, "required": ["name"]}
    (tmp_path / "person.schema.json").write_text(json.dumps(schema))
    cases = [{"id": "ok", "output": json.dumps({"name": "Zoë", "city": "Łódź", "näme_id": 3})},
             {"id": "digits", "output": json.dumps({"name": "a1"})},
             {"id": "key", "output": json.dumps({"name": "Ana", "ünï_id": "x"})}]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = write(tmp_path, "suite.yaml", "name: s\nevaluators: [{type: json_schema, schema_file: person.schema.json}]\ncases: c.jsonl\n")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    rows = {row["case_id"]: row for row in read_jsonl(tmp_path / "r.jsonl")}
    assert [rows[c]["verdict"] for c in ("ok", "digits", "key")] == ["pass", "fail", "fail"]
    assert rows["digits"]["evaluator_results"][0]["misses"] == ["$.name: 'a1' does not match '^\\\\p{Letter}+$'"]
    schema["properties"]["name"]["pattern"] = r"^(\p{Letter}+$"  # still refused when it is not a pattern
    (tmp_path / "person.schema.json").write_text(json.dumps(schema))
    assert_problem_lines(run_cli("validate", suite, cwd=tmp_path), "suite.yaml:2", "is not a 'regex'")


# --- include: shared evaluators and criteria --------------------------------------------------------

def test_included_files_stay_in_the_suite_folder_never_loop_and_are_checked_at_their_own_lines(tmp_path):
    (tmp_path / "secret.yaml").write_text("- {type: equals}\n")
    folder = tmp_path / "suite"
    write(folder, "shared/loop_a.yaml", "- include: loop_b.yaml\n")
    write(folder, "shared/loop_b.yaml", "- {type: equals, name: b}\n- include: loop_a.yaml\n")
    write(folder, "shared/typo.yaml", "- type: contains\n  reference: x\n- type: regx\n  pattern: x\n")
    write(folder, "shared/criteria.yaml", "- name: accurate\n  descripton: typo\n")
    write(folder, "shared/bomb.yaml", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
          "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
          "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n")
    suite = write(folder, "suite.yaml", """
        name: inc
        models:
          grader: {base_url: "http://127.0.0.1:9/v1", model: m}
        evaluators:
          - include: ../secret.yaml
          - include: shared/loop_a.yaml
          - include: shared/missing.yaml
          - include: shared/typo.yaml
          - include: shared/bomb.yaml
          - type: llm_judge
            endpoint: grader
            criteria: {include: shared/criteria.yaml}
          - {type: equals, name: last, weight: nope}
          - include: 7
        cases: [{id: a, output: x, expected: x}]
    """)
    done = run_cli("validate", suite, cwd=tmp_path, timeout=30)
    lines = assert_problem_lines(done, "suite")
    text = "\n".join(lines)
    assert f"{suite}:5: evaluators[0].include: '../secret.yaml' is outside the suite's folder" in text
    assert f"{folder}/shared/loop_b.yaml:2: [1].include: 'loop_a.yaml' includes itself (through loop_a.yaml -> loop_b.yaml -> loop_a.yaml)" in text
    assert f"{suite}:7: evaluators[2].include: included file not found: shared/missing.yaml" in text
    assert f"{folder}/shared/typo.yaml:3: [1].type: unknown evaluator type 'regx'; did you mean 'regex'?" in text
    assert f"{folder}/shared/bomb.yaml:4: YAML aliases expand to more than" in text
    assert f"{folder}/shared/criteria.yaml:2: [0].descripton: unknown key 'descripton'; did you mean 'description'?" in text
    assert f"{suite}:13: evaluators[6].weight: expected a number" in text
    assert f"{suite}:14: evaluators[7].include: `include` names a file" in text
    assert lines[-1] == f"{suite}: 9 errors"
    assert "secret" not in text.replace("secret.yaml", "")


def test_included_evaluators_and_criteria_run_as_if_written_in_the_suite(tmp_path):
    write(tmp_path, "shared/checks.yaml", "- {type: contains, name: refund, reference: refund}\n- {type: regex, name: polite, pattern: '(?i)thank'}\n")
    write(tmp_path, "shared/one.yaml", "type: not_contains\nname: no_sorry\nreference: sorry\n")
    write(tmp_path, "shared/criteria.yaml", "- {name: accurate, description: The policy is stated correctly.}\n")
    suite = write(tmp_path, "suite.yaml", """
        name: inc
        evaluators:
          - include: shared/checks.yaml
          - type: composite
            name: tone
            evaluators: [{include: shared/one.yaml}, {type: length, min: 1}]
        cases:
          - {id: good, output: "Thank you, the refund is on its way."}
          - {id: bad, output: "sorry, no refund"}
    """)
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    rows = {row["case_id"]: row for row in read_jsonl(tmp_path / "r.jsonl")}
    assert [r["name"] for r in rows["good"]["evaluator_results"]] == ["refund", "polite", "tone"]
    assert [r["verdict"] for r in rows["good"]["evaluator_results"]] == ["pass", "pass", "pass"]
    assert [r["verdict"] for r in rows["bad"]["evaluator_results"]] == ["pass", "fail", "partial"]  # tone: no_sorry fails, length passes
    from agenteval.suite.loader import load_suite

    judge = write(tmp_path, "judge.yaml", """
        name: j
        models: {grader: {base_url: "http://127.0.0.1:9/v1", model: m}}
        evaluators: [{type: llm_judge, endpoint: grader, criteria: {include: shared/criteria.yaml}}]
        cases: [{id: a, output: x}]
    """)
    [criterion] = load_suite(judge).suite.evaluators[0].criteria
    assert (criterion.name, criterion.description) == ("accurate", "The policy is stated correctly.")


@pytest.mark.parametrize("value, shown", [
    ("!invoice-pipeline x", "could not determine a constructor for the tag '!invoice-pipeline'"),
    ("!!python/object:os.system ls", "could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"),
    ("!!timestamp not-a-date", "invalid YAML"),
])
def test_a_yaml_tag_no_reader_knows_is_a_file_line_error(tmp_path, value, shown):
    suite = write(tmp_path, "suite.yaml", f"name: x\nevaluators: [{{type: length, min: 0}}]\ncases:\n  - {{id: a, output: {value}}}\n")
    done = run_cli("validate", suite)
    assert_no_traceback(done)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0].startswith(f"{suite}:4: invalid YAML") and shown in done.stderr


def test_an_integer_past_64_bits_in_an_inline_case_runs_and_resumes(tmp_path):
    """YAML reads 18446744073709551616 (2**64) as an integer: a suite's inline case holding one ran
    into a traceback (exit 1, nothing written) when the run hashed its cases for --resume."""
    write(tmp_path, "suite.yaml", """
        name: big
        evaluators:
          - {type: retrieval, path: hits, score_key: score, metrics: [{metric: ndcg, k: 3, min: 0.5}]}
        cases:
          - {id: c1, expected: [a], output: {hits: [{id: a, score: 18446744073709551616}]}}
          - {id: c2, expected: [a], output: {hits: [{id: a, score: 1}]}}
    """)
    done = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q")
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert [row["verdict"] for row in read_jsonl(tmp_path / "r.jsonl")] == ["pass", "pass"]
    again = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q", "--resume")
    assert again.returncode == 0 and len(read_jsonl(tmp_path / "r.jsonl")) == 2, again.stderr  # the same digest: nothing to run again
