"""Reviews kept beside a run: `report --agreement`, its gate, export, and cases written from reviews.

A real run of a small suite (recorded answers, two evaluators) through the CLI; reviews appended
through the reviews store as the viewer does; the figures checked against scikit-learn.
"""

from __future__ import annotations

import json

import pytest
from conftest import read_jsonl, run_cli, write

from agenteval.stores.reviews import append_review, read_reviews, reviews_path

metrics = pytest.importorskip("sklearn.metrics")
CASES = 30


def _run(folder):
    cases = "".join(
        f"  - {{id: c{i}, input: {{q: 'question {i}'}}, expected: 'answer {i}', output: '{'answer' if i % 3 else 'wrong'} {i}', tags: [t{i % 2}]}}\n"
        for i in range(CASES)
    )
    write(folder, "suite.yaml", "name: reviewed\nevaluators:\n  - {name: same, type: equals}\n  - {name: says, type: contains, reference: answer}\ncases:\n" + cases)
    done = run_cli("run", folder / "suite.yaml", "-o", folder / "run.jsonl")
    assert done.returncode == 1, done.stdout + done.stderr
    return folder / "run.jsonl"


def _review_all(results, wrong_every: int = 4):
    """The `same` evaluator marked wrong on every `wrong_every`-th case; `says` always right."""
    judge, human = [], []
    for line in read_jsonl(results):
        number = int(line["case_id"][1:])
        verdict = next(e["verdict"] for e in line["evaluator_results"] if e["name"] == "same")
        mark = "wrong" if number % wrong_every == 0 else "right"
        append_review(reviews_path(results), {
            "case_id": line["case_id"], "reviewer": "ana", "verdicts": {"same": mark, "says": "right"},
            "judged": {"same": verdict}, "note": f"looked at {line['case_id']}",
        })
        judge.append(verdict)
        human.append(verdict if mark == "right" else ("fail" if verdict == "pass" else "pass"))
    return judge, human


def test_report_agreement_gives_cohens_kappa_and_the_confusion_table(tmp_path):
    results = _run(tmp_path)
    judge, human = _review_all(results)
    done = run_cli("report", results, "--agreement", "--json")
    assert done.returncode == 0, done.stderr
    found = {entry["name"]: entry for entry in json.loads(done.stdout)["agreement"]}
    same = found["same"]
    assert same["cases"] == CASES and not same["small_sample"]
    assert same["kappa"] == pytest.approx(metrics.cohen_kappa_score(judge, human))
    assert same["agreement"] == pytest.approx(sum(j == h for j, h in zip(judge, human)) / CASES)
    table = [[sum(j == a and h == b for j, h in zip(judge, human)) for b in ("fail", "pass")] for a in ("fail", "pass")]
    assert same["confusion"] == table
    assert found["says"]["agreement"] == 1.0
    text = run_cli("report", results, "--agreement")
    assert f"same: agrees on {same['agreement']:.0%} of 30 reviewed cases" in text.stdout
    assert "judge \\ people" in text.stdout


def test_min_agreement_fails_naming_the_evaluator_that_agrees_less(tmp_path):
    results = _run(tmp_path)
    _review_all(results)
    kappa = json.loads(run_cli("report", results, "--agreement", "--json").stdout)["agreement"][0]["kappa"]
    assert 0 < kappa < 0.95
    gated = run_cli("report", results, "--agreement", "--min-agreement", "0.95")
    assert gated.returncode == 1
    assert f"same: kappa {kappa:.2f} < 0.95" in gated.stderr and "says" not in gated.stderr
    assert run_cli("report", results, "--agreement", "--min-agreement", f"{kappa - 0.01:.3f}").returncode == 0


def test_too_few_reviews_say_so_and_fail_the_gate(tmp_path):
    results = _run(tmp_path)
    append_review(reviews_path(results), {"case_id": "c1", "reviewer": "ana", "verdicts": {"same": "right"}, "judged": {"same": "pass"}})
    done = run_cli("report", results, "--agreement", "--min-agreement", "0.2")
    assert done.returncode == 1
    assert "too few for a kappa" in done.stdout
    assert "only 1 reviewed case (20 needed" in done.stderr


