"""Hostile reviews: each one is refused with a reason and nothing is written; a damaged reviews
file is a file:line error for `report --agreement`, never a traceback."""

from __future__ import annotations

import json
import math

import pytest
from conftest import run_cli, write

from agenteval.stores.reviews import ReviewError, append_review, reviews_path


@pytest.mark.parametrize(("record", "reason"), [
    ({"case_id": "c1", "reviewer": "ana", "scores": {"tone": math.nan}}, "finite number"),
    ({"case_id": "c1", "reviewer": "ana", "scores": {"tone": 1e308}}, "finite number"),
    ({"case_id": "c1", "reviewer": "ana", "repetition": -1, "note": "x"}, "repetition"),
    ({"case_id": "c1", "reviewer": "ana", "verdicts": {"judge": "maybe"}}, "right"),
    ({"case_id": "c1", "reviewer": "ana", "note": "x" * 10_001}, "longer than"),
    ({"case_id": "c1", "reviewer": "ana", "password": "hunter2"}, "unknown key 'password'"),
    ({"case_id": "", "reviewer": "ana", "note": "x"}, "case_id"),
    ({"case_id": "c1", "reviewer": "ana"}, "a review marks"),
    (["not", "an", "object"], "JSON object"),
])
def test_a_hostile_review_is_refused_and_nothing_is_written(tmp_path, record, reason):
    path = tmp_path / "run.reviews.jsonl"
    with pytest.raises(ReviewError, match=reason):
        append_review(path, record)
    assert not path.exists()


def test_a_damaged_reviews_file_is_a_file_line_error(tmp_path):
    write(tmp_path, "suite.yaml", "name: s\nevaluators:\n  - {type: equals}\ncases:\n  - {id: c1, expected: a, output: a}\n")
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "run.jsonl").returncode == 0
    reviews = reviews_path(tmp_path / "run.jsonl")
    reviews.write_text('{"case_id": "c1", "reviewer": "ana", "note": "fine"}\n{"case_id": "c1", "reviewer": NaN}\n')
    done = run_cli("report", tmp_path / "run.jsonl", "--agreement")
    assert done.returncode == 2
    assert "run.reviews.jsonl:2: not a review" in done.stderr and "Traceback" not in done.stderr


def test_a_review_appended_to_a_file_without_a_final_newline_starts_a_line_of_its_own(tmp_path):
    """A reviews file saved by an editor without its last newline: the next review goes on a new
    line, and every review reads back (glued on, it made the whole file unreadable)."""
    from agenteval.stores.reviews import read_reviews

    path = tmp_path / "run.reviews.jsonl"
    path.write_text('{"case_id": "c1", "reviewer": "ana", "note": "first"}')
    append_review(path, {"case_id": "c2", "reviewer": "bo", "note": "second"})
    append_review(path, {"case_id": "c3", "reviewer": "bo", "note": "third"})
    assert [review["note"] for review in read_reviews(path)] == ["first", "second", "third"]
    assert path.read_text().count("\n") == 3 and path.read_text().endswith("\n")


@pytest.mark.parametrize("value", ["nan", "2", "-1.5", "inf"])
def test_a_min_agreement_outside_minus_one_to_one_is_refused(tmp_path, value):
    write(tmp_path, "suite.yaml", "name: s\nevaluators:\n  - {type: equals}\ncases:\n  - {id: c1, expected: a, output: a}\n")
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "run.jsonl").returncode == 0
    done = run_cli("report", tmp_path / "run.jsonl", "--agreement", "--min-agreement", value)
    assert done.returncode == 2 and "--min-agreement is a kappa between -1 and 1" in done.stderr


def test_a_store_keeps_a_hostile_note_as_given_and_a_damaged_review_row_is_a_one_line_error(tmp_path):
    pytest.importorskip("sqlalchemy")
    import json

    import sqlalchemy

    from agenteval.stores import open_store
    from agenteval.stores.reviews import store_review

    write(tmp_path, "suite.yaml", "name: s\nevaluators:\n  - {type: equals}\ncases:\n  - {id: c1, expected: a, output: a}\n")
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert run_cli("run", tmp_path / "suite.yaml", "--store", url).returncode == 0
    store = open_store(url)
    run_id = store.find_run("latest")
    note = "a\0b \ufffd <script>alert(1)</script> " + "x" * 9_000
    store_review(store, run_id, {"case_id": "c1", "reviewer": "ana", "note": note})
    with pytest.raises(ReviewError, match="finite number"):
        store_review(store, run_id, {"case_id": "c1", "reviewer": "ana", "scores": {"tone": math.inf}})
    store.close()
    exported = run_cli("feedback", "export", "latest", "--store", url)
    assert [json.loads(line)["note"] for line in exported.stdout.splitlines()] == [note]  # nothing else was written
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("UPDATE reviews SET review = '{\"case_id\": \"c1\", \"reviewer\": 7}'"))
    engine.dispose()
    for command in (("feedback", "export", "latest"), ("report", "latest", "--agreement"), ("report", "latest")):
        done = run_cli(*command, "--store", url)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip().splitlines()[-1].endswith("reviews row 1 is not a review: reviewer must be a non-empty string of at most 200 characters"), done.stderr


def test_a_results_file_given_twice_to_report_agreement_is_counted_once(tmp_path):
    """`report RUN RUN --agreement` (a file named twice, or a copy beside it): the same figures as
    the file once, with the warning `report` gives; counting its results twice made up a second
    reviewer and a perfect self-consistency over repeats that were never run."""
    import shutil

    from conftest import EXAMPLES

    shutil.copytree(EXAMPLES / "review" / "run", tmp_path / "run")
    results = tmp_path / "run" / "run.jsonl"
    once = run_cli("report", results, "--agreement", "--format", "json")
    assert once.returncode == 0, once.stderr
    for again in (results, tmp_path / "run" / ".." / "run" / "run.jsonl"):
        twice = run_cli("report", results, again, "--agreement", "--format", "json")
        assert twice.returncode == 0, twice.stderr
        assert twice.stdout == once.stdout
        assert "30 duplicate results skipped" in twice.stderr and "given twice" in twice.stderr, twice.stderr
    figures = json.loads(once.stdout)
    assert figures["reviews"] == 50 and all(entry["self_consistency"] is None for entry in figures["agreement"])
