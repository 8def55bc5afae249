"""What a newcomer trips over while writing a first suite: each mistake is told once, where it is,
with the fix (a did-you-mean, the form to write), before anything runs."""

import json
import os
import subprocess
import sys

from conftest import refused_url, run_cli, write

def agenteval(*args, **env):
    """`agenteval ARGS` in a fresh process with `env` laid over the environment (None: unset)."""
    environ = {name: value for name, value in {**os.environ, **env}.items() if value is not None}
    return subprocess.run([sys.executable, "-m", "agenteval", *map(str, args)], capture_output=True, text=True, timeout=120, env=environ)


FIELDS = """
name: demo
evaluators:
  - name: header
    type: field_accuracy
    fields:
      - {path: invoice.number}
      - {path: invoice.numbr}
      - {path: vendor, required: false}
"""


def test_a_field_path_no_expected_answer_has_is_a_warning_with_a_did_you_mean(tmp_path):
    inline = write(tmp_path, "inline.yaml", FIELDS + """
        cases:
          - {id: a, expected: {invoice: {number: "1", total: 2}}, output: {invoice: {number: "1"}}}
          - {id: b, expected: {invoice: {number: "2"}, vendor: V}, output: {invoice: {number: "2"}}}
          - {id: c, output: {invoice: {number: "3"}}}
    """.replace("\n        ", "\n"))
    done = run_cli("validate", inline)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"{inline}:7: warning: evaluators[0].fields[1].path: 'invoice.numbr' is in no case's `expected` (of the 2 that have one), "
        "so every case skips it; did you mean 'invoice.number'?"
    ]
    ran = run_cli("run", inline, "-o", tmp_path / "r.jsonl", "-q")
    assert ran.returncode == 1 and ran.stderr.splitlines()[0] == done.stderr.splitlines()[0]


def test_a_missing_field_path_is_counted_while_a_cases_file_is_streamed(tmp_path):
    write(tmp_path, "cases.jsonl", "".join(
        json.dumps({"id": f"c{i}", "expected": {"invoice": {"number": str(i)}, "buyr": "B"}, "output": {}}) + "\n" for i in range(300)
    ))
    suite = write(tmp_path, "s.yaml", FIELDS + "      - {path: buyer}\n      - {path: invoice.number.x}\ncases: cases.jsonl\n")
    assert run_cli("validate", suite).stderr.splitlines() == [
        f"{suite}:7: warning: evaluators[0].fields[1].path: 'invoice.numbr' is in no case's `expected` (of the 300 that have one), "
        "so every case skips it; did you mean 'invoice.number'?",
        f"{suite}:8: warning: evaluators[0].fields[2].path: 'vendor' is in no case's `expected` (of the 300 that have one), "
        "so every case skips it",
        f"{suite}:9: warning: evaluators[0].fields[3].path: 'buyer' is in no case's `expected` (of the 300 that have one), "
        "so every case skips it; did you mean 'buyr'?",
        f"{suite}:10: warning: evaluators[0].fields[4].path: 'invoice.number.x' is in no case's `expected` (of the 300 that have one), "
        "so every case skips it",
    ]


def test_cases_without_an_expected_answer_warn_of_no_field(tmp_path):
    suite = write(tmp_path, "s.yaml", FIELDS + "cases: [{id: a, output: {}}]\n")
    done = run_cli("validate", suite)
    assert (done.returncode, done.stderr) == (0, "")


def test_the_llm_template_target_block_validates_when_uncommented(tmp_path):
    assert run_cli("init", tmp_path / "t", "--template", "llm").returncode == 0
    suite = tmp_path / "t" / "suite.yaml"
    text = suite.read_text()
    block = [line for line in text.splitlines() if line.startswith("# target:") or line.startswith("#   ")]
    assert "#   messages:" in block
    suite.write_text(text.replace("\n".join(block), "\n".join(line[2:] for line in block)))
    done = agenteval("validate", suite, OPENAI_API_KEY=None)  # OpenAI by default: validate tells of the key run needs
    assert done.returncode == 0 and done.stderr.splitlines() == [
        f"{suite}: warning: target: environment variable OPENAI_API_KEY is not set: api.openai.com needs an API key; set it, "
        "or name another variable with `api_key_env: NAME` (agenteval run will refuse to start until it is set)"
    ]
    assert agenteval("validate", suite, OPENAI_API_KEY="sk-test").stderr == ""
    keyless = suite.read_text().replace("  # base_url: http://localhost:11434/v1", "  base_url: http://localhost:11434/v1")
    assert keyless != suite.read_text()
    suite.write_text(keyless)
    done = agenteval("validate", suite, OPENAI_API_KEY=None)  # a local server takes no key
    assert (done.returncode, done.stderr) == (0, ""), done.stderr


