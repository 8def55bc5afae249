"""Result stores: runs in a real SQLite file, history, human feedback, and reading runs back.

The `check_*` scenarios take a store URL and run against SQLite here and against a real
PostgreSQL server in test_postgres_store.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import read_jsonl, run_cli, write

from agenteval.execute import RunOptions, UsageError, execute
from agenteval.results import read_results
from agenteval.stores import StoreError, open_store

CASES = [
    {"id": "a", "input": {"q": "invoice 1"}, "expected": {"total": 10, "name": "Acme"}, "output": {"total": 10, "name": "Acme"},
     "metadata": {"agent_id": "bot-1", "session_id": "s-1"}},
    {"id": "b", "input": {"q": "invoice 2"}, "expected": {"total": 20, "name": "Globex"}, "output": {"total": 21, "name": "Globex"},
     "metadata": {"agent_id": "bot-1", "session_id": "s-2"}},
    {"id": "c", "input": {"q": "invoice 3"}, "expected": {"total": 30, "name": "Initech"}, "output": {"total": 30, "name": "Initech"}},
    {"id": "d", "input": {"q": "invoice 4"}, "expected": {"total": 40, "name": "Umbrella"}, "output": {"total": 40, "name": "Umbrela"}},
]


def make_suite(folder: Path, extra_evaluator: str = "", store_line: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in CASES))
    write(folder, "judges.py", """
        import time

        def total_close(payload):
            time.sleep(payload["config"].get("sleep", 0))
            gap = abs(payload["candidate_answer"]["total"] - payload["reference_answer"]["total"])
            return {"score": 1.0 if gap == 0 else 0.5, "misses": [] if gap == 0 else ["total"]}
    """)
    return write(folder, "suite.yaml", f"""
        name: invoices
        {store_line}
        evaluators:
          - name: header
            type: field_accuracy
            fields: [{{path: total}}, {{path: name}}]
          - {{name: total_judge, type: python, function: "judges:total_close"{extra_evaluator}}}
        cases: cases.jsonl
    """)


def predictions(folder: Path, name: str, outputs: dict[str, dict]) -> Path:
    path = folder / name
    path.write_text("".join(json.dumps({"id": case_id, "output": output}) + "\n" for case_id, output in outputs.items()))
    return path


def run(suite: Path, store: str | None = None, **options) -> int:
    return execute(RunOptions(suite=suite, store=store, quiet=True, **options))


def engine(url: str) -> sa.Engine:
    return sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


def rows(url: str, query: str, **params) -> list[dict]:
    eng = engine(url)
    try:
        with eng.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(sa.text(query), params)]
    finally:
        eng.dispose()


def cli_json(*args) -> dict:
    done = run_cli(*args)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


# -- scenarios shared with test_postgres_store.py --------------------------------------------

def check_a_run_is_stored_like_its_jsonl_file(url: str, tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suite")
    assert run(suite, url) == 1
    assert run(suite, output=str(tmp_path / "file.jsonl")) == 1

    [stored_run] = rows(url, "SELECT run_id, suite, finished_at, total, passed, interrupted, pass_rate FROM runs")
    assert (stored_run["suite"], stored_run["total"], stored_run["passed"], stored_run["interrupted"]) == ("invoices", 4, 2, False)
    assert stored_run["finished_at"] is not None and stored_run["pass_rate"] == 0.5
    cases = rows(url, "SELECT case_id, agent_id, session_id, timestamp, verdict FROM case_results ORDER BY case_id")
    assert [(c["case_id"], c["agent_id"], c["session_id"], c["verdict"]) for c in cases] == [
        ("a", "bot-1", "s-1", "pass"), ("b", "bot-1", "s-2", "fail"), ("c", None, None, "pass"), ("d", None, None, "fail"),
    ]
    assert all(c["timestamp"] is not None for c in cases)
    assert rows(url, "SELECT count(*) AS n FROM evaluator_results")[0]["n"] == 8

    store = open_store(url)
    try:
        stored = {result.case_id: result for result in store.read_run(stored_run["run_id"])}
    finally:
        store.close()
    from_file = {result.case_id: result for result in read_results(tmp_path / "file.jsonl")}
    assert stored.keys() == from_file.keys() == {"a", "b", "c", "d"}
    for case_id, result in from_file.items():
        again = stored[case_id]
        assert (again.score, again.verdict, again.output, again.input, again.agent_id, again.session_id, again.metadata) == (
            result.score, result.verdict, result.output, result.input, result.agent_id, result.session_id, result.metadata
        )
        assert again.expected == result.expected == next(case["expected"] for case in CASES if case["id"] == case_id)
        assert [(e.name, e.type, e.score, e.verdict, e.misses, e.details) for e in again.evaluator_results] == [
            (e.name, e.type, e.score, e.verdict, e.misses, e.details) for e in result.evaluator_results
        ]
        assert again.timestamp is not None and again.run_id == stored_run["run_id"]

    from_store = cli_json("report", stored_run["run_id"], "--store", url, "--format", "json")
    from_jsonl = cli_json("report", tmp_path / "file.jsonl", "--format", "json")
    for key in ("counts", "pass_rate", "mean_score", "fields"):
        assert from_store[key] == from_jsonl[key], key
    assert {name: s["mean_score"] for name, s in from_store["evaluators"].items()} == {"header": 0.75, "total_judge": 0.875}


def check_a_killed_run_resumes_from_the_store(url: str, tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suite", extra_evaluator=", sleep: 0.4")
    child = subprocess.Popen(
        [sys.executable, "-m", "agenteval", "run", str(suite), "--store", url, "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    saved: list[dict] = []
    while time.monotonic() < deadline and len(saved) < 2:
        time.sleep(0.1)
        try:
            saved = rows(url, "SELECT case_id, timestamp FROM case_results ORDER BY case_id")
        except sa.exc.DBAPIError:  # the tables are not created yet
            saved = []
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(10)
    saved = rows(url, "SELECT case_id, timestamp FROM case_results ORDER BY case_id")
    assert 2 <= len(saved) < 4, saved
    [killed] = rows(url, "SELECT run_id, finished_at FROM runs")
    assert killed["finished_at"] is None

    assert run(suite, url, resume=True) == 1
    after = rows(url, "SELECT case_id, timestamp FROM case_results ORDER BY case_id")
    assert [row["case_id"] for row in after] == ["a", "b", "c", "d"]
    assert after[: len(saved)] == saved  # the cases saved before the kill were not run again
    [resumed] = rows(url, "SELECT run_id, finished_at, total, passed, summary FROM runs")
    assert resumed["run_id"] == killed["run_id"] and resumed["finished_at"] is not None
    summary = resumed["summary"] if isinstance(resumed["summary"], dict) else json.loads(resumed["summary"])
    assert (resumed["total"], resumed["passed"], summary["counts"]["total"]) == (4, 2, 4)


def check_history_report_and_compare_read_the_store(url: str, tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suite")
    good = predictions(tmp_path, "good.jsonl", {case["id"]: case["expected"] for case in CASES})
    worse = predictions(tmp_path, "worse.jsonl", {case["id"]: case["output"] for case in CASES})
    assert run(suite, url, predictions=good) == 0
    assert run(suite, url, predictions=worse) == 1
    base_id, new_id = (row["run_id"] for row in rows(url, "SELECT run_id FROM runs ORDER BY started_at"))

    history = cli_json("history", "--store", url, "--suite", "invoices", "--format", "json")
    assert [run_["run_id"] for run_ in history["runs"]] == [base_id, new_id]
    assert [(r["total"], r["passed"], r["pass_rate"], r["mean_score"]) for r in history["runs"]] == [
        (4, 4, 1.0, 1.0), (4, 2, 0.5, (1 + (0.5 + 0.5) / 2 + 1 + (0.5 + 1) / 2) / 4),
    ]
    assert history["runs"][1]["evaluators"]["header"] == {"type": "field_accuracy", "count": 4, "mean_score": 0.75, "pass_rate": 0.5}
    assert history["runs"][1]["fields"] == {"header": {"total": 0.75, "name": 0.75}}
    trends = history["trends"]["invoices"]
    assert trends["pass_rate"] == {"values": [1.0, 0.5], "first": 1.0, "last": 0.5, "change": -0.5}
    assert trends["evaluators"]["total_judge"] == {"type": "python", "values": [1.0, 0.875], "first": 1.0, "last": 0.875, "change": -0.125}
    assert trends["fields"]["header"]["name"]["values"] == [1.0, 0.75]

    markdown = run_cli("history", "--store", url, "--format", "markdown").stdout
    assert f"| {base_id} |" in markdown and "| header | field_accuracy | █▆ | 1.000 | 0.750 | -0.250 |" in markdown

    compared = run_cli("compare", base_id, "latest", "--store", url, "--format", "json")
    assert compared.returncode == 1, compared.stderr
    outcome = json.loads(compared.stdout)
    assert sorted(row["case_id"] for row in outcome["regressions"]) == ["b", "d"]
    unknown = run_cli("report", "no-such-run", "--store", url)
    assert unknown.returncode == 2 and unknown.stderr.startswith("error: ") and "has no run 'no-such-run'" in unknown.stderr


def check_feedback_is_folded_into_a_stored_run(url: str, tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suite")
    assert run(suite, url) == 1
    [run_id] = [row["run_id"] for row in rows(url, "SELECT run_id FROM runs")]
    feedback = write(tmp_path, "feedback.jsonl", """
        {"case_id": "a", "criterion": "tone", "score": 5, "note": "clear", "reviewer": "ann"}
        {"case_id": "a", "criterion": "tone", "score": 3, "reviewer": "bob"}
        {"case_id": "b", "criterion": "tone", "score": 1, "note": "rude", "reviewer": "ann"}
    """)
    done = run_cli("feedback", "add", "--store", url, feedback, "--scale", "likert5")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"2 human results from {feedback} folded into run {run_id} in {open_store(url).url}\n"
    again = run_cli("feedback", "add", "--store", url, feedback, "--scale", "likert5", "--run", run_id)
    assert again.returncode == 0, again.stderr  # the same reviews again replace themselves

    store = open_store(url)
    try:
        results = {result.case_id: result for result in store.read_run(run_id)}
    finally:
        store.close()
    human_a = results["a"].evaluator_results[-1]
    assert (human_a.name, human_a.type, human_a.score, human_a.verdict, human_a.reasoning) == (
        "human:tone", "human", 0.75, "partial", "ann: clear",
    )
    assert human_a.details == {"reviews": [
        {"reviewer": "ann", "score": 1.0, "raw_score": 5, "note": "clear"},
        {"reviewer": "bob", "score": 0.5, "raw_score": 3, "note": None},
    ]}
    assert (results["b"].evaluator_results[-1].score, results["b"].verdict) == (0.0, "fail")
    assert [e.name for e in results["c"].evaluator_results] == ["header", "total_judge"]

    report = cli_json("report", "latest", "--store", url, "--format", "json")
    assert report["evaluators"]["human:tone"]["mean_score"] == 0.375
    assert report["evaluators"]["human:tone"]["count"] == 2
    [summary] = rows(url, "SELECT summary FROM runs")
    summary = summary["summary"] if isinstance(summary["summary"], dict) else json.loads(summary["summary"])
    assert summary["evaluators"]["human:tone"]["count"] == 2 and summary["run_id"] == run_id

    stray = write(tmp_path, "stray.jsonl", '{"case_id": "zzz", "criterion": "tone", "score": 1}\n')
    refused = run_cli("feedback", "add", "--store", url, stray)
    assert refused.returncode == 2
    assert refused.stderr == f"error: run {run_id} in {open_store(url).url} has no case 'zzz'; nothing was changed\n"
    assert rows(url, "SELECT count(*) AS n FROM evaluator_results WHERE type = 'human'")[0]["n"] == 2


SCENARIOS = [
    check_a_run_is_stored_like_its_jsonl_file, check_a_killed_run_resumes_from_the_store,
    check_history_report_and_compare_read_the_store, check_feedback_is_folded_into_a_stored_run,
]


# -- SQLite -------------------------------------------------------------------------------------

@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.__name__.removeprefix("check_"))
def test_sqlite_store(scenario, sqlite_url, tmp_path):
    scenario(sqlite_url, tmp_path)


def test_a_suite_store_is_relative_to_the_suite_and_minus_o_overrides_it(tmp_path, monkeypatch):
    suite = make_suite(tmp_path / "suite", store_line="store: sqlite:///results/runs.db")
    (tmp_path / "suite" / "results").mkdir()
    monkeypatch.chdir(tmp_path)
    assert run(suite) == 1
    database = tmp_path / "suite" / "results" / "runs.db"
    assert rows(f"sqlite:///{database}", "SELECT count(*) AS n FROM case_results")[0]["n"] == 4
    assert not (tmp_path / "agenteval-results").exists()
    assert run(suite, output=str(tmp_path / "out.jsonl")) == 1
    assert len(read_jsonl(tmp_path / "out.jsonl")) == 4
    assert rows(f"sqlite:///{database}", "SELECT count(*) AS n FROM runs")[0]["n"] == 1


def test_store_and_output_together_or_a_bad_url_are_usage_errors(tmp_path, sqlite_url):
    suite = make_suite(tmp_path / "suite")
    with pytest.raises(UsageError, match="--store and -o are two destinations for the results; give one"):
        run(suite, sqlite_url, output=str(tmp_path / "x.jsonl"))
    with pytest.raises(StoreError, match=r"unknown store 'mysql://u@h/db': use sqlite:///FILE.db or postgresql://USER@HOST/DB"):
        run(suite, "mysql://u@h/db")
    with pytest.raises(StoreError, match="the folder .*nowhere does not exist"):
        run(suite, f"sqlite:///{tmp_path / 'nowhere' / 'runs.db'}")
    done = run_cli("run", suite, "--store", "sqlite://")
    assert done.returncode == 2
    assert done.stderr == "error: a sqlite store needs a file: sqlite:///runs.db (relative) or sqlite:////abs/path/runs.db\n"
    assert rows(sqlite_url, "SELECT 1 AS one") == [{"one": 1}]  # nothing above created it... until this connection did
    with pytest.raises(StoreError, match="--resume found no earlier run of 'invoices'"):
        run(suite, sqlite_url, resume=True)


def test_result_lines_carry_timestamp_input_and_agent_and_session(tmp_path):
    suite = make_suite(tmp_path / "suite")
    run(suite, output=str(tmp_path / "out.jsonl"))
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "out.jsonl")}
    assert (lines["a"]["input"], lines["a"]["agent_id"], lines["a"]["session_id"]) == ({"q": "invoice 1"}, "bot-1", "s-1")
    assert (lines["c"]["agent_id"], lines["c"]["session_id"]) == (None, None)
    stamp = lines["a"]["timestamp"]
    assert stamp.endswith("+00:00") and abs(time.time() - __import__("datetime").datetime.fromisoformat(stamp).timestamp()) < 120


def test_history_of_a_results_folder_reads_the_summaries(tmp_path, monkeypatch):
    suite = make_suite(tmp_path / "suite")
    monkeypatch.chdir(tmp_path)
    good = predictions(tmp_path, "good.jsonl", {case["id"]: case["expected"] for case in CASES})
    assert run(suite, predictions=good) == 0
    assert run(suite) == 1
    (tmp_path / "agenteval-results" / "broken.summary.json").write_text("{not json")
    history = json.loads(run_cli("history", "--format", "json", cwd=tmp_path).stdout)
    summaries = [
        json.loads(path.read_text())
        for path in sorted((tmp_path / "agenteval-results").glob("invoices-*.summary.json"), key=lambda path: path.stat().st_mtime)
    ]
    assert [r["run_id"] for r in history["runs"]] == [summary["run_id"] for summary in summaries]
    assert [r["pass_rate"] for r in history["runs"]] == [1.0, 0.5]
    assert history["runs"][1]["evaluators"]["header"] == {"type": "field_accuracy", "count": 4, "mean_score": 0.75, "pass_rate": 0.5}
    assert history["trends"]["invoices"]["fields"]["header"]["total"]["values"] == [1.0, 0.75]
    missing = run_cli("history", "--store", tmp_path / "nowhere")
    assert missing.returncode == 2 and "is not a folder of runs" in missing.stderr


def test_feedback_rewrites_a_results_file_and_its_summary(tmp_path):
    suite = make_suite(tmp_path / "suite")
    results = tmp_path / "out.jsonl"
    run(suite, output=str(results))
    before = results.read_bytes()
    feedback = write(tmp_path, "feedback.jsonl", """
        {"case_id": "d", "criterion": "helpful", "score": true, "reviewer": "ann", "note": "ok"}
        {"case_id": "d", "criterion": "tone", "score": 0.25}
    """)
    done = run_cli("feedback", "add", results, feedback)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"2 human results from {feedback} folded into {results}\n"
    lines = {line["case_id"]: line for line in read_jsonl(results)}
    assert [e["name"] for e in lines["d"]["evaluator_results"]] == ["header", "total_judge", "human:helpful", "human:tone"]
    assert lines["d"]["evaluator_results"][2] | {"duration_ms": 0} == {
        "name": "human:helpful", "type": "human", "score": 1.0, "verdict": "pass", "hits": [], "misses": [],
        "reasoning": "ann: ok", "details": {"reviews": [{"reviewer": "ann", "score": 1.0, "raw_score": True, "note": "ok"}]},
        "error": None, "duration_ms": 0, "criterion": {"name": "helpful"},
    }
    assert lines["d"]["verdict"] == "fail"  # human scores sit beside the automatic ones
    unchanged = [line for line in before.splitlines(keepends=True) if b'"case_id":"d"' not in line]
    assert all(line in results.read_bytes() for line in unchanged)
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert summary["evaluators"]["human:tone"]["mean_score"] == 0.25 and summary["run_id"] == lines["a"]["run_id"]

    folded_once = results.read_bytes()
    assert run_cli("feedback", "add", results, feedback).returncode == 0
    assert results.read_bytes() == folded_once

    bad = write(tmp_path, "bad.jsonl", """
        {"case_id": "a", "criterion": "tone", "score": 7}
        {"case_id": "a", "criterion": "", "score": 1}
        {"case_id": "a", "criterion": "tone", "score": 1, "reviewr": "x"}
    """)
    refused = run_cli("feedback", "add", results, bad)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"error: {bad}:1: score 7 is outside unit (0 to 1) (give --scale for another range)",
        f"{bad}:2: criterion must be a non-empty string, e.g. \"tone\"",
        f"{bad}:3: unknown key 'reviewr' (known: case_id, criterion, note, repetition, reviewer, score)",
    ]
    stray = write(tmp_path, "stray.jsonl", '{"case_id": "q", "criterion": "tone", "score": 1}\n')
    assert run_cli("feedback", "add", results, stray).stderr == f"error: {results} has no case 'q'; nothing was changed\n"
    assert results.read_bytes() == folded_once
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".")) == []  # no temporary file left

    with results.open("rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        locked = run_cli("feedback", "add", results, feedback)
    assert locked.returncode == 2 and "is being written by an agenteval run" in locked.stderr


def old_layout(url: str) -> None:
    """A database with the tables as they were before `case_results.expected` was added."""
    from agenteval.stores.tables import ADDED_COLUMNS, METADATA

    old = sa.MetaData()
    for table in METADATA.sorted_tables:
        columns = [column._copy() for column in table.columns if (table.name, column.name) not in ADDED_COLUMNS]
        foreign = [sa.ForeignKeyConstraint(fk.column_keys, [e.target_fullname for e in fk.elements]) for fk in table.foreign_key_constraints]
        sa.Table(table.name, old, *columns, *foreign)
    eng = engine(url)
    try:
        old.create_all(eng)
    finally:
        eng.dispose()


def test_a_store_made_before_expected_was_stored_gains_the_column_and_keeps_its_runs(tmp_path):
    suite = make_suite(tmp_path / "suite")
    current = tmp_path / "current.db"
    assert run(suite, f"sqlite:///{current}") == 1
    [run_id] = [row["run_id"] for row in rows(f"sqlite:///{current}", "SELECT run_id FROM runs")]
    older = tmp_path / "older.db"
    old_layout(f"sqlite:///{older}")
    import sqlite3

    with sqlite3.connect(older) as conn:  # the same run, as the old layout held it
        conn.execute("ATTACH DATABASE ? AS current", (str(current),))
        for table in ("runs", "case_results", "evaluator_results", "dataset_metrics"):
            names = ", ".join(row[1] for row in conn.execute(f"PRAGMA main.table_info({table})"))
            conn.execute(f"INSERT INTO main.{table} ({names}) SELECT {names} FROM current.{table}")
    url = f"sqlite:///{older}"
    assert "expected" not in {row["name"] for row in rows(url, "PRAGMA table_info(case_results)")}
    before = cli_json("report", run_id, "--store", url, "--format", "json")

    store = open_store(url)  # opening it adds the column; the old rows read as having no reference
    try:
        stored = {result.case_id: result for result in store.read_run(run_id)}
    finally:
        store.close()
    assert {(row["name"], row["type"]) for row in rows(url, "PRAGMA table_info(case_results)")} >= {("expected", "JSON_TEXT")}
    assert sorted(stored) == ["a", "b", "c", "d"] and all(result.expected is None for result in stored.values())
    assert stored["b"].output == {"total": 21, "name": "Globex"} and stored["b"].verdict == "fail"
    assert before["counts"] == cli_json("report", run_id, "--store", url, "--format", "json")["counts"] == {
        "total": 4, "passed": 2, "failed": 2, "errored": 0,
    }

    assert run(suite, url) == 1  # and a new run is written with its references
    new_id = rows(url, "SELECT run_id FROM runs WHERE run_id != :old", old=run_id)[0]["run_id"]
    store = open_store(url)
    try:
        again = {result.case_id: result.expected for result in store.read_run(new_id)}
    finally:
        store.close()
    assert again == {case["id"]: case["expected"] for case in CASES}
    html = run_cli("report", run_id, "--store", url, "--format", "html", "-o", tmp_path / "old.html")
    assert html.returncode == 1, html.stderr
