"""Per-criterion figures in the summary: each criterion of a multi-criterion llm_judge (graded by the
local test model server) and each child of a composite, nested ones by a dotted name."""

import json

from conftest import read_jsonl, run_cli, write
from llm_server import LLMServer

CRITERIA = [
    {"name": "correct", "description": "States the same city as the reference.", "scale": "pass_fail"},
    {"name": "concise", "description": "One short sentence.", "scale": "likert5"},
]
GRADES = {  # the candidate -> what the judge says
    "Paris": {"correct": {"score": "pass", "reasoning": "same"}, "concise": {"score": 5, "reasoning": "short"}},
    "Lyon": {"correct": {"score": "fail", "reasoning": "other city"}, "concise": {"score": 3, "reasoning": "ok"}},
    "It is Paris, the lovely capital": {"correct": {"score": "pass", "reasoning": "same"}, "concise": {"score": 2, "reasoning": "long"}},
}


def grading(body):
    """The judge's reply for the candidate shown in the default prompt."""
    prompt = body["messages"][-1]["content"]
    candidate = prompt.split("# Candidate answer\n", 1)[1].split("\n\n", 1)[0]
    return {"role": "assistant", "content": json.dumps(GRADES[candidate])}


def suite(tmp_path, server):
    return write(tmp_path, "suite.yaml", f"""
name: graded
models:
  grader: {{base_url: "{server.base_url}", model: grader, cache: false}}
evaluators:
  - name: quality
    type: llm_judge
    endpoint: grader
    path: content
    criteria: {json.dumps(CRITERIA)}
  - name: checks
    type: composite
    evaluators:
      - {{name: city, type: contains, path: content, reference: Paris}}
      - name: form
        type: composite
        evaluators:
          - {{name: exact, type: equals, path: content, reference: Paris}}
          - {{name: short, type: length, path: content, max: 3, unit: words}}
cases:
  - {{id: a, input: "capital of France?", expected: Paris, output: {{content: Paris}}}}
  - {{id: b, input: "capital of France?", expected: Paris, output: {{content: Lyon}}}}
  - {{id: c, input: "capital of France?", expected: Paris, output: {{content: "It is Paris, the lovely capital"}}}}
""")


def test_each_judge_criterion_and_each_composite_child_is_aggregated(tmp_path):
    with LLMServer(chat=grading) as server:
        done = run_cli("run", suite(tmp_path, server), "-o", tmp_path / "r.jsonl", "-q")
        requests = len(server.received)
    assert done.returncode == 1, done.stderr  # b and c do not pass
    assert requests == 3
    evaluators = json.loads((tmp_path / "r.summary.json").read_text())["evaluators"]
    # correct: pass, fail, pass; concise: 5 -> 1.0, 3 -> 0.5, 2 -> 0.25 (likert5 normalized)
    assert evaluators["quality"]["criteria"] == {
        "correct": {"count": 3, "mean_score": 2 / 3, "verdicts": {"pass": 2, "fail": 1}},
        "concise": {"count": 3, "mean_score": 7 / 12, "verdicts": {"pass": 1, "partial": 2}},
    }
    assert evaluators["quality"]["count"] == 3 and "criteria_dropped" not in evaluators["quality"]
    children = evaluators["checks"]["criteria"]
    assert list(children) == ["city", "form", "form.exact", "form.short"]
    assert children["city"] == {"count": 3, "mean_score": 2 / 3, "verdicts": {"pass": 2, "fail": 1}}
    assert children["form.exact"] == {"count": 3, "mean_score": 1 / 3, "verdicts": {"pass": 1, "fail": 2}}
    assert children["form.short"]["count"] == 3 and children["form.short"]["verdicts"]["pass"] == 2
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    form_scores = [lines[case]["evaluator_results"][1]["details"]["children"][1]["score"] for case in "abc"]
    assert children["form"]["mean_score"] == sum(form_scores) / 3


def test_evaluators_without_criteria_have_no_criteria_key(tmp_path):
    suite = write(tmp_path, "plain.yaml", """
name: plain
evaluators:
  - {name: exact, type: equals, path: content, reference: Paris}
cases:
  - {id: a, output: {content: Paris}}
""")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 0, done.stderr
    exact = json.loads((tmp_path / "r.summary.json").read_text())["evaluators"]["exact"]
    assert "criteria" not in exact and "criteria_dropped" not in exact


def test_a_judge_naming_criteria_freely_keeps_at_most_100_names(tmp_path):
    write(tmp_path, "judges.py", """
        def many(payload):
            case = int(payload["case_id"])
            names = {f"c{case}-{i}": {"score": 0.5} for i in range(30)}
            names["shared"] = {"score": 1.0, "verdict": "pass"}
            return {"score": 1.0, "details": {"criteria": names}}
    """)
    cases = "\n".join(f"  - {{id: '{i}', output: x}}" for i in range(10))
    suite = write(tmp_path, "suite.yaml", f"""
name: free
evaluators:
  - {{name: judge, type: python, function: "judges:many"}}
cases:
{cases}
""")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", "--workers", "1")
    assert done.returncode == 0, done.stderr
    judge = json.loads((tmp_path / "r.summary.json").read_text())["evaluators"]["judge"]
    assert len(judge["criteria"]) == 100
    assert judge["criteria"]["shared"] == {"count": 10, "mean_score": 1.0, "verdicts": {"pass": 10}}
    kept = sum(row["count"] for row in judge["criteria"].values())
    assert kept + judge["criteria_dropped"] == 10 * 31


