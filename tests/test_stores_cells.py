"""SQL stores keep results per cell: a matrix run (`targets:` x `prompts:`) saved to SQLite and to a
real PostgreSQL server reads back equal to its JSONL file, `--resume` finishes only the missing
cells, feedback reaches every cell of a case, and a store made before cells refuses a run of
several cells up front while single-cell runs go on there as before.

The `check_*` scenarios take a store URL; they run against SQLite and against PostgreSQL (the
server of test_postgres_store.py, started once per session).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import run_cli
from test_postgres_store import pg_url, postgres_server  # noqa: F401 - the fixtures, reused
from test_stores import rows

from agenteval.api import run_suite
from agenteval.stores import open_store
from agenteval.stores.sql import cell_column, cell_names
from tests.llm_server import LLMServer

# A command target: answers a case, and logs the call (so a test sees which cells ran). With a
# `crash` file present, the call for case "d" in the good mode kills the agenteval run (SIGKILL,
# no cleanup), as a machine that dies mid-run would.
ANSWERER = """\
import json, os, signal, sys
data = json.load(sys.stdin)
mode, q = sys.argv[1], data["q"]
with open("calls.log", "a") as log:
    log.write(f"{q} {mode}\\n")
if mode == "good" and q == "d" and os.path.exists("crash"):
    os.remove("crash")
    os.kill(os.getppid(), signal.SIGKILL)
print(json.dumps({"answer": q.upper() if mode == "good" or q < "c" else "wrong"}))
"""

CASE_IDS = "abcdef"
TARGETS = {"weak": "weak", "strong": "good"}  # target name -> the answerer's mode


def command_matrix(folder: Path, single: bool = False) -> Path:
    """Six cases; two command targets (`targets:`), or with `single` the one `target:` of an ordinary run."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ans.py").write_text(ANSWERER)
    if single:
        targets = f"target: {{type: command, command: [{sys.executable}, ans.py, good]}}\n"
    else:
        targets = "targets:\n" + "".join(
            f"  {name}: {{type: command, command: [{sys.executable}, ans.py, {mode}]}}\n" for name, mode in TARGETS.items()
        )
    cases = "".join(f"  - {{id: {q}, input: {{q: {q}}}, expected: {{answer: {q.upper()}}}}}\n" for q in CASE_IDS)
    path = folder / "suite.yaml"
    path.write_text(
        "name: cells\n" + targets
        + "evaluators:\n  - {type: field_accuracy, name: fields, fields: [{path: answer}]}\n"
        + "  - {type: equals, name: exact, path: answer, reference_path: answer}\n"
        + "cases:\n" + cases
    )
    return path


def agenteval(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, timeout=180)


def calls(folder: Path) -> list[tuple[str, str]]:
    """(case id, target name) of every answer the targets gave, in order; the log is then emptied."""
    log = folder / "calls.log"
    if not log.exists():
        return []
    modes = {mode: name for name, mode in TARGETS.items()}
    found = [tuple(line.split()) for line in log.read_text().splitlines()]
    log.unlink()
    return [(q, modes[mode]) for q, mode in found]


def stored(url: str, run_id: str | None = None) -> list:
    store = open_store(url)
    try:
        return list(store.read_run(run_id or store.find_run("latest")))
    finally:
        store.close()


VARYING = {"run_id", "timestamp", "duration_ms", "trace_id"}  # what two runs of the same suite do not share


def comparable(result) -> dict:
    """Every field of a result line but those that differ from run to run (latency included)."""
    fields = {key: value for key, value in dataclasses.asdict(result).items() if key not in VARYING}
    fields["evaluator_results"] = [
        {key: value for key, value in evaluator.items() if key != "duration_ms"} for evaluator in fields["evaluator_results"]
    ]
    fields["usage"] = _without_latency(fields["usage"])
    if isinstance(fields["output"], dict):  # a model target's answer records its usage and latency too
        fields["output"] = {key: _without_latency(value) for key, value in fields["output"].items() if key != "latency_ms"}
    return fields


def _without_latency(value):
    return {key: item for key, item in value.items() if key != "latency_ms"} if isinstance(value, dict) else value


def by_cell(results) -> dict[tuple, dict]:
    table = {(r.case_id, r.target, r.prompt, r.repetition): comparable(r) for r in results}
    assert len(table) == len(results)  # no two results share a cell
    return table


