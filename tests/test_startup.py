"""Start-up: a run imports, and builds the pydantic models of, only the evaluator and target types its suite uses;
a live run loads only the HTTP transport its requests take, before its case threads start.

Each check runs in a fresh interpreter and reads its `sys.modules`: what a process imported is
what its start-up paid for. (Structural, not timed: timings on a shared machine are noise.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import read_jsonl, write

# Never needed by a suite of field_accuracy evaluators: other types, and what only they use.
NOT_FOR_FIELD_ACCURACY = [
    "agenteval.evaluators.text", "agenteval.evaluators.model", "agenteval.evaluators.tools",
    "agenteval.evaluators.composite", "agenteval.evaluators.geometry", "agenteval.evaluators.line_items",
    "agenteval.evaluators.confusion", "agenteval.evaluators.python_function",
    "httpx", "jinja2", "jsonschema", "shapely", "scipy",
]


def field_suite(folder: Path) -> Path:
    """field_accuracy in the suite and as a case-level evaluator in a JSONL cases file."""
    write(folder, "cases.jsonl", "\n".join(json.dumps(case) for case in [
        {"id": "a", "expected": {"total": 10}, "output": {"total": 10}},
        {"id": "b", "expected": {"total": 10, "name": "Acme"}, "output": {"total": 12, "name": "Acme"},
         "evaluators": [{"type": "field_accuracy", "name": "name", "fields": [{"path": "name", "match": "exact"}]}]},
    ]) + "\n")
    return write(folder, "suite.yaml", """
        name: fields-only
        evaluators:
          - type: field_accuracy
            fields:
              - {path: total, match: numeric_tolerance, tolerance: 0.5}
        cases: cases.jsonl
    """)


def modules_after(code: str, *args: object) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (which must not print)."""
    done = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))", *map(str, args)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def loaded(modules: set[str], prefixes: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_loading_a_field_accuracy_suite_imports_that_evaluator_type_only(tmp_path):
    modules = modules_after(
        "import sys\n"
        "import agenteval.runner, agenteval.results\n"
        "from agenteval.suite.loader import load_suite\n"
        "suite = load_suite(sys.argv[1])\n"
        "assert [len(suite.evaluators_for(case)) for case in suite.iter_cases()] == [1, 2]",
        field_suite(tmp_path),
    )
    evaluators = sorted(m for m in modules if m.startswith("agenteval.evaluators"))
    # base, and the `transform:` key every evaluator has (its engines, jinja2 or a module, load on use)
    assert evaluators == [
        "agenteval.evaluators", "agenteval.evaluators.base", "agenteval.evaluators.fields", "agenteval.evaluators.transform",
    ]
    assert loaded(modules, NOT_FOR_FIELD_ACCURACY) == []
    assert "agenteval.plugins" not in modules  # a suite of built-in types reads no entry points
    assert "agenteval.evaluators.plugin_registry" not in modules


def run_modules(suite: Path, out: Path, *options: str) -> set[str]:
    """The modules `agenteval run SUITE -o OUT -q OPTIONS` imported (exit 1: case b fails its total)."""
    return modules_after(
        "import runpy, sys\n"
        "sys.argv = ['agenteval', 'run', sys.argv[1], '-o', sys.argv[2], '-q', *sys.argv[3:]]\n"
        "try:\n"
        "    runpy.run_module('agenteval', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 1, exit.code\n",
        suite, out, *options,
    )


def test_a_field_accuracy_run_imports_no_other_evaluator_family(tmp_path):
    suite, out = field_suite(tmp_path), tmp_path / "out.jsonl"
    modules = run_modules(suite, out)
    results = [(line["case_id"], line["score"], line["verdict"]) for line in read_jsonl(out)]
    assert results == [("a", 1.0, "pass"), ("b", 0.5, "fail")]
    assert "agenteval.evaluators.fields" in modules
    assert loaded(modules, NOT_FOR_FIELD_ACCURACY) == []


