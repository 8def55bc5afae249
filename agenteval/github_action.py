"""What the GitHub Action (action.yml) does through GitHub's REST API: one pull-request comment that
later pushes update, and the base branch's results artifact to compare against.

    python -m agenteval.github_action run --suite SUITE --out DIR [--args "..."] [--min-pass-rate R]
    python -m agenteval.github_action review --out DIR --run-exit-code N --artifact NAME --base-branch main
    python -m agenteval.github_action comment --body-file compare.md [--name NAME]

It reads the variables every Actions job has (GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_EVENT_PATH,
GITHUB_TOKEN given by the Action). Nothing here fails the job by itself: a token that may not
comment (a fork's pull request, missing `permissions:`) is a warning and the report stays in the
step summary; the gate is the run's and compare's exit code.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

COMMENT_LIMIT = 65_536  # GitHub refuses a comment body longer than this many characters
MAX_PAGES = 50  # comments read looking for ours: 5,000 on a pull request is plenty
MAX_ARTIFACT_BYTES = 512 * 1024 * 1024
TIMEOUT_S = 30.0


class GitHubError(Exception):
    """GitHub refused or could not be reached: the message says what to do."""


@dataclass(frozen=True)
class Context:
    api: str
    repository: str
    token: str | None

    @classmethod
    def from_environment(cls) -> Context:
        repository = os.environ.get("GITHUB_REPOSITORY", "")
        if "/" not in repository:
            raise GitHubError("GITHUB_REPOSITORY is not set (owner/name): run this inside a GitHub Actions job")
        return cls(os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/"), repository, os.environ.get("GITHUB_TOKEN") or None)


def marker(name: str) -> str:
    """The hidden line that tells our comment from everyone else's (one per name, so two suites
    commenting on one pull request keep a comment each)."""
    return f"<!-- agenteval-comment: {name} -->"


def fit_body(body: str, limit: int = COMMENT_LIMIT, artifact_url: str | None = None) -> str:
    """`body` as it fits one comment: cut at a line boundary with a note (and a link to the whole
    report) when it is longer than GitHub takes."""
    if len(body) <= limit:
        return body
    where = f"the whole report is in the run's artifacts: {artifact_url}" if artifact_url else "the whole report is in the run's artifacts"
    note = f"\n\n… cut to fit a comment ({len(body):,} characters); {where}\n"
    room = limit - len(note)
    cut = body.rfind("\n", 0, room)
    return body[: cut if cut > 0 else room] + note


def pull_request_number(event_path: str | None) -> int | None:
    """The pull request the job runs for, from the event payload (None on a push or a schedule)."""
    if not event_path:
        return None
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    number = (event.get("pull_request") or {}).get("number") if isinstance(event, dict) else None
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def _client(context: Context) -> Any:
    import httpx

    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "agenteval-action"}
    if context.token:
        headers["Authorization"] = f"Bearer {context.token}"
    return httpx.Client(base_url=context.api, headers=headers, timeout=TIMEOUT_S, follow_redirects=False)


def _refused(response: Any, doing: str) -> GitHubError:
    try:
        message = response.json().get("message", "")
    except ValueError:
        message = ""
    message = " ".join(str(message).split())[:200]
    hint = ""
    if response.status_code in (401, 403, 404):
        hint = (" (the job's token may not write to this pull request: give the workflow `permissions: pull-requests: write`;"
                " a pull request from a fork gets a read-only token)")
    return GitHubError(f"GitHub refused to {doing}: HTTP {response.status_code} {message}{hint}")


def upsert_comment(context: Context, number: int, body: str, name: str = "agenteval", artifact_url: str | None = None) -> str:
    """Create our comment on pull request `number`, or update it if an earlier push made one.
    Returns the comment's URL. Raises GitHubError."""
    if not context.token:
        raise GitHubError("no token to comment with (a pull request from a fork has none): the report is in the step summary")
    tag = marker(name)
    text = fit_body(f"{tag}\n{body}", artifact_url=artifact_url)
    import httpx

    try:
        with _client(context) as client:
            existing = _find_comment(client, context.repository, number, tag)
            if existing is None:
                response = client.post(f"/repos/{context.repository}/issues/{number}/comments", json={"body": text})
                if response.status_code != 201:
                    raise _refused(response, "create the comment")
            else:
                response = client.patch(f"/repos/{context.repository}/issues/comments/{existing}", json={"body": text})
                if response.status_code != 200:
                    raise _refused(response, "update the comment")
            return str(response.json().get("html_url", ""))
    except httpx.HTTPError as exc:
        raise GitHubError(f"could not reach GitHub ({context.api}): {type(exc).__name__}") from None


