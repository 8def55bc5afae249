"""The PostgreSQL store against a real server: a throwaway cluster in a temp dir, started once.

The server binaries come from the distribution's `postgresql` package (`.ci/run` installs it).
Without them the module is skipped locally, and fails in CI (CI=true), where they must exist.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from conftest import run_cli
from test_stores import CASES, SCENARIOS, make_suite, predictions, rows, run

from agenteval.execute import RunOptions, execute
from agenteval.stores import open_store


def _server_binaries() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin holding initdb and pg_ctl."""
    found = sorted(
        (path.parent for path in Path("/usr/lib/postgresql").glob("*/bin/initdb") if (path.parent / "pg_ctl").exists()),
        key=lambda folder: int(folder.parent.name) if folder.parent.name.isdigit() else 0,
    )
    return found[-1] if found else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_server_user(folder: Path) -> list[str]:
    """initdb refuses to run as root: as root, run the server as the `postgres` user (or nobody)."""
    if os.geteuid() != 0:
        return []
    for name in ("postgres", "nobody"):
        try:
            user = pwd.getpwnam(name)
        except KeyError:
            continue
        os.chown(folder, user.pw_uid, user.pw_gid)
        return ["runuser", "-u", name, "--"]
    pytest.fail("running as root, and neither a `postgres` nor a `nobody` user exists to run the server")