def target_modules(*names: str) -> list[str]:
    from agenteval.targets import TYPES

    return sorted(TYPES[name].partition(":")[0] for name in names)


def test_a_run_of_recorded_answers_imports_no_other_target_type(tmp_path):
    """No HTTP client for vendors' APIs, no tool loop, no vendor type: only `recorded`."""
    from agenteval.targets import TYPES

    suite, out = field_suite(tmp_path), tmp_path / "out.jsonl"
    modules = run_modules(suite, out)
    assert len(read_jsonl(out)) == 2
    assert loaded(modules, ["agenteval.targets"]) == ["agenteval.targets", "agenteval.targets.base", "agenteval.targets.model_entries",
                                                      "agenteval.targets.recorded"]
    assert loaded(modules, target_modules(*TYPES) + ["agenteval.agents.loop", "agenteval.endpoints.messages_api"]) == \
        target_modules("recorded")


def test_a_suite_imports_the_target_and_model_types_it_names(tmp_path):
    write(tmp_path, "cases.jsonl", json.dumps({"id": "a", "input": "q", "expected": "yes"}) + "\n")
    suite = write(tmp_path, "suite.yaml", """
        name: vendors
        models:
          flash: {type: gemini, model: gemini-2.5-flash, api_key_env: GEMINI_KEY}
        target: {type: anthropic, model: claude, api_key_env: CLAUDE_KEY, messages: [{role: user, content: "{{ input }}"}]}
        evaluators:
          - {type: equals}
        cases: cases.jsonl
    """)
    modules = modules_after(
        "import os, sys\nos.environ.update(GEMINI_KEY='g', CLAUDE_KEY='c')\nfrom agenteval.suite.loader import load_suite\n"
        "suite = load_suite(sys.argv[1]).suite\n"
        "assert (suite.target.type, suite.models['flash'].type) == ('anthropic', 'gemini'), suite",
        suite,
    )
    from agenteval.targets import TYPES

    assert loaded(modules, target_modules(*TYPES)) == target_modules("anthropic", "gemini", "recorded")


def test_a_repeated_field_accuracy_run_imports_no_numpy(tmp_path):
    """`--repeat`: pass@k and pass^k are exact integer arithmetic; numpy (70 ms) is for paired statistics."""
    suite, out = field_suite(tmp_path), tmp_path / "out.jsonl"
    modules = run_modules(suite, out, "--repeat", "3")
    assert len(read_jsonl(out)) == 6
    summary = json.loads(out.with_name("out.summary.json").read_text())
    assert summary["repeats"]["pass_at_k"] == {"1": 0.5, "2": 0.5, "3": 0.5}  # a passes every time, b never
    assert loaded(modules, ["numpy", "agenteval.statistics", *NOT_FOR_FIELD_ACCURACY]) == []


def test_a_case_level_type_is_imported_when_the_cases_file_names_it(tmp_path):
    write(tmp_path, "cases.jsonl", json.dumps(
        {"id": "a", "expected": "yes", "output": "yes", "evaluators": [{"type": "equals"}]}
    ) + "\n")
    suite = write(tmp_path, "suite.yaml", """
        name: mixed
        evaluators:
          - type: field_accuracy
            fields: [{path: x}]
        cases: cases.jsonl
    """)
    modules = modules_after(
        "import sys\nfrom agenteval.suite.loader import load_suite\n"
        "suite = load_suite(sys.argv[1])\n"
        "assert [e.type for c in suite.iter_cases() for e in suite.evaluators_for(c)] == ['field_accuracy', 'equals']",
        suite,
    )
    assert "agenteval.evaluators.text.rules" in modules
    assert loaded(modules, ["agenteval.evaluators.model", "agenteval.evaluators.tools", "agenteval.evaluators.text.toxicity"]) == []