def test_a_reviewers_later_review_replaces_their_earlier_one_and_others_stay(tmp_path):
    results = _run(tmp_path)
    path = reviews_path(results)
    append_review(path, {"case_id": "c1", "reviewer": "ana", "verdicts": {"same": "right"}})
    append_review(path, {"case_id": "c1", "reviewer": "bo", "verdicts": {"same": "wrong"}})
    append_review(path, {"case_id": "c1", "reviewer": "ana", "verdicts": {"same": "wrong"}, "note": "changed my mind"})
    kept = read_reviews(path)
    assert sorted((r["reviewer"], r["verdicts"]["same"]) for r in kept) == [("ana", "wrong"), ("bo", "wrong")]
    exported = run_cli("feedback", "export", results)
    assert [json.loads(line)["reviewer"] for line in exported.stdout.splitlines()] == ["ana", "bo"]
    assert all(json.loads(line)["time"].endswith("Z") for line in exported.stdout.splitlines())


def test_cases_written_from_reviews_validate_and_run(tmp_path):
    results = _run(tmp_path)
    append_review(reviews_path(results), {
        "case_id": "c3", "reviewer": "ana", "expected_wrong": True, "corrected_expected": "wrong 3", "note": "the reference was wrong",
    })
    out = tmp_path / "more" / "cases.jsonl"
    out.parent.mkdir()
    done = run_cli("feedback", "cases", results, "-o", out, "--case", "c6")
    assert done.returncode == 0, done.stderr
    assert "2 cases added, 0 corrected" in done.stdout
    cases = {case["id"]: case for case in read_jsonl(out)}
    assert cases["c3"]["expected"] == "wrong 3" and cases["c6"]["expected"] == "answer 6"
    for case in cases.values():
        case["output"] = "wrong 3" if case["id"] == "c3" else "answer 6"
    out.write_text("".join(json.dumps(case) + "\n" for case in cases.values()))
    write(out.parent, "suite.yaml", "name: from-reviews\nevaluators:\n  - {name: same, type: equals}\ncases: cases.jsonl\n")
    assert run_cli("validate", out.parent / "suite.yaml").returncode == 0
    ran = run_cli("run", out.parent / "suite.yaml", "-o", tmp_path / "again.jsonl")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert sorted(line["case_id"] for line in read_jsonl(tmp_path / "again.jsonl")) == ["c3", "c6"]
    again = run_cli("feedback", "cases", results, "-o", out)  # the correction again: replaced, not added
    assert "0 cases added, 1 corrected" in again.stdout


def test_cases_are_written_only_to_a_cases_file_suffix(tmp_path):
    results = _run(tmp_path)
    done = run_cli("feedback", "cases", results, "-o", tmp_path / "suite.yaml.bak", "--case", "c1")
    assert done.returncode == 2 and "written as .jsonl or .yaml" in done.stderr
    assert not (tmp_path / "suite.yaml.bak").exists()


def test_the_report_table_mentions_the_reviews(tmp_path):
    results = _run(tmp_path)
    _review_all(results)
    done = run_cli("report", results)
    assert "30 reviews by 1 reviewer, 8 marking a verdict wrong" in done.stdout


