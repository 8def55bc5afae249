"""The pytest plugin, as a team uses it: `pytest` in a fresh process on real suites, its outcomes
checked case by case against `agenteval run`'s verdicts and its JUnit file against the schema."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import CHILD_PYTEST_ENV, EXAMPLES, read_jsonl, run_cli, write
from tests.junit_schema import assert_valid_junit


def pytest_run(cwd: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`python -m pytest ARGS` in `cwd`, which holds its own pytest.ini (not this repository's)."""
    if not (cwd / "pytest.ini").exists():
        (cwd / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=CHILD_PYTEST_ENV,
    )


def copy_example(tmp_path: Path, *names: str) -> Path:
    for name in names:
        shutil.copytree(EXAMPLES / name, tmp_path / "examples" / name)
    return tmp_path / "examples" / names[0] / "suite.yaml"


def junit_outcomes(path: Path) -> dict[str, str]:
    outcomes = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = "failed" if "failure" in kinds else "error" if "error" in kinds else "skipped" if "skipped" in kinds else "passed"
        outcomes[case.get("name")] = outcome
    return outcomes


def run_verdicts(suite: Path, tmp_path: Path) -> dict[str, str]:
    """`agenteval run`'s verdict per item name (`case-id[target/prompt]`)."""
    results = tmp_path / "run.jsonl"
    done = run_cli("run", suite, "-o", results, "-q")
    assert done.returncode in (0, 1), done.stderr
    verdicts = {}
    for line in read_jsonl(results):
        label = "/".join(name for name in (line.get("target"), line.get("prompt")) if name is not None)
        verdicts[f"{line['case_id']}[{label}]" if label else line["case_id"]] = line["verdict"]
    return verdicts


@pytest.mark.parametrize("example", [("invoices", "judges"), ("compare-models",)])
def test_every_item_has_the_verdict_agenteval_run_gives(tmp_path, example):
    suite = copy_example(tmp_path, *example)
    verdicts = run_verdicts(suite, tmp_path)
    done = pytest_run(tmp_path, "--agenteval", str(suite), "--junitxml", "junit.xml", "-p", "no:cacheprovider")
    outcomes = junit_outcomes(tmp_path / "junit.xml")
    assert outcomes == {name: "passed" if verdict == "pass" else "failed" for name, verdict in verdicts.items()}
    assert "failed" in outcomes.values() and "passed" in outcomes.values()
    assert done.returncode == 1, done.stdout[-2000:]
    assert_valid_junit(tmp_path / "junit.xml")
    # The run's summary is written beside the JUnit file.
    [entry] = json.loads((tmp_path / "junit.agenteval.json").read_text())
    assert entry["summary"]["counts"]["total"] == len(verdicts)
    assert entry["summary"]["counts"]["passed"] == sum(verdict == "pass" for verdict in verdicts.values())


def test_items_under_xdist_have_the_same_outcomes(tmp_path):
    suite = copy_example(tmp_path, "invoices", "judges")
    verdicts = run_verdicts(suite, tmp_path)
    done = pytest_run(tmp_path, "--agenteval", str(suite), "-n", "2", "--junitxml", "junit.xml", "-p", "no:cacheprovider")
    assert done.returncode == 1, done.stdout[-2000:]
    assert junit_outcomes(tmp_path / "junit.xml") == {name: "passed" if v == "pass" else "failed" for name, v in verdicts.items()}


def test_an_xdist_worker_runs_the_cases_it_was_handed_together(tmp_path):
    """Under `-n 2` each worker runs the cases queued for it in one `run_suite` (each results file
    is one run): 300 cases took 300 runs, each loading the whole suite, and 4,000 took 94 s where
    one process takes 7 s. Every case still has one result and its own verdict."""
    with (tmp_path / "cases.jsonl").open("w") as cases:
        for n in range(300):
            cases.write(json.dumps({"id": f"c{n}", "expected": "yes", "output": "no" if n % 7 == 0 else "yes"}) + "\n")
    write(tmp_path, "suite.yaml", "name: many\ncases: cases.jsonl\nevaluators: [{name: same, type: equals}]\n")
    done = pytest_run(tmp_path, "--agenteval", "suite.yaml", "-n", "2", "--agenteval-output", "out",
                      "--junitxml", "j.xml", "-p", "no:cacheprovider")
    assert done.returncode == 1, done.stdout[-2000:]
    assert junit_outcomes(tmp_path / "j.xml") == {f"c{n}": "failed" if n % 7 == 0 else "passed" for n in range(300)}
    runs = sorted((tmp_path / "out").glob("*.jsonl"))
    assert sorted(line["case_id"] for path in runs for line in read_jsonl(path)) == sorted(f"c{n}" for n in range(300))
    assert {path.name.split("-")[1] for path in runs} == {"gw0", "gw1"}
    assert len(runs) <= 150, len(runs)


