"""`agenteval import` on a downloaded config: the config and the files beside it are data.

It never writes through a symlink or into a path it did not create, never reads a file outside
the config's folder, never writes a literal secret into a suite file, and an import that fails
leaves nothing behind (docs/reliability.md, "Importers")."""

from __future__ import annotations

import json
import os
import stat

import yaml

from conftest import read_jsonl, run_cli, write
from fault_suites import assert_no_traceback
from llm_server import LLMServer

CONFIG = """
description: "demo\\ntouch PWNED"
prompts: ["{{q}}"]
providers: [openai:gpt-4.1-mini]
env: {SOME_KEY: sk-env-value-123456}
tests:
  - vars: {q: hi}
    assert: [{type: contains, value: hi}]
"""


def _everything_under(folder) -> dict[str, str]:
    """Every regular file below `folder` (symlinks not followed), by relative path, as text."""
    found = {}
    for base, dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(base, name)
            if not os.path.islink(path):
                found[os.path.relpath(path, folder)] = open(path, encoding="utf-8", errors="replace").read()
    return found


def test_import_never_writes_through_a_symlink_in_its_output_folder(tmp_path):
    repo, home = tmp_path / "repo", tmp_path / "home"
    home.mkdir()
    config = write(repo, "promptfooconfig.yaml", CONFIG)
    (repo / "agenteval").mkdir()
    # a repository ships dangling links where the import writes: suite.yaml, cases.jsonl, .env
    for name, aim in (("suite.yaml", ".bash_aliases"), ("cases.jsonl", "cases"), (".env", "env")):
        os.symlink(f"../../home/{aim}", repo / "agenteval" / name)
    for force in ([], ["--force"]):
        done = run_cli("import", "promptfoo", config, *force)
        assert done.returncode == 2, done.stdout + done.stderr
        assert_no_traceback(done)
        assert list(home.iterdir()) == [], f"written through a link with {force}: {list(home.iterdir())}"
    assert "already exist" in run_cli("import", "promptfoo", config).stderr
    assert "not a regular file" in done.stderr and "not replaced, even with --force" in done.stderr
    assert sorted(os.listdir(repo / "agenteval")) == [".env", "cases.jsonl", "suite.yaml"]  # the links, left as they were
    assert all(os.path.islink(repo / "agenteval" / name) for name in os.listdir(repo / "agenteval"))

    # the output folder itself a link (to the user's home): refused, nothing written there
    linked = tmp_path / "linked"
    os.symlink(home, linked)
    done = run_cli("import", "promptfoo", config, "-o", linked)
    assert done.returncode == 2 and "is a symlink" in done.stderr, done.stderr
    assert list(home.iterdir()) == []

    # a fresh folder: made whole at once, with the usual permissions and no build folder left
    done = run_cli("import", "promptfoo", config, "-o", tmp_path / "fresh")
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path / "fresh")) == [".env", "cases.jsonl", "suite.yaml"]
    assert stat.S_IMODE(os.stat(tmp_path / "fresh" / ".env").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "fresh").st_mode) & 0o755 == 0o755
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".agenteval-import")]
    # replacing with --force in a real folder: the files are replaced, other files kept
    write(tmp_path / "fresh", "mine.txt", "keep me")
    done = run_cli("import", "promptfoo", config, "-o", tmp_path / "fresh", "--force")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "fresh" / "mine.txt").read_text() == "keep me"
    assert sorted(os.listdir(tmp_path / "fresh")) == [".env", "cases.jsonl", "mine.txt", "suite.yaml"]


