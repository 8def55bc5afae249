"""Everyday use of suites: `expected` only where an evaluator reads it, extras checked when the
suite loads, every problem of a suite in one pass, and timings that do not charge imports to a case."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import run_cli, write
from llm_server import LLMServer

import agenteval
from agenteval.suite.loader import load_suite

NO_EXPECTED = "the case has no `expected`"

# --- item 10: `expected` is optional -----------------------------------------------------------

TRAJECTORY = {"messages": [{"role": "assistant", "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"order": "A-1"}'}},
]}]}

# (evaluator, a candidate answer, an expected answer that the candidate fully matches)
READS_EXPECTED = {
    "field_accuracy": ({"type": "field_accuracy", "fields": [{"path": "a"}]}, {"a": "x"}, {"a": "x"}),
    "field_accuracy_fuzzy": ({"type": "field_accuracy", "fields": [{"path": "a", "match": "fuzzy"}]}, {"a": "x"}, {"a": "x"}),
    "field_confusion": ({"type": "field_confusion", "fields": ["a", "b"]}, {"a": "x", "b": 1}, {"a": "x", "b": 1}),
    "line_items": ({"type": "line_items", "path": "items"}, {"items": [{"description": "pen", "qty": 2}]},
                   {"items": [{"description": "pen", "qty": 2}]}),
    "iou_score": ({"type": "iou_score", "path": "box"}, {"box": [0, 0, 10, 10]}, {"box": [0, 0, 10, 10]}),
    "iou_score_whole_answer": ({"type": "iou_score"}, [0, 0, 10, 10], [0, 0, 10, 10]),
    "distance": ({"type": "distance", "path": "pt", "max_distance": 5}, {"pt": [1, 1]}, {"pt": [1, 1]}),
    "tool_calls": ({"type": "tool_calls"}, TRAJECTORY, {"tool_calls": [{"name": "lookup", "arguments": {"order": "A-1"}}]}),
    "equals": ({"type": "equals", "path": "a"}, {"a": "yes"}, {"a": "yes"}),
    "equals_whole_answer": ({"type": "equals"}, "yes", "yes"),
    "contains_reference_path": ({"type": "contains", "path": "a", "reference_path": "ref"}, {"a": "a yes b"}, {"ref": "yes"}),
    "starts_with": ({"type": "starts_with", "path": "a"}, {"a": "yes sir"}, {"a": "yes"}),
    "text_similarity": ({"type": "text_similarity", "path": "a"}, {"a": "the same words"}, {"a": "the same words"}),
    "keyword_coverage": ({"type": "keyword_coverage", "path": "a", "keywords_path": "expected.kw"}, {"a": "refund sent"},
                         {"kw": ["refund"]}),
}


def scored(evaluator, output, expected=None, **case):
    """The one evaluator result of a one-case run through the real loader and runner."""
    record = {"id": "c1", "output": output, **case}
    if expected is not None:
        record["expected"] = expected
    [result] = list(agenteval.evaluate([record], [evaluator]))
    [evaluated] = result.evaluator_results
    return evaluated


@pytest.mark.parametrize("name", list(READS_EXPECTED))
def test_an_evaluator_that_reads_expected_gives_a_case_without_it_a_clear_miss(name):
    evaluator, output, expected = READS_EXPECTED[name]
    assert scored(evaluator, output, expected).verdict == "pass"  # the same config and answer, with a reference
    missing = scored(evaluator, output)
    assert (missing.verdict, missing.score, missing.error) == ("fail", 0.0, None)
    assert len(missing.misses) == 1 and NO_EXPECTED in missing.misses[0], missing.misses


def test_a_case_without_expected_is_not_counted_in_the_dataset_confusion_metrics():
    missing = scored(READS_EXPECTED["field_confusion"][0], {"a": "x", "b": 1})
    assert missing.details is None  # no row of false positives for answers nobody can check


def test_evaluators_that_read_no_reference_need_no_expected(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: no-reference
        evaluators:
          - {type: length, path: reply, min: 5, max: 100}
          - {type: regex, path: reply, pattern: 'A-\\d+'}
          - {type: toxicity, path: reply, terms: [idiot]}
          - {type: json_valid, path: data}
          - {type: contains, path: reply, reference: order}
        cases:
          - {id: polite, output: {reply: "Your order A-12 is on its way.", data: '{"ok": true}'}}
          - {id: rude, output: {reply: "You idiot, no order.", data: "{"}}
    """)
    loaded = load_suite(suite)
    assert [case.expected for case in loaded.iter_cases()] == [None, None]
    done = run_cli("validate", suite)
    assert done.returncode == 0 and "ok (2 cases, 5 evaluators)" in done.stdout, done.stderr
    results = {result.case_id: result for result in agenteval.run_suite(suite)}
    assert results["polite"].verdict == "pass" and results["polite"].score == 1.0
    assert [r.verdict for r in results["rude"].evaluator_results] == ["pass", "fail", "fail", "fail", "pass"]