def test_a_failing_item_shows_its_misses_reasoning_and_answer(tmp_path):
    suite = copy_example(tmp_path, "invoices", "judges")
    done = pytest_run(tmp_path, "--agenteval", str(suite), "-p", "no:cacheprovider", "-k", "inv-004 or inv-002")
    assert "2 failed, 6 deselected" in done.stdout
    assert "inv-004: fail (score 0.86)" in done.stdout
    assert "- invoice.total: expected 15600.0, got 16500.0" in done.stdout
    assert "reasoning: 1/2 fields above threshold (levenshtein)" in done.stdout  # the code judge's, on inv-002
    assert 'answer: {"invoice":{"number":"SI-5530"' in done.stdout
    assert "Traceback" not in done.stdout and "agenteval/pytest_plugin.py" not in done.stdout


def test_only_the_selected_items_are_run(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: picks
        evaluators: [{name: same, type: equals}]
        cases:
          - {id: "a*", expected: "yes", output: "yes"}
          - {id: ab, expected: "yes", output: "no"}
          - {id: "c[1]", expected: "yes", output: "yes"}
    """)
    done = pytest_run(tmp_path, f"{suite.name}::a*", "--agenteval", str(suite), "--junitxml", "j.xml", "-p", "no:cacheprovider")
    assert done.returncode == 0, done.stdout[-2000:]
    assert junit_outcomes(tmp_path / "j.xml") == {"a*": "passed"}
    [entry] = json.loads((tmp_path / "j.agenteval.json").read_text())
    assert entry["summary"]["counts"]["total"] == 1  # the glob `a*` was not given to --filter as a glob
    done = pytest_run(tmp_path, "--agenteval", str(suite), "-p", "no:cacheprovider", "-x")
    assert done.returncode == 1 and "1 failed, 1 passed" in done.stdout  # -x stops after ab


def test_last_failed_reruns_only_the_failing_cases(tmp_path):
    suite = copy_example(tmp_path, "invoices", "judges")
    first = pytest_run(tmp_path, "--agenteval", str(suite))
    assert "5 failed, 3 passed" in first.stdout
    again = pytest_run(tmp_path, "--agenteval", str(suite), "--lf", "--junitxml", "j.xml")
    assert "5 failed" in again.stdout and "passed" not in again.stdout.splitlines()[-1]
    assert set(junit_outcomes(tmp_path / "j.xml")) == {"inv-002", "inv-004", "inv-005", "inv-006", "inv-007"}


def test_the_gate_per_cell_decides_the_session(tmp_path):
    suite = copy_example(tmp_path, "invoices", "judges")
    allowed = pytest_run(tmp_path, "--agenteval", str(suite), "--agenteval-min-pass-rate", "0.3", "-p", "no:cacheprovider", "-rx")
    assert allowed.returncode == 0, allowed.stdout[-2000:]
    assert "4 passed, 5 xfailed" in allowed.stdout  # 3 cases and the pass-rate item
    assert "XFAIL examples/invoices/suite.yaml::inv-004 - allowed by the gate" in allowed.stdout
    refused = pytest_run(tmp_path, "--agenteval", str(suite), "--agenteval-min-pass-rate", "0.5", "-p", "no:cacheprovider")
    assert refused.returncode == 1
    assert "3 of 8 cases passed (38%) in the run, below the gate of 50%; not passing: inv-002, inv-004, inv-005, inv-006, inv-007" in refused.stdout


def test_the_gate_holds_under_xdist_and_after_last_failed(tmp_path):
    """Under `-n` each worker sees some cases only: the controller judges each cell's gate over
    every worker's cases (it passed runs it should fail, each worker's gate skipped). After a
    gate failure, `--lf` reruns the gate alone: it runs its cell's cases and fails again (it
    was skipped, and the session passed). Each worker's results file is its own."""
    suite = copy_example(tmp_path, "invoices", "judges")
    refused = pytest_run(tmp_path, "--agenteval", str(suite), "--agenteval-min-pass-rate", "0.5", "-n", "2", "-p", "no:cacheprovider",
                         "--agenteval-output", "out")
    assert refused.returncode == 1, refused.stdout[-2000:]
    assert "FAILED suite.yaml::pass-rate: 3 of 8 cases passed (38%) in the run, below the gate of 50%" in refused.stdout
    assert sorted(line["case_id"] for path in (tmp_path / "out").glob("*.jsonl") for line in read_jsonl(path)) == [
        f"inv-{n:03d}" for n in range(1, 9)]  # every case's result, none overwritten by another worker's
    allowed = pytest_run(tmp_path, "--agenteval", str(suite), "--agenteval-min-pass-rate", "0.3", "-n", "2", "-p", "no:cacheprovider")
    assert allowed.returncode == 0 and "passed suite.yaml::pass-rate: 3 of 8 cases" in allowed.stdout, allowed.stdout[-2000:]
    first = pytest_run(tmp_path, "--agenteval", str(suite), "--agenteval-min-pass-rate", "0.5")
    assert first.returncode == 1
    again = pytest_run(tmp_path, "--agenteval", str(suite), "--agenteval-min-pass-rate", "0.5", "--lf")
    assert again.returncode == 1, again.stdout[-2000:]
    assert "1 failed" in again.stdout and "3 of 8 cases passed (38%) in the run, below the gate of 50%" in again.stdout


