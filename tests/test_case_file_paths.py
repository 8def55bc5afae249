"""A cases file's problems name it the way the suite was named: the suite's path as given, joined
with what `cases:` says (`./` and `a/../` taken out), never the file's absolute path unless the
suite was given by one. Each test runs the real CLI from the folder above the project."""

from __future__ import annotations

import os

import pytest

from conftest import run_cli, write

SUITE = """
name: paths
evaluators: [{type: equals}]
cases: %s
"""
BAD_JSONL = '{"id": "a", "output": 1, "expected": 1}\n{"id": "b", "output": 1, "expected": 1, "ouput": 2}\n'


@pytest.fixture
def project(tmp_path):
    """tmp_path/proj/suite.yaml; the CLI runs in tmp_path, so the suite is `proj/suite.yaml` as given."""
    return tmp_path / "proj"


def lines(done) -> list[str]:
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr.splitlines()


def test_validate_names_a_jsonl_problem_by_the_suite_path_as_given(tmp_path, project):
    write(project, "cases.jsonl", BAD_JSONL)
    write(project, "suite.yaml", SUITE % "cases.jsonl")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert lines(done) == ["proj/cases.jsonl:2: ouput: unknown key 'ouput'; did you mean 'output'?", "proj/suite.yaml: 1 error"]