def test_a_code_judge_and_a_python_function_see_a_null_reference_and_decide(tmp_path):
    write(tmp_path, "judge.py", """
        import json, sys
        payload = json.load(sys.stdin)
        has = "reference_answer" in payload and payload["reference_answer"] is not None
        print(json.dumps({"score": 1.0 if has else 0.0, "misses": [] if has else ["no reference given"]}))
    """)
    write(tmp_path, "judges.py", """
        def judge(payload):
            has = payload.get("reference_answer") is not None
            return {"score": 1.0 if has else 0.0, "misses": [] if has else ["no reference given"]}
    """)
    for evaluator in ({"type": "code_judge", "command": [sys.executable, "judge.py"]}, {"type": "python", "function": "judges:judge"}):
        [result] = list(agenteval.evaluate([{"id": "c1", "output": "x"}], [evaluator], base_dir=tmp_path))
        [judged] = result.evaluator_results
        assert (judged.verdict, judged.misses) == ("fail", ["no reference given"]), judged
        [result] = list(agenteval.evaluate([{"id": "c1", "output": "x", "expected": "y"}], [evaluator], base_dir=tmp_path))
        assert result.evaluator_results[0].verdict == "pass"


def test_a_rubric_judge_needs_no_expected_and_is_told_there_is_no_reference():
    reply = json.dumps({"polite": {"reasoning": "Polite.", "score": "pass"}})
    with LLMServer(chat=lambda body: {"role": "assistant", "content": reply}) as server:
        judge = {"type": "llm_judge", "base_url": server.base_url, "model": "grader", "cache": False,
                 "criteria": [{"name": "polite", "description": "Polite.", "scale": "pass_fail"}]}
        judged = scored(judge, "Thank you for waiting.")
        prompt = server.received[0].body["messages"][1]["content"]
    assert judged.verdict == "pass"
    assert "# Reference answer\n(none)" in prompt


def test_semantic_similarity_without_expected_is_a_miss_and_asks_no_server():
    with LLMServer() as server:
        evaluator = {"type": "semantic_similarity", "base_url": server.base_url, "model": "embedder", "cache": False}
        missing = scored(evaluator, "some words")
        assert (missing.verdict, missing.misses) == ("fail", [NO_EXPECTED])
        assert server.count("/embeddings") == 0
        assert scored(evaluator, "some words", "some words").verdict == "pass"