def test_a_system_key_on_a_model_target_points_at_messages(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        target: {type: openai, base_url: "http://127.0.0.1:9/v1", model: m, system: Be brief.}
        evaluators: [{type: equals}]
        cases: [{id: a, input: x, expected: y}]
    """)
    assert run_cli("validate", suite).stderr.splitlines()[0] == (
        f"{suite}:2: target.system: unknown key 'system'; did you mean `messages`? "
        "(write `messages: [{role: system, content: ...}, {role: user, content: \"{{ input }}\"}]`)"
    )


OPENAI = """
    name: demo
    target: {{type: openai, base_url: "{url}", model: m{more}}}
    evaluators: [{{type: equals}}]
    cases: [{{id: a, input: x, expected: y}}]
"""


def test_an_unset_key_of_an_openai_target_stops_the_run_before_any_case(tmp_path):
    write(tmp_path, "s.yaml", OPENAI.format(url="http://127.0.0.1:9/v1", more=", api_key_env: NO_SUCH_OPENAI_TEST_KEY"))
    done = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 2 and not (tmp_path / "r.jsonl").exists()
    assert done.stderr.splitlines() == [
        f"{tmp_path / 's.yaml'}: target: environment variable NO_SUCH_OPENAI_TEST_KEY is not set: it holds the API key "
        "(`api_key_env`); set it, or name another variable"
    ]
    write(tmp_path, "s.yaml", OPENAI.format(url="https://api.openai.com/v1", more=""))  # no api_key_env: OPENAI_API_KEY's
    done = agenteval("run", tmp_path / "s.yaml", "-o", tmp_path / "r.jsonl", "-q", OPENAI_API_KEY=None)
    assert done.returncode == 2 and not (tmp_path / "r.jsonl").exists()
    assert done.stderr.splitlines() == [
        f"{tmp_path / 's.yaml'}: target: environment variable OPENAI_API_KEY is not set: api.openai.com needs an API key; "
        "set it, or name another variable with `api_key_env: NAME`"
    ]


def test_a_local_openai_compatible_server_needs_no_key(tmp_path):
    with refused_url() as url:
        write(tmp_path, "s.yaml", OPENAI.format(url=url, more=", retries: 0"))
        done = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 3, done.stderr  # it was asked: the case's error, not a missing key
    assert "api_key" not in (tmp_path / "r.jsonl").read_text()


def test_cases_without_evaluators_are_told_once(tmp_path):
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": f"c{i}", "expected": 1}) + "\n" for i in range(5000)))
    suite = write(tmp_path, "s.yaml", "name: demo\ncases: cases.jsonl\n")
    done = run_cli("validate", suite)
    assert done.stderr.splitlines() == [
        f"{tmp_path / 'cases.jsonl'}:1: case 'c0' and 4,999 other cases have no evaluators, and the suite defines none",
        f"{suite}: 1 error",
    ]


def test_a_duplicate_id_is_told_with_the_unknown_key_of_its_first_use(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators: [{type: equals}]
        cases:
          - {id: a, expected: 1, output: 1, expected_output: 1}
          - {id: a, expected: 1, output: 1}
    """)
    assert run_cli("validate", suite).stderr.splitlines()[:2] == [
        f"{suite}:4: cases[0].expected_output: unknown key 'expected_output'; did you mean 'expected'?",
        f"{suite}:5: cases[1].id: duplicate case id 'a' (first at line 4)",
    ]
    write(tmp_path, "cases.jsonl", '{"id": "a", "output": 1, "expected_output": 1}\n{"id": "a", "output": 1}\n')
    suite = write(tmp_path, "t.yaml", "name: demo\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    assert run_cli("validate", suite).stderr.splitlines()[:2] == [
        f"{tmp_path / 'cases.jsonl'}:1: expected_output: unknown key 'expected_output'; did you mean 'expected'?",
        f"{tmp_path / 'cases.jsonl'}:2: id: duplicate case id 'a' (first at line 1)",
    ]