def test_import_reads_no_file_outside_the_config_folder(tmp_path):
    secret = "PRIVATE-KEY-MATERIAL-xyz"
    write(tmp_path, "private/secret.txt", secret)
    write(tmp_path, "private/tests.yaml", f"- vars: {{q: {secret}}}\n")
    write(tmp_path, "private/schema.json", '{"type": "object"}')
    write(tmp_path, "private/check.py", "def get_assert(output, context):\n    return True\n")
    write(tmp_path, "beside.txt", secret)
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    os.symlink("../private/secret.txt", cfg / "link.txt")
    os.symlink("../private", cfg / "linked_dir")
    config = write(cfg, "promptfooconfig.yaml", f"""
        description: outside
        prompts:
          - file://../private/secret.txt
          - file://{tmp_path}/private/secret.txt
          - file://link.txt
          - file://../*.txt
          - file://linked_dir/*.txt
          - "inside {{{{q}}}}"
        providers: [openai:gpt-4.1-mini]
        defaultTest: file://../private/tests.yaml
        tests:
          - vars: {{question: file://../private/secret.txt, other: file://link.txt}}
            assert:
              - {{type: llm-rubric, value: file://../private/secret.txt}}
              - {{type: is-json, value: file://../private/schema.json}}
              - {{type: python, value: file://../private/check.py}}
              - {{type: contains, value: inside}}
          - file://../private/tests.yaml
          - file://linked_dir/tests.yaml
    """)
    done = run_cli("import", "promptfoo", config, "-o", tmp_path / "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_traceback(done)
    written = _everything_under(tmp_path / "out")
    assert sorted(written) == ["cases.jsonl", "suite.yaml"]
    assert not [name for name, text in written.items() if secret in text]
    assert secret not in done.stdout + done.stderr
    outside = [line for line in done.stderr.splitlines() if "outside the config's folder" in line]
    where = sorted(int(line.split("promptfooconfig.yaml:")[1].split(":")[0]) for line in outside)
    assert where == [3, 4, 5, 6, 7, 10, 12, 12, 14, 15, 16, 18, 19], done.stderr
    assert sum("through a symlink" in line for line in outside) == 4, outside  # link.txt twice, linked_dir/*.txt and /tests.yaml
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert suite["target"]["messages"] == [{"role": "user", "content": "inside {{input.q}}"}]  # the one prompt inside
    # --root widens the folder, by the user's own choice
    done = run_cli("import", "promptfoo", config, "-o", tmp_path / "wide", "--root", tmp_path)
    assert done.returncode == 0 and "outside the config's folder" not in done.stderr, done.stderr
    assert secret in (tmp_path / "wide" / "cases.jsonl").read_text()

    # AgentV: a tests file outside is one line, nothing written; a grader prompt outside is listed
    write(tmp_path, "av/tests.jsonl", json.dumps({"id": "t1", "input": "hi", "expected_output": "x"}) + "\n")
    eval_file = write(tmp_path, "av/evals/e.eval.yaml", "description: av\ntests: file://../tests.jsonl\n")
    done = run_cli("import", "agentv", eval_file, "-o", tmp_path / "out2")
    assert done.returncode == 2 and done.stderr.startswith("error: e.eval.yaml:2: tests file ../tests.jsonl is outside"), done.stderr
    assert not (tmp_path / "out2").exists()
    eval_file = write(tmp_path, "av/evals/g.eval.yaml", """
        tests:
          - id: t1
            input: hi
            assertions:
              - {name: r, type: llm-grader, prompt: ../../private/secret.txt}
              - {name: c, type: contains, value: hi}
    """)
    done = run_cli("import", "agentv", eval_file, "-o", tmp_path / "out3")
    assert done.returncode == 0, done.stderr
    assert "g.eval.yaml:5: tests[0].assertions[0].prompt: grader prompt ../../private/secret.txt is outside" in done.stderr
    assert not [name for name, text in _everything_under(tmp_path / "out3").items() if secret in text]
    # ... and from a tests file the eval names as `file://`: the message names that file as it is
    write(tmp_path, "av/evals/tests.jsonl", json.dumps({"id": "t1", "input": "hi", "expected_output": "x", "assertions": [
        {"name": "r", "type": "llm-grader", "prompt": "file://../../private/secret.txt"}, {"name": "c", "type": "contains", "value": "hi"}]}) + "\n")
    eval_file = write(tmp_path, "av/evals/h.eval.yaml", "description: av\ntests: file://tests.jsonl\n")
    done = run_cli("import", "agentv", eval_file, "-o", tmp_path / "out4")
    assert done.returncode == 0, done.stderr
    assert "av/evals/tests.jsonl:1: [1].assertions[0].prompt: grader prompt ../../private/secret.txt is outside" in done.stderr, done.stderr
    assert "file:" not in done.stderr and not [name for name, text in _everything_under(tmp_path / "out4").items() if secret in text]


def test_a_literal_secret_in_a_config_goes_to_the_private_env_file_never_a_suite(tmp_path):
    bearer, api_key, model_key = "sk-inline-HTTPKEY-888", "plain-value-777", "sk-literal-MODELKEY-999"
    with LLMServer() as server:
        config = write(tmp_path, "promptfooconfig.yaml", f"""
            description: inline keys
            prompts: ["{{{{q}}}}"]
            providers:
              - id: {server.url}/api
                label: my api
                config: {{method: POST, headers: {{Authorization: Bearer {bearer}, X-Api-Key: {api_key}, Accept: text/plain}}}}
              - id: openai:chat:gpt-test
                config: {{apiBaseUrl: {server.base_url}, apiKey: {model_key}}}
            tests: [{{vars: {{q: hi}}, assert: [{{type: contains, value: hi}}]}}]
        """)
        done = run_cli("import", "promptfoo", config, "-o", tmp_path / "out")
        assert done.returncode == 0, done.stdout + done.stderr
        secrets = (bearer, api_key, model_key)
        assert not [s for s in secrets if s in done.stdout + done.stderr]
        suite_files = {name: text for name, text in _everything_under(tmp_path / "out").items() if name != ".env"}
        assert sorted(suite_files) == ["cases.jsonl", "suite-http.yaml", "suite.yaml"]
        assert not [(name, s) for name, text in suite_files.items() for s in secrets if s in text]
        env = tmp_path / "out" / ".env"
        assert stat.S_IMODE(env.stat().st_mode) == 0o600
        assert env.read_text().splitlines() == [
            f"MY_API_AUTHORIZATION='{bearer}'", f"MY_API_X_API_KEY='{api_key}'", f"GPT_TEST_API_KEY='{model_key}'",
        ]
        http = yaml.safe_load((tmp_path / "out" / "suite-http.yaml").read_text())
        assert http["target"]["headers"] == {"Authorization": "Bearer ${MY_API_AUTHORIZATION}", "X-Api-Key": "${MY_API_X_API_KEY}",
                                             "Accept": "text/plain"}
        model = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())["target"]
        assert (model["api_key_env"], model["base_url"]) == ("GPT_TEST_API_KEY", server.base_url)  # no invented OPENAI_API_KEY
        # the suites run: the keys reach the server from .env, and no output holds them
        for name in ("suite.yaml", "suite-http.yaml"):
            run = run_cli("run", tmp_path / "out" / name, "-o", tmp_path / f"{name}.jsonl", "--no-cache")
            assert run.returncode in (0, 1), run.stdout + run.stderr
            assert not [s for s in secrets if s in run.stdout + run.stderr + (tmp_path / f"{name}.jsonl").read_text()]
            assert [row["verdict"] for row in read_jsonl(tmp_path / f"{name}.jsonl")] != ["error"]
    sent = {(request.path, request.headers.get("Authorization"), request.headers.get("X-Api-Key")) for request in server.received}
    assert sent == {("/api", f"Bearer {bearer}", api_key), ("/v1/chat/completions", f"Bearer {model_key}", None)}


