"""A suite with `targets:` and `prompts:` runs each case once per cell: result lines name the cell,
the summary has each cell's figures and paired comparisons, the gate applies per cell, and
--target, --prompt, --set, --resume and --predictions work per cell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agenteval.api import run_suite
from agenteval.suite.loader import SuiteInvalid, load_suite
from tests.llm_server import LLMServer

ANSWERER = """\
import json, sys
data = json.load(sys.stdin)
mode = sys.argv[1]
q = data["q"]
print(json.dumps({"answer": q.upper() if mode == "good" or q < "c" else "wrong"}))
"""

CASES = "\n".join(f"  - {{id: {q}, input: {{q: {q}}}, expected: {{answer: {q.upper()}}}}}" for q in "abcdef")


def _write(folder: Path, suite: str) -> Path:
    (folder / "ans.py").write_text(ANSWERER)
    path = folder / "suite.yaml"
    path.write_text(textwrap.dedent(suite) + "cases:\n" + CASES + "\n")
    return path


COMMAND_MATRIX = f"""\
name: matrix
targets:
  weak: {{type: command, command: [{sys.executable}, ans.py, weak]}}
  strong: {{type: command, command: [{sys.executable}, ans.py, good]}}
evaluators:
  - {{type: field_accuracy, name: fields, fields: [{{path: answer}}]}}
