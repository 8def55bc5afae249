"""The real `agenteval` command on real files: exit codes, streamed JSONL, summaries."""

import json
import os
import signal
import subprocess
import sys
import time

import jsonschema
import pytest
import yaml

from conftest import EXAMPLES, SCHEMAS, read_jsonl, run_cli, write

RESULT_SCHEMA = json.loads((SCHEMAS / "result.schema.json").read_text())
SUITE = """
name: demo
evaluators:
  - name: fields
    type: field_accuracy
    fields: [{path: a}, {path: b, match: numeric_tolerance, tolerance: 0.1}]
cases:
  - {id: ok-1, expected: {a: x, b: 1}, output: {a: x, b: 1.05}, tags: [smoke]}
  - {id: ok-2, expected: {a: y, b: 2}, output: {a: y, b: 2}}
  - {id: bad-1, expected: {a: z, b: 3}, output: {a: q, b: 3}, tags: [smoke]}
  - {id: bad-2, expected: {a: w, b: 4}, output: {a: w, b: 9}}
"""


def assert_valid_lines(lines):
    for line in lines:
        jsonschema.validate(line, RESULT_SCHEMA)


# --- the invoices example ----------------------------------------------------------------------

def test_invoices_example_streams_results_and_summary(tmp_path):
    out = tmp_path / "results.jsonl"
    done = run_cli("run", EXAMPLES / "invoices" / "suite.yaml", "-o", out)
    assert done.returncode == 1, done.stderr
    lines = read_jsonl(out)
    assert_valid_lines(lines)
    verdicts = {line["case_id"]: line["verdict"] for line in lines}
    assert verdicts == {
        "inv-001": "pass", "inv-002": "fail", "inv-003": "pass", "inv-004": "fail",
        "inv-005": "fail", "inv-006": "fail", "inv-007": "fail", "inv-008": "pass",
    }
    by_id = {line["case_id"]: line for line in lines}
    header = by_id["inv-006"]["evaluator_results"][0]
    assert header["misses"] == ["invoice.total (type mismatch)"]
    assert header["reasoning"] == "4/5 fields matched (2 skipped)"
    judge = by_id["inv-002"]["evaluator_results"][1]
    assert judge["type"] == "code_judge" and judge["misses"] == ["vendor.name"]
    assert judge["details"]["fields"]["buyer.name"]["similarity"] == 1.0

    summary = json.loads((tmp_path / "results.summary.json").read_text())
    assert summary["counts"] == {"total": 8, "passed": 3, "failed": 5, "errored": 0}
    assert summary["pass_rate"] == 3 / 8
    assert summary["fields"]["header"]["invoice.total"] == {
        "scored": 8, "hits": 6, "skipped": 0, "accuracy": 0.75, "mean_score": 0.75,
    }
    assert summary["fields"]["header"]["vendor.vat_id"]["skipped"] == 5
    assert summary["evaluators"]["party_names"]["verdicts"] == {"pass": 6, "partial": 2}
    assert summary["tags"] == {
        "apac": {"total": 1, "passed": 0, "failed": 1, "errored": 0, "pass_rate": 0.0},
        "eu": {"total": 3, "passed": 2, "failed": 1, "errored": 0, "pass_rate": 2 / 3},
        "uk": {"total": 1, "passed": 1, "failed": 0, "errored": 0, "pass_rate": 1.0},
        "us": {"total": 3, "passed": 0, "failed": 3, "errored": 0, "pass_rate": 0.0},
    }
    assert "By tag" in done.stdout
    assert summary["resolved_suite"]["name"] == "invoice-extraction"
    assert len(summary["slowest_cases"]) == 5
    assert "Fields across the dataset" in done.stdout and "invoice.total" in done.stdout


EXPECTED_EXIT = {"azure-openai": 1, "bedrock": 1, "coco-detection": 1, "compare-models": 1, "gemini": 1, "support-agent-live": 1, "invoices": 1, "invoices-lineitems": 1, "layout": 1, "qa-llm": 1, "rag": 1, "receipts": 0, "support-agent": 1, "traces-support": 1, "function-calling": 1, "pipeline": 1, "review": 1}


def test_every_example_suite_is_covered_here():
    suites = {path.parent.name for path in EXAMPLES.glob("*/suite.yaml")}
    assert suites == set(EXPECTED_EXIT)


