"""Smoke runs: `--first N` and `--sample N` (seeded, stratified by tag), decided while the cases
are read, and said in the summary."""

from __future__ import annotations

import json

import pytest

from agenteval.suite.loader import load_suite
from agenteval.suite.selection import Selection

from conftest import read_jsonl, run_cli, write


def suite_of(tmp_path, count=200, tags=lambda i: ["billing" if i % 4 == 0 else "shipping"]):
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i:03d}", "output": "ok" if i % 5 else "bad", "tags": tags(i)}) + "\n" for i in range(count)))
    return write(tmp_path, "suite.yaml", """
        name: smoke
        evaluators: [{type: equals, reference: ok}]
        cases: cases.jsonl
    """)


def chosen(suite, selection):
    loaded = load_suite(suite, selection)
    return [case.id for case in loaded.iter_cases()], loaded


def test_first_takes_the_first_cases_in_file_order_after_the_filters(tmp_path):
    suite = suite_of(tmp_path)
    ids, loaded = chosen(suite, Selection(first=5))
    assert ids == ["c000", "c001", "c002", "c003", "c004"] and loaded.index.sampled_from == 200
    ids, loaded = chosen(suite, Selection(tags=("billing",), first=3))
    assert ids == ["c000", "c004", "c008"] and loaded.index.sampled_from == 50
    assert len(loaded.selected) == 3 and "c004" in loaded.selected and "c001" not in loaded.selected


def test_a_sample_is_the_same_on_every_run_and_another_with_another_seed(tmp_path):
    suite = suite_of(tmp_path)
    first, _ = chosen(suite, Selection(sample=20))
    again, loaded = chosen(suite, Selection(sample=20))
    other, _ = chosen(suite, Selection(sample=20, seed=7))
    assert first == again and len(first) == 20 and first != other
    assert first == sorted(first)  # in file order
    assert set(loaded.selected & set(first)) == set(first) and not loaded.selected & {"c999"}


def test_a_sample_does_not_depend_on_the_order_of_the_file(tmp_path):
    suite = suite_of(tmp_path)
    forward, _ = chosen(suite, Selection(sample=15, seed=3))
    lines = (tmp_path / "cases.jsonl").read_text().splitlines()
    (tmp_path / "cases.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    backward, _ = chosen(suite, Selection(sample=15, seed=3))
    assert sorted(forward) == sorted(backward)


@pytest.mark.parametrize("size, billing", [(20, 5), (10, 3), (4, 1), (1, 0)])
def test_a_sample_keeps_each_tags_share(tmp_path, size, billing):
    suite = suite_of(tmp_path)  # a quarter of the cases are `billing`
    ids, _ = chosen(suite, Selection(sample=size))
    assert len(ids) == size
    assert sum(int(case_id[1:]) % 4 == 0 for case_id in ids) == billing  # largest remainders; a tie goes to the first stratum


def test_a_sample_as_large_as_the_cases_takes_them_all(tmp_path):
    suite = suite_of(tmp_path, count=12)
    ids, loaded = chosen(suite, Selection(sample=50))
    assert len(ids) == 12 and loaded.index.sampled_from == 12


def test_a_smoke_run_says_so_in_its_summary_and_reports(tmp_path):
    suite = suite_of(tmp_path)
    done = run_cli("run", suite, "--sample", "20", "--sample-seed", "4", "-o", tmp_path / "r.jsonl", "-q",
                   "--markdown", tmp_path / "r.md", "--html", tmp_path / "r.html")
    assert done.returncode == 1, done.stderr
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    assert summary["smoke"] == {"sample": 20, "seed": 4, "of": 200} and summary["counts"]["total"] == 20
    assert done.stderr.rstrip().endswith("(a sample of 20 of 200 cases, seed 4)")
    assert "(a sample of 20 of 200 cases, seed 4)" in (tmp_path / "r.md").read_text()
    assert "a sample of 20 of 200 cases, seed 4" in (tmp_path / "r.html").read_text()
    again = run_cli("run", suite, "--sample", "20", "--sample-seed", "4", "-o", tmp_path / "r2.jsonl", "-q")
    assert sorted(line["case_id"] for line in read_jsonl(tmp_path / "r.jsonl")) == sorted(line["case_id"] for line in read_jsonl(tmp_path / "r2.jsonl"))


@pytest.mark.parametrize("options, message", [
    (["--first", "0"], "--first must be at least 1, got 0"),
    (["--sample", "-2"], "--sample must be at least 1, got -2"),
    (["--first", "2", "--sample", "2"], "--first takes the first cases and --sample draws some; give one"),
    (["--sample-seed", "3"], "--sample-seed goes with --sample"),
])
def test_smoke_options_that_do_not_fit_are_refused(tmp_path, options, message):
    done = run_cli("run", suite_of(tmp_path, count=5), *options, "-q")
    assert done.returncode == 2 and done.stderr == f"error: {message}\n"


def test_resuming_with_another_sample_is_refused(tmp_path):
    suite = suite_of(tmp_path, count=30)
    results = tmp_path / "r.jsonl"
    assert run_cli("run", suite, "--sample", "5", "-o", results, "-q").returncode == 1
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:2]) + "\n")  # as if interrupted after two cases
    done = run_cli("run", suite, "--sample", "5", "--sample-seed", "9", "-o", results, "--resume", "-q")
    assert done.returncode == 2 and "--sample-seed" in done.stderr


def test_filters_naming_one_id_each_match_as_every_glob_does():
    """Filters that name one id each (pytest's `-k` hands one per selected case, a star written
    `[*]`) are looked up, not matched one by one: the same cases as fnmatch picks, on a grid of
    globs and ids made of the characters globs treat specially."""
    import fnmatch
    import random

    rng = random.Random(7)
    alphabet = "ab*?[]!-"
    for _ in range(3000):
        globs = tuple("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(1, 4)))
        selection = Selection(filters=globs)
        for _ in range(10):
            case_id = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4)))
            assert selection.matches(case_id, []) == any(fnmatch.fnmatchcase(case_id, glob) for glob in globs), (globs, case_id)
    escaped = Selection(filters=("HumanEval/[*]0", "c[[]1]"))
    assert escaped.matches("HumanEval/*0", []) and escaped.matches("c[1]", []) and not escaped.matches("HumanEval/10", [])