# --- item 3: a suite that needs a missing extra is refused when it loads ------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
RUNTIME_EXTRAS = ("geometry", "text", "store", "otel", "ray", "javascript", "view", "mcp", "pandas", "bedrock", "azure", "gemini")
# The top-level modules each runtime extra installs, as `import` names them.
EXTRA_MODULES = {
    "geometry": ("shapely", "scipy"),
    "text": ("vaderSentiment", "afinn", "better_profanity"),
    "store": ("sqlalchemy", "psycopg"),
    "otel": ("opentelemetry",),
    "ray": ("ray",),
    "javascript": ("quickjs",),
    "view": ("starlette", "uvicorn"),
    "mcp": ("mcp",),
    "pandas": ("pandas",),
    "bedrock": ("botocore",),
    "azure": ("azure",),
    "gemini": ("google.auth",),
}
# Run at interpreter start (a sitecustomize on PYTHONPATH): a None in sys.modules is Python's own
# mark of a module that cannot be imported, so `import shapely` raises ModuleNotFoundError and
# importlib.util.find_spec("shapely") returns None, as where the package was never installed.
BLOCKER = '''
import os, sys

for name in filter(None, os.environ.get("AGENTEVAL_TEST_NOT_INSTALLED", "").split(",")):
    sys.modules[name] = None
'''


def without(tmp_path: Path, *args: str | Path, missing: tuple[str, ...]):
    """`agenteval ARGS` in a real process where the `missing` packages are not installed."""
    import os
    import subprocess

    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "AGENTEVAL_TEST_NOT_INSTALLED": ",".join(missing)}
    return subprocess.run([sys.executable, "-m", "agenteval", *map(str, args)], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


def test_the_blocker_makes_a_package_missing_as_for_a_real_install(tmp_path):
    import os
    import subprocess

    without(tmp_path, "--version", missing=())  # writes the sitecustomize
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "AGENTEVAL_TEST_NOT_INSTALLED": "shapely"}
    code = "import importlib.util, sys\nprint(importlib.util.find_spec('shapely'))\ntry:\n    import shapely.geometry\nexcept ImportError as e:\n    print(type(e).__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.split() == ["None", "ModuleNotFoundError"], done.stderr


def test_a_suite_needing_a_missing_extra_fails_at_load_naming_the_evaluator_and_the_install(tmp_path):
    suite = EXAMPLES / "support-agent" / "suite.yaml"
    line = next(n for n, text in enumerate(suite.read_text().splitlines(), 1) if "- name: tone" in text)
    expected = (
        f"{suite}:{line}: evaluators[2].analyzer: evaluator 'tone' (sentiment): sentiment (analyzer: vader) needs "
        "vaderSentiment, which is not installed: pip install 'agenteval[text]'"
    )
    checked = without(tmp_path, "validate", suite, missing=EXTRA_MODULES["text"])
    assert checked.returncode == 2
    assert checked.stderr.splitlines() == [expected, f"{suite}: 1 error"]
    ran = without(tmp_path, "run", suite, "-o", tmp_path / "r.jsonl", missing=EXTRA_MODULES["text"])
    assert ran.returncode == 2 and expected in ran.stderr, ran.stderr
    assert "Traceback" not in ran.stderr and not (tmp_path / "r.jsonl").exists()


def test_an_mcp_server_without_the_mcp_extra_is_refused_at_load_naming_the_install(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: t\n"
        "target: {type: mcp, command: [python, -m, mcp_server_time], tool: get_current_time}\n"
        "evaluators: [{type: contains, reference: x}]\n"
        "cases: [{id: a, input: {timezone: UTC}}]\n"
    )
    done = without(tmp_path, "validate", suite, missing=EXTRA_MODULES["mcp"])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"{suite}:2: target: MCP servers need the MCP Python SDK, which is not installed: pip install 'agenteval[mcp]'")
    assert without(tmp_path, "validate", suite, missing=()).returncode == 0