def test_expected_and_output_columns_of_a_table_hold_one_key_each(tmp_path):
    write(tmp_path, "cases.csv", "id,input,expected.name,output.name\nc1,hi,Ann,Ann\nc2,yo,Bob,Rob\nc3,hey,Cy,Cy\n")
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators: [{type: field_accuracy, fields: [{path: name}]}]
        cases: cases.csv
    """)
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 1, done.stderr
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [(line["case_id"], line["verdict"]) for line in lines] == [("c1", "pass"), ("c2", "fail"), ("c3", "pass")]
    write(tmp_path, "cases.csv", "id,input,expected.name,outputs.name\nc1,hi,Ann,Ann\nc2,yo,Bob,Rob\n")
    assert run_cli("validate", suite).stderr.splitlines() == [
        f"{tmp_path / 'cases.csv'}:1: the header's column 'outputs.name' is no case key; did you mean 'output.NAME'? "
        "(columns: id, input, expected, output, tags, metadata, threshold, and input.NAME, expected.NAME, output.NAME, metadata.NAME "
        "for one key of those)",
        f"{suite}: 1 error",
    ]


def test_running_a_cases_file_says_to_run_the_suite_that_names_it(tmp_path):
    write(tmp_path, "m/suite.yaml", "name: demo\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    write(tmp_path, "m/cases.jsonl", '{"id": "a", "output": 1, "expected": 1}\n{"id": "b", "output": 1, "expected": 1}\n')
    done = run_cli("run", tmp_path / "m" / "cases.jsonl")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"{tmp_path / 'm' / 'cases.jsonl'}: this is a cases file, not a suite: run the suite that names it "
        f"({tmp_path / 'm' / 'suite.yaml'})"
    )


def test_a_cases_file_of_one_line_is_told_as_one_too(tmp_path):
    """A one-line JSONL file is a YAML mapping as well: it was read as a suite missing `name`."""
    write(tmp_path, "m/suite.yaml", "name: demo\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    write(tmp_path, "m/cases.jsonl", '{"id": "a", "output": 1, "expected": 1}\n')
    done = run_cli("run", tmp_path / "m" / "cases.jsonl")
    assert (done.returncode, done.stderr.splitlines()) == (2, [
        f"{tmp_path / 'm' / 'cases.jsonl'}: this is a cases file, not a suite: run the suite that names it ({tmp_path / 'm' / 'suite.yaml'})"])


def test_a_regex_escape_yaml_read_in_double_quotes_is_a_warning(tmp_path):
    """`pattern: "\\bJane\\b"` validates (YAML reads `\\b` as a backspace) and then never matches."""
    suite = write(tmp_path, "s.yaml", 'name: demo\nevaluators: [{type: regex, pattern: "\\bJane\\b"}]\ncases: [{id: a, output: "Jane Doe"}]\n')
    done = run_cli("validate", suite)
    assert (done.returncode, done.stderr) == (0, (
        f"{suite}:2: warning: evaluators[0].pattern: the pattern holds a backspace ('\\x08'): in double quotes YAML reads `\\b` "
        "as one; write the regex in single quotes\n"))
    (tmp_path / "s.yaml").write_text(suite.read_text().replace('"\\bJane\\b"', "'\\bJane\\b'"))
    done = run_cli("validate", suite)
    assert (done.returncode, done.stderr) == (0, "")
    assert run_cli("run", suite, "-q", "-o", tmp_path / "r.jsonl").returncode == 0


def test_a_regex_in_double_quotes_gets_a_hint_at_single_quotes(tmp_path):
    suite = write(tmp_path, "s.yaml", 'name: demo\nevaluators: [{type: regex, pattern: "\\d+"}]\ncases: [{id: a, output: "1"}]\n')
    assert run_cli("validate", suite).stderr.splitlines()[0] == (
        f"{suite}:2: invalid YAML: while scanning a double-quoted scalar, found unknown escape character 'd' "
        "(in double quotes a backslash starts an escape: write a regex in single quotes, '\\d+')"
    )


def test_an_unknown_key_from_set_names_the_set(tmp_path):
    suite = write(tmp_path, "base.yaml", "name: demo\nevaluators: [{type: equals}]\ncases: [{id: a, output: 1, expected: 1}]\n")
    done = run_cli("run", suite, "--set", "nme=x", "--set", "evaluators[0].threshold=2")
    assert done.returncode == 2
    assert done.stderr.splitlines()[:2] == [
        f"{suite}: nme: unknown key 'nme'; did you mean 'name'? (from --set nme=x)",
        f"{suite}: evaluators[0].threshold: unknown key 'threshold' (from --set evaluators[0].threshold=2)",
    ]


def test_a_mis_indented_evaluator_key_and_a_list_of_paths(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - type: field_accuracy
        fields: [{path: a}]
        cases: [{id: a, output: 1, expected: 1}]
    """)
    assert run_cli("validate", suite).stderr.splitlines()[:2] == [
        f"{suite}:3: evaluators[0].fields: required key is missing",
        f"{suite}:4: fields: unknown key 'fields'; it may belong under evaluators[0] (check its indentation)",
    ]
    suite = write(tmp_path, "t.yaml", """
        name: demo
        evaluators:
          - {type: field_accuracy, fields: [name, email]}
        cases: [{id: a, output: 1, expected: 1}]
    """)
    assert run_cli("validate", suite).stderr.splitlines()[:2] == [
        f"{suite}:3: evaluators[0].fields[0]: expected a mapping, got 'name'; write {{path: name}}",
        f"{suite}:3: evaluators[0].fields[1]: expected a mapping, got 'email'; write {{path: email}}",
    ]