"""


def _agenteval(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenteval", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "CI": "1", **(env or {})},
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_case_runs_in_each_cell_and_the_summary_compares_them(tmp_path: Path) -> None:
    suite = _write(tmp_path, COMMAND_MATRIX)
    done = _agenteval("run", str(suite), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    lines = _lines(tmp_path / "out.jsonl")
    assert sorted((line["case_id"], line["target"], line["prompt"]) for line in lines) == sorted(
        (q, target, None) for q in "abcdef" for target in ("weak", "strong")
    )
    verdicts = {(line["case_id"], line["target"]): line["verdict"] for line in lines}
    assert [verdicts[q, "weak"] for q in "abcdef"] == ["pass", "pass", "fail", "fail", "fail", "fail"]
    assert all(verdicts[q, "strong"] == "pass" for q in "abcdef")

    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert summary["counts"] == {"total": 12, "passed": 8, "failed": 4, "errored": 0}
    cells = {cell["label"]: cell for cell in summary["cells"]}
    assert list(cells) == ["weak", "strong"]  # the suite's order
    assert cells["weak"]["counts"] == {"total": 6, "passed": 2, "failed": 4, "errored": 0}
    assert cells["weak"]["pass_rate"] == pytest.approx(2 / 6)
    assert cells["weak"]["evaluators"]["fields"]["mean_score"] == pytest.approx(2 / 6)
    assert cells["weak"]["gate"] == {"passed": False, "reason": "4 of 6 cases failed"}
    assert cells["strong"]["gate"] == {"passed": True, "reason": None}
    assert cells["strong"]["usage"]["target"]["requests"] == 6
    [comparison] = summary["comparisons"]
    assert (comparison["a"], comparison["b"], comparison["n"]) == ("weak", "strong", 6)
    assert comparison["pass_rate"]["difference"] == pytest.approx(4 / 6)
    assert comparison["mcnemar"] == {"a_only": 0, "b_only": 4, "p_value": pytest.approx(0.125)}
    assert "cell weak failed the gate: 4 of 6 cases failed" in done.stdout
    assert "strong failed" not in done.stdout


def test_target_chooses_cells_and_a_wrong_name_is_refused_with_the_closest(tmp_path: Path) -> None:
    suite = _write(tmp_path, COMMAND_MATRIX)
    done = _agenteval("run", str(suite), "-o", "strong.jsonl", "--target", "strong", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = _lines(tmp_path / "strong.jsonl")
    assert {line["target"] for line in lines} == {"strong"} and len(lines) == 6
    summary = json.loads((tmp_path / "strong.summary.json").read_text())
    assert [cell["label"] for cell in summary["cells"]] == ["strong"] and summary["comparisons"] == []

    wrong = _agenteval("run", str(suite), "-o", "x.jsonl", "--target", "strnog", cwd=tmp_path)
    assert wrong.returncode == 2
    assert "--target strnog: the suite has no such target; did you mean 'strong'? (known: weak, strong)" in wrong.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_min_pass_rate_applies_to_each_cell(tmp_path: Path) -> None:
    suite = _write(tmp_path, COMMAND_MATRIX)
    met = _agenteval("run", str(suite), "-o", "a.jsonl", "--min-pass-rate", "0.3", cwd=tmp_path)
    assert met.returncode == 0, met.stderr  # weak passes 2 of 6 (33%), strong 6 of 6
    unmet = _agenteval("run", str(suite), "-o", "b.jsonl", "--min-pass-rate", "0.5", "--quiet", cwd=tmp_path)
    assert unmet.returncode == 1
    assert unmet.stderr.splitlines()[-1] == "cell weak did not pass: pass rate 33.3% is below 50.0%"
    assert json.loads((tmp_path / "b.summary.json").read_text())["cells"][1]["gate"]["passed"] is True


def test_set_overrides_a_key_of_the_suite(tmp_path: Path) -> None:
    suite = _write(tmp_path, COMMAND_MATRIX)
    done = _agenteval(
        "run", str(suite), "-o", "out.jsonl", "--set", f"targets.weak.command=[{sys.executable}, ans.py, good]", cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert all(line["verdict"] == "pass" for line in _lines(tmp_path / "out.jsonl"))
    resolved = json.loads((tmp_path / "out.summary.json").read_text())["resolved_suite"]
    assert resolved["targets"]["weak"]["command"][-1] == "good"

    typo = _agenteval("run", str(suite), "-o", "typo.jsonl", "--set", "targets.weak.comand=x", cwd=tmp_path)
    assert typo.returncode == 2 and "comand" in typo.stderr
    malformed = _agenteval("run", str(suite), "-o", "m.jsonl", "--set", "targets.weak", cwd=tmp_path)
    assert malformed.returncode == 2
    assert "--set targets.weak: give KEY=VALUE, e.g. --set target.model=gpt-4.1-mini" in malformed.stderr


def test_resume_runs_only_the_cells_a_case_has_not_run_in(tmp_path: Path) -> None:
    suite = _write(tmp_path, COMMAND_MATRIX)
    assert _agenteval("run", str(suite), "-o", "full.jsonl", cwd=tmp_path).returncode == 1
    full = (tmp_path / "full.jsonl").read_text().splitlines()
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(full[:5]) + "\n")  # an interrupted run: five cells of cases finished
    done = _agenteval("run", str(suite), "-o", "partial.jsonl", "--resume", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    lines = _lines(partial)
    assert len(lines) == 12
    assert len({(line["case_id"], line["target"]) for line in lines}) == 12
    assert json.loads((tmp_path / "partial.summary.json").read_text())["counts"]["total"] == 12


def test_a_matrix_results_file_answers_as_predictions_per_cell(tmp_path: Path) -> None:
    suite = _write(tmp_path, COMMAND_MATRIX)
    assert _agenteval("run", str(suite), "-o", "first.jsonl", cwd=tmp_path).returncode == 1
    (tmp_path / "ans.py").write_text("raise SystemExit(1)\n")  # the targets are gone: only the predictions answer
    again = _agenteval("run", str(suite), "-o", "again.jsonl", "--predictions", "first.jsonl", cwd=tmp_path)
    assert again.returncode == 1, again.stderr
    first = {(r["case_id"], r["target"]): r["verdict"] for r in _lines(tmp_path / "first.jsonl")}
    assert {(r["case_id"], r["target"]): r["verdict"] for r in _lines(tmp_path / "again.jsonl")} == first


def test_prompts_cross_model_targets_and_model_reads_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_KEY", "sk-local")
    monkeypatch.setenv("SMALL_MODEL", "small-7")
    with LLMServer() as server:
        suite = tmp_path / "suite.yaml"
        suite.write_text(textwrap.dedent(f"""\
            name: prompts
            models:
              local: {{base_url: "{server.base_url}", api_key_env: LOCAL_KEY}}
            targets:
              small: {{type: openai, endpoint: local, model: "${{SMALL_MODEL}}"}}
              large: {{type: openai, endpoint: local, model: large-1}}
            prompts:
              plain: "{{{{ input.q }}}}"
              shouted: [{{role: system, content: be loud}}, {{role: user, content: "{{{{ input.q | upper }}}}"}}]
            evaluators:
              - {{type: contains, name: upper, path: content, reference_path: ""}}
            cases:
              - {{id: one, input: {{q: "yes"}}, expected: "YES"}}
              - {{id: two, input: {{q: "no"}}, expected: "NO"}}
            """))
        run = run_suite(suite, cache=False)
        results = list(run)
        summary = run.summary
        bodies = [request.body for request in server.received]
    assert sorted({body["model"] for body in bodies}) == ["large-1", "small-7"]
    assert len(bodies) == 8  # 2 cases x 2 targets x 2 prompts
    shouted = [body for body in bodies if body["messages"][0] == {"role": "system", "content": "be loud"}]
    assert sorted(body["messages"][1]["content"] for body in shouted) == ["NO", "NO", "YES", "YES"]
    verdicts = {(r.case_id, r.target, r.prompt): r.verdict for r in results}
    assert verdicts == {
        (case, target, prompt): "pass" if prompt == "shouted" else "fail"
        for case in ("one", "two") for target in ("small", "large") for prompt in ("plain", "shouted")
    }
    assert [cell["label"] for cell in summary["cells"]] == ["small/plain", "small/shouted", "large/plain", "large/shouted"]
    pairs = [(c["a"], c["b"]) for c in summary["comparisons"]]
    assert pairs == [
        ("small/plain", "small/shouted"), ("small/plain", "large/plain"),
        ("small/shouted", "large/shouted"), ("large/plain", "large/shouted"),
    ]  # cells differing in one thing only
    assert run.exit_code() == 1


def test_case_pass_grades_by_weighted_score(tmp_path: Path) -> None:
    suite = _write(tmp_path, f"""\
        name: by-score
        case_pass: {{min_score: 0.5}}
        target: {{type: command, command: [{sys.executable}, ans.py, weak]}}
        evaluators:
          - {{type: field_accuracy, name: fields, fields: [{{path: answer}}]}}
          - {{type: length, name: some_text, path: answer, min: 1}}
        """)
    results = {result.case_id: result for result in run_suite(suite, cache=False)}
    assert results["a"].verdict == "pass"
    assert results["c"].score == pytest.approx(0.5) and results["c"].verdict == "pass"  # a failed check, outweighed
    assert results["c"].evaluator_results[0].verdict == "fail"


@pytest.mark.parametrize(
    ("suite", "message"),
    [
        ("target: {type: recorded}\ntargets: {a: {type: recorded}}\n", "give `target:` (one target) or `targets:` (several by name), not both"),
        ("targets: {a: {type: command, command: [x]}}\nprompts: {p: hi}\n", "target 'a' is a command target"),
        ("targets: {a: {type: recorded}}\nprompts: {a/b: hi}\n", "prompts.a/b"),
        ("targets: {}\n", "`targets:` names no target"),
        ("case_pass: {min_score: 0.8}\ndefaults: {threshold: 0.5}\n", "give `case_pass.min_score` or `defaults.threshold`, not both"),
    ],
)
def test_a_matrix_that_cannot_run_is_refused_at_load(tmp_path: Path, suite: str, message: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("name: bad\n" + suite + "evaluators: [{type: equals, name: eq}]\ncases: [{id: a, input: x, expected: x, output: x}]\n")
    with pytest.raises(SuiteInvalid) as raised:
        load_suite(path)
    assert message in "\n".join(problem.render() for problem in raised.value.problems)


def test_an_unknown_endpoint_in_targets_is_a_load_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: bad\nmodels:\n  local: {base_url: 'http://127.0.0.1:9/v1'}\ntargets:\n  a: {type: openai, endpoint: locl}\n"
        "evaluators: [{type: equals, name: eq}]\ncases: [{id: a, input: x, expected: x}]\n"
    )
    with pytest.raises(SuiteInvalid) as raised:
        load_suite(path)
    [problem] = raised.value.problems
    assert problem.line == 5 and "targets.a.endpoint" in problem.render() and "did you mean 'local'?" in problem.render()


def _comparable(path: Path) -> list[tuple]:
    return sorted(
        (line["case_id"], line["target"], line["prompt"], line["verdict"], line["score"], json.dumps(line["output"]))
        for line in _lines(path)
    )


def test_a_matrix_runs_on_ray_with_its_overrides_as_it_runs_here(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is in the dev extra; install it with pip install -e '.[dev]'")
    suite = _write(tmp_path, COMMAND_MATRIX)
    choice = ["--set", f"targets.weak.command=[{sys.executable}, ans.py, good]", "--min-pass-rate", "0.9"]
    here = _agenteval("run", str(suite), "-o", "here.jsonl", *choice, cwd=tmp_path)
    there = _agenteval("run", str(suite), "-o", "there.jsonl", "--executor", "ray", "--batch-size", "4", *choice, cwd=tmp_path)
    assert (here.returncode, there.returncode) == (0, 0), there.stderr[-2000:]
    assert _comparable(tmp_path / "there.jsonl") == _comparable(tmp_path / "here.jsonl")
    assert len(_comparable(tmp_path / "there.jsonl")) == 12


def test_report_gates_each_cell_and_failures_name_their_cell(tmp_path: Path) -> None:
    suite = _write(tmp_path, COMMAND_MATRIX)
    assert _agenteval("run", str(suite), "-o", "out.jsonl", cwd=tmp_path).returncode == 1
    met = _agenteval("report", "out.jsonl", "--min-pass-rate", "0.3", cwd=tmp_path)
    assert met.returncode == 0, met.stderr  # overall 8 of 12 passed; each cell is at least 33%
    unmet = _agenteval("report", "out.jsonl", "--min-pass-rate", "0.5", cwd=tmp_path)
    assert unmet.returncode == 1  # weak is at 33%, though the run as a whole is at 67%
    assert "FAIL c [weak]" in unmet.stdout and "[strong]" not in unmet.stdout.split("FAIL", 1)[1]
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert all(entry["case_id"].endswith(("[weak]", "[strong]")) for entry in summary["slowest_cases"])


SLASHED_MATRIX = f"""\
name: slashed
targets:
  acme/weak-1.0: {{type: command, command: [{sys.executable}, ans.py, weak]}}
  acme/strong-1.0: {{type: command, command: [{sys.executable}, ans.py, good]}}