@pytest.mark.parametrize(("target", "expected"), [
    ("{type: bedrock, model: amazon.nova-lite-v1:0, region: us-east-1}",
     "target: the bedrock target needs botocore, which is not installed: pip install 'agenteval[bedrock]'"),
    ("{type: azure_openai, resource: contoso, deployment: gpt, entra_id: true}",
     "target: entra_id: true needs azure-identity, which is not installed: pip install 'agenteval[azure]'"),
], ids=["bedrock", "azure"])
def test_a_vendor_target_without_its_extra_is_refused_at_load_naming_the_install(tmp_path, target, expected):
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: t\ntarget: {target}\nevaluators: [{{type: contains, reference: x}}]\ncases: [{{id: a, input: hi}}]\n")
    extra = "bedrock" if "bedrock" in target else "azure"
    done = without(tmp_path, "validate", suite, missing=EXTRA_MODULES[extra])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[0] == f"{suite}:2: {expected}"
    assert without(tmp_path, "validate", suite, missing=()).returncode == 0


def test_a_missing_extra_is_named_at_each_evaluator_that_needs_it_suite_and_case_level(tmp_path):
    suite = EXAMPLES / "layout" / "suite.yaml"
    done = without(tmp_path, "validate", suite, missing=EXTRA_MODULES["geometry"])
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[-1] == f"{suite}: 3 errors"
    assert lines[0] == (
        f"{EXAMPLES / 'layout' / 'cases.jsonl'}:2: evaluators[0].format: evaluator 'stamp' (iou_score): "
        "exact polygon IoU needs shapely, which is not installed: pip install 'agenteval[geometry]'"
    )
    for name in ("regions_optimal", "regions_by_label"):
        assert any(f"evaluator '{name}' (iou_score): matching: optimal needs scipy, which is not installed: "
                   "pip install 'agenteval[geometry]'" in line for line in lines), lines