def test_a_threshold_given_as_a_percentage(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators: [{type: text_similarity, threshold: 85}]
        cases: [{id: a, output: x, expected: x, threshold: 1.5}]
    """)
    assert run_cli("validate", suite).stderr.splitlines()[:2] == [
        f"{suite}:2: evaluators[0].threshold: must be <= 1.0, got 85; did you mean 0.85?",
        f"{suite}:3: cases[0].threshold: must be <= 1.0, got 1.5",
    ]


def test_a_missing_cases_file_suggests_the_one_beside_it(tmp_path):
    write(tmp_path, "data/cases.jsonl", '{"id": "a", "output": 1, "expected": 1}\n')
    suite = write(tmp_path, "s.yaml", "name: demo\nevaluators: [{type: equals}]\ncases: data/cases.json\n")
    assert run_cli("validate", suite).stderr.splitlines()[0] == (
        f"{suite}:3: cases: cases file not found: data/cases.json (looked for {tmp_path / 'data' / 'cases.json'}); "
        "did you mean 'data/cases.jsonl'?"
    )


def test_cases_the_recorded_target_cannot_answer_are_told_once_before_the_run(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators: [{type: equals}]
        cases:
          - {id: c0, output: x, expected: x}
          - {id: c1, expected: x}
          - {id: c2, expected: x}
    """)
    warning = (f"{suite}:5: warning: cases[1]: case 'c1' and 1 other case have no `output`, which the recorded target answers "
               "with: the run fails them unless --predictions gives their answers")
    done = run_cli("validate", suite)
    assert (done.returncode, done.stderr.splitlines()) == (0, [warning])
    ran = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert ran.returncode == 3 and ran.stderr.splitlines()[0] == warning
    write(tmp_path, "p.jsonl", "".join(f'{{"id": "c{i}", "output": "x"}}\n' for i in range(3)))
    assert run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--predictions", tmp_path / "p.jsonl").returncode == 0
    write(tmp_path, "cases.jsonl", '{"id": "a", "expected": 1}\n')
    suite = write(tmp_path, "t.yaml", "name: demo\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    assert run_cli("validate", suite).stderr.splitlines() == [
        f"{tmp_path / 'cases.jsonl'}:1: warning: case 'a' has no `output`, which the recorded target answers with: the run "
        "fails it unless --predictions gives its answer"
    ]
    other = write(tmp_path, "u.yaml", "name: demo\ntarget: {type: command, command: [echo, '1']}\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    assert run_cli("validate", other).stderr == ""


def test_a_task_answering_cases_without_output_warns_of_nothing(tmp_path):
    import agenteval

    cases, evaluators = [{"id": "a", "input": "x", "expected": "x"}], [{"type": "equals"}]
    run = agenteval.evaluate(cases, evaluators, task=lambda value: value, base_dir=tmp_path)
    assert run.warnings == [] and [result.verdict for result in run] == ["pass"]
    assert [w.message for w in agenteval.evaluate(cases, evaluators, base_dir=tmp_path).warnings] == [
        "case 'a' has no `output`, which the recorded target answers with: the run fails it unless --predictions gives its answer"
    ]