@pytest.fixture(scope="session")
def postgres_server():
    binaries = _server_binaries()
    if binaries is None:
        message = "PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin; apt-get install postgresql"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: .ci/run installs them, so this is an error)")
        pytest.skip(message)
    folder = Path(tempfile.mkdtemp(prefix="agenteval-pg-"))
    prefix = _as_server_user(folder)
    port = _free_port()
    data = folder / "data"
    subprocess.run(
        [*prefix, str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "agenteval", "-E", "UTF8", "--no-sync"],
        check=True, capture_output=True, timeout=120,
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    started = subprocess.run(
        [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "server.log"), "-w", "-t", "60", "start"],
        capture_output=True, text=True, timeout=90,
    )
    if started.returncode != 0:
        log = (folder / "server.log").read_text() if (folder / "server.log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"the PostgreSQL server did not start: {started.stderr}{log[-2000:]}")
    try:
        yield f"postgresql://agenteval@127.0.0.1:{port}"
    finally:
        subprocess.run([*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server):
    """A fresh database on the shared server, for one test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(f"{postgres_server.replace('postgresql://', 'postgresql+psycopg://')}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"{postgres_server}/{name}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.__name__.removeprefix("check_"))
def test_postgres_store(scenario, pg_url, tmp_path):
    scenario(pg_url, tmp_path)


def test_the_documented_table_layout_is_created(pg_url, tmp_path):
    open_store(pg_url).close()
    columns = rows(pg_url, """
        SELECT table_name, column_name, data_type FROM information_schema.columns
        WHERE table_schema = 'public' ORDER BY table_name, ordinal_position
    """)
    layout: dict[str, list[str]] = {}
    for column in columns:
        layout.setdefault(column["table_name"], []).append(column["column_name"])
    assert layout == {
        "runs": ["run_id", "suite", "started_at", "finished_at", "agenteval_version", "interrupted", "total", "passed",
                 "failed", "errored", "pass_rate", "mean_score", "config", "summary", "fingerprint"],
        "case_results": ["run_id", "case_id", "cell", "repetition", "timestamp", "score", "verdict", "error", "duration_ms",
                         "agent_id", "session_id", "tags", "metadata", "input", "output", "usage", "expected", "trace_id"],
        "evaluator_results": ["run_id", "case_id", "cell", "repetition", "name", "position", "type", "score", "verdict", "error",
                              "duration_ms", "reasoning", "hits", "misses", "details", "criterion"],
        "dataset_metrics": ["run_id", "evaluator", "kind", "key", "metric", "value"],
        "reviews": ["id", "run_id", "case_id", "cell", "repetition", "reviewer", "time", "review"],
    }
    types = {(c["table_name"], c["column_name"]): c["data_type"] for c in columns}
    assert types[("runs", "started_at")] == "timestamp with time zone"
    assert types[("case_results", "input")] == "json"


def test_a_database_made_before_expected_was_stored_gains_the_column(pg_url, tmp_path):
    from test_stores import old_layout

    old_layout(pg_url)
    query = "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'case_results' AND column_name = 'expected'"
    assert rows(pg_url, query) == []
    suite = make_suite(tmp_path / "suite")
    assert run(suite, pg_url) == 1
    assert rows(pg_url, query) == [{"column_name": "expected", "data_type": "json"}]
    stored = rows(pg_url, "SELECT case_id, expected FROM case_results ORDER BY case_id")
    assert [(row["case_id"], row["expected"]) for row in stored] == [(case["id"], case["expected"]) for case in CASES]


def test_nul_characters_and_nan_do_not_stop_a_run(pg_url, tmp_path):
    suite = make_suite(tmp_path / "suite")
    answers = {case["id"]: case["expected"] for case in CASES}
    answers["a"] = {"total": 10, "name": "Acme\u0000Corp", "ratio": float("nan")}
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(
        json.dumps({"id": case_id, "output": output}) + "\n" for case_id, output in answers.items()
    ))
    assert execute(RunOptions(suite=suite, store=pg_url, predictions=preds, quiet=True)) == 1
    [stored] = rows(pg_url, "SELECT output::text AS output, verdict FROM case_results WHERE case_id = 'a'")
    assert stored["verdict"] == "fail"
    assert json.loads(stored["output"]) == {"total": 10, "name": "Acme\ufffdCorp", "ratio": None}


def test_two_shards_write_one_database_at_once(pg_url, tmp_path):
    suite = make_suite(tmp_path / "suite")
    codes: dict[str, int] = {}

    def shard(index: int) -> None:
        codes[f"{index}/2"] = run_cli("run", suite, "--store", pg_url, "--shard", f"{index}/2", "-q").returncode

    threads = [threading.Thread(target=shard, args=(index,)) for index in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert codes == {"1/2": 0, "2/2": 1}  # shard 1 runs a and c (both pass), shard 2 b and d
    runs = rows(pg_url, "SELECT run_id, total FROM runs ORDER BY run_id")
    assert len(runs) == 2 and sorted(run["total"] for run in runs) == [2, 2]
    assert sorted(row["case_id"] for row in rows(pg_url, "SELECT case_id FROM case_results")) == ["a", "b", "c", "d"]


def test_an_unreachable_server_is_one_line_and_nothing_runs(tmp_path):
    suite = make_suite(tmp_path / "suite")
    port = _free_port()
    done = run_cli("run", suite, "--store", f"postgresql://someone:secret@127.0.0.1:{port}/db")
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: cannot open store postgresql://someone:***@127.0.0.1:{port}/db: ")
    assert "secret" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "agenteval-results").exists()


def test_predictions_keep_a_stored_run_readable_by_other_commands(pg_url, tmp_path):
    """A run saved in PostgreSQL serves as the answers of a new run (`report --format json` of it, re-scored)."""
    suite = make_suite(tmp_path / "suite")
    good = predictions(tmp_path, "good.jsonl", {case["id"]: case["expected"] for case in CASES})
    assert execute(RunOptions(suite=suite, store=pg_url, predictions=good, quiet=True)) == 0
    store = open_store(pg_url)
    try:
        run_id = store.find_run("latest", "invoices")
        assert [(result.case_id, result.output) for result in store.read_run(run_id)] == [
            (case["id"], case["expected"]) for case in CASES
        ]
    finally:
        store.close()


def test_the_viewer_follows_a_run_being_written_and_keeps_each_reviewers_review(pg_url, tmp_path):
    import sys
    import time

    from conftest import write
    from test_view_live import GATED_FROM, LIVE_CASES, SLOW_TARGET

    from agenteval.view.runs import Runs

    write(tmp_path, "slow.py", SLOW_TARGET)
    cases = "".join(f"  - {{id: c{i:02d}, input: {{n: {i}}}}}\n" for i in range(LIVE_CASES))
    write(tmp_path, "suite.yaml", "name: live-pg\ntarget: {type: command, command: [python, slow.py], timeout: 90}\n"
          "evaluators:\n  - {name: says, type: contains, reference: answer}\ncases:\n" + cases)
    writer = subprocess.Popen([sys.executable, "-m", "agenteval", "run", "suite.yaml", "--store", pg_url, "--workers", "1", "-q"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    engine = sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://"))
    store = None
    try:
        deadline = time.monotonic() + 60
        saved = 0
        while saved < GATED_FROM and time.monotonic() < deadline:
            time.sleep(0.1)
            with engine.connect() as conn:
                saved = conn.execute(sa.text("SELECT count(*) FROM case_results")).scalar() if sa.inspect(conn).has_table("case_results") else 0
        assert saved == GATED_FROM
        store = open_store(pg_url)
        runs = Runs([], store=store)
        [run] = runs.all()
        runs.get(run.key)
        assert len(run.index) == GATED_FROM and run.summary() is None
        (tmp_path / "go").write_text("")
        deadline = time.monotonic() + 60
        while (run.summary() is None or len(run.index) < LIVE_CASES) and time.monotonic() < deadline:
            time.sleep(0.3)
            runs.get(run.key)
        assert len(run.index) == LIVE_CASES and run.summary()["counts"]["failed"] == LIVE_CASES // 4
        assert sorted(run.index.case_ids) == [f"c{i:02d}" for i in range(LIVE_CASES)]
        assert writer.wait(timeout=60) == 1
        for reviewer, mark in (("ana", "wrong"), ("bob", "right")):
            run.save_review({"case_id": "c00", "reviewer": reviewer, "verdicts": {"says": mark}, "judged": {"says": "fail"}})
        reviews, problem = run.reviews()
        assert problem is None and sorted((r["reviewer"], r["verdicts"]["says"]) for r in reviews) == [("ana", "wrong"), ("bob", "right")]
    finally:
        (tmp_path / "go").write_text("")
        if writer.poll() is None:
            writer.kill()
        writer.communicate()
        engine.dispose()
        if store is not None:
            store.close()
    exported = run_cli("feedback", "export", "latest", "--store", pg_url)
    assert sorted(json.loads(line)["reviewer"] for line in exported.stdout.splitlines()) == ["ana", "bob"]