def test_an_extra_inside_a_composite_names_the_inner_evaluator(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: nested
        evaluators:
          - name: tone
            type: composite
            evaluators:
              - {name: mood, type: sentiment, analyzer: afinn}
              - {name: short, type: length, max: 100}
        cases: [{id: a, output: fine}]
    """)
    done = without(tmp_path, "validate", suite, missing=EXTRA_MODULES["text"])
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"{suite}:6: evaluators[0].evaluators[0].analyzer: evaluator 'mood' (sentiment): sentiment (analyzer: afinn) "
        "needs afinn, which is not installed: pip install 'agenteval[text]'"
    )


def _extras_named(suite: Path) -> tuple[str, ...]:
    """The extras an example's header comment names (`# Extras: text, ...` or `# Extras: none`)."""
    header = next(line for line in suite.read_text().splitlines()[:3] if line.startswith("# Extras:"))
    first = header.removeprefix("# Extras:").strip().split(",")[0].split()[0]
    return () if first == "none" else (first,)


@pytest.mark.parametrize("example", sorted(path.parent.name for path in EXAMPLES.glob("*/suite.yaml")))
def test_each_example_names_its_extras_and_the_core_install_agrees(tmp_path, example):
    suite = EXAMPLES / example / "suite.yaml"
    extras = _extras_named(suite)
    every_module = tuple(module for modules in EXTRA_MODULES.values() for module in modules)
    core = without(tmp_path, "validate", suite, missing=every_module)
    if not extras:
        assert core.returncode == 0 and "ok (" in core.stdout, core.stderr
    else:
        assert core.returncode == 2
        assert all(f"pip install 'agenteval[{extra}]'" in core.stderr for extra in extras), core.stderr
        assert f'pip install -e ".[{extras[0]}]"' in suite.read_text().splitlines()[1]
        needed = tuple(module for extra in extras for module in EXTRA_MODULES[extra])
        fine = without(tmp_path, "validate", suite, missing=tuple(m for m in every_module if m not in needed))
        assert fine.returncode == 0, fine.stderr  # the extras it names are all it needs
    readme = (EXAMPLES.parent / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith(f"| `examples/{example}/` |"))
    assert row.split("|")[3].strip().startswith(f"`{extras[0]}`" if extras else "core")


def test_the_all_extra_installs_every_runtime_extra_and_the_readme_gives_it():
    import tomllib

    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    assert sorted(extras["all"]) == sorted(requirement for name in RUNTIME_EXTRAS for requirement in extras[name])
    readme = (EXAMPLES.parent / "README.md").read_text()
    assert 'pip install -e ".[all]"' in readme
    assert set(RUNTIME_EXTRAS) == set(EXTRA_MODULES)
    assert [name for name in RUNTIME_EXTRAS if f'`pip install -e ".[{name}]"`' not in readme] == []  # the README's table names each


def test_the_core_install_runs_an_example_that_needs_no_extra(tmp_path):
    every_module = tuple(module for modules in EXTRA_MODULES.values() for module in modules)
    done = without(tmp_path, "run", EXAMPLES / "invoices" / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q", missing=every_module)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr  # five of its eight cases fail on purpose
    assert "invoice-extraction: 8 cases, 3 passed, 5 failed, 0 errored" in done.stderr


# --- item 9: every problem of a suite in one pass, each at its own line -------------------------

def problems(suite: Path) -> tuple[int, list[str]]:
    done = run_cli("validate", suite)
    return done.returncode, done.stderr.splitlines()


def test_a_duplicate_name_is_reported_beside_an_unknown_type(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        evaluators:
          - {name: a, type: length, min: 1}
          - {name: a, type: regex, pattern: x}
          - {name: b, type: lenght}
        cases:
          - id: c1
            output: x
            evaluators:
              - {name: own, type: length, max: 5}
              - {name: own, type: nope}
    """)
    code, lines = problems(suite)
    assert code == 2
    assert lines[:2] == [
        f"{suite}:4: evaluators[1].name: two evaluators are named 'a'; give each a unique `name`",
        f"{suite}:5: evaluators[2].type: unknown evaluator type 'lenght'; did you mean 'length'? (known: "
        + lines[1].split("(known: ", 1)[1],
    ]
    assert lines[2] == f"{suite}:11: cases[0].evaluators[1].name: two evaluators are named 'own'; give each a unique `name`"
    assert lines[3].startswith(f"{suite}:11: cases[0].evaluators[1].type: unknown evaluator type 'nope'")
    assert lines[4:] == [f"{suite}: 4 errors"]


def test_every_undefined_endpoint_is_reported_at_its_own_line(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        models:
          local: {base_url: "http://127.0.0.1:9/v1", model: m}
        target: {type: openai, endpoint: locl}
        evaluators:
          - name: judge
            type: llm_judge
            endpoint: grader
            criteria: [{name: ok, description: fine}]
          - name: broken
            type: llm_judge
            endpoint: other
          - name: group
            type: composite
            evaluators:
              - {type: semantic_similarity, endpoint: embedder}
              - {type: length, max: 5}
        cases: [{id: a, input: hi}]
    """)
    code, lines = problems(suite)
    assert code == 2
    assert lines == [
        f"{suite}:4: target.endpoint: 'locl' is not defined under `models:` (known: local); did you mean 'local'?",
        f"{suite}:8: evaluators[0].endpoint: 'grader' is not defined under `models:` (known: local)",
        f"{suite}:10: evaluators[1].criteria: required key is missing",
        f"{suite}:12: evaluators[1].endpoint: 'other' is not defined under `models:` (known: local)",
        f"{suite}:16: evaluators[2].evaluators[0].endpoint: 'embedder' is not defined under `models:` (known: local)",
        f"{suite}: 5 errors",
    ]


def test_missing_scripts_and_modules_are_warnings_at_their_lines(tmp_path):
    write(tmp_path, "judges/real.py", "def judge(payload):\n    return 1.0\n")
    write(tmp_path, "extract.py", "")
    suite = write(tmp_path, "s.yaml", """
        name: demo
        target: {type: command, command: python extract.py --out=a/b http://x/y}
        evaluators:
          - {name: gone, type: code_judge, command: python judges/x.py --strict}
          - {name: here, type: code_judge, command: [python, judges/real.py, data/missing.json]}
          - {name: tool, type: code_judge, command: [./no-such-program-4711, judges/real.py]}
          - {name: fn, type: python, function: "judges:judge"}
          - {name: fn2, type: python, function: "judges.real:judge"}
          - {name: fn3, type: python, function: "json:loads"}
        cases:
          - id: a
            expected: 1
            evaluators:
              - {name: own, type: code_judge, command: "sh ./score.sh"}
    """)
    done = run_cli("validate", suite)
    assert done.returncode == 0, done.stderr
    assert "ok (1 case, 6 evaluators)" in done.stdout
    assert done.stderr.splitlines() == [
        f"{suite}:4: warning: evaluators[0].command: script 'judges/x.py' does not exist (looked for {tmp_path / 'judges/x.py'})",
        f"{suite}:6: warning: evaluators[2].command: program './no-such-program-4711' does not exist (looked for {tmp_path / 'no-such-program-4711'})",
        f"{suite}:7: warning: evaluators[3].function: module 'judges' does not exist: no judges.py next to the suite "
        f"(in {tmp_path}) and no installed module of that name",
        f"{suite}:14: warning: cases[0].evaluators[0].command: script './score.sh' does not exist (looked for {tmp_path / 'score.sh'})",
    ]
    (tmp_path / "judges.py").write_text("def judge(payload):\n    return 1.0\n")
    (tmp_path / "judges" / "x.py").write_text("")
    (tmp_path / "score.sh").write_text("")
    done = run_cli("validate", suite)
    assert done.stderr.splitlines() == [
        f"{suite}:6: warning: evaluators[2].command: program './no-such-program-4711' does not exist (looked for {tmp_path / 'no-such-program-4711'})"
    ]


def test_a_missing_command_target_script_is_a_warning(tmp_path):
    suite = write(tmp_path, "s.yaml", """
        name: demo
        target: {type: command, command: [python, extract.py]}
        evaluators: [{type: length, max: 5}]
        cases: [{id: a, input: hi}]
    """)
    done = run_cli("validate", suite)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        f"{suite}:2: warning: target.command: script 'extract.py' does not exist (looked for {tmp_path / 'extract.py'})"
    ]


# --- item 12: the `slowest` line does not charge first-use imports to the first case -----------

def test_first_use_imports_happen_before_the_first_case_is_timed(tmp_path):
    import statistics
    import subprocess

    import_time = subprocess.run(
        [sys.executable, "-c", "import time; t = time.perf_counter(); import numpy, scipy.optimize; print(time.perf_counter() - t)"],
        capture_output=True, text=True, timeout=120,
    )
    import_s = float(import_time.stdout)
    case = {"expected": {"boxes": [[0, 0, 10, 10], [20, 20, 30, 30]]}, "output": {"boxes": [[20, 20, 30, 30], [0, 0, 10, 10]]}}
    cases = "\n".join(json.dumps({"id": f"c{i}", **case}) for i in range(12))
    write(tmp_path, "cases.jsonl", cases + "\n")
    suite = write(tmp_path, "s.yaml", """
        name: same
        evaluators: [{type: iou_score, path: boxes, matching: optimal}]
        cases: cases.jsonl
    """)
    loads = subprocess.run(
        [sys.executable, "-c", f"import sys\nfrom agenteval.suite.loader import load_suite\nload_suite({str(suite)!r})\nprint('scipy' in sys.modules)"],
        capture_output=True, text=True, timeout=120,
    )
    assert loads.stdout.strip() == "False", loads.stderr  # `validate` stays quick: nothing is imported for a run
    done = run_cli("run", suite, "-o", tmp_path / "r.jsonl", "--workers", "1")
    assert done.returncode == 0, done.stderr
    durations = [json.loads(line)["duration_ms"] / 1000 for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    rest = statistics.median(durations[1:])
    assert durations[0] - rest < import_s / 2, (durations, import_s)