def _find_comment(client: Any, repository: str, number: int, tag: str) -> int | None:
    for page in range(1, MAX_PAGES + 1):
        response = client.get(f"/repos/{repository}/issues/{number}/comments", params={"per_page": 100, "page": page})
        if response.status_code != 200:
            raise _refused(response, "list the pull request's comments")
        comments = response.json()
        if not isinstance(comments, list):
            raise GitHubError("GitHub answered the comment list with something else than a list")
        for comment in comments:
            if isinstance(comment, dict) and tag in str(comment.get("body", "")) and isinstance(comment.get("id"), int):
                return comment["id"]
        if len(comments) < 100:
            return None
    return None


def download_baseline(context: Context, artifact: str, branch: str, dest: Path) -> Path | None:
    """Unpack the newest unexpired artifact named `artifact` made on `branch` into `dest` and return
    the results file in it (None when there is none yet: the first run on a branch). Raises GitHubError."""
    import httpx

    try:
        with _client(context) as client:
            found = []
            for page in range(1, ARTIFACT_PAGES + 1):  # (a busy repository has more than one page of them)
                response = client.get(f"/repos/{context.repository}/actions/artifacts", params={"name": artifact, "per_page": 100, "page": page})
                if response.status_code != 200:
                    raise _refused(response, "list the artifacts")
                listed = response.json().get("artifacts", [])
                found += [item for item in listed if isinstance(item, dict) and _made_on(item, branch)]
                if len(listed) < 100:
                    break
            if not found:
                return None
            newest = max(found, key=lambda item: str(item.get("created_at", "")))
            if int(newest.get("size_in_bytes") or 0) > MAX_ARTIFACT_BYTES:
                raise GitHubError(f"artifact {artifact} is larger than {MAX_ARTIFACT_BYTES // 2**20} MiB")
            archive = _fetch_archive(client, f"/repos/{context.repository}/actions/artifacts/{newest['id']}/zip")
    except httpx.HTTPError as exc:
        raise GitHubError(f"could not reach GitHub ({context.api}): {type(exc).__name__}") from None
    return _unpack_results(archive, dest)


ARTIFACT_PAGES = 10
"""Pages of 100 artifacts looked through for the baseline."""


def _made_on(item: dict[str, Any], branch: str) -> bool:
    """Whether an artifact is unexpired and was made by a run on `branch` of this repository: a
    fork's pull request from its own `main` also has `head_branch: main`, and is no baseline."""
    run = item.get("workflow_run") if isinstance(item.get("workflow_run"), dict) else {}
    own = run.get("head_repository_id") == run.get("repository_id")  # (absent both, as an older API gives: the same)
    return not item.get("expired") and run.get("head_branch") == branch and own


def _fetch_archive(client: Any, path: str) -> bytes:
    """The artifact's zip: GitHub answers with a redirect to short-lived storage, fetched without our token."""
    import httpx

    response = client.get(path)
    if response.status_code in (301, 302, 303, 307, 308):
        with httpx.Client(timeout=TIMEOUT_S) as storage, storage.stream("GET", response.headers["location"]) as download:
            if download.status_code != 200:
                raise GitHubError(f"the artifact's download answered HTTP {download.status_code}")
            chunks, size = [], 0
            for chunk in download.iter_bytes():
                size += len(chunk)
                if size > MAX_ARTIFACT_BYTES:
                    raise GitHubError(f"the artifact is larger than {MAX_ARTIFACT_BYTES // 2**20} MiB")
                chunks.append(chunk)
            return b"".join(chunks)
    if response.status_code != 200:
        raise _refused(response, "download the artifact")
    return response.content