# -- scenarios shared by SQLite and PostgreSQL ------------------------------------------------

def check_a_matrix_run_reads_back_like_its_jsonl_file(url: str, tmp_path: Path) -> None:
    suite = command_matrix(tmp_path / "suite")
    into_store = agenteval("run", suite, "--store", url, "--repeat", "2", "-q", cwd=tmp_path / "suite")
    into_file = agenteval("run", suite, "-o", tmp_path / "file.jsonl", "--repeat", "2", "-q", cwd=tmp_path / "suite")
    assert (into_store.returncode, into_file.returncode) == (1, 1), into_store.stderr + into_file.stderr

    cells = rows(url, "SELECT DISTINCT cell FROM case_results ORDER BY cell")
    assert [row["cell"] for row in cells] == ["strong/", "weak/"]
    assert rows(url, "SELECT count(*) AS n FROM case_results")[0]["n"] == 24  # 6 cases x 2 cells x 2 repetitions
    assert rows(url, "SELECT count(*) AS n FROM evaluator_results")[0]["n"] == 48

    from agenteval.results import read_results

    from_store, from_file = stored(url), list(read_results(tmp_path / "file.jsonl"))
    assert by_cell(from_store) == by_cell(from_file)
    assert all(re.fullmatch("[0-9a-f]{32}", r.trace_id) for r in [*from_store, *from_file])  # each case's own W3C trace id, kept
    assert len({r.trace_id for r in from_store}) == len(from_store)
    assert {(r.case_id, r.target, r.prompt, r.repetition) for r in from_store} == {
        (q, target, None, repetition) for q in CASE_IDS for target in TARGETS for repetition in (0, 1)
    }
    keys = [(r.case_id, r.target, r.repetition) for r in from_store]
    assert keys == sorted(keys)  # case id order, then the cell, then the repetition
    verdicts = {(r.case_id, r.target): r.verdict for r in from_store}
    assert [verdicts[q, "weak"] for q in CASE_IDS] == ["pass", "pass", "fail", "fail", "fail", "fail"]
    assert all(verdicts[q, "strong"] == "pass" for q in CASE_IDS)

    run_id = rows(url, "SELECT run_id FROM runs")[0]["run_id"]
    report = json.loads(agenteval("report", run_id, "--store", url, "--format", "json", cwd=tmp_path).stdout)
    assert report["counts"] == {"total": 24, "passed": 16, "failed": 8, "errored": 0}
    assert {cell["label"]: cell["counts"]["passed"] for cell in report["cells"]} == {"weak": 4, "strong": 12}