def test_the_review_examples_readme_shows_what_its_commands_print(tmp_path):
    import os
    import shutil
    import subprocess

    from conftest import EXAMPLES
    from test_doc_examples import _matches, console_blocks

    shutil.copytree(EXAMPLES / "review", tmp_path / "examples" / "review")
    env = {**os.environ, "CI": "1", "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    steps = [step for block in console_blocks([EXAMPLES / "review" / "README.md"]) for step in block.steps]
    assert [step.command for step in steps] == [
        "agenteval report examples/review/run/run.jsonl --agreement --min-agreement 0.4",
        "agenteval feedback cases examples/review/run/run.jsonl -o new-cases.jsonl --case ticket-03",
    ]
    for step in steps:
        done = subprocess.run(["bash", "-c", step.command], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        assert done.returncode == step.status, done.stdout
        assert _matches(step.output, done.stdout.splitlines()), done.stdout
    written = read_jsonl(tmp_path / "new-cases.jsonl")
    assert [case["id"] for case in written] == ["ticket-02", "ticket-03"] and written[0]["expected"] == "issued"


def test_history_counts_each_runs_reviews(tmp_path):
    results = _run(tmp_path)
    _review_all(results)
    table = run_cli("history", "--store", tmp_path)
    assert "reviews" in table.stdout and "│      30 │" in table.stdout
    runs = json.loads(run_cli("history", "--store", tmp_path, "--format", "json").stdout)["runs"]
    assert [run.get("reviews") for run in runs] == [30]


def test_with_repeat_the_judges_self_consistency_stands_beside_its_agreement(tmp_path):
    results = _run(tmp_path)
    again = run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "repeated.jsonl", "--repeat", "3")
    assert again.returncode == 1, again.stderr
    repeated = tmp_path / "repeated.jsonl"
    for line in read_jsonl(repeated):
        if line["repetition"] == 0:
            verdict = next(e["verdict"] for e in line["evaluator_results"] if e["name"] == "same")
            append_review(reviews_path(repeated), {"case_id": line["case_id"], "reviewer": "ana", "verdicts": {"same": "right"}, "judged": {"same": verdict}})
    found = {entry["name"]: entry for entry in json.loads(run_cli("report", repeated, "--agreement", "--json").stdout)["agreement"]}
    assert found["same"]["self_consistency"] == 1.0  # recorded answers: the same verdict on every repeat
    assert found["same"]["cases"] == CASES and found["same"]["kappa"] == 1.0
    assert "self-consistency over repeats (Fleiss' kappa) 1.00" in run_cli("report", repeated, "--agreement").stdout
    assert results.exists()


def test_reviews_show_in_the_report_and_the_html_report_as_human_review(tmp_path):
    import base64
    import gzip
    import re as regex

    results = _run(tmp_path)
    append_review(reviews_path(results), {"case_id": "c3", "reviewer": "ana", "verdicts": {"same": "wrong", "says": "right"},
                                          "judged": {"same": "fail", "says": "pass"}, "note": "a fine answer"})
    table = run_cli("report", results, "--show-failures", "30")
    assert "human:review" in table.stdout and "same marked wrong" in table.stdout
    done = run_cli("report", results, "--format", "html", "-o", tmp_path / "report.html")
    assert done.returncode == 1, done.stderr
    data = regex.search(r'<script id="agenteval-data" type="application/gzip;base64">\s*(\S+)\s*</script>', (tmp_path / "report.html").read_text())
    text = gzip.decompress(base64.b64decode(data.group(1))).decode()
    head = json.loads(text.splitlines()[0])
    assert "human:review" in head["evaluators"] and "ana: a fine answer" in text
    assert [line["evaluator_results"][-1]["name"] for line in read_jsonl(results)][3] == "says"  # the results file is unchanged


def test_view_without_sources_shows_the_store_the_suite_names(tmp_path):
    write(tmp_path, "suite.yaml", "name: stored\nstore: sqlite:///runs.db\nevaluators: [{type: length, min: 1}]\n"
          "cases: [{id: a, output: x}, {id: b, output: ''}]\n")
    assert run_cli("run", "suite.yaml", "-q", cwd=tmp_path).returncode == 1
    assert not (tmp_path / "agenteval-results").exists()  # the run is in the store only
    done = run_cli("view", "--export", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    index = (tmp_path / "out" / "index.html").read_text()
    assert "stored" in index and "50.0%" in index
    (tmp_path / "suite.yaml").write_text("name: broken\nevaluators: [{type: nope}]\ncases: []\n")
    done = run_cli("view", "--export", "out2", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.splitlines()[-1].startswith("error: no runs here: no agenteval-results/ in the current folder")
    assert done.stderr.startswith("warning: suite.yaml does not load (suite.yaml:2: evaluators[0].type: unknown evaluator type 'nope'")
    assert done.stderr.splitlines()[0].endswith("); its store is not shown")


def _matrix_store(tmp_path):
    from conftest import EXAMPLES

    pytest.importorskip("sqlalchemy")
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    done = run_cli("run", EXAMPLES / "compare-models" / "suite.yaml", "--store", url, "-q")
    assert done.returncode == 1, done.stderr
    return url


def _human_reviews(url):
    """Each (case, cell) whose results carry `human:review`, with the reviewers in it, as reports read the store."""
    from agenteval.stores import StoredRun, open_store, read_source

    store = open_store(url)
    try:
        run_id = store.find_run("latest")
        found = {}
        for result in read_source(StoredRun(store, run_id)):
            for evaluator in result.evaluator_results:
                if evaluator.name == "human:review":
                    found[(result.case_id, result.target, result.prompt)] = sorted(r["reviewer"] for r in evaluator.details["reviews"])
        return run_id, found
    finally:
        store.close()


def test_a_store_keeps_every_reviewer_of_a_case_and_each_cell_apart(tmp_path):
    from agenteval.stores import open_store
    from agenteval.stores.reviews import store_review

    url = _matrix_store(tmp_path)
    store = open_store(url)
    run_id = store.find_run("latest")
    first = next(store.read_run(run_id)).case_id
    for reviewer, target, prompt, mark in (("ana", "small", "terse", "wrong"), ("bob", "small", "terse", "right"),
                                           ("ana", "large", "careful", "right"), ("ana", "small", "terse", "right")):
        store_review(store, run_id, {"case_id": first, "reviewer": reviewer, "target": target, "prompt": prompt,
                                     "verdicts": {"correct": mark}, "judged": {"correct": "pass"}})
    store.close()
    _, found = _human_reviews(url)
    assert found == {(first, "small", "terse"): ["ana", "bob"], (first, "large", "careful"): ["ana"]}  # not in the other two cells
    exported = [json.loads(line) for line in run_cli("feedback", "export", "latest", "--store", url).stdout.splitlines()]
    assert sorted((r["reviewer"], r["target"], r["prompt"], r["verdicts"]["correct"]) for r in exported) == [
        ("ana", "large", "careful", "right"), ("ana", "small", "terse", "right"), ("bob", "small", "terse", "right")]  # ana's later review won
    assert all(r["run_id"] == exported[0]["run_id"] and r["time"].endswith("Z") for r in exported)
    history = json.loads(run_cli("history", "--store", url, "--format", "json").stdout)
    assert [run.get("reviews") for run in history["runs"]] == [3]
    agreement = json.loads(run_cli("report", "latest", "--store", url, "--agreement", "--json").stdout)
    assert agreement["reviews"] == 3 and {entry["name"] for entry in agreement["agreement"]} == {"correct"}


def test_reviews_an_older_store_kept_in_human_review_results_move_to_the_reviews_table(tmp_path):
    import sqlalchemy

    from agenteval.stores import open_store
    from agenteval.stores.reviews import review_result

    url = _matrix_store(tmp_path)
    store = open_store(url)
    run_id = store.find_run("latest")
    first = next(store.read_run(run_id)).case_id
    old = [{"case_id": first, "reviewer": "ana", "target": "small", "prompt": "terse", "repetition": 0, "verdicts": {"correct": "wrong"},
            "judged": {"correct": "pass"}, "scores": {}, "expected_wrong": False, "time": "2026-01-02T03:04:05Z"},
           {"case_id": first, "reviewer": "bob", "target": "large", "prompt": "terse", "repetition": 0, "verdicts": {"correct": "right"},
            "judged": {"correct": "pass"}, "scores": {}, "expected_wrong": False, "time": "2026-01-02T03:04:06Z"}]
    store.put_evaluator_results(run_id, [(first, 0, review_result(old))])  # how an older version kept them: in every cell
    store.close()
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("DROP TABLE reviews"))
        assert conn.execute(sqlalchemy.text("SELECT count(*) FROM evaluator_results WHERE name = 'human:review'")).scalar() == 4
    _, found = _human_reviews(url)  # opening the store moves them
    assert found == {(first, "small", "terse"): ["ana"], (first, "large", "terse"): ["bob"]}
    with engine.begin() as conn:
        assert conn.execute(sqlalchemy.text("SELECT count(*) FROM evaluator_results WHERE name = 'human:review'")).scalar() == 0
        assert conn.execute(sqlalchemy.text("SELECT reviewer, cell FROM reviews ORDER BY id")).all() == [("ana", "small/terse"), ("bob", "large/terse")]
    engine.dispose()
    exported = [json.loads(line) for line in run_cli("feedback", "export", "latest", "--store", url).stdout.splitlines()]
    assert sorted(r["reviewer"] for r in exported) == ["ana", "bob"]
