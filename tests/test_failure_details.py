"""The terminal's failure list (and Markdown, JUnit) and `compare` say what the HTML report says of
a failing case: the answer, on one line, and the judge's reasoning per criterion."""

from __future__ import annotations

import json

from conftest import run_cli


def _line(case_id, verdict, score, answer, run_id="new"):
    judge = {
        "name": "quality", "type": "llm_judge", "score": score, "verdict": "pass" if verdict == "pass" else "fail",
        "reasoning": "overall: see the criteria",
        "details": {"criteria": {
            "correct": {"score": score, "raw_score": 1 if verdict == "pass" else 0, "reasoning": "The answer names Sydney,\nbut the capital is Canberra."},
            "brief": {"score": 1.0, "raw_score": 1, "reasoning": "One sentence."},
        }},
    }
    return {"run_id": run_id, "suite": "qa", "case_id": case_id, "score": score, "verdict": verdict,
            "output": {"role": "assistant", "content": answer}, "evaluator_results": [judge]}


ANSWER = "The capital of Australia is Sydney.\n\nIt is the largest city " + "and a harbour " * 20


def test_the_failure_list_shows_the_answer_on_one_line_and_each_criterions_reasoning(tmp_path):
    (tmp_path / "r.jsonl").write_text(json.dumps(_line("au", "fail", 0.5, ANSWER)) + "\n")
    done = run_cli("report", tmp_path / "r.jsonl")
    assert done.returncode == 1, done.stderr
    section = done.stdout[done.stdout.index("Failures ("):].splitlines()
    assert section[1] == "FAIL au (score 0.500)"
    assert section[2].startswith('  answer: "The capital of Australia is Sydney. It is the largest city and a harbour')
    assert len(section[2]) == len("  answer: ") + 120 and section[2].endswith("…")
    assert section[3:6] == [
        "  quality (llm_judge, fail, 0.500)",
        "    correct (0): The answer names Sydney, but the capital is Canberra.",
        "    brief (1): One sentence.",
    ]
    markdown = run_cli("report", tmp_path / "r.jsonl", "--format", "markdown").stdout
    assert '  - answer: "The capital of Australia is Sydney. It is' in markdown
    assert "    - correct (0): The answer names Sydney, but the capital is Canberra." in markdown
    junit = run_cli("report", tmp_path / "r.jsonl", "--format", "junit").stdout
    assert '  answer: "The capital of Australia is Sydney.' in junit and "correct (0): The answer names Sydney" in junit


def test_compare_says_why_with_the_judges_reasoning_and_the_new_answer(tmp_path):
    (tmp_path / "base.jsonl").write_text(json.dumps(_line("au", "pass", 1.0, "Canberra.", "base")) + "\n")
    (tmp_path / "new.jsonl").write_text(json.dumps(_line("au", "fail", 0.5, ANSWER)) + "\n")
    done = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl", "--format", "json")
    assert done.returncode == 1, done.stderr
    [regression] = json.loads(done.stdout)["regressions"]
    assert regression["reason"].startswith(
        "quality: correct (0): The answer names Sydney, but the capital is Canberra.; brief (1): One sentence.; "
        'base: pass (1.000); new answer: "The capital of Australia is Sydney. It is the largest city'
    )
    table = run_cli("compare", tmp_path / "base.jsonl", tmp_path / "new.jsonl").stdout
    rows = [line.split("│")[1:-1] for line in table.split("Regressions", 1)[1].split("└", 1)[0].splitlines() if line.startswith("│")]
    assert " ".join(row[4].strip() for row in rows) == regression["reason"]  # the whole reason, wrapped in its column


def test_single_run_reports_show_each_criterions_mean_score_from_the_summary(tmp_path):
    lines = [_line("au", "fail", 0.5, "Sydney."), _line("fr", "pass", 1.0, "Paris.")]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    summary = json.loads(run_cli("report", tmp_path / "r.jsonl", "--json").stdout)
    assert summary["evaluators"]["quality"]["criteria"]["correct"]["mean_score"] == 0.75
    table = run_cli("report", tmp_path / "r.jsonl").stdout.splitlines()
    start = [line.rstrip() for line in table].index("Scores per criterion")
    rows = [[cell.strip() for cell in line.strip("│").split("│")] for line in table[start:] if line.startswith("│")][:2]
    assert rows == [["quality", "correct", "0.750", "1", "1", "0"], ["quality", "brief", "1.000", "2", "0", "0"]]
    markdown = run_cli("report", tmp_path / "r.jsonl", "--format", "markdown").stdout
    assert "### Scores per criterion" in markdown and "| quality | correct | 0.750 | 1 | 1 | 0 |" in markdown
    assert run_cli("report", tmp_path / "r.jsonl", "--format", "html", "-o", tmp_path / "r.html").returncode == 1
    page = (tmp_path / "r.html").read_text()
    assert '<section id="criteria"><h2>Scores per criterion</h2>' in page
    assert "<tr><td>quality</td><td>correct</td><td>0.750</td><td>1</td><td>1</td><td>0</td></tr>" in page


def test_a_string_answer_is_shown_quoted_and_a_string_holding_json_gets_a_hint(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(json.dumps({
        "name": "s", "evaluators": [{"type": "field_accuracy", "fields": [{"path": "name"}]}],
        "cases": [{"id": "c1", "output": '{"name": "Jane"}', "expected": {"name": "Jane"}}],
    }))
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl")
    assert done.returncode == 1, done.stderr
    section = done.stdout[done.stdout.index("Failures ("):].splitlines()
    assert section[1:6] == [
        "FAIL c1 (score 0.000)",
        '  answer: "{\\"name\\": \\"Jane\\"}"',
        "  hint: the answer is a string holding JSON; parse it with `transform: {python: \"json:loads\"}` or have the target return an object",
        "  field_accuracy (field_accuracy, fail, 0.000)",
        '    name (required, missing): expected "Jane", got nothing',
    ]
    markdown = run_cli("report", tmp_path / "r.jsonl", "--format", "markdown").stdout
    assert '  - answer: "{\\\\"name\\\\": \\\\"Jane\\\\"}"' in markdown and "  - hint: the answer is a string holding JSON" in markdown
    junit = run_cli("report", tmp_path / "r.jsonl", "--format", "junit").stdout
    assert "  hint: the answer is a string holding JSON" in junit