def test_the_help_imports_no_evaluator_and_no_pydantic():
    modules = modules_after(
        "import sys\nfrom agenteval.cli import app\nsys.argv = ['agenteval', '--help']\n"
        "try:\n    app()\nexcept SystemExit as exit:\n    assert exit.code == 0"
    )
    assert loaded(modules, ["agenteval.evaluators", "agenteval.suite", "pydantic"]) == []


def test_a_command_line_builds_the_options_of_its_own_command_only():
    import typer.main

    from agenteval.cli import _app_for, app

    names = sorted(typer.main.get_command(app).commands)
    assert {"run", "validate", "report", "import", "feedback", "evaluators"} <= set(names)
    for name in names:
        assert sorted(typer.main.get_command(_app_for([name, "--help"])).commands) == [name]
    for line in ([], ["--help"], ["--version"], ["rn", "suite.yaml"], ["suite.yaml"]):
        assert _app_for(line) is app  # the top-level help, --version, and "No such command" with its suggestion


def test_each_command_says_and_does_the_same_with_only_itself_built(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from agenteval.cli import _app_for, _plain_argument_help, app

    monkeypatch.chdir(tmp_path)  # (`run` alone looks for a suite in the current folder: there is none)
    _plain_argument_help()  # (as `main` does)
    runner = CliRunner()
    lines = [[name, "--help"] for name in ("run", "validate", "schema", "report", "compare", "init", "history", "view",
                                            "evaluators", "import", "feedback")]
    lines += [["import", "promptfoo", "--help"], ["feedback", "--help"], ["run", "--bogus", "x"], ["run"], ["schema", "suite"]]
    for line in lines:
        whole = runner.invoke(app, line, prog_name="agenteval")
        alone = runner.invoke(_app_for(line), line, prog_name="agenteval")
        assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output), line
        assert whole.output.strip(), line
    assert "no suite.yaml in the current folder" in runner.invoke(_app_for(["run"]), ["run"], prog_name="agenteval").output
    assert "Usage: agenteval run [OPTIONS] [SUITE.yaml|DIR]" in runner.invoke(_app_for(["run", "--help"]), ["run", "--help"], prog_name="agenteval").output


