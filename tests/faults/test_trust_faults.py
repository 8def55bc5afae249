"""What a cases file may do, and in-process code (`python` evaluators, plugins) that misbehaves.

Contract (README "A cases file is data, not code", docs/reliability.md "Threat model"): nothing
in a cases file runs code, talks to a server of its own, reads a file or names an environment
variable unless the suite says `trust_cases: true`; every file an evaluator names stays inside
the suite's folder. Whatever a `python` evaluator or a plugin returns or raises (`sys.exit()`
included) is that case's `error`, never the run's exit code; a `python` call past its `timeout`
too, and the run goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy
from conftest import read_jsonl, run_cli, write
from llm_server import LLMServer

from agenteval.evaluators.base import EvalContext, EvaluatorConfig, EvaluatorResult, run_evaluator

EXIT_INVALID, EXIT_ERRORED = 2, 3
NEEDS_TRUST = (
    "; cases files are data, so this needs `trust_cases: true` in the suite (only for a file you trust like your "
    "own code), or move the evaluator into the suite"
)
RUBRIC = [{"name": "correct", "description": "x"}]


def _lines(cases: list[dict]) -> str:
    return "".join(json.dumps(case) + "\n" for case in cases)


# --- E1: a cases file cannot reach secrets, files or servers of its own ------------------------

def test_a_cases_file_cannot_send_secrets_or_private_files_to_its_own_server(tmp_path):
    folder = tmp_path / "suite"
    (tmp_path / "private.txt").write_text("a private file of the user\n")
    with LLMServer() as server:
        judge = {"name": "grader", "type": "llm_judge", "base_url": server.base_url, "model": "m",
                 "api_key_env": "AWS_SECRET_ACCESS_KEY", "headers": {"X-Token": "${GITHUB_TOKEN}"}, "criteria": RUBRIC}
        write(folder, "data/cases.jsonl", _lines([
            {"id": "c1", "expected": "x", "output": "x", "evaluators": [dict(judge, prompt_file="../private.txt")]},
            {"id": "c2", "expected": "x", "output": "x", "evaluators": [judge]},
        ]))
        suite = write(folder, "suite.yaml", "name: e1\nevaluators: [{type: equals}]\ncases: data/cases.jsonl\n")
        cases = folder / "data" / "cases.jsonl"
        problems_of_c2 = [
            f"{cases}:2: evaluators[0].base_url: case 'c2': a `llm_judge` evaluator in a cases file talks to a server of "
            f"its own (a case may only use `endpoint: NAME` of the suite's `models:`){NEEDS_TRUST}",
            f"{cases}:2: evaluators[0].api_key_env: case 'c2': `api_key_env` in a cases file names an environment "
            f"variable (AWS_SECRET_ACCESS_KEY){NEEDS_TRUST}",
            f"{cases}:2: evaluators[0].headers.X-Token: case 'c2': `${{GITHUB_TOKEN}}` in a cases file names an "
            f"environment variable{NEEDS_TRUST}",
        ]
        expected = [
            f"{cases}:1: evaluators[0].prompt_file: case 'c1': `prompt_file` '../private.txt' is outside the suite's folder "
            f"(it resolves to {tmp_path / 'private.txt'}); files a suite or case names must be inside the folder of the suite file",
            # G28: every other problem of that judge at once, never reading the file
            *(line.replace("2: ", "1: ", 1).replace("case 'c2'", "case 'c1'") for line in problems_of_c2),
            f"{cases}:2: evaluators[0].base_url: case 'c2': a `llm_judge` evaluator in a cases file talks to a server of "
            f"its own (a case may only use `endpoint: NAME` of the suite's `models:`){NEEDS_TRUST}",
            f"{cases}:2: evaluators[0].api_key_env: case 'c2': `api_key_env` in a cases file names an environment "
            f"variable (AWS_SECRET_ACCESS_KEY){NEEDS_TRUST}",
            f"{cases}:2: evaluators[0].headers.X-Token: case 'c2': `${{GITHUB_TOKEN}}` in a cases file names an "
            f"environment variable{NEEDS_TRUST}",
            f"{suite}: 7 errors",
        ]
        checked = run_cli("validate", suite)
        assert (checked.returncode, checked.stderr.splitlines()) == (EXIT_INVALID, expected)
        env = {"AWS_SECRET_ACCESS_KEY": "aws-secret-1", "GITHUB_TOKEN": "ghp-secret-2"}
        done = subprocess.run(
            [sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(tmp_path / "r.jsonl"), "-q"],
            capture_output=True, text=True, timeout=120, env={**os.environ, **env},
        )
        assert done.returncode == EXIT_INVALID, done.stderr
        assert server.received == []
    assert not (tmp_path / "r.jsonl").exists()
    assert "aws-secret-1" not in done.stderr + done.stdout and "ghp-secret-2" not in done.stderr + done.stdout


def test_a_cases_file_may_not_run_code_read_files_or_name_variables_anywhere_in_an_evaluator(tmp_path):
    write(tmp_path, "schema.json", '{"type": "object"}')
    (tmp_path / "linked.json").symlink_to(tmp_path.parent / "elsewhere.json")
    write(tmp_path, "judges.py", "def judge(p):\n    return 1.0\n")
    cases = write(tmp_path, "cases.yaml", """
        - id: a
          expected: x
          evaluators:
            - {type: python, function: "judges:judge"}
            - {type: json_schema, schema_file: linked.json}
        - id: b
          expected: x
          evaluators:
            - name: all
              type: composite
              evaluators:
                - {type: regex, pattern: "${HOME}"}
                - {type: semantic_similarity, endpoint: embed, base_url: "http://127.0.0.1:9/v1"}
    """)
    suite = write(tmp_path, "suite.yaml", """
        name: untrusted
        models: {embed: {base_url: "http://127.0.0.1:9/v1", model: e}}
        evaluators: [{type: equals}]
        cases: cases.yaml
    """)
    done = run_cli("validate", suite)
    assert done.returncode == EXIT_INVALID
    assert done.stderr.splitlines() == [
        f"{cases}:4: [0].evaluators[0].type: case 'a': a `python` evaluator in a cases file runs a program or code{NEEDS_TRUST}",
        f"{cases}:5: [0].evaluators[1].schema_file: case 'a': `schema_file` 'linked.json' is outside the suite's folder "
        f"(it resolves to {tmp_path.parent / 'elsewhere.json'}); files a suite or case names must be inside the folder of the suite file",
        f"{cases}:12: [1].evaluators[0].evaluators[0].pattern: case 'b': `${{HOME}}` in a cases file names an "
        f"environment variable{NEEDS_TRUST}",
        f"{cases}:13: [1].evaluators[0].evaluators[1].base_url: case 'b': a `semantic_similarity` evaluator in a cases "
        f"file talks to a server of its own (a case may only use `endpoint: NAME` of the suite's `models:`){NEEDS_TRUST}",
        f"{suite}: 4 errors",
    ]
    # Case a's python evaluator is named once its file is inside the folder (a file outside stops validation first).
    cases.write_text(cases.read_text().replace("linked.json", "schema.json"))  # a file inside the folder is data: allowed
    done = run_cli("validate", suite)
    assert done.stderr.splitlines()[0] == (
        f"{cases}:4: [0].evaluators[0].type: case 'a': a `python` evaluator in a cases file runs a program or code{NEEDS_TRUST}"
    )


def test_a_cases_file_may_use_an_endpoint_of_the_suites_own_models(tmp_path):
    with LLMServer() as server:
        write(tmp_path, "cases.jsonl", _lines([
            {"id": "same", "expected": "The capital is Paris.", "output": "The capital is Paris.",
             "evaluators": [{"name": "meaning", "type": "semantic_similarity", "endpoint": "embed", "threshold": 0.99}]},
            {"id": "typo", "expected": "x", "output": "x", "evaluators": [{"type": "semantic_similarity", "endpoint": "embedder"}]},
        ]))
        suite = write(tmp_path, "suite.yaml", f"""
            name: own-endpoint
            models: {{embed: {{base_url: "{server.base_url}", model: e, cache: false}}}}
            evaluators: [{{type: equals}}]
            cases: cases.jsonl
        """)
        done = run_cli("validate", suite)
        assert done.stderr.splitlines() == [
            f"{tmp_path / 'cases.jsonl'}:2: evaluators[0].endpoint: case 'typo': endpoint 'embedder' is not defined "
            "under the suite's `models:` (known: embed)",
            f"{suite}: 1 error",
        ]
        write(tmp_path, "cases.jsonl", (tmp_path / "cases.jsonl").read_text().splitlines()[0] + "\n")
        done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
        assert done.returncode == 0, done.stderr
        assert server.count("/embeddings") == 1
    [line] = read_jsonl(tmp_path / "r.jsonl")
    assert [(r["name"], r["verdict"]) for r in line["evaluator_results"]] == [("equals", "pass"), ("meaning", "pass")]


def test_trust_cases_lets_a_cases_file_use_its_own_server_and_the_old_name_still_works(tmp_path):
    with LLMServer() as server:
        write(tmp_path, "cases.jsonl", _lines([
            {"id": "c1", "expected": "same words", "output": "same words",
             "evaluators": [{"type": "semantic_similarity", "base_url": server.base_url, "model": "e", "cache": False}]},
        ]))
        for key in ("trust_cases", "trust_case_commands"):
            suite = write(tmp_path, f"{key}.yaml", f"name: t\n{key}: true\nevaluators: [{{type: equals}}]\ncases: cases.jsonl\n")
            done = run_cli("run", suite, "-o", tmp_path / f"{key}.jsonl", "-q")
            assert done.returncode == 0, done.stderr
            [line] = read_jsonl(tmp_path / f"{key}.jsonl")
            assert line["evaluator_results"][1]["verdict"] == "pass"
        assert server.count("/embeddings") == 2
    both = write(tmp_path, "both.yaml", "name: t\ntrust_cases: true\ntrust_case_commands: false\nevaluators: [{type: equals}]\ncases: cases.jsonl\n")
    done = run_cli("validate", both)
    assert done.stderr.splitlines()[0] == f"{both}:1: `trust_case_commands` is the old name of `trust_cases`: give only `trust_cases`"


def test_a_file_named_by_a_suite_or_a_trusted_case_stays_inside_the_suite_folder(tmp_path):
    folder = tmp_path / "suite"
    (tmp_path / "secret.txt").write_text("bad\nwords\n")
    folder.mkdir()
    (folder / "terms.txt").symlink_to(tmp_path / "secret.txt")  # a symlink inside that points outside
    write(folder, "ok_terms.txt", "darn\n")
    write(folder, "cases.jsonl", _lines([
        {"id": "c1", "expected": "x", "output": "x",
         "evaluators": [{"type": "llm_judge", "endpoint": "j", "prompt_file": "../secret.txt", "criteria": RUBRIC}]},
    ]))
    suite = write(folder, "suite.yaml", """
        name: files
        trust_cases: true
        models: {j: {base_url: "http://127.0.0.1:9/v1", model: m}}
        evaluators:
          - {name: linked, type: toxicity, terms_file: terms.txt}
          - {name: fine, type: toxicity, terms_file: ok_terms.txt}
        cases: cases.jsonl
    """)
    done = run_cli("validate", suite)
    assert done.returncode == EXIT_INVALID
    assert done.stderr.splitlines() == [
        f"{folder / 'cases.jsonl'}:1: evaluators[0].prompt_file: case 'c1': `prompt_file` '../secret.txt' is outside "
        f"the suite's folder (it resolves to {tmp_path / 'secret.txt'}); files a suite or case names must be inside "
        "the folder of the suite file",
        f"{suite}:5: evaluators[0].terms_file: `terms_file` 'terms.txt' is outside the suite's folder (it resolves to "
        f"{tmp_path / 'secret.txt'}); files a suite or case names must be inside the folder of the suite file",
        f"{suite}: 2 errors",
    ]


# --- E7: sys.exit() in a python evaluator is that case's error ------------------------------

def test_sys_exit_in_a_python_evaluator_is_that_cases_error_not_the_exit_code(tmp_path):
    write(tmp_path, "judges.py", "import sys\ndef judge(p):\n    sys.exit(0)\n")
    write(tmp_path, "cases.jsonl", _lines([{"id": f"c{i}", "expected": i, "output": -1} for i in range(5)]))
    suite = write(tmp_path, "suite.yaml", 'name: e7\nevaluators: [{type: python, function: "judges:judge"}, {type: equals}]\ncases: cases.jsonl\n')
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl")
    assert done.returncode == EXIT_ERRORED, done.stderr
    lines = read_jsonl(tmp_path / "r.jsonl")
    assert [line["case_id"] for line in lines] == [f"c{i}" for i in range(5)]
    for line in lines:
        python, equals = line["evaluator_results"]
        assert (python["verdict"], equals["verdict"]) == ("error", "fail")
        assert python["error"].startswith("judges:judge called sys.exit(0)\n")
        assert python["error"].endswith("SystemExit: 0")


def test_a_judge_module_parsing_the_command_line_at_import_is_an_error_not_the_exit_code(tmp_path):
    write(tmp_path, "judges.py", "import argparse\nARGS = argparse.ArgumentParser().parse_args()\ndef judge(p):\n    return 1.0\n")
    write(tmp_path, "cases.jsonl", _lines([{"id": f"c{i}", "expected": f"v{i}", "output": f"v{i}"} for i in range(3)]))
    suite = write(tmp_path, "suite.yaml", 'name: e7\nevaluators: [{type: python, function: "judges:judge"}, {type: equals}]\ncases: cases.jsonl\n')
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == EXIT_ERRORED, done.stderr
    lines = read_jsonl(tmp_path / "r.jsonl")
    assert len(lines) == 3
    for line in lines:
        python, equals = line["evaluator_results"]
        assert equals["verdict"] == "pass"
        assert python["verdict"] == "error"
        assert python["error"].startswith("cannot import judges.py (next to the suite): it called sys.exit(2) while being imported\n")


# --- E15: a plugin's results are checked -------------------------------------------------------

PLUGIN = '''
import sys
from typing import Literal
from agenteval.evaluators.base import EvaluatorConfig, EvaluatorResult

class Bad(EvaluatorConfig):
    """Returns what its case asks for."""
    type: Literal["e15_bad"]
    type_name = "e15_bad"

    def evaluate(self, ctx):
        kind = ctx.output
        if kind == "none":
            return None
        if kind == "exit":
            sys.exit(4)
        if kind == "details":
            details = {}
            details["self"] = details
            return EvaluatorResult(self.label, self.type, 1.0, "pass", details=details)
        if kind == "hits":
            return EvaluatorResult(self.label, self.type, 1.0, "pass", hits=["a", 3])
        if kind == "text_score":
            return EvaluatorResult(self.label, self.type, "high", "pass")
        score, verdict = {"nan": (float("nan"), "pass"), "seven": (7.0, "pass"), "great": (1.0, "great"),
                          "good": (1, "pass")}[kind]
        return EvaluatorResult(self.label, self.type, score, verdict)
'''


def _plugin_site(tmp_path: Path, module: str = PLUGIN) -> dict[str, str]:
    """An installed plugin package (a .dist-info declaring the entry point, as pip writes it)."""
    site = tmp_path / "site"
    write(site, "e15plug.py", module)
    info = site / "e15plug-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: e15plug\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[agenteval.evaluators]\ne15_bad = e15plug:Bad\n")
    return {**os.environ, "PYTHONPATH": str(site)}


def _agenteval(env: dict[str, str], *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agenteval", *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


def test_a_plugin_result_that_is_not_usable_becomes_an_error_naming_the_problem(tmp_path):
    env = _plugin_site(tmp_path)
    kinds = ["none", "nan", "seven", "great", "details", "hits", "text_score", "exit", "good"]
    write(tmp_path, "cases.jsonl", _lines([{"id": kind, "expected": None, "output": kind} for kind in kinds]))
    suite = write(tmp_path, "suite.yaml", "name: e15\nevaluators: [{type: e15_bad}]\ncases: cases.jsonl\n")
    done = _agenteval(env, "run", suite, "-o", tmp_path / "r.jsonl", "-q", "--html", tmp_path / "r.html")
    assert done.returncode == EXIT_ERRORED, done.stderr
    results = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(tmp_path / "r.jsonl")}
    said = "e15_bad (e15_bad) returned "
    assert {kind: (r["verdict"], r["score"], r["error"]) for kind, r in results.items()} == {
        "none": ("error", 0.0, said + "None, not an EvaluatorResult"),
        "nan": ("error", 0.0, said + "a score of nan; a score is a finite number in [0, 1]"),
        "seven": ("error", 0.0, said + "a score of 7.0; a score is a finite number in [0, 1]"),
        "great": ("error", 0.0, said + "the verdict 'great'; a verdict is pass, partial, fail or error"),
        "details": ("error", 0.0, said + "details that cannot be serialized (it contains itself)"),
        "hits": ("error", 0.0, said + "`hits` that is not a list of strings: ['a', 3]"),
        "text_score": ("error", 0.0, said + "a score of 'high'; a score is a number in [0, 1]"),
        "exit": ("error", 0.0, "evaluator failed: called sys.exit(4)"),
        "good": ("pass", 1.0, None),
    }
    assert (tmp_path / "r.html").stat().st_size > 0
    report = run_cli("report", tmp_path / "r.jsonl", "--format", "json")
    assert (report.returncode, report.stderr) == (EXIT_ERRORED, "")  # read back whole; 3 says cases errored
    assert json.loads(report.stdout)["evaluators"]["e15_bad"]["verdicts"] == {"error": 8, "pass": 1}


def test_sys_exit_in_a_plugin_at_import_is_a_clear_load_error_not_its_exit_code(tmp_path):
    env = _plugin_site(tmp_path, "import sys\nsys.exit(0)\n")
    write(tmp_path, "cases.jsonl", _lines([{"id": "a", "expected": None, "output": "good"}]))
    suite = write(tmp_path, "suite.yaml", "name: e15\nevaluators: [{type: e15_bad}]\ncases: cases.jsonl\n")
    done = _agenteval(env, "run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == EXIT_INVALID
    assert done.stderr == (
        "error: evaluator plugin 'e15_bad' (e15plug:Bad, from e15plug 0) called sys.exit(0) while being imported\n"
    )


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")


class _Returns(EvaluatorConfig):
    """An evaluator defined outside agenteval (as a plugin is) returning a fixed value."""

    type: str = "returns"
    type_name = "returns"
    value: object = None

    def evaluate(self, ctx: EvalContext) -> EvaluatorResult:
        return self.value  # type: ignore[return-value]


def test_run_evaluator_checks_every_result_and_converts_a_numpy_like_score(tmp_path):
    ctx = EvalContext("c1", None, 1, 1, {}, tmp_path)
    fine = run_evaluator(_Returns(value=EvaluatorResult("returns", "returns", 1, "pass", reasoning="ok")), ctx)
    assert (fine.score, type(fine.score), fine.verdict, fine.error) == (1.0, float, "pass", None)
    quarter = run_evaluator(_Returns(value=EvaluatorResult("returns", "returns", numpy.float32(0.25), "partial")), ctx)
    assert (quarter.score, type(quarter.score), quarter.verdict) == (0.25, float, "partial")
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    for details in ({"tags": {"a"}}, {"deep": deep}):  # the writer stores these (str() of a set, deep values cut)
        kept = run_evaluator(_Returns(value=EvaluatorResult("returns", "returns", 0.5, "partial", details=details)), ctx)
        assert (kept.verdict, kept.details, kept.error) == ("partial", details, None)
    for value, problem in [
        (EvaluatorResult("returns", "returns", float("inf"), "pass"), "a score of inf; a score is a finite number in [0, 1]"),
        (EvaluatorResult("returns", "returns", -0.5, "fail"), "a score of -0.5; a score is a finite number in [0, 1]"),
        (EvaluatorResult("returns", "returns", True, "pass"), "a score of True; a score is a number in [0, 1]"),
        (EvaluatorResult("returns", "returns", 0.5, "partial", details={"when": [_Unprintable()]}),
         "details that cannot be serialized (RuntimeError: no text)"),
        (EvaluatorResult("returns", "returns", 0.5, "partial", reasoning=42), "`reasoning` that is not a string: 42"),
        ({"score": 1.0}, "dict, not an EvaluatorResult"),
    ]:
        result = run_evaluator(_Returns(value=value), ctx)
        assert (result.score, result.verdict, result.error) == (0.0, "error", f"returns (returns) returned {problem}")


# --- E22: details that contain themselves ---------------------------------------------------

def test_python_details_that_contain_themselves_are_an_error_not_a_crash(tmp_path):
    write(tmp_path, "judges.py", 'def judge(p):\n    d = {}\n    d["self"] = d\n    return {"score": 1, "details": d}\n')
    write(tmp_path, "cases.jsonl", _lines([{"id": f"c{i}", "expected": i, "output": i} for i in range(10)]))
    suite = write(tmp_path, "suite.yaml", 'name: e22\nevaluators: [{type: python, function: "judges:judge"}]\ncases: cases.jsonl\n')
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == EXIT_ERRORED, done.stderr
    lines = read_jsonl(tmp_path / "r.jsonl")
    assert len(lines) == 10
    [error] = {line["evaluator_results"][0]["error"] for line in lines}  # read as the Python API reads values
    assert error.startswith("judges:judge returned a value with no plain form: result.details.self.self.self")
    assert ".self.….self." in error and error.endswith(".self.self: it contains itself") and len(error) < 200  # the path cut short


# --- E14 (python part): a timeout for python evaluators -----------------------------------------

def test_a_python_evaluator_past_its_timeout_is_that_cases_error_and_the_run_goes_on(tmp_path):
    write(tmp_path, "judges.py", """
        import time
        def judge(p):
            if p["case_id"] == "slow":
                time.sleep(3600)
            return 1.0
    """)
    write(tmp_path, "cases.jsonl", _lines([{"id": name, "expected": 1, "output": 1} for name in ("a", "slow", "b", "c")]))
    suite = write(tmp_path, "suite.yaml", 'name: e14\nevaluators: [{type: python, function: "judges:judge", timeout: 1}]\ncases: cases.jsonl\n')
    started = time.monotonic()
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--workers", "2", timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == EXIT_ERRORED, done.stderr
    assert elapsed < 20  # one second for the slow case, and the abandoned thread does not hold up the exit
    results = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(tmp_path / "r.jsonl")}
    assert {name: r["verdict"] for name, r in results.items()} == {"a": "pass", "slow": "error", "b": "pass", "c": "pass"}
    assert results["slow"]["error"] == (
        "judges:judge took longer than its timeout of 1 s; the call was abandoned (it may still be running in the background)"
    )
    assert 1000 <= results["slow"]["duration_ms"] < 5000


def test_a_python_evaluator_timeout_is_validated_and_defaults_to_a_minute(tmp_path):
    write(tmp_path, "judges.py", "def judge(p):\n    return 1.0\n")
    suite = write(tmp_path, "suite.yaml", """
        name: t
        evaluators:
          - {type: python, function: "judges:judge", timeout: 0}
        cases: [{id: a, expected: 1, output: 1}]
    """)
    done = run_cli("validate", suite)
    assert done.stderr.splitlines()[0] == f"{suite}:3: evaluators[0].timeout: must be > 0.0, got 0"
    from agenteval.evaluators.python_function import PythonFunction

    assert PythonFunction(type="python", function="judges:judge").timeout == 60.0