def test_history_shows_each_criterion_under_its_evaluator(tmp_path):
    runs = tmp_path / "runs"
    with LLMServer(chat=grading) as server:
        path = suite(tmp_path, server)
        first = run_cli("run", path, "-o", runs / "first.jsonl", "-q")
        text = path.read_text().replace("output: {content: Lyon}", "output: {content: Paris}")
        path.write_text(text)
        second = run_cli("run", path, "-o", runs / "second.jsonl", "-q")
    assert first.returncode == 1 and second.returncode == 1, first.stderr + second.stderr  # c still fails the length check
    data = json.loads(run_cli("history", "--store", runs, "--format", "json").stdout)
    assert [run["evaluators"]["quality"]["criteria"]["correct"] for run in data["runs"]] == [
        {"count": 3, "mean_score": 2 / 3, "pass_rate": 2 / 3}, {"count": 3, "mean_score": 1.0, "pass_rate": 1.0},
    ]
    correct = data["trends"]["graded"]["evaluators"]["quality"]["criteria"]["correct"]
    assert correct == {"values": [2 / 3, 1.0], "first": 2 / 3, "last": 1.0, "change": 1.0 - 2 / 3}
    assert data["trends"]["graded"]["evaluators"]["checks"]["criteria"]["form.exact"]["values"] == [1 / 3, 2 / 3]
    table = run_cli("history", "--store", runs).stdout
    lines = table.splitlines()
    quality = next(i for i, line in enumerate(lines) if line.strip("│ ").startswith("quality "))
    assert "quality: correct" in lines[quality + 1] and "criterion" in lines[quality + 1] and "+0.333" in lines[quality + 1]
    assert "quality: concise" in lines[quality + 2]
    markdown = run_cli("history", "--store", runs, "--format", "markdown").stdout
    assert "| checks: form.exact | criterion | ▃▆ | 0.333 | 0.667 | +0.333 |" in markdown


def test_each_cell_of_a_matrix_run_has_its_own_criteria(tmp_path):
    (tmp_path / "agents.py").write_text("def paris(x):\n    return 'Paris'\n\n\ndef wordy(x):\n    return 'It is Paris, the lovely capital'\n")
    suite = write(tmp_path, "suite.yaml", """
name: cells
targets:
  short: {type: python, function: "agents:paris"}
  long: {type: python, function: "agents:wordy"}
evaluators:
  - name: checks
    type: composite
    evaluators:
      - {name: city, type: contains, reference: Paris}
      - {name: short, type: length, max: 3, unit: words}
cases:
  - {id: a, input: q}
  - {id: b, input: q}
""")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    summary = json.loads((tmp_path / "r.summary.json").read_text())
    cells = {cell["label"]: cell["evaluators"]["checks"]["criteria"] for cell in summary["cells"]}
    assert cells["short"]["short"] == {"count": 2, "mean_score": 1.0, "verdicts": {"pass": 2}}
    assert cells["long"]["short"] == {"count": 2, "mean_score": 0.0, "verdicts": {"fail": 2}}
    assert cells["long"]["city"] == cells["short"]["city"] == {"count": 2, "mean_score": 1.0, "verdicts": {"pass": 2}}
    assert summary["evaluators"]["checks"]["criteria"]["short"] == {"count": 4, "mean_score": 0.5, "verdicts": {"pass": 2, "fail": 2}}


def test_a_judge_inside_a_composite_has_its_criteria_under_its_own_name(tmp_path):
    write(tmp_path, "judges.py", """
        def rubric(payload):
            good = payload["candidate_answer"] == "Paris"
            return {"score": 1.0 if good else 0.5, "details": {"criteria": {"tone": {"score": 1.0}, "facts": {"score": 1.0 if good else 0.0}}}}
    """)
    suite = write(tmp_path, "suite.yaml", """
name: panel
evaluators:
  - name: panel
    type: composite
    evaluators:
      - {name: judge, type: python, function: "judges:rubric"}
      - {name: exact, type: equals, reference: Paris}
cases:
  - {id: a, output: Paris}
  - {id: b, output: Lyon}
""")
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "-q")
    assert done.returncode == 1, done.stderr
    criteria = json.loads((tmp_path / "r.summary.json").read_text())["evaluators"]["panel"]["criteria"]
    assert list(criteria) == ["judge", "exact", "judge.tone", "judge.facts"]
    assert criteria["judge.facts"] == {"count": 2, "mean_score": 0.5, "verdicts": {"pass": 1, "fail": 1}}
    assert criteria["judge.tone"] == {"count": 2, "mean_score": 1.0, "verdicts": {"pass": 2}}
    assert criteria["judge"] == {"count": 2, "mean_score": 0.75, "verdicts": {"pass": 1, "partial": 1}}


def test_history_from_a_sql_store_shows_each_criterion_too(tmp_path):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with LLMServer(chat=grading) as server:
        path = suite(tmp_path, server)
        first = run_cli("run", path, "--store", store, "-q")
        path.write_text(path.read_text().replace("output: {content: Lyon}", "output: {content: Paris}"))
        second = run_cli("run", path, "--store", store, "-q")
    assert first.returncode == 1 and second.returncode == 1, first.stderr + second.stderr
    data = json.loads(run_cli("history", "--store", store, "--format", "json").stdout)
    assert [run["evaluators"]["quality"]["criteria"]["correct"] for run in data["runs"]] == [
        {"count": 3, "mean_score": 2 / 3, "pass_rate": 2 / 3}, {"count": 3, "mean_score": 1.0, "pass_rate": 1.0},
    ]