def test_a_command_ends_without_the_collector_walking_what_it_built(tmp_path):
    """The exit: every object is frozen out of the collector's last walk, after the other exit
    handlers, and the command's files and exit code are whole."""
    suite = field_suite(tmp_path)
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'frozen at exit: {gc.get_freeze_count()}\\n'))  # (runs after main's)\n"
        "from agenteval.cli import main\n"
        "sys.argv = ['agenteval', 'run', sys.argv[1], '-o', sys.argv[2], '-q']\n"
        "main()\n"
    )
    out = tmp_path / "r.jsonl"
    done = subprocess.run([sys.executable, "-c", probe, str(suite), str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr  # case b fails its `name` check
    frozen = int(done.stderr.rsplit("frozen at exit: ", 1)[1].split()[0])
    assert frozen > 10_000  # start-up alone makes tens of thousands of objects
    assert [line["case_id"] for line in read_jsonl(out)] == ["a", "b"]
    assert json.loads(out.with_suffix(".summary.json").read_text())["counts"]["total"] == 2


LIVE_RUN = (
    "import runpy, sys, threading\n"
    "late = []\n"
    "class Finder:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if threading.current_thread() is not threading.main_thread():\n"
    "            late.append(name)\n"
    "sys.meta_path.insert(0, Finder())\n"
    "sys.argv = ['agenteval', 'run', sys.argv[1], '-o', sys.argv[2], '-q']\n"
    "try:\n"
    "    runpy.run_module('agenteval', run_name='__main__')\n"
    "except SystemExit as exit:\n"
    "    assert exit.code in (0, 1), exit.code\n"
    "assert late == [], late  # the case threads' first requests import nothing: it was loaded before them\n"
)


MESSAGES = "messages: [{role: user, content: 'Q: {{ input.question }}'}]"  # a template of lookups: filled in without jinja2


def live_suite(folder: Path, target: str, cases: int = 20) -> Path:
    write(folder, "cases.jsonl", "".join(json.dumps({"id": f"q{i}", "input": {"question": f"question {i}"}, "expected": "echo"}) + "\n"
                                         for i in range(cases)))
    return write(folder, "suite.yaml", f"""
        name: live
        target: {target}
        evaluators: [{{type: contains, path: content, reference_path: ''}}]
        cases: cases.jsonl
    """)


def without_proxies(monkeypatch) -> None:
    """The machine's own proxy settings (`*_proxy`, `no_proxy`) out of the runs' environment."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


def test_a_live_run_over_plain_http_imports_no_httpx_and_its_threads_import_nothing(tmp_path, monkeypatch):
    # http.client carries plain JSON to an http:// URL; httpx (about 0.13 s of CPU to import) is left out
    from llm_server import LLMServer

    without_proxies(monkeypatch)
    with LLMServer() as server:
        monkeypatch.setenv("LIVE_BASE_URL", server.base_url)  # (read from the environment, as a suite usually has it)
        suite = live_suite(tmp_path, f"{{type: openai, base_url: '${{LIVE_BASE_URL}}', model: m, concurrency: 8, {MESSAGES}}}")
        modules = modules_after(LIVE_RUN, suite, tmp_path / "out.jsonl")
        assert server.count("/chat/completions") == 20
    assert [line["verdict"] for line in read_jsonl(tmp_path / "out.jsonl")] == ["pass"] * 20
    assert "agenteval.endpoints.plain_http" in modules and "http.client" in modules
    assert loaded(modules, ["httpx", "httpcore", "h11", "jinja2"]) == []


def test_a_live_run_that_needs_httpx_has_it_loaded_before_its_threads_start(tmp_path, monkeypatch):
    # a proxy in the environment: every request goes through httpx, which is loaded before the threads
    from llm_server import LLMServer

    without_proxies(monkeypatch)
    with LLMServer() as server, LLMServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        suite = live_suite(tmp_path, f"{{type: openai, base_url: '{server.base_url}', model: m, concurrency: 8, {MESSAGES}}}")
        modules = modules_after(LIVE_RUN, suite, tmp_path / "out.jsonl")
        assert server.count() == 0 and proxy.count() == 20  # (the stand-in proxy answers as the server would)
        assert all(request.path.startswith(server.url) for request in proxy.received)  # a proxy's request line: the whole URL
    assert "httpx" in modules
    assert [line["verdict"] for line in read_jsonl(tmp_path / "out.jsonl")] == ["pass"] * 20


def test_a_re_run_answered_from_the_cache_loads_no_transport_it_would_not_use(tmp_path, monkeypatch):
    # The same suite again, now with a proxy in the environment: had a request been sent, httpx would
    # have carried it (and been loaded first); every answer comes from the cache, so neither happens.
    from llm_server import LLMServer

    without_proxies(monkeypatch)
    with LLMServer() as server:
        suite = live_suite(tmp_path, f"{{type: openai, base_url: '{server.base_url}', model: m, temperature: 0, concurrency: 8, {MESSAGES}}}")
        modules_after(LIVE_RUN, suite, tmp_path / "fetched.jsonl")
        assert server.count("/chat/completions") == 20
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # (nothing listens there)
        modules = modules_after(LIVE_RUN, suite, tmp_path / "cached.jsonl")
        assert server.count("/chat/completions") == 20
    lines = read_jsonl(tmp_path / "cached.jsonl")
    assert [line["verdict"] for line in lines] == ["pass"] * 20 and all(line["usage"]["cached"] for line in lines)
    assert loaded(modules, ["httpx", "httpcore", "h11", "agenteval.endpoints.plain_http"]) == []