def test_a_run_that_cannot_start_fails_each_case_with_the_reason_agenteval_run_gives(tmp_path):
    """A missing credential, or `--agenteval-output` naming a file: each case fails with the one-line
    reason `agenteval run` gives (it was a traceback of a thousand lines that did not name it)."""
    write(tmp_path, "n.agenteval.yaml", """
        name: n
        target: {type: anthropic, model: m, base_url: "http://127.0.0.1:9", api_key_env: QA_KEY_NOT_SET}
        evaluators: [{type: contains, path: content, reference: x}]
        cases: [{id: a, input: hi}, {id: b, input: ho}]
    """)
    done = pytest_run(tmp_path, "n.agenteval.yaml", "-p", "no:cacheprovider")
    assert done.returncode == 1 and "2 failed" in done.stdout
    reason = "n.agenteval.yaml: target: environment variable QA_KEY_NOT_SET is not set"
    assert done.stdout.count(reason) >= 2 and "Traceback" not in done.stdout and len(done.stdout.splitlines()) < 40, done.stdout
    write(tmp_path, "f.agenteval.yaml", "name: f\nevaluators: [{type: equals}]\ncases: [{id: a, expected: x, output: x}]\n")
    (tmp_path / "taken").write_text("a file\n")
    done = pytest_run(tmp_path, "f.agenteval.yaml", "--agenteval-output", "taken", "-p", "no:cacheprovider")
    assert done.returncode == 1 and "the run cannot start: [Errno 17] File exists" in done.stdout and len(done.stdout.splitlines()) < 40, done.stdout


def test_a_matrix_gate_is_per_cell(tmp_path):
    suite = copy_example(tmp_path, "compare-models")
    verdicts = run_verdicts(suite, tmp_path)
    cells = {name.split("[", 1)[1].rstrip("]") for name in verdicts}
    done = pytest_run(tmp_path, "--agenteval", str(suite), "--agenteval-min-pass-rate", "0.9", "--junitxml", "j.xml", "-p", "no:cacheprovider")
    gates = {name: outcome for name, outcome in junit_outcomes(tmp_path / "j.xml").items() if name.startswith("pass-rate")}
    assert set(gates) == {f"pass-rate[{cell}]" for cell in cells}
    for cell in cells:
        mine = [v for name, v in verdicts.items() if name.endswith(f"[{cell}]")]
        expected = "passed" if sum(v == "pass" for v in mine) >= 0.9 * len(mine) else "failed"
        assert gates[f"pass-rate[{cell}]"] == expected, cell
    assert done.returncode == (1 if "failed" in gates.values() else 0)


def test_an_invalid_suite_is_a_collection_error_listing_every_problem(tmp_path):
    suite = write(tmp_path, "suite.yaml", """
        name: broken
        evaluators: [{name: x, type: eqauls}]
        cases: [{id: a, expected: "yes", output: "yes", colour: red}]
    """)
    done = pytest_run(tmp_path, "--agenteval", str(suite), "-p", "no:cacheprovider")
    assert done.returncode == 2, done.stdout[-2000:]
    assert "ERROR collecting suite.yaml" in done.stdout
    assert "suite.yaml:2" in done.stdout and "equals" in done.stdout  # the did-you-mean
    assert "suite.yaml:3" in done.stdout and "colour" in done.stdout