@pytest.mark.parametrize("name", sorted(EXPECTED_EXIT))
def test_example_suite_runs_with_its_documented_exit_code(tmp_path, name):
    suite = EXAMPLES / name / "suite.yaml"
    assert run_cli("validate", suite).returncode == 0
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl")
    assert done.returncode == EXPECTED_EXIT[name], done.stderr
    assert_valid_lines(read_jsonl(tmp_path / "r.jsonl"))
    data = yaml.safe_load(suite.read_text())
    jsonschema.validate(data, json.loads((SCHEMAS / "suite.schema.json").read_text()))
    assert suite.read_text().startswith("# yaml-language-server: $schema=../../schemas/suite.schema.json")


# --- exit codes and output ---------------------------------------------------------------------

def test_dash_o_streams_jsonl_to_stdout_and_the_rest_to_stderr(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    done = run_cli("run", suite, "-o", "-")
    assert done.returncode == 1
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["case_id"] for line in lines] == ["ok-1", "ok-2", "bad-1", "bad-2"]
    assert "pass rate 50.0%" in done.stderr
    assert not list(tmp_path.glob("*.summary.json"))


def test_default_output_goes_to_agenteval_results(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    assert run_cli("run", suite, "-q", cwd=tmp_path).returncode == 1
    [results] = (tmp_path / "agenteval-results").glob("demo-*.jsonl")
    assert len(read_jsonl(results)) == 4
    assert (results.parent / (results.name[: -len(".jsonl")] + ".summary.json")).exists()


def test_min_pass_rate_gates_the_exit_code(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    assert run_cli("run", suite, "-o", "-", "--min-pass-rate", "0.5").returncode == 0
    assert run_cli("run", suite, "-o", "-", "--min-pass-rate", "0.51").returncode == 1
    bad = run_cli("run", suite, "-o", "-", "--min-pass-rate", "2")
    assert bad.returncode == 2 and "--min-pass-rate must be between 0 and 1" in bad.stderr


def test_all_passing_run_exits_0(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    assert run_cli("run", suite, "-o", "-", "--filter", "ok-*").returncode == 0


def test_invalid_suite_exits_2_and_runs_nothing(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE.replace("numeric_tolerance", "numeric"))
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl")
    assert done.returncode == 2
    assert "Invalid match type: numeric (valid: exact, fuzzy, numeric_tolerance, date); did you mean 'numeric_tolerance'?" in done.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_validate_reports_every_file(tmp_path):
    good = write(tmp_path, "good.yaml", SUITE)
    bad = write(tmp_path, "bad.yaml", "name: x\nevaluators: [{type: field_accuracy, fields: [{path: a, wieght: 2}]}]\ncases: []\n")
    done = run_cli("validate", good, bad)
    assert done.returncode == 2
    assert f"{good}: ok (4 cases, 1 evaluator)" in done.stdout
    assert f"{bad}:2: evaluators[0].fields[0].wieght: unknown key 'wieght'; did you mean 'weight'?" in done.stderr
    assert f"{bad}: 1 error" in done.stderr


KEYED = """
name: keyed
env_file: .env
targets:
  gpt: {type: openai, model: gpt-4o-mini}
  team: {type: openai, base_url: "http://127.0.0.1:9/v1", model: m, api_key_env: TEAM_TEST_KEY}
  local: {type: openai, base_url: "http://127.0.0.1:9/v1", model: m}
evaluators: [{type: contains, path: content, reference: x}]
cases: [{id: a, input: hi}]
"""
NOT_SET = {
    "gpt": "environment variable OPENAI_API_KEY is not set: api.openai.com needs an API key; set it, or name another variable "
           "with `api_key_env: NAME`",
    "team": "environment variable TEAM_TEST_KEY is not set: it holds the API key (`api_key_env`); set it, or name another variable",
}


def agenteval(*args, cwd, **env):
    """`agenteval ARGS` in a fresh process with `env` laid over the environment (None: unset)."""
    environ = {name: value for name, value in {**os.environ, **env}.items() if value is not None}
    return subprocess.run([sys.executable, "-m", "agenteval", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120, env=environ)


def test_validate_warns_of_each_missing_key_that_run_refuses_to_start_without(tmp_path):
    suite = write(tmp_path, "s.yaml", KEYED)
    write(tmp_path, ".env", "")
    unset = {"OPENAI_API_KEY": None, "TEAM_TEST_KEY": None}
    done = agenteval("validate", suite, cwd=tmp_path, **unset)
    assert done.returncode == 0  # a warning: validate often runs where the secrets are not
    assert done.stdout == f"{suite}: ok (1 case, 1 evaluator)\n"
    assert done.stderr.splitlines() == [
        f"{suite}: warning: targets.{name}: {message} (agenteval run will refuse to start until it is set)" for name, message in NOT_SET.items()
    ]
    ran = agenteval("run", suite, "-o", tmp_path / "r.jsonl", cwd=tmp_path, **unset)  # the same problems, as errors
    assert ran.returncode == 2 and not (tmp_path / "r.jsonl").exists()
    assert ran.stderr.splitlines() == [f"{suite}: targets.{name}: {message}" for name, message in NOT_SET.items()]
    write(tmp_path, ".env", "TEAM_TEST_KEY=from-the-env-file\n")
    done = agenteval("validate", suite, cwd=tmp_path, **unset)
    assert (done.returncode, done.stderr.splitlines()) == (0, [f"{suite}: warning: targets.gpt: {NOT_SET['gpt']} (agenteval run will refuse to start until it is set)"])
    done = agenteval("validate", suite, cwd=tmp_path, OPENAI_API_KEY="sk-test", TEAM_TEST_KEY=None)
    assert (done.returncode, done.stderr) == (0, "")


def test_validate_does_not_warn_of_a_key_a_replay_from_the_cache_needs_not(tmp_path):
    suite = write(tmp_path, "s.yaml", KEYED.replace("model: gpt-4o-mini", "model: gpt-4o-mini, temperature: 0"))
    write(tmp_path, ".env", "")
    (tmp_path / ".agenteval" / "cache").mkdir(parents=True)
    (tmp_path / ".agenteval" / "cache" / "responses.sqlite").touch()  # a committed cache: run replays the temperature-0 target
    done = agenteval("validate", suite, cwd=tmp_path, OPENAI_API_KEY=None, TEAM_TEST_KEY=None)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [f"{suite}: warning: targets.team: {NOT_SET['team']} (agenteval run will refuse to start until it is set)"]


def test_validate_still_fails_a_suite_with_errors_and_tells_no_key_then(tmp_path):
    suite = write(tmp_path, "s.yaml", KEYED.replace("reference: x", "referense: x"))
    write(tmp_path, ".env", "")
    done = agenteval("validate", suite, cwd=tmp_path, OPENAI_API_KEY=None, TEAM_TEST_KEY=None)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"{suite}:7: evaluators[0].referense: unknown key 'referense'; did you mean 'reference'?", f"{suite}: 1 error",
    ]


def test_selection_by_filter_tag_and_shard(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)

    def ids(*args):
        done = run_cli("run", suite, "-o", "-", *args)
        return [json.loads(line)["case_id"] for line in done.stdout.splitlines()]

    assert ids("--filter", "bad-*") == ["bad-1", "bad-2"]
    assert ids("--filter", "ok-1", "--filter", "bad-2") == ["ok-1", "bad-2"]
    assert ids("--tag", "smoke") == ["ok-1", "bad-1"]
    assert ids("--shard", "1/2") == ["ok-1", "bad-1"]
    assert ids("--shard", "2/2") == ["ok-2", "bad-2"]
    assert ids("--tag", "smoke", "--shard", "2/2") == ["bad-1"]


def test_selecting_no_case_is_an_error_not_a_pass(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    done = run_cli("run", suite, "-o", "-", "--filter", "nothing-*")
    assert done.returncode == 2
    assert "no case selected: the suite has 4 cases and none matches --filter nothing-*" in done.stderr
    assert run_cli("run", suite, "--shard", "3/2").returncode == 2


def test_running_the_same_command_twice_replaces_the_results_never_appends(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    out = tmp_path / "r.jsonl"
    assert run_cli("run", suite, "-o", out, "-q").returncode == 1
    first = {line["run_id"] for line in read_jsonl(out)}
    again = run_cli("run", suite, "-o", out, "-q")
    assert again.returncode == 1, again.stderr
    lines = read_jsonl(out)
    assert len(lines) == 4
    assert len({line["run_id"] for line in lines}) == 1 and {line["run_id"] for line in lines} != first
    assert json.loads((tmp_path / "r.summary.json").read_text())["run_id"] == lines[0]["run_id"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["r.jsonl", "r.summary.json", "s.yaml"]


# --- targets -----------------------------------------------------------------------------------

COMMAND_SUITE = """
name: cmd
target: {type: command, command: [python, target.py], timeout: 2}
evaluators:
  - {name: f, type: field_accuracy, fields: [{path: n}]}
cases:
  - {id: fine, input: {n: 1}, expected: {n: 1}}
  - {id: crash, input: {n: -1}, expected: {n: -1}}
  - {id: slow, input: {n: -2}, expected: {n: -2}}
  - {id: text, input: {n: -3}, expected: {n: -3}}
  - {id: nan, input: {n: -4}, expected: {n: -4}}
"""
TARGET = """
import json, sys, time
case = json.load(sys.stdin)
if case["n"] == -1:
    sys.stderr.write("extractor: cannot parse page 3\\n"); sys.exit(4)
if case["n"] == -2:
    time.sleep(30)
if case["n"] == -3:
    print("plain text answer"); sys.exit(0)
if case["n"] == -4:
    print(json.dumps({"n": float("nan")})); sys.exit(0)
print(json.dumps(case))
"""


def test_command_target_errors_are_case_errors_and_the_run_goes_on(tmp_path):
    suite = write(tmp_path, "s.yaml", COMMAND_SUITE)
    write(tmp_path, "target.py", TARGET)
    out = tmp_path / "r.jsonl"
    done = run_cli("run", suite, "-o", out, "--workers", "2")
    assert done.returncode == 3, done.stderr
    by_id = {line["case_id"]: line for line in read_jsonl(out)}
    assert by_id["fine"]["verdict"] == "pass" and by_id["fine"]["output"] == {"n": 1}
    assert by_id["crash"]["verdict"] == "error"
    assert by_id["crash"]["error"] == "target exited with code 4; stderr: extractor: cannot parse page 3"
    assert by_id["slow"]["error"] == "target timed out after 2s"
    assert by_id["text"]["output"] == "plain text answer"
    assert by_id["text"]["evaluator_results"][0]["misses"] == ["n (required, missing)"]
    assert by_id["nan"]["evaluator_results"][0]["misses"] == ["n"]  # NaN parsed as a number, unequal under exact
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["counts"] == {"total": 5, "passed": 1, "failed": 2, "errored": 2}
    assert summary["pass_rate"] == 0.2  # errored cases stay in the denominator


def test_predictions_file_supplies_answers_by_id(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps(p) for p in [
        {"id": "ok-1", "output": {"a": "x", "b": 1}}, {"id": "ok-2", "output": {"a": "y", "b": 2}},
        {"id": "bad-1", "output": {"a": "z", "b": 3}},
    ]) + "\n")
    out = tmp_path / "r.jsonl"
    done = run_cli("run", suite, "-o", out, "--predictions", preds)
    assert done.returncode == 3
    by_id = {line["case_id"]: line for line in read_jsonl(out)}
    assert [by_id[i]["verdict"] for i in ("ok-1", "ok-2", "bad-1", "bad-2")] == ["pass", "pass", "pass", "error"]
    assert by_id["bad-2"]["error"] == "no prediction for case 'bad-2' in preds.jsonl"
    # a results file works as a predictions file
    again = run_cli("run", suite, "-o", tmp_path / "again.jsonl", "--predictions", tmp_path / "r.jsonl", "--filter", "ok-*")
    assert again.returncode == 0


def test_bad_predictions_file_is_a_usage_error(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    preds = tmp_path / "p.jsonl"
    preds.write_text('{"id": "a", "output": 1}\n{"output": 2}\nnot json\n{"id": "a", "output": 3}\n')
    done = run_cli("run", suite, "-o", "-", "--predictions", preds)
    assert done.returncode == 2
    assert f"{preds}:2: a prediction needs `id` (or `case_id`) and `output`" in done.stderr
    assert f"{preds}:3: invalid JSON" in done.stderr
    assert f"{preds}:4: duplicate prediction for case 'a'" in done.stderr


def test_recorded_case_without_output_is_a_case_error(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE.replace(", output: {a: w, b: 9}", ""))
    done = run_cli("run", suite, "-o", "-")
    assert done.returncode == 3
    errored = [json.loads(line) for line in done.stdout.splitlines() if json.loads(line)["verdict"] == "error"]
    assert [(e["case_id"], e["error"]) for e in errored] == [("bad-2", "case 'bad-2' has no recorded `output` (add one, or pass --predictions)")]


# --- interruption and resume -------------------------------------------------------------------

SLOW_SUITE = """
name: slow
target: {type: command, command: [python, slow.py]}
evaluators: [{type: field_accuracy, fields: [{path: n}]}]
cases: cases.jsonl
"""


def _slow_suite(tmp_path, count=30):
    write(tmp_path, "slow.py", "import json, sys, time\ncase = json.load(sys.stdin)\ntime.sleep(0.15)\nprint(json.dumps(case))\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", "input": {"n": i}, "expected": {"n": i}}) + "\n" for i in range(count)))
    return write(tmp_path, "s.yaml", SLOW_SUITE)


def _start_and_wait_for_lines(suite, out, minimum):
    proc = subprocess.Popen([sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(out), "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if out.exists() and out.read_text().count("\n") >= minimum:
            return proc
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the run wrote nothing")


def test_ctrl_c_keeps_finished_cases_and_resume_completes_the_run(tmp_path):
    suite = _slow_suite(tmp_path)
    out = tmp_path / "r.jsonl"
    proc = _start_and_wait_for_lines(suite, out, 3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    first = read_jsonl(out)
    assert 3 <= len(first) < 30
    assert_valid_lines(first)
    assert "--resume` continues" in stderr
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["interrupted"] is True and summary["counts"]["total"] == len(first)

    resumed = run_cli("run", suite, "-o", out, "--resume", "--workers", "4")
    assert resumed.returncode == 0, resumed.stderr
    lines = read_jsonl(out)
    assert sorted(line["case_id"] for line in lines) == [f"c{i:02d}" for i in range(30)]
    assert {line["run_id"] for line in lines} == {first[0]["run_id"]}
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["counts"]["total"] == 30 and summary["interrupted"] is False


def test_a_killed_run_leaves_valid_jsonl_and_resume_repairs_a_torn_line(tmp_path):
    suite = _slow_suite(tmp_path, count=12)
    out = tmp_path / "r.jsonl"
    proc = _start_and_wait_for_lines(suite, out, 2)
    proc.kill()
    proc.communicate()
    finished = read_jsonl(out)
    assert len(finished) >= 2
    with out.open("a") as handle:
        handle.write('{"run_id": "torn mid-wri')  # what a crash during a write would leave
    resumed = run_cli("run", suite, "-o", out, "--resume", "--workers", "4")
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(line["case_id"] for line in read_jsonl(out)) == [f"c{i:02d}" for i in range(12)]


# --- report, compare, schema, init -------------------------------------------------------------

def test_report_rebuilds_the_summary_from_result_files(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    run_cli("run", suite, "-o", tmp_path / "a.jsonl", "--shard", "1/2")
    run_cli("run", suite, "-o", tmp_path / "b.jsonl", "--shard", "2/2")
    done = run_cli("report", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--json")
    assert done.returncode == 1
    summary = json.loads(done.stdout)
    assert summary["counts"] == {"total": 4, "passed": 2, "failed": 2, "errored": 0}
    assert summary["fields"]["fields"]["a"]["hits"] == 3
    assert run_cli("report", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--min-pass-rate", "0.5").returncode == 0
    table = run_cli("report", tmp_path / "a.jsonl")
    assert "Fields across the dataset" in table.stdout


def test_report_on_missing_file_is_a_usage_error(tmp_path):
    done = run_cli("report", tmp_path / "none.jsonl")
    assert done.returncode == 2 and "cannot read" in done.stderr


def test_compare_finds_regressions_and_improvements(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    run_cli("run", suite, "-o", tmp_path / "base.jsonl")
    better = SUITE.replace("output: {a: q, b: 3}", "output: {a: z, b: 3}").replace("output: {a: y, b: 2}", "output: {a: n, b: 2}")
    run_cli("run", write(tmp_path, "s2.yaml", better), "-o", tmp_path / "new.jsonl")
    done = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl")
    assert done.returncode == 1
    assert "Regressions (1)" in done.stdout and "ok-2" in done.stdout
    assert "Improvements (1)" in done.stdout and "bad-1" in done.stdout
    assert "1 regressed, 1 improved, 2 unchanged, 0 only in base, 0 only in new" in done.stdout
    assert run_cli("compare", tmp_path / "base.jsonl", tmp_path / "base.jsonl").returncode == 0


@pytest.mark.parametrize("name", ["suite", "result", "judge"])
def test_committed_schemas_match_the_models(name):
    done = run_cli("schema", name)
    assert done.returncode == 0
    assert json.loads(done.stdout) == json.loads((SCHEMAS / f"{name}.schema.json").read_text()), (
        f"schemas/{name}.schema.json is stale: run `agenteval schema {name} > schemas/{name}.schema.json`"
    )


def test_unknown_schema_name_is_a_usage_error():
    done = run_cli("schema", "suit")
    assert done.returncode == 2 and "unknown schema 'suit'" in done.stderr


def test_init_scaffolds_a_suite_that_runs(tmp_path):
    done = run_cli("init", tmp_path / "new")
    assert done.returncode == 0
    assert (tmp_path / "new" / "suite.schema.json").exists()
    ran = run_cli("run", tmp_path / "new" / "suite.yaml", "-o", tmp_path / "r.jsonl")
    assert ran.returncode == 1
    verdicts = {line["case_id"]: line["verdict"] for line in read_jsonl(tmp_path / "r.jsonl")}
    assert verdicts == {"email-1": "pass", "email-2": "fail"}
    again = run_cli("init", tmp_path / "new")
    assert again.returncode == 2 and "not overwriting" in again.stderr


def test_help_lists_commands_and_exit_codes():
    done = run_cli("--help")
    for command in ("run", "validate", "schema", "report", "compare", "init"):
        assert command in done.stdout
    run_help = run_cli("run", "--help").stdout
    assert "130 interrupted" in run_help and "--min-pass-rate" in run_help


def test_usage_errors_exit_2():
    assert run_cli("run").returncode == 2
    assert run_cli("run", "x.yaml", "--workers", "many").returncode == 2


def test_reader_closing_stdout_stops_the_run_without_a_traceback(tmp_path):
    suite = _slow_suite(tmp_path, count=20)
    proc = subprocess.Popen([sys.executable, "-m", "agenteval", "run", str(suite), "-o", "-", "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = json.loads(proc.stdout.readline())
    proc.stdout.close()  # like `| head -1`
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 130
    assert first["case_id"] == "c00"
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1].startswith("interrupted after ") and stderr.splitlines()[-1].endswith(
        " of 20 cases: the reader of the results on stdout went away")


def test_resume_refuses_the_results_of_another_suite(tmp_path):
    out = tmp_path / "r.jsonl"
    run_cli("run", write(tmp_path, "a.yaml", SUITE), "-o", out)
    other = write(tmp_path, "b.yaml", SUITE.replace("name: demo", "name: other"))
    done = run_cli("run", other, "-o", out, "--resume")
    assert done.returncode == 2
    assert "holds results of suite 'demo', not 'other'" in done.stderr
    assert len(read_jsonl(out)) == 4


def test_predictions_are_read_correctly_by_many_workers(tmp_path):
    count = 400
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "expected": {"n": i}}) + "\n" for i in range(count)))
    (tmp_path / "preds.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "output": {"n": i, "pad": "x" * (i % 97)}}) + "\n" for i in reversed(range(count))))
    suite = write(tmp_path, "s.yaml", "name: p\nevaluators: [{type: field_accuracy, fields: [{path: n}]}]\ncases: cases.jsonl\n")
    done = run_cli("run", suite, "-o", "-", "--predictions", tmp_path / "preds.jsonl", "--workers", "8")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == count and all(line["verdict"] == "pass" for line in lines)


def test_report_names_the_line_that_is_not_a_result(tmp_path):
    suite = write(tmp_path, "s.yaml", SUITE)
    out = tmp_path / "r.jsonl"
    run_cli("run", suite, "-o", out)
    lines = out.read_text().splitlines()
    out.write_text("\n".join([lines[0], '{"hello": "world"}', *lines[1:]]) + "\n")
    done = run_cli("report", out)
    assert done.returncode == 2
    assert f"{out}:2: not a result line" in done.stderr