evaluators:
  - {{type: field_accuracy, name: fields, fields: [{{path: answer}}]}}
"""


def test_a_target_named_with_a_slash_keeps_it_everywhere_a_user_sees_it(tmp_path: Path) -> None:
    """promptfoo labels providers `openai/gpt-4.1`: the name reaches result lines, --target, a SQL
    store and its --resume, compare --cells and JUnit unchanged (the last "/" of a label starts the prompt)."""
    suite = _write(tmp_path, SLASHED_MATRIX)
    done = _agenteval("run", str(suite), "-o", "all.jsonl", "--junit", "all.xml", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert {(line["case_id"], line["target"], line["verdict"]) for line in _lines(tmp_path / "all.jsonl")} == {
        (q, name, "pass" if name == "acme/strong-1.0" or q < "c" else "fail") for q in "abcdef" for name in ("acme/weak-1.0", "acme/strong-1.0")
    }
    junit = (tmp_path / "all.xml").read_text()
    assert 'name="slashed [acme/weak-1.0]"' in junit and 'name="c [acme/strong-1.0]"' in junit

    one = _agenteval("run", str(suite), "-o", "one.jsonl", "--target", "acme/strong-1.0", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert {line["target"] for line in _lines(tmp_path / "one.jsonl")} == {"acme/strong-1.0"}

    compared = _agenteval("compare", "all.jsonl", "--cells", "acme/weak-1.0", "acme/strong-1.0", "--format", "json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert sorted(row["case_id"] for row in json.loads(compared.stdout)["improvements"]) == ["c", "d", "e", "f"]

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    assert _agenteval("run", str(suite), "--store", store, "-q", cwd=tmp_path).returncode == 1
    import sqlite3

    with sqlite3.connect(tmp_path / "runs.db") as db:  # as if the run had stopped before two of one target's cases
        for table in ("evaluator_results", "case_results"):
            db.execute(f"DELETE FROM {table} WHERE cell = 'acme/strong-1.0/' AND case_id IN ('e', 'f')")
    resumed = _agenteval("run", str(suite), "--store", store, "--resume", cwd=tmp_path)
    assert resumed.returncode == 1, resumed.stderr
    with sqlite3.connect(tmp_path / "runs.db") as db:
        cells = db.execute("SELECT cell, count(*) FROM case_results GROUP BY cell ORDER BY cell").fetchall()
    assert cells == [("acme/strong-1.0/", 6), ("acme/weak-1.0/", 6)]
    from agenteval.stores import open_store

    opened = open_store(store)
    try:
        read_back = {(r.case_id, r.target, r.prompt) for r in opened.read_run(opened.find_run("latest"))}
    finally:
        opened.close()
    assert read_back == {(q, name, None) for q in "abcdef" for name in ("acme/weak-1.0", "acme/strong-1.0")}