def test_suites_from_the_ini_setting_and_the_file_pattern(tmp_path):
    write(tmp_path, "evals/listed.yaml", """
        name: listed
        evaluators: [{name: same, type: equals}]
        cases: [{id: one, expected: "yes", output: "yes"}]
    """)
    write(tmp_path, "tests/found.agenteval.yaml", """
        name: found
        evaluators: [{name: same, type: equals}]
        cases: [{id: two, expected: "yes", output: "yes"}]
    """)
    write(tmp_path, "tests/other.yaml", "not: a suite\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = tests\nagenteval_suites = evals/listed.yaml\n")
    done = pytest_run(tmp_path, "-p", "no:cacheprovider", "--collect-only", "-q")
    assert sorted(line for line in done.stdout.splitlines() if "::" in line) == [
        "evals/listed.yaml::one", "tests/found.agenteval.yaml::two",
    ]


def test_repeat_runs_each_case_that_many_times(tmp_path):
    suite = copy_example(tmp_path, "invoices", "judges")
    done = pytest_run(tmp_path, "--agenteval", str(suite), "--agenteval-repeat", "2", "--junitxml", "j.xml", "-p", "no:cacheprovider")
    assert "5 failed, 3 passed" in done.stdout
    assert "0 of 2 repetitions passed" in done.stdout
    [entry] = json.loads((tmp_path / "j.agenteval.json").read_text())
    assert entry["summary"]["counts"]["total"] == 16


def test_the_fixture_and_marker_evaluate_a_function(tmp_path):
    write(tmp_path, "test_extractor.py", '''
        import pytest
        from agenteval.testing import assert_passed

        CASES = [{"id": "a", "input": "Total: 12", "expected": {"total": 12}},
                 {"id": "b", "input": "Total: 7", "expected": {"total": 8}}]
        FIELDS = [{"name": "fields", "type": "field_accuracy", "fields": [{"path": "total"}]}]

        def extract(text):
            return {"total": int(text.split(": ")[1])}

        @pytest.mark.agenteval(cases=CASES, evaluators=FIELDS)
        def test_extractor(agenteval_run):
            results = agenteval_run(task=extract)
            assert results.summary["counts"]["total"] == 2
            assert_passed(results)

        @pytest.mark.agenteval(cases=CASES, evaluators=FIELDS)
        def test_extractor_with_a_gate(agenteval_run):
            assert_passed(agenteval_run(task=extract), min_pass_rate=0.5)

        @pytest.mark.agenteval(suite="suite.yaml")
        def test_a_suite_file(agenteval_run):
            results = agenteval_run(task=extract)
            assert [r.verdict for r in results] == ["pass"]
    ''')
    write(tmp_path, "suite.yaml", """
        name: from-file
        evaluators: [{name: fields, type: field_accuracy, fields: [{path: total}]}]
        cases: [{id: c, input: "Total: 3", expected: {total: 3}}]
    """)
    done = pytest_run(tmp_path, "-p", "no:cacheprovider")
    assert "1 failed, 2 passed" in done.stdout, done.stdout[-3000:]
    assert "1 of 2 cases passed (50%); wanted every case to pass" in done.stdout
    assert "- total: expected 8, got 7" in done.stdout


def test_assert_passed_lists_the_misses():
    import agenteval
    from agenteval.testing import assert_passed

    run = agenteval.evaluate(
        [{"id": "x", "expected": {"a": 1, "b": "yes"}, "output": {"a": 2, "b": "yes"}}],
        [{"type": "field_accuracy", "fields": [{"path": "a"}, {"path": "b"}]}],
    )
    with pytest.raises(AssertionError) as failure:
        assert_passed(run)
    assert str(failure.value).splitlines()[:4] == [
        "0 of 1 cases passed (0%); wanted every case to pass",
        "x: fail (score 0.50)",
        "  field_accuracy (field_accuracy): partial 0.50",
        "    - a: expected 1, got 2",
    ]
    with pytest.raises(AssertionError, match="no case was run"):
        assert_passed([])
    with pytest.raises(ValueError, match="between 0 and 1"):
        assert_passed([], min_pass_rate=2)