def check_resume_finishes_only_the_missing_cells(url: str, tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    suite = command_matrix(folder)
    (folder / "crash").touch()
    killed = agenteval("run", suite, "--store", url, "-q", "--workers", "1", cwd=folder)
    assert killed.returncode == -9 and not (folder / "crash").exists()  # the run died on ("d", "strong")
    [run] = rows(url, "SELECT run_id, finished_at FROM runs")
    assert run["finished_at"] is None
    before = {(r.case_id, r.target) for r in stored(url, run["run_id"])}
    everything = {(q, target) for q in CASE_IDS for target in TARGETS}
    assert ("d", "strong") not in before and before < everything
    calls(folder)

    resumed = agenteval("run", suite, "--store", url, "--resume", "-q", cwd=folder)
    assert resumed.returncode == 1, resumed.stderr
    assert sorted(calls(folder)) == sorted(everything - before)  # only the missing cells ran
    after = stored(url, run["run_id"])
    assert sorted((r.case_id, r.target) for r in after) == sorted(everything)
    assert {(r.case_id, r.target): r.verdict for r in after} == {
        (q, target): "pass" if target == "strong" or q < "c" else "fail" for q, target in everything
    }
    [finished] = rows(url, "SELECT run_id, total, passed, finished_at FROM runs")
    assert (finished["run_id"], finished["total"], finished["passed"]) == (run["run_id"], 12, 8)
    assert finished["finished_at"] is not None


def check_feedback_reaches_every_cell_of_a_case(url: str, tmp_path: Path) -> None:
    suite = command_matrix(tmp_path / "suite")
    assert agenteval("run", suite, "--store", url, "-q", cwd=tmp_path / "suite").returncode == 1
    feedback = tmp_path / "feedback.jsonl"
    feedback.write_text(json.dumps({"case_id": "c", "criterion": "tone", "score": 0.5, "reviewer": "ann"}) + "\n")
    added = agenteval("feedback", "add", "--store", url, feedback, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    humans = {
        (r.case_id, r.target): [(e.name, e.score) for e in r.evaluator_results if e.type == "human"] for r in stored(url)
    }
    assert humans == {
        (q, target): [("human:tone", 0.5)] if q == "c" else [] for q in CASE_IDS for target in TARGETS
    }  # as a results file's every line of the case gets it
    assert rows(url, "SELECT cell FROM evaluator_results WHERE type = 'human' ORDER BY cell") == [
        {"cell": "strong/"}, {"cell": "weak/"},
    ]


def check_targets_and_prompts_cells_read_back_like_jsonl(url: str, tmp_path: Path) -> None:
    """Cells naming a target and a prompt (`small/plain`), and a prompt only (`/plain`: the one
    `target:` with `prompts:`), through the Python API."""
    os.environ["AGENTEVAL_CELLS_TEST_KEY"] = "not-checked"  # the model server takes any key
    try:
        _run_targets_and_prompts(url, tmp_path)
    finally:
        del os.environ["AGENTEVAL_CELLS_TEST_KEY"]


def _run_targets_and_prompts(url: str, tmp_path: Path) -> None:
    with LLMServer() as server:
        models = f'models:\n  local: {{base_url: "{server.base_url}", api_key_env: AGENTEVAL_CELLS_TEST_KEY}}\n'
        prompts = textwrap.dedent("""\
            prompts:
              plain: "{{ input.q }}"
              shouted: [{role: system, content: be loud}, {role: user, content: "{{ input.q | upper }}"}]
            evaluators:
              - {type: contains, name: upper, path: content}
            cases:
              - {id: one, input: {q: yes}, expected: {content: YES}}
              - {id: two, input: {q: "nul\\0 and \\uFFFD"}, expected: {content: "NUL\\0 AND \\uFFFD"}}
            """)
        grid = tmp_path / "grid.yaml"
        grid.write_text(
            "name: grid\n" + models
            + "targets:\n  small: {type: openai, endpoint: local, model: s}\n  large: {type: openai, endpoint: local, model: l}\n"
            + prompts
        )
        prompts_only = tmp_path / "prompts.yaml"
        prompts_only.write_text("name: prompts-only\n" + models + "target: {type: openai, endpoint: local, model: s}\n" + prompts)
        read_back = {}
        for suite, cells in ((grid, 4), (prompts_only, 2)):
            into_store, into_file = run_suite(suite, store=url, cache=False), run_suite(suite, output=tmp_path / f"{suite.stem}.jsonl", cache=False)
            in_store, in_file = list(into_store), list(into_file)
            assert into_store.summary["counts"] == into_file.summary["counts"]  # the runs end (the store's is closed)
            assert len(in_store) == len(in_file) == 2 * cells
            read_back[suite.stem] = stored(url, in_store[0].run_id)
            assert by_cell(read_back[suite.stem]) == by_cell(in_file) == by_cell(in_store)
    assert {(r.target, r.prompt) for r in read_back["grid"]} == {
        (target, prompt) for target in ("small", "large") for prompt in ("plain", "shouted")
    }
    assert [row["cell"] for row in rows(url, "SELECT DISTINCT cell FROM case_results ORDER BY cell")] == [
        "/plain", "/shouted", "large/plain", "large/shouted", "small/plain", "small/shouted",
    ]
    from_store = read_back["prompts"]
    assert [r.output["content"] for r in from_store if r.prompt == "shouted"] == ["echo: YES", "echo: NUL\0 AND \uFFFD"]
    verdicts = {(r.case_id, r.prompt): r.verdict for r in from_store}
    assert verdicts == {("one", "plain"): "fail", ("one", "shouted"): "pass", ("two", "plain"): "fail", ("two", "shouted"): "pass"}
    assert all(r.target is None for r in from_store)


SCENARIOS = [
    check_a_matrix_run_reads_back_like_its_jsonl_file,
    check_resume_finishes_only_the_missing_cells,
    check_feedback_reaches_every_cell_of_a_case,
    check_targets_and_prompts_cells_read_back_like_jsonl,
]
IDS = [scenario.__name__.removeprefix("check_") for scenario in SCENARIOS]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_sqlite_keeps_results_per_cell(scenario, tmp_path):
    scenario(f"sqlite:///{tmp_path / 'runs.db'}", tmp_path)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_postgres_keeps_results_per_cell(scenario, pg_url, tmp_path):  # noqa: F811 - the fixture
    scenario(pg_url, tmp_path)


# -- a store made before cells ----------------------------------------------------------------

def _old_tables(json_type: str, time_type: str) -> list[str]:
    """The result tables as agenteval created them before cells (the previous CREATE TABLE statements)."""
    return [
        f"""CREATE TABLE runs (run_id VARCHAR NOT NULL, suite VARCHAR NOT NULL, started_at {time_type} NOT NULL,
            finished_at {time_type}, agenteval_version VARCHAR, interrupted BOOLEAN, total INTEGER, passed INTEGER,
            failed INTEGER, errored INTEGER, pass_rate FLOAT, mean_score FLOAT, config {json_type}, summary {json_type},
            PRIMARY KEY (run_id))""",
        f"""CREATE TABLE case_results (run_id VARCHAR NOT NULL, case_id VARCHAR NOT NULL, repetition INTEGER NOT NULL,
            timestamp {time_type}, score FLOAT NOT NULL, verdict VARCHAR NOT NULL, error TEXT, duration_ms FLOAT,
            agent_id VARCHAR, session_id VARCHAR, tags {json_type}, metadata {json_type}, input {json_type},
            output {json_type}, usage {json_type}, expected {json_type},
            PRIMARY KEY (run_id, case_id, repetition), FOREIGN KEY(run_id) REFERENCES runs (run_id))""",
        f"""CREATE TABLE evaluator_results (run_id VARCHAR NOT NULL, case_id VARCHAR NOT NULL, repetition INTEGER NOT NULL,
            name VARCHAR NOT NULL, position INTEGER NOT NULL, type VARCHAR NOT NULL, score FLOAT NOT NULL,
            verdict VARCHAR NOT NULL, error TEXT, duration_ms FLOAT, reasoning TEXT, hits {json_type},
            misses {json_type}, details {json_type}, criterion {json_type},
            PRIMARY KEY (run_id, case_id, repetition, name),
            FOREIGN KEY(run_id, case_id, repetition) REFERENCES case_results (run_id, case_id, repetition))""",
        """CREATE TABLE dataset_metrics (run_id VARCHAR NOT NULL, evaluator VARCHAR NOT NULL, kind VARCHAR NOT NULL,
            "key" VARCHAR NOT NULL, metric VARCHAR NOT NULL, value FLOAT,
            PRIMARY KEY (run_id, evaluator, kind, "key", metric), FOREIGN KEY(run_id) REFERENCES runs (run_id))""",
    ]


def old_store(url: str) -> None:
    postgres = url.startswith("postgresql")
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            for statement in _old_tables("JSON" if postgres else "JSON_TEXT", "TIMESTAMP WITH TIME ZONE" if postgres else "DATETIME"):
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()


def primary_key(url: str, table: str) -> list[str]:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        return sa.inspect(engine).get_pk_constraint(table)["constrained_columns"]
    finally:
        engine.dispose()


def check_an_old_store_refuses_several_cells_and_keeps_one(url: str, tmp_path: Path) -> None:
    old_store(url)
    folder = tmp_path / "suite"
    matrix = command_matrix(folder)

    refused = agenteval("run", matrix, "--store", url, cwd=folder)
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith("error: ") and "was made before runs had cells" in line and "a run of 2 cells" in line
    assert "use a new store (another SQLite file, or a new PostgreSQL database)" in line
    assert calls(folder) == [] and rows(url, "SELECT count(*) AS n FROM runs")[0]["n"] == 0  # nothing ran
    assert primary_key(url, "case_results") == primary_key(url, "evaluator_results")[:3] == ["run_id", "case_id", "repetition"]

    single = command_matrix(tmp_path / "single", single=True)  # an ordinary run: as before, its cell ""
    assert agenteval("run", single, "--store", url, "-q", cwd=tmp_path / "single").returncode == 0
    ordinary = stored(url)
    assert [(r.case_id, r.target, r.prompt, r.verdict) for r in ordinary] == [(q, None, None, "pass") for q in CASE_IDS]
    assert {row["cell"] for row in rows(url, "SELECT cell FROM case_results")} == {""}

    one = agenteval("run", matrix, "--store", url, "-q", "--target", "weak", cwd=folder)  # one named cell fits too
    assert one.returncode == 1, one.stderr
    assert sorted(calls(folder)) == [(q, "weak") for q in CASE_IDS]
    assert [(r.case_id, r.target) for r in stored(url)] == [(q, "weak") for q in CASE_IDS]
    again = agenteval("run", matrix, "--store", url, "--resume", "--target", "strong", cwd=folder)
    assert again.returncode == 2 and "a run of 2 cells" in again.stderr  # with the cell already saved, two
    assert calls(folder) == []
    assert rows(url, "SELECT count(*) AS n FROM case_results")[0]["n"] == 12


def test_an_old_sqlite_store_refuses_several_cells_and_keeps_one(tmp_path):
    check_an_old_store_refuses_several_cells_and_keeps_one(f"sqlite:///{tmp_path / 'old.db'}", tmp_path)


def test_an_old_postgres_store_refuses_several_cells_and_keeps_one(pg_url, tmp_path):  # noqa: F811 - the fixture
    check_an_old_store_refuses_several_cells_and_keeps_one(pg_url, tmp_path)


def test_an_old_store_file_keeps_its_runs_readable_when_it_cannot_be_written(tmp_path):
    """A read-only file made before cells has no `cell` column to add: its runs read as the unnamed cell."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        for statement in _old_tables("JSON_TEXT", "DATETIME"):
            conn.execute(statement)
        conn.execute("INSERT INTO runs (run_id, suite, started_at) VALUES ('r1', 'cells', '2026-01-01 00:00:00')")
        for q in "ba":
            conn.execute(
                "INSERT INTO case_results (run_id, case_id, repetition, score, verdict, output) VALUES ('r1', ?, 0, 1.0, 'pass', ?)",
                (q, json.dumps({"answer": q.upper()})),
            )
            conn.execute(
                "INSERT INTO evaluator_results (run_id, case_id, repetition, name, position, type, score, verdict)"
                " VALUES ('r1', ?, 0, 'fields', 0, 'field_accuracy', 1.0, 'pass')", (q,),
            )
    media = tmp_path / "ro"
    media.mkdir()
    reader = (
        "import json, sys; from agenteval.stores import open_store; store = open_store(sys.argv[1]); "
        "print(json.dumps([[r.case_id, r.target, r.prompt, r.output, [e.name for e in r.evaluator_results]] for r in store.read_run('r1')]))"
    )
    script = (
        f"set -e; mount -t tmpfs -o size=4m tmpfs {media}; cp {path} {media}/; mount -o remount,ro {media}; "
        f"{sys.executable} -c \"{reader}\" sqlite:///{media}/old.db > {tmp_path}/read.json; "
        f"{sys.executable} -c \"import sqlite3, sys; print([row[1] for row in sqlite3.connect(sys.argv[1]).execute('PRAGMA table_info(case_results)')])\" "
        f"{media}/old.db > {tmp_path}/columns"
    )
    prefix = [] if os.geteuid() == 0 else ["unshare", "-rm"]  # a private mount namespace, as root or not
    done = subprocess.run([*prefix, "unshare", "-m", "sh", "-c", script] if not prefix else [*prefix, "sh", "-c", script],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "read.json").read_text()) == [
        ["a", None, None, {"answer": "A"}, ["fields"]], ["b", None, None, {"answer": "B"}, ["fields"]],
    ]
    assert "cell" not in (tmp_path / "columns").read_text()  # the file was only read


@pytest.mark.parametrize(("target", "prompt", "cell"), [
    (None, None, ""), ("gpt-a", "terse", "gpt-a/terse"), ("gpt-a", None, "gpt-a/"), (None, "terse", "/terse"),
    ("ä b.c-1", "p%\u00e9", "ä b.c-1/p%\u00e9"),
    ("openai/gpt-4.1", "terse", "openai/gpt-4.1/terse"), ("openai/gpt-4.1", None, "openai/gpt-4.1/"), ("a/", None, "a//"), ("/", "p", "//p"),
])
def test_a_cell_is_stored_as_text_that_gives_back_its_names(target, prompt, cell):
    assert cell_column(target, prompt) == cell
    assert cell_names(cell) == (target, prompt)
