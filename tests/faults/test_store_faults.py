"""SQL stores and Ray with someone else's data and a misbehaving server (E3, E4, E16, E18, E19, E26).

Stores give back what they were given: a run written to SQLite or to PostgreSQL (created with an
ICU linguistic collation) and read back equals the JSONL run, field by field, whatever the text
(NUL, U+FFFD, U+FFFF, any script) and however bare the JSON. A store URL's password never leaves.
A store or a Ray cluster that cannot be used exits 2 with one line, before anything runs.
Real parts only: a throwaway PostgreSQL server (tests/test_postgres_store.py), real SQLite files,
a real second process holding a lock, a real read-only mount, the real CLI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from conftest import read_jsonl, run_cli, stop_processes_of, write
from fault_suites import assert_no_traceback
from test_postgres_store import postgres_server  # noqa: F401  (the throwaway server, a session fixture)
from test_stores import rows

import agenteval
from agenteval.results import Summary, read_results
from agenteval.stores import open_store

ROUND_TRIP_SETTINGS = settings(
    max_examples=15, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],  # no slow shrinking
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

JUDGE = """
def echo(payload):
    return {"score": 1.0, "reasoning": payload["case_id"], "details": {"answer": payload["candidate_answer"]}}
"""


# -- the stores -----------------------------------------------------------------------------------

@pytest.fixture
def icu_url(postgres_server):  # noqa: F811
    """A fresh database whose default collation is ICU `en-US`, which sorts `a` before `B`."""
    name = f"icu_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(f"{postgres_server.replace('postgresql://', 'postgresql+psycopg://')}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(
            f"CREATE DATABASE \"{name}\" LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C' ENCODING 'UTF8' TEMPLATE template0"
        ))
    admin.dispose()
    url = f"{postgres_server}/{name}"
    assert [row["w"] for row in rows(url, "SELECT w FROM (VALUES ('B'), ('a')) AS t(w) ORDER BY w")] == ["a", "B"]
    return url


@pytest.fixture(params=["sqlite", "postgresql_icu"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return request.getfixturevalue("icu_url")


# -- Stores give back what they were given ------------------------------------------------------------

MARKED = st.sampled_from(["\x00", "\ufffd", "\uffff", "a", "B", "é", "ß", " ", "\r", "\n", "\u0301", "z", "Z", "😀"])
TEXT = st.text(alphabet=MARKED | st.characters(blacklist_categories=("Cs",)), max_size=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
CASES = st.lists(
    st.tuples(TEXT.filter(bool), JSON, JSON, JSON, TEXT), min_size=1, max_size=6, unique_by=lambda case: case[0],
)


def _comparable(result) -> dict:
    """A result as its fields, without what differs between two runs of the same cases."""
    data = dataclasses.asdict(result)
    for key in ("run_id", "duration_ms", "timestamp"):
        data.pop(key)
    for evaluator in data["evaluator_results"]:
        evaluator.pop("duration_ms")
    return json.loads(json.dumps(data))  # tuples as lists, as both files and stores hold them


def _suite_data(cases, suite_name: str, evaluator_name: str) -> dict:
    return {
        "name": suite_name,
        "evaluators": [{"name": evaluator_name, "type": "equals"}, {"name": "echo", "type": "python", "function": "judges:echo"}],
        "cases": [
            {"id": case_id, "input": given_input, "expected": expected, "output": answer,
             "metadata": {"agent_id": agent, "note": answer}, "tags": [agent] if agent else []}
            for case_id, given_input, expected, answer, agent in cases
        ],
    }


@given(cases=CASES, suite_tail=TEXT, evaluator_name=TEXT.filter(bool))
@ROUND_TRIP_SETTINGS
def test_a_stored_run_reads_back_like_its_jsonl_file_on_sqlite_and_postgresql(store_url, cases, suite_tail, evaluator_name):
    if evaluator_name == "echo":
        evaluator_name += "\x00"
    suite_name = f"s{uuid.uuid4().hex[:8]}{suite_tail}"
    data = _suite_data(cases, suite_name, evaluator_name)
    with tempfile.TemporaryDirectory() as folder:
        write(Path(folder), "judges.py", JUDGE)
        from_file = agenteval.run_suite(data, output=Path(folder) / "r.jsonl", base_dir=folder).summary
        from_store = agenteval.run_suite(data, store=store_url, base_dir=folder).summary
        written = sorted(read_results(Path(folder) / "r.jsonl"), key=lambda r: (r.case_id, r.repetition))
        store = open_store(store_url)
        try:
            run_id = store.find_run("latest", suite_name)
            read_back = sorted(store.read_run(run_id), key=lambda r: (r.case_id, r.repetition))
            assert [_comparable(r) for r in read_back] == [_comparable(r) for r in written]
            assert len(read_back) == len(cases) and all(len(r.evaluator_results) == 2 for r in read_back)
            assert store.summary(run_id)["resolved_suite"]["name"] == suite_name
            assert [run["suite"] for run in store.history_rows(suite_name, 1)] == [suite_name]
        finally:
            store.close()
        for results, summary in ((written, from_file), (read_back, from_store)):  # what `report` and `compare` count
            counted = Summary()
            for result in results:
                counted.add(result)
            recounted = json.loads(json.dumps(counted.to_dict()))
            assert recounted == json.loads(json.dumps({key: summary[key] for key in recounted}))
        assert from_store["counts"] == from_file["counts"]
        resumed = agenteval.run_suite(data, store=store_url, resume=True, base_dir=folder)
        try:
            assert (resumed.run_id, resumed.resumed_count, resumed.todo_count) == (run_id, len(cases), 0)
        finally:
            resumed.close()


# -- E3: a linguistic collation loses no evaluator result ---------------------------------------------

def _plain_suite(folder: Path, cases: list[dict], extra: str = "") -> Path:
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    return write(folder, "suite.yaml", f"name: plain\n{extra}evaluators: [{{type: equals}}]\ncases: cases.jsonl\n")


def test_a_postgresql_store_with_an_icu_collation_reads_back_every_evaluator_result(icu_url, tmp_path):
    ids = ["a", "B", "b", "A", "é", "E", "z", "Z"]
    suite = _plain_suite(tmp_path, [{"id": case_id, "expected": "x", "output": "x"} for case_id in ids])
    assert run_cli("run", suite, "--store", icu_url, "-q", cwd=tmp_path).returncode == 0
    done = run_cli("report", "latest", "--store", icu_url, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["evaluators"]["equals"]["count"] == len(ids)
    assert report["evaluators"]["equals"]["verdicts"]["pass"] == len(ids)
    store = open_store(icu_url)
    try:
        read = [(r.case_id, len(r.evaluator_results)) for r in store.read_run(store.find_run("latest"))]
    finally:
        store.close()
    assert read == [(case_id, 1) for case_id in sorted(ids)]  # code point order, each with its result


# -- E4: bare JSON numbers in SQLite ------------------------------------------------------------------

def test_bare_json_numbers_read_back_from_a_sqlite_store(tmp_path):
    write(tmp_path, "judges.py", 'def same(p):\n    return p["candidate_answer"] == p["reference_answer"]\n')
    cases = [{"id": "int", "input": 7, "expected": 42, "output": 42}, {"id": "float", "input": 1.0, "expected": 1.0, "output": 1.0},
             {"id": "big", "input": -0.0, "expected": 12345678901234567890, "output": 12345678901234567890}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    suite = write(tmp_path, "suite.yaml", 'name: e4\nevaluators: [{type: python, function: "judges:same"}]\ncases: cases.jsonl\n')
    assert run_cli("run", suite, "--store", "sqlite:///runs.db", "-q", cwd=tmp_path).returncode == 0
    assert run_cli("run", suite, "-o", "r.jsonl", "-q", cwd=tmp_path).returncode == 0
    done = run_cli("report", "latest", "--store", "sqlite:///runs.db", "--format", "json", cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 0 and json.loads(done.stdout)["counts"]["passed"] == 3
    resumed = run_cli("run", suite, "--store", "sqlite:///runs.db", "--resume", "-q", cwd=tmp_path)
    assert resumed.returncode == 0 and "3 cases, 3 passed" in resumed.stderr
    with sqlite3.connect(tmp_path / "runs.db") as db:
        stored = dict(db.execute("SELECT case_id, typeof(output) || ' ' || output FROM case_results").fetchall())
    assert stored == {"int": "text 42", "float": "text 1.0", "big": "text 12345678901234567890"}
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        read = {r.case_id: (r.input, r.output) for r in store.read_run(store.find_run("latest"))}
    finally:
        store.close()
    from_file = {row["case_id"]: (row["input"], row["output"]) for row in read_jsonl(tmp_path / "r.jsonl")}
    assert read == from_file == {"int": (7, 42), "float": (1.0, 1.0), "big": (-0.0, 12345678901234567890)}
    assert type(read["float"][1]) is float and type(read["int"][1]) is int


# -- E16: NUL in key columns --------------------------------------------------------------------------

def test_a_nul_in_a_case_id_evaluator_suite_and_criterion_is_kept_and_resume_gets_past_it(icu_url, tmp_path):
    cases = [{"id": f"c{i}", "expected": "x", "output": "x"} for i in range(99)] + [{"id": "bad\x00id", "expected": "x", "output": "y"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    suite = write(tmp_path, "suite.yaml", json.dumps({
        "name": "e16\x00suite", "evaluators": [{"name": "same\x00text", "type": "equals"}], "cases": "cases.jsonl",
    }))
    done = run_cli("run", suite, "--store", icu_url, "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # 99 passed, the NUL case failed: saved like any other
    assert rows(icu_url, "SELECT count(*) AS n FROM case_results")[0]["n"] == 100
    resumed = run_cli("run", suite, "--store", icu_url, "-q", "--resume", cwd=tmp_path)
    assert resumed.returncode == 1 and "100 cases, 99 passed, 1 failed" in resumed.stderr, resumed.stderr
    (tmp_path / "feedback.jsonl").write_text(json.dumps({"case_id": "bad\x00id", "criterion": "to\x00ne", "score": 1}) + "\n")
    folded = run_cli("feedback", "add", "--store", icu_url, "feedback.jsonl", cwd=tmp_path)
    assert_no_traceback(folded)
    assert folded.returncode == 0, folded.stderr
    store = open_store(icu_url)
    try:
        [bad] = [r for r in store.read_run(store.find_run("latest", "e16\x00suite")) if r.case_id == "bad\x00id"]
    finally:
        store.close()
    assert (bad.suite, bad.verdict, [e.name for e in bad.evaluator_results]) == ("e16\x00suite", "fail", ["same\x00text", "human:to\x00ne"])
    report = json.loads(run_cli("report", "latest", "--store", icu_url, "--format", "json", cwd=tmp_path).stdout)
    assert report["evaluators"]["human:to\x00ne"]["count"] == 1


# -- E18: a store URL's password never leaves -----------------------------------------------------------

def test_a_store_password_never_reaches_summaries_runs_reports_or_messages(postgres_server, tmp_path):  # noqa: F811
    password = f"S3cret-{uuid.uuid4().hex[:8]}"
    database = f"pw_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(f"{postgres_server.replace('postgresql://', 'postgresql+psycopg://')}/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{database}"'))
    admin.dispose()
    with_password = postgres_server.replace("agenteval@", f"agenteval:{password}@") + f"/{database}"
    suite = _plain_suite(tmp_path, [{"id": "c1", "expected": "x", "output": "x"}], extra=f'store: "{with_password}"\n')
    outputs = [run_cli("run", suite, "-o", "r.jsonl", "-q", cwd=tmp_path), run_cli("run", suite, cwd=tmp_path),
               run_cli("report", "latest", "--store", with_password, "--format", "json", cwd=tmp_path),
               run_cli("history", "--store", with_password, "--format", "json", cwd=tmp_path),
               run_cli("run", suite, "--store", with_password.replace(f"/{database}", "/no_such_db"), cwd=tmp_path)]
    assert [done.returncode for done in outputs] == [0, 0, 0, 0, 2]
    assert outputs[4].stderr.startswith("error: cannot open store postgresql://agenteval:***@")
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["resolved_suite"]["store"] == with_password.replace(password, "***")
    stored = rows(with_password, "SELECT config::text AS config, summary::text AS summary FROM runs")
    assert len(stored) == 1 and json.loads(stored[0]["summary"])["results_store"].startswith("postgresql://agenteval:***@")
    seen = [done.stdout + done.stderr for done in outputs] + [(tmp_path / "r.summary.json").read_text(), stored[0]["config"], stored[0]["summary"]]
    assert all(password not in text for text in seen)
    # `${NAME}` in `store:` is read from the environment; the suite (and so every summary) keeps the reference
    suite = _plain_suite(tmp_path, [{"id": "c1", "expected": "x", "output": "x"}], extra=f'store: "{with_password.replace(password, "${E18_PW}")}"\n')
    env = {**os.environ, "E18_PW": password}
    done = subprocess.run([sys.executable, "-m", "agenteval", "run", str(suite), "-q"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and password not in done.stderr, done.stderr
    configs = [json.loads(row["config"])["store"] for row in rows(with_password, "SELECT config::text AS config FROM runs ORDER BY started_at")]
    assert configs[-1] == with_password.replace(password, "${E18_PW}")
    unset = run_cli("run", suite, "-q", cwd=tmp_path)  # E18_PW not set: one line, nothing runs
    assert unset.returncode == 2 and "E18_PW is not set" in unset.stderr and len(unset.stderr.splitlines()) == 1


# -- E19: unusable stores exit 2 with one line, before anything runs -------------------------------------

def test_a_sqlite_store_locked_past_the_busy_timeout_exits_2_with_one_line(tmp_path):
    suite = _plain_suite(tmp_path, [{"id": "c1", "expected": "x", "output": "x"}])
    assert run_cli("run", suite, "--store", "sqlite:///runs.db", "-q", cwd=tmp_path).returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\ndb = sqlite3.connect('runs.db', isolation_level=None)\n"
         "db.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(60)"],
        cwd=tmp_path, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        # the real CLI, with the busy timeout (30 s) shortened to 0.5 s so the test need not wait
        done = subprocess.run(
            [sys.executable, "-c", "import sys; import agenteval.stores.sql as sql; sql.SQLITE_BUSY_MS = 500\n"
             "from agenteval.cli import main; sys.argv[0] = 'agenteval'; main()", "run", str(suite), "--store", "sqlite:///runs.db", "-q"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )
        elapsed = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    from fault_suites import assert_one_line_error

    line = assert_one_line_error(done, 2, "cannot start a run in sqlite:///", "database is locked", "0.5 s")
    assert line.startswith("error: ") and elapsed < 30
    assert rows(f"sqlite:///{tmp_path / 'runs.db'}", "SELECT count(*) AS n FROM runs")[0]["n"] == 1


def test_a_damaged_sqlite_file_exits_2_with_one_line_for_every_command(tmp_path):
    from fault_suites import assert_one_line_error

    suite = _plain_suite(tmp_path, [{"id": f"c{i}", "expected": "x" * 200, "output": "x" * 200} for i in range(100)])
    assert run_cli("run", suite, "--store", "sqlite:///runs.db", "-q", cwd=tmp_path).returncode == 0
    with open(tmp_path / "runs.db", "r+b") as damaged:
        damaged.seek(4096)  # the second page from its header on: its b-tree structure, not just text in it
        damaged.write(b"\xff" * 3000)
    for command in (["history"], ["report", "latest"], ["compare", "latest", "latest"], ["run", str(suite), "-q", "--resume"]):
        done = run_cli(*command, "--store", "sqlite:///runs.db", cwd=tmp_path)
        assert_one_line_error(done, 2, "sqlite:///", "database disk image is malformed")


@pytest.mark.parametrize("url", ["postgresql://u:p4ss@[::1/db", "postgresql://u:p4ss@host:port/db", "nosuch://u:p4ss@h/db"])
def test_a_malformed_store_url_exits_2_with_one_line_and_no_password(tmp_path, url):
    from fault_suites import assert_one_line_error

    suite = _plain_suite(tmp_path, [{"id": "c1", "expected": "x", "output": "x"}])
    for done in (run_cli("run", suite, "--store", url, cwd=tmp_path), run_cli("history", "--store", url, cwd=tmp_path)):
        line = assert_one_line_error(done, 2, "u:***@")
        assert "p4ss" not in line
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cases.jsonl", "suite.yaml"]


# -- E19: Ray addresses that lead nowhere -------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_ray_address_that_leads_nowhere_exits_2_with_one_line_and_writes_nothing(tmp_path):
    pytest.importorskip("ray", reason="Ray is in the dev extra; install it with pip install -e '.[dev]'")
    from fault_suites import assert_one_line_error

    suite = _plain_suite(tmp_path, [{"id": "c1", "expected": "x", "output": "x"}])
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    expected = {
        "garbage": "--ray-address takes auto, HOST:PORT",
        "http://127.0.0.1:8265": "not a URL",
        "auto": "no Ray cluster is running on this machine",
        f"127.0.0.1:{port}": f"no Ray cluster answers at 127.0.0.1:{port}",
        f"ray://127.0.0.1:{port}": f"no Ray cluster answers at 127.0.0.1:{port}",
    }
    for address, phrase in expected.items():
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "agenteval", "run", str(suite), "--executor", "ray", "--ray-address", address, "-o", "r.jsonl", "-q"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )
        assert_one_line_error(done, 2, phrase)
        assert time.monotonic() - started < 60
        assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "r.summary.json").exists()


# -- E26: read-only media ------------------------------------------------------------------------------------

def test_history_and_report_read_a_sqlite_store_on_read_only_media(tmp_path):
    suite = _plain_suite(tmp_path, [{"id": "c1", "expected": "x", "output": "x"}, {"id": "c2", "expected": "x", "output": "y"}])
    assert run_cli("run", suite, "--store", "sqlite:///runs.db", "-q", cwd=tmp_path).returncode == 1
    media = tmp_path / "ro"
    media.mkdir()
    agenteval_cli = f"{sys.executable} -m agenteval"
    script = (
        f"set -e; mount -t tmpfs -o size=4m tmpfs {media}; cp {tmp_path / 'runs.db'} {media}/; mount -o remount,ro {media}; "
        f"{agenteval_cli} history --store sqlite:///{media}/runs.db --format json > {tmp_path}/history.json; "
        f"{agenteval_cli} report latest --store sqlite:///{media}/runs.db --format json > {tmp_path}/report.json || test $? = 1; "
        f"{agenteval_cli} run {suite} --store sqlite:///{media}/runs.db -q 2> {tmp_path}/run.err || echo $? > {tmp_path}/run.code; "
        f"ls -a {media} > {tmp_path}/listing"
    )
    prefix = [] if os.geteuid() == 0 else ["unshare", "-rm"]  # a private mount namespace, as root or not
    done = subprocess.run([*prefix, "unshare", "-m", "sh", "-c", script] if not prefix else [*prefix, "sh", "-c", script],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    history = json.loads((tmp_path / "history.json").read_text())
    assert [(run["total"], run["passed"]) for run in history["runs"]] == [(2, 1)]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["counts"]["total"] == 2 and report["evaluators"]["equals"]["count"] == 2
    assert (tmp_path / "run.code").read_text().strip() == "2"  # writing there: one line, exit 2
    [line] = (tmp_path / "run.err").read_text().splitlines()
    assert "the store is read-only here" in line
    assert (tmp_path / "listing").read_text().split() == [".", "..", "runs.db"]


def test_a_ray_cluster_that_asks_for_a_token_is_named_in_one_line_and_a_token_lets_the_run_in(tmp_path):
    pytest.importorskip("ray", reason="Ray is in the dev extra; install it with pip install -e '.[dev]'")
    from fault_suites import assert_one_line_error

    suite = _plain_suite(tmp_path, [{"id": f"c{i}", "expected": "x", "output": "x"} for i in range(3)])
    token = f"agenteval-{uuid.uuid4().hex}"
    homes = {name: tmp_path / name for name in ("head_home", "driver_home")}
    for home in homes.values():
        home.mkdir()
    ray_tmp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: Ray's socket paths must fit 107 bytes
    port = _free_port()
    base_env = {key: value for key, value in os.environ.items() if not key.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    head = subprocess.run(
        [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
         "--node-ip-address=127.0.0.1", f"--temp-dir={ray_tmp}"],
        env={**base_env, "HOME": str(homes["head_home"]), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token},
        capture_output=True, text=True, timeout=120, start_new_session=True,
    )
    try:
        assert head.returncode == 0, head.stderr[-2000:]
        driver = {**base_env, "HOME": str(homes["driver_home"])}  # no token anywhere: someone else's cluster
        command = [sys.executable, "-m", "agenteval", "run", str(suite), "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", "-o", "r.jsonl", "-q"]
        refused = subprocess.run(command, cwd=tmp_path, env=driver, capture_output=True, text=True, timeout=180)
        assert_one_line_error(refused, 2, "asks for a token", "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN")
        assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "r.summary.json").exists()
        let_in = subprocess.run(command, cwd=tmp_path, env={**driver, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token},
                                capture_output=True, text=True, timeout=300)
        assert let_in.returncode == 0, let_in.stderr[-2000:]
        assert sorted(row["case_id"] for row in read_jsonl(tmp_path / "r.jsonl")) == ["c0", "c1", "c2"]
    finally:
        stop_processes_of(ray_tmp)