def test_run_refuses_naming_the_cases_file_as_validate_does(tmp_path, project):
    write(project, "cases.jsonl", BAD_JSONL)
    write(project, "suite.yaml", SUITE % "cases.jsonl")
    done = run_cli("run", "proj/suite.yaml", "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "r.jsonl").exists()
    assert lines(done) == ["proj/cases.jsonl:2: ouput: unknown key 'ouput'; did you mean 'output'?"]


def test_dot_and_dot_dot_are_taken_out_of_the_shown_path(tmp_path, project):
    (project / "data").mkdir(parents=True)
    write(project, "cases.jsonl", BAD_JSONL)
    write(project, "suite.yaml", SUITE % "./data/../cases.jsonl")
    done = run_cli("validate", "./proj/suite.yaml", cwd=tmp_path)
    assert lines(done)[0] == "proj/cases.jsonl:2: ouput: unknown key 'ouput'; did you mean 'output'?"
    done = run_cli("validate", "proj", cwd=tmp_path)  # the folder given: its suite.yaml
    assert lines(done)[0] == "proj/cases.jsonl:2: ouput: unknown key 'ouput'; did you mean 'output'?"


def test_a_suite_in_a_folder_beside_the_cases_names_them_through_dot_dot(tmp_path, project):
    write(project, "cases/c.jsonl", BAD_JSONL)
    write(project, "suites/suite.yaml", SUITE % "../cases/c.jsonl")
    done = run_cli("validate", "proj/suites/suite.yaml", cwd=tmp_path)
    assert lines(done)[0] == "proj/cases/c.jsonl:2: ouput: unknown key 'ouput'; did you mean 'output'?"


def test_a_suite_given_by_an_absolute_path_names_its_cases_absolutely(tmp_path, project):
    write(project, "cases.jsonl", BAD_JSONL)
    suite = write(project, "suite.yaml", SUITE % "cases.jsonl")
    done = run_cli("validate", suite, cwd=tmp_path)
    assert lines(done)[0] == f"{project}/cases.jsonl:2: ouput: unknown key 'ouput'; did you mean 'output'?"


def test_a_missing_cases_file_is_looked_for_beside_the_suite_as_given(tmp_path, project):
    write(project, "cases.jsonl", BAD_JSONL)
    write(project, "suite.yaml", SUITE % "missing.jsonl")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert lines(done) == [
        "proj/suite.yaml:3: cases: cases file not found: missing.jsonl (looked for proj/missing.jsonl)",
        "proj/suite.yaml: 1 error",
    ]
    write(project, "suite.yaml", SUITE % "data/../case.jsonl")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert lines(done)[0] == (
        "proj/suite.yaml:3: cases: cases file not found: data/../case.jsonl (looked for proj/case.jsonl); did you mean 'data/../cases.jsonl'?"
    )


def test_a_table_header_problem_and_a_bad_row_name_the_table_as_given(tmp_path, project):
    write(project, "cases.csv", "id,output,expected,colour\na,1,1,red\nb,1,1,blue,extra\n")
    write(project, "suite.yaml", SUITE % "cases.csv")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert lines(done) == [
        "proj/cases.csv:1: the header's column 'colour' is no case key (columns: id, input, expected, output, tags, metadata, "
        "threshold, and input.NAME, expected.NAME, output.NAME, metadata.NAME for one key of those)",
        "proj/cases.csv:3: 5 cells in a row under a header of 4 columns",
        "proj/suite.yaml: 2 errors",
    ]


def test_a_table_without_a_header_names_the_table_as_given(tmp_path, project):
    write(project, "cases.tsv", "\n")
    write(project, "suite.yaml", SUITE % "cases.tsv")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert lines(done)[0] == "proj/cases.tsv:1: a table of cases starts with a header row naming case keys (id, input, expected, ...)"


def test_a_yaml_cases_file_names_itself_as_given(tmp_path, project):
    write(project, "data/cases.yaml", "- {id: a, output: 1, expected: 1}\n- {id: a, output: 1, expected: 1}\n")
    write(project, "suite.yaml", SUITE % "data/cases.yaml")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert lines(done)[0] == "proj/data/cases.yaml:2: [1].id: duplicate case id 'a' (first at line 1)"


def test_globbed_and_listed_cases_files_name_themselves_as_given(tmp_path, project):
    write(project, "data/a.jsonl", '{"id": "a", "output": 1, "expected": 1}\n')
    write(project, "data/b.jsonl", '{"id": "a", "output": 1, "expected": 1}\n')
    write(project, "more/c.json", '[{"id": "c", "output": 1, "expected": 1, "tgs": []}]')
    write(project, "suite.yaml", SUITE % "[data/*.jsonl, ./more/../more/c.json]")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert lines(done) == [
        "proj/data/b.jsonl:1: id: duplicate case id 'a' (first in a.jsonl:1)",
        "proj/more/c.json: [0].tgs: unknown key 'tgs'; did you mean 'tags'?",
        "proj/suite.yaml: 2 errors",
    ]


def test_warnings_about_cases_name_the_cases_file_as_given(tmp_path, project):
    write(project, "cases.jsonl", '{"id": "a", "expected": 1}\n{"id": "b", "expected": 1}\n')
    write(project, "suite.yaml", SUITE % "cases.jsonl")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert done.returncode == 0
    assert lines(done) == [
        "proj/cases.jsonl:1: warning: case 'a' and 1 other case have no `output`, which the recorded target answers with: "
        "the run fails them unless --predictions gives their answers"
    ]


def test_a_cases_file_edited_during_the_run_is_named_as_given(tmp_path, project):
    """The run stops at the changed record, naming the file as validation did."""
    write(project, "cases.jsonl", "".join(f'{{"id": "c{i}", "input": {i}, "expected": 1}}\n' for i in range(200)))
    write(project, "edit.py", """
        import sys
        if sys.stdin.read() == "0":
            with open("cases.jsonl", "r+b") as handle:
                handle.seek(0, 2)
                handle.write(b'{"id": "late", "expected": 1}\\n')
        print(1)
    """)
    write(project, "suite.yaml", "name: paths\ntarget: {type: command, command: [python, edit.py]}\n"
          "evaluators: [{type: equals}]\ncases: ./cases.jsonl\n")
    done = run_cli("run", "proj/suite.yaml", "-o", "r.jsonl", "--workers", "1", "-q", cwd=tmp_path)
    assert done.returncode == 130, done.stderr
    assert "error: proj/cases.jsonl:201: the cases file changed after it was validated; the run stopped here" in done.stderr


def test_predictions_given_on_the_command_line_are_named_as_given(tmp_path, project):
    write(project, "cases.jsonl", '{"id": "a", "expected": 1}\n')
    write(project, "suite.yaml", SUITE % "cases.jsonl")
    write(project, "answers/p.jsonl", '{"id": "a", "output": 1}\n{"id": "a"\n')
    done = run_cli("run", "proj/suite.yaml", "--predictions", "./proj/answers/../answers/p.jsonl", "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert "error: proj/answers/../answers/p.jsonl:2: invalid JSON" in done.stderr, done.stderr


def test_a_link_in_the_path_keeps_its_dot_dot(tmp_path, project):
    """`link/..` is not the folder holding `link` when it is a symbolic link: the join is shown as it is."""
    write(project, "elsewhere/deep/x.txt", "")
    write(project, "elsewhere/cases.jsonl", BAD_JSONL)
    os.symlink(project / "elsewhere" / "deep", project / "link")
    write(project, "suite.yaml", SUITE % "link/../cases.jsonl")
    done = run_cli("validate", "proj/suite.yaml", cwd=tmp_path)
    assert lines(done)[0] == "proj/link/../cases.jsonl:2: ouput: unknown key 'ouput'; did you mean 'output'?"


def test_the_python_api_names_the_cases_file_as_the_cli_does(tmp_path, project, monkeypatch):
    import agenteval

    write(project, "cases.jsonl", BAD_JSONL)
    write(project, "suite.yaml", SUITE % "./cases.jsonl")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(agenteval.SuiteInvalid) as caught:
        agenteval.run_suite("proj/suite.yaml")
    assert str(caught.value) == "proj/cases.jsonl:2: ouput: unknown key 'ouput'; did you mean 'output'?"
