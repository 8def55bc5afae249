"""The GitHub Action's steps (agenteval.github_action), run as the Action runs them: real processes
with the variables an Actions job has, against a fake GitHub API on 127.0.0.1."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, write
from tests.github_api import READ, WRITE, FakeGitHub, serve

SUITE = """
    name: answers
    evaluators: [{name: same, type: equals}]
    cases: cases.jsonl
"""


def cases(tmp_path: Path, outputs: dict[str, str]) -> Path:
    lines = [json.dumps({"id": case_id, "expected": "yes", "output": output}) for case_id, output in outputs.items()]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return write(tmp_path, "suite.yaml", SUITE)


@pytest.fixture
def github():
    state = FakeGitHub()
    server, url = serve(state)
    yield state, url
    server.shutdown()


def job_env(tmp_path: Path, api: str, token: str | None = WRITE, pull_request: int | None = 7) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": pull_request}} if pull_request else {"ref": "refs/heads/main"}))
    env = {key: value for key, value in os.environ.items() if not key.startswith("GITHUB_")}
    env.update(GITHUB_API_URL=api, GITHUB_REPOSITORY="acme/extractor", GITHUB_EVENT_PATH=str(event),
               GITHUB_OUTPUT=str(tmp_path / "output.txt"), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    if token:
        env["GITHUB_TOKEN"] = token
    return env


def step(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agenteval.github_action", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def outputs(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "output.txt"
    return dict(line.split("=", 1) for line in path.read_text().splitlines()) if path.exists() else {}


def run_and_review(tmp_path: Path, env: dict[str, str], *review_args: str) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    ran = step(env, "run", "--suite", "suite.yaml", "--out", "out", cwd=tmp_path)
    code = outputs(tmp_path)["exit-code"]
    reviewed = step(env, "review", "--out", "out", "--run-exit-code", code, "--artifact", "agenteval-results",
                    "--base-branch", "main", *review_args, cwd=tmp_path)
    return ran, reviewed


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, data in files.items():
            bundle.writestr(name, data)
    return buffer.getvalue()


def publish(state: FakeGitHub, artifact_id: int, branch: str, created: str, files: dict[str, bytes], expired: bool = False,
            head_repository_id: int = 1) -> None:
    """An artifact as GitHub lists it: made by a run of repository 1 (a fork's pull request: another `head_repository_id`)."""
    state.artifacts.append({"id": artifact_id, "name": "agenteval-results", "expired": expired, "created_at": created, "size_in_bytes": 100,
                            "workflow_run": {"head_branch": branch, "repository_id": 1, "head_repository_id": head_repository_id}})
    state.blobs[artifact_id] = zipped(files)


def test_the_baseline_is_the_newest_of_the_base_branch_of_this_repository_past_a_first_page(tmp_path, github):
    """A fork's pull request from its own `main` made the newest artifact on `main` (it became the
    baseline every other pull request was compared with); the real one may be past the first 100."""
    from agenteval.github_action import Context, download_baseline

    state, api = github
    publish(state, 1, "main", "2026-11-01T00:00:00Z", {"results.jsonl": b'{"real": true}\n'})
    for number in range(2, 152):  # 150 newer artifacts of pull request branches
        publish(state, number, f"feature-{number}", f"2026-11-{2 + number // 10:02d}T00:00:{number % 60:02d}Z", {"results.jsonl": b"{}\n"})
    publish(state, 200, "main", "2026-11-28T00:00:00Z", {"results.jsonl": b'{"fork": true}\n'}, head_repository_id=99)
    found = download_baseline(Context(api, "acme/extractor", WRITE), "agenteval-results", "main", tmp_path / "dest")
    assert found is not None and found.read_text() == '{"real": true}\n'


def test_the_run_step_writes_every_report_and_its_outputs(tmp_path, github):
    _, api = github
    cases(tmp_path, {"a": "yes", "b": "no"})
    ran = step(job_env(tmp_path, api), "run", "--suite", "suite.yaml", "--out", "out", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr  # the gate is decided by the review step
    assert outputs(tmp_path) == {"exit-code": "1", "pass-rate": "0.5", "results-file": "out/results.jsonl"}
    assert {path.name for path in (tmp_path / "out").iterdir()} >= {"results.jsonl", "results.summary.json", "junit.xml", "report.html", "summary.md"}
    assert "answers" in (tmp_path / "summary.md").read_text()  # the Markdown report went to the step summary


def test_the_first_push_creates_the_comment_and_later_pushes_update_it(tmp_path, github):
    state, api = github
    state.comment(7, "LGTM", user="reviewer")
    env = job_env(tmp_path, api)
    cases(tmp_path, {"a": "yes", "b": "yes"})
    _, first = run_and_review(tmp_path, env)
    assert first.returncode == 0, first.stdout + first.stderr
    cases(tmp_path, {"a": "yes", "b": "no", "c": "yes"})
    _, second = run_and_review(tmp_path, env)
    assert second.returncode == 1  # b fails: the run's gate
    comments = state.comments[7]
    assert [comment["body"].startswith("<!-- agenteval-comment: agenteval -->") for comment in comments] == [False, True]
    assert "**3 cases: 2 passed, 1 failed, 0 errored** · pass rate **66.7%**" in comments[1]["body"]
    assert "FAIL b (score 0.000)" in comments[1]["body"]
    assert [method for method, _ in state.requests if method != "GET"] == ["POST", "PATCH"]
    assert outputs(tmp_path)["comment-url"].endswith(f"/comment/{comments[1]['id']}")
    assert "agenteval gate failed:** the run's gate failed (exit 1): cases failed" in (tmp_path / "summary.md").read_text()


def test_the_comparison_with_the_base_branch_puts_regressions_first(tmp_path, github):
    state, api = github
    base = tmp_path / "base"
    base.mkdir()
    cases(base, {"a": "yes", "b": "yes", "c": "no"})
    assert step(job_env(base, api), "run", "--suite", "suite.yaml", "--out", "out", cwd=base).returncode == 0
    baseline = (base / "out" / "results.jsonl").read_bytes()
    publish(state, 1, "main", "2026-11-01T00:00:00Z", {"old/results.jsonl": b"not json\n"})
    publish(state, 2, "main", "2026-11-20T00:00:00Z", {"results.jsonl": baseline, "report.html": b"<html>"})
    publish(state, 3, "feature", "2026-11-27T00:00:00Z", {"results.jsonl": b"not json\n"})
    publish(state, 4, "main", "2026-11-27T00:00:00Z", {"results.jsonl": b"not json\n"}, expired=True)
    cases(tmp_path, {"a": "yes", "b": "no", "c": "yes"})
    _, reviewed = run_and_review(tmp_path, job_env(tmp_path, api), "--max-regressions", "0")
    assert reviewed.returncode == 1
    [comment] = state.comments[7]
    body = comment["body"]
    assert "### Regressions (1)" in body and "### Improvements (1)" in body
    assert body.index("### Regressions") < body.index("### Improvements")
    assert re.search(r"\|\s*b\s*\|", body)
    assert outputs(tmp_path)["compare-exit-code"] == "1"
    summary = (tmp_path / "summary.md").read_text()
    assert "more than 0 regression(s) against main" in summary and "### Regressions (1)" in summary
    assert ("GET", "/storage/2") in state.requests and ("GET", "/storage/3") not in state.requests


def test_a_token_that_may_not_comment_is_a_warning_and_the_gate_still_decides(tmp_path, github):
    state, api = github
    cases(tmp_path, {"a": "yes"})
    _, reviewed = run_and_review(tmp_path, job_env(tmp_path, api, token=READ))
    assert reviewed.returncode == 0
    assert "::warning title=agenteval::GitHub refused to create the comment: HTTP 403 Resource not accessible by integration" in reviewed.stdout
    assert "permissions: pull-requests: write" in reviewed.stdout
    assert state.comments == {}


def test_a_fork_without_a_token_gets_no_comment(tmp_path, github):
    state, api = github
    cases(tmp_path, {"a": "no"})
    _, reviewed = run_and_review(tmp_path, job_env(tmp_path, api, token=None))
    assert reviewed.returncode == 1  # the failing case still fails the job
    assert "no token to comment with" in reviewed.stdout
    assert [method for method, _ in state.requests if method != "GET"] == []


def test_a_push_is_not_a_pull_request(tmp_path, github):
    state, api = github
    cases(tmp_path, {"a": "yes"})
    _, reviewed = run_and_review(tmp_path, job_env(tmp_path, api, pull_request=None))
    assert reviewed.returncode == 0 and "not a pull request: no comment" in reviewed.stderr
    assert state.requests == []


def test_a_suite_that_does_not_run_fails_the_job_with_its_errors_in_the_summary(tmp_path, github):
    _, api = github
    write(tmp_path, "suite.yaml", "name: x\nevaluators: [{name: a, type: eqauls}]\ncases: []\n")
    ran, reviewed = run_and_review(tmp_path, job_env(tmp_path, api))
    assert outputs(tmp_path)["exit-code"] == "2"
    assert reviewed.returncode == 1
    summary = (tmp_path / "summary.md").read_text()
    assert "did you mean 'equals'" in summary and "the suite did not run (exit 2)" in summary


def test_a_body_over_githubs_limit_is_cut_with_a_link_to_the_artifact(tmp_path, github):
    state, api = github
    body = tmp_path / "big.md"
    body.write_text("| case | verdict |\n" + "| a-long-case-name | fail |\n" * 5000)
    done = step(job_env(tmp_path, api), "comment", "--body-file", str(body), "--artifact-url", "https://github.example/runs/9", cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    [comment] = state.comments[7]
    assert len(comment["body"]) <= 65536
    assert comment["body"].rstrip().endswith("the whole report is in the run's artifacts: https://github.example/runs/9")
    assert "| a-long-case-name | fail |\n\n… cut to fit a comment" in comment["body"]  # cut at a line


def test_action_inputs_that_cannot_be_used_stop_the_gate_loudly(tmp_path, github):
    """`args` with an unclosed quote was a traceback with no `exit-code` (the review step was then
    skipped); `max-regressions: -1` made compare refuse it, and the gate was off with a warning."""
    _, api = github
    cases(tmp_path, {"a": "yes"})
    env = job_env(tmp_path, api)
    ran = step(env, "run", "--suite", "suite.yaml", "--out", "out", "--args", "--filter don't*", cwd=tmp_path)
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    assert "::error title=agenteval::args: No closing quotation" in ran.stdout
    assert outputs(tmp_path)["exit-code"] == "2" and "the suite did not run" in (tmp_path / "summary.md").read_text()
    reviewed = step(env, "review", "--out", "out", "--run-exit-code", "0", "--artifact", "agenteval-results", "--max-regressions", "-1",
                    cwd=tmp_path)
    assert reviewed.returncode == 2 and "max-regressions is a whole number >= 0, got -1" in reviewed.stderr, reviewed.stderr


def test_an_artifact_cannot_write_outside_its_folder(tmp_path, github):
    from agenteval.github_action import Context, GitHubError, download_baseline

    state, api = github
    publish(state, 5, "main", "2026-11-20T00:00:00Z", {"../../escape.jsonl": b"{}\n", "/abs/evil.jsonl": b"{}\n", "notes.txt": b"x"})
    found = download_baseline(Context(api, "acme/extractor", WRITE), "agenteval-results", "main", tmp_path / "dest")
    assert found == tmp_path / "dest" / "escape.jsonl"
    assert sorted(path.name for path in (tmp_path / "dest").iterdir()) == ["escape.jsonl", "evil.jsonl"]
    assert not (tmp_path.parent / "escape.jsonl").exists()
    state.blobs[5] = b"not a zip"
    with pytest.raises(GitHubError, match="not a zip archive"):
        download_baseline(Context(api, "acme/extractor", WRITE), "agenteval-results", "main", tmp_path / "dest2")
    assert download_baseline(Context(api, "acme/extractor", WRITE), "agenteval-results", "nowhere", tmp_path / "d3") is None


def test_an_unreachable_github_is_a_warning(tmp_path):
    env = job_env(tmp_path, "http://127.0.0.1:9")  # nothing listens on the discard port
    (tmp_path / "b.md").write_text("hello")
    done = step(env, "comment", "--body-file", "b.md", cwd=tmp_path)
    assert done.returncode == 0 and "::warning title=agenteval::could not reach GitHub" in done.stdout


def test_the_action_pins_every_action_and_calls_steps_that_exist():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    for item in steps:
        if "uses" in item:
            assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", item["uses"]), item["uses"]
    for name, spec in {**action["inputs"], **action["outputs"]}.items():
        assert spec.get("description"), name
    scripts = " ".join(item.get("run", "") for item in steps)
    for command in re.findall(r"agenteval\.github_action (\w+)", scripts):
        assert subprocess.run([sys.executable, "-m", "agenteval.github_action", command, "--help"], capture_output=True).returncode == 0
    for used in re.findall(r"steps\.(\w+)\.outputs", json.dumps(action)):
        assert used in {item.get("id") for item in steps}
    # Inputs reach the scripts through env:, never pasted into a shell line (no injection from a branch name).
    assert "${{" not in scripts