def test_a_failing_import_leaves_nothing_behind(tmp_path):
    config = write(tmp_path, "promptfooconfig.yaml", """
        description: mo
        prompts: ["{{q}}"]
        providers: [openai:gpt-4.1-mini]
        tests: [{vars: {q: a}}, {vars: {q: b}}, {vars: {q: c}}]
    """)
    (tmp_path / "mo.json").write_text('["x", "y", "\\ud800"]')
    done = run_cli("import", "promptfoo", config, "--model-outputs", tmp_path / "mo.json", "-o", tmp_path / "out")
    assert done.returncode == 2 and "item [2] holds a lone surrogate" in done.stderr, done.stderr
    assert_no_traceback(done)
    # a value that fails only while the files are written (a lone surrogate in the config itself)
    bad = write(tmp_path, "bad.yaml", 'description: "x"\nprompts: ["{{q}}"]\ntests: [{vars: {q: "a\\ud800"}}]\n')
    existing = tmp_path / "existing"
    write(existing, "mine.txt", "keep me")
    for out, force in ((tmp_path / "out", []), (existing, ["--force"])):
        done = run_cli("import", "promptfoo", bad, "-o", out, *force)
        assert done.returncode == 2 and "nothing was written" in done.stderr, done.stderr
        assert_no_traceback(done)
    assert not (tmp_path / "out").exists()
    assert sorted(os.listdir(existing)) == ["mine.txt"]
    assert not [name for name in os.listdir(tmp_path) if name.startswith(".agenteval-import")]
    # and the next import needs no --force
    done = run_cli("import", "promptfoo", config, "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr


def test_a_null_model_output_is_no_output_not_the_text_null(tmp_path):
    config = write(tmp_path, "promptfooconfig.yaml", """
        description: mo
        prompts: ["{{q}}"]
        providers: [openai:gpt-4.1-mini]
        tests: [{vars: {q: a}}, {vars: {q: b}}, {vars: {q: c}}]
        defaultTest: {assert: [{type: not-contains, value: zzz}]}
    """)
    (tmp_path / "mo.json").write_text('["x", {"output": null}, {"output": "z"}]')
    done = run_cli("import", "promptfoo", config, "--model-outputs", tmp_path / "mo.json", "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert "[1].output: no output (null): case 002 gets no prediction" in done.stderr
    lines = read_jsonl(tmp_path / "out" / "predictions.jsonl")
    assert lines == [{"id": "001", "output": {"content": "x"}}, {"id": "003", "output": {"content": "z"}}]
    run = run_cli("run", tmp_path / "out" / "suite.yaml", "--predictions", tmp_path / "out" / "predictions.jsonl", "-o", tmp_path / "r.jsonl")
    verdicts = {row["case_id"]: row["verdict"] for row in read_jsonl(tmp_path / "r.jsonl")}
    assert (run.returncode, verdicts) == (3, {"001": "pass", "002": "error", "003": "pass"}), run.stdout + run.stderr


def test_env_reads_in_a_promptfoo_prompt_are_listed_not_turned_into_input_vars(tmp_path):
    config = write(tmp_path, "promptfooconfig.yaml", """
        description: envs
        prompts:
          - "{{q}} {{env.SECRET_TOKEN}}"
          - "{{ q }} {{ env.OTHER | upper }}"
          - "plain {{q}}"
        providers: [openai:gpt-4.1-mini]
        tests: [{vars: {q: a}, assert: [{type: contains, value: a}]}]
    """)
    done = run_cli("import", "promptfoo", config, "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    listed = [line for line in done.stderr.splitlines() if "reads the environment" in line]
    assert [line.split("promptfooconfig.yaml:")[1][:41] for line in listed] == [
        "3: prompts[0]: prompt 'prompt1' reads the", "4: prompts[1]: prompt 'prompt2' reads the"], done.stderr
    assert "({{env.SECRET_TOKEN}})" in listed[0] and "({{env.OTHER}})" in listed[1]
    text = (tmp_path / "out" / "suite.yaml").read_text()
    assert "input.env" not in text and "SECRET_TOKEN" not in text and "OTHER" not in text
    assert yaml.safe_load(text)["target"]["messages"] == [{"role": "user", "content": "plain {{input.q}}"}]


HOSTILE_GENERATORS = """\
import os, subprocess, sys, time

def huge():
    sys.stdout.write("x" * (20 << 20))
    return []

def lingers():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open("child.pid", "w").write(str(child.pid))
    time.sleep(120)

def not_a_number():
    return [{"vars": {"x": float("nan")}}]
"""


def test_a_tests_generator_that_floods_hangs_or_returns_nan_is_listed_and_leaves_no_process(tmp_path, monkeypatch):
    from agenteval.importers import promptfoo_generator, read_config
    from agenteval.importers.promptfoo import import_promptfoo

    monkeypatch.setattr(promptfoo_generator, "GENERATOR_TIMEOUT_S", 2.0)
    write(tmp_path, "gen.py", HOSTILE_GENERATORS)
    config = write(tmp_path, "promptfooconfig.yaml", "tests: [file://gen.py:huge, file://gen.py:lingers, file://gen.py:not_a_number, {vars: {q: a}}]\n")
    parsed, source = read_config(config)
    result = import_promptfoo(parsed, source, tmp_path / "out", run_generators=lambda line: None)
    assert [case["input"] for case in result.cases] == [{"q": "a"}]  # the config's own test is kept
    assert [item.render() for item in result.not_carried] == [
        "promptfooconfig.yaml:1: tests[0]: tests generator gen.py:huge gave no tests: it output larger than 16 MiB",
        "promptfooconfig.yaml:1: tests[1]: tests generator gen.py:lingers gave no tests: it timed out after 2s",
        "promptfooconfig.yaml:1: tests[2]: tests generator gen.py:not_a_number gave no tests: it failed: not_a_number returned a value "
        "that is not JSON: Out of range float values are not JSON compliant",
    ]
    pid = int((tmp_path / "child.pid").read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:
        with open(f"/proc/{pid}/stat") as stat_file:  # killed with its group, at most a zombie not yet reaped by init
            assert stat_file.read().split(") ")[1][0] == "Z"