def _unpack_results(archive: bytes, dest: Path) -> Path | None:
    """Only the JSONL files of the archive, each under `dest` by its own name (never a path the
    archive chose: `../` and absolute names are ignored)."""
    try:
        bundle = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        raise GitHubError("the artifact is not a zip archive") from None
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    total = 0
    for info in bundle.infolist():
        name = PurePosixPath(info.filename).name
        if info.is_dir() or not name.endswith(".jsonl"):
            continue
        total += info.file_size
        if total > MAX_ARTIFACT_BYTES:
            raise GitHubError(f"the artifact unpacks to more than {MAX_ARTIFACT_BYTES // 2**20} MiB")
        target = dest / name
        target.write_bytes(bundle.read(info))
        written.append(target)
    return sorted(written)[0] if written else None


def _outputs(**values: Any) -> None:
    """Step outputs, for later steps and the workflow (GITHUB_OUTPUT)."""
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            for key, value in values.items():
                handle.write(f"{key}={'' if value is None else value}\n")


def _step_summary(text: str) -> None:
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text.rstrip("\n") + "\n\n")


def _agenteval(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agenteval", *map(str, args)], capture_output=True, text=True)


def run_step(suite: str, out: Path, args: list[str], min_pass_rate: str | None, cache_dir: str | None = None) -> int:
    """Run the suite with every report written into `out` (JSONL, summary, JUnit, HTML, Markdown into
    the step summary); its exit code goes to the outputs for the gate, not to this step."""
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    command: list[str | Path] = ["run", suite, "-o", results, "--junit", out / "junit.xml", "--html", out / "report.html",
                                 "--markdown", out / "summary.md", *args]
    if min_pass_rate:
        command += ["--min-pass-rate", min_pass_rate]
    if cache_dir:
        command += ["--cache-dir", cache_dir]
    done = _agenteval(*command)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    from agenteval.stores.jsonl import summary_path

    pass_rate = None
    try:
        pass_rate = json.loads(summary_path(results).read_text(encoding="utf-8")).get("pass_rate")
    except (OSError, ValueError):
        pass
    if done.returncode == 2:
        _step_summary("### agenteval: the suite did not run\n\n```\n" + done.stderr.strip()[-4000:] + "\n```")
    _outputs(**{"exit-code": done.returncode, "pass-rate": pass_rate, "results-file": results if results.exists() else None})
    return 0


def _regressions(text: str) -> int:
    """`max-regressions`: a whole number >= 0 (-1 made `compare` refuse it, and the gate was off with only a warning)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"max-regressions is a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"max-regressions is a whole number >= 0, got {value}")
    return value


def review_step(context: Context, out: Path, run_code: int, name: str, artifact: str, branch: str | None,
                max_regressions: int, comment: bool, artifact_url: str | None) -> int:
    """Compare with the base branch's results (when a pull request has them), post the comparison
    (or the run's summary) as the pull request's one agenteval comment, and decide the gate: the
    step fails when the run's gate or compare's failed, and the step summary says why."""
    results = out / "results.jsonl"
    body = (out / "summary.md").read_text(encoding="utf-8") if (out / "summary.md").exists() else ""
    number = pull_request_number(os.environ.get("GITHUB_EVENT_PATH"))
    reasons: list[str] = []
    if run_code == 2:
        reasons.append("the suite did not run (exit 2): see the step's log")
    elif run_code:
        reasons.append(f"the run's gate failed (exit {run_code}): " + ("cases errored" if run_code == 3 else "cases failed"))
    compare_code = None
    if number is not None and branch and results.exists():
        try:
            baseline = download_baseline(context, artifact, branch, out / "baseline")
        except GitHubError as exc:
            print(f"::warning title=agenteval::{exc}")
            baseline = None
        if baseline is not None:
            done = _agenteval("compare", baseline, results, "--format", "markdown", "--max-regressions", str(max_regressions))
            if done.returncode in (0, 1):
                body = done.stdout
                compare_code = done.returncode
                _step_summary(done.stdout)
                if done.returncode == 1:
                    reasons.append(f"more than {max_regressions} regression(s) against {branch}")
            else:
                print(f"::warning title=agenteval::compare with {branch}'s results failed: {done.stderr.strip()[:300]}")
    _outputs(**{"compare-exit-code": compare_code})
    if comment and number is not None and body:
        try:
            _outputs(**{"comment-url": upsert_comment(context, number, body, name, artifact_url)})
        except GitHubError as exc:
            print(f"::warning title=agenteval::{exc}")
    elif comment and number is None:
        print("agenteval: not a pull request: no comment", file=sys.stderr)
    if reasons:
        _step_summary("**agenteval gate failed:** " + "; ".join(reasons) + ".")
        print(f"::error title=agenteval::{'; '.join(reasons)}")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agenteval.github_action", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="Run the suite, writing every report into --out.")
    run.add_argument("--suite", required=True)
    run.add_argument("--out", required=True, type=Path)
    run.add_argument("--args", default="", help="More `agenteval run` options, as a shell would split them.")
    run.add_argument("--min-pass-rate", default="")
    run.add_argument("--cache-dir", default="")
    review = commands.add_parser("review", help="Compare with the base branch, comment, and gate.")
    review.add_argument("--out", required=True, type=Path)
    review.add_argument("--run-exit-code", required=True, type=int)
    review.add_argument("--name", default="agenteval", help="Which of several agenteval comments (one per suite).")
    review.add_argument("--artifact", required=True, help="The results artifact's name (the base branch's is compared with).")
    review.add_argument("--base-branch", default="")
    review.add_argument("--max-regressions", default=0, type=_regressions)
    review.add_argument("--comment", default="true", choices=["true", "false"])
    review.add_argument("--artifact-url", default=None, help="Linked from the comment when it is cut to fit.")
    comment = commands.add_parser("comment", help="Create or update the pull request's agenteval comment.")
    comment.add_argument("--body-file", required=True, type=Path)
    comment.add_argument("--name", default="agenteval")
    comment.add_argument("--artifact-url", default=None)
    args = parser.parse_args(argv)
    if args.command == "run":
        import shlex

        try:
            extra = shlex.split(args.args)
        except ValueError as exc:  # (an unclosed quote: the suite does not run, and the gate says so)
            print(f"::error title=agenteval::args: {exc}: {args.args!r}")
            _step_summary(f"### agenteval: the suite did not run\n\n`args` cannot be split as a shell would: {exc}")
            _outputs(**{"exit-code": 2, "pass-rate": None, "results-file": None})
            return 0
        return run_step(args.suite, args.out, extra, args.min_pass_rate or None, args.cache_dir or None)
    try:
        context = Context.from_environment()
    except GitHubError as exc:
        print(f"::error title=agenteval::{exc}")
        return 2
    if args.command == "review":
        return review_step(context, args.out, args.run_exit_code, args.name, args.artifact, args.base_branch or None,
                           args.max_regressions, args.comment == "true", args.artifact_url)
    number = pull_request_number(os.environ.get("GITHUB_EVENT_PATH"))
    if number is None:
        print("agenteval: not a pull request: no comment", file=sys.stderr)
        return 0
    try:
        print(upsert_comment(context, number, args.body_file.read_text(encoding="utf-8"), args.name, args.artifact_url))
    except (GitHubError, OSError) as exc:
        print(f"::warning title=agenteval::{exc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
