"""Hostile requests to `agenteval view` (the real command, real HTTP on 127.0.0.1): each is a
clear refusal or an error page, the server keeps serving, nothing is written that should not be,
and the token never shows up in a page."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from urllib.parse import unquote_plus

import httpx
import pytest
from conftest import run_cli, write

pytest.importorskip("starlette")


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("viewfaults")
    write(folder, "suite.yaml", "name: s\nevaluators:\n  - {name: same, type: equals}\ncases:\n  - {id: c1, expected: a, output: a}\n  - {id: c2, expected: a, output: b}\n")
    assert run_cli("run", folder / "suite.yaml", "-o", folder / "run.jsonl").returncode == 1
    process = subprocess.Popen([sys.executable, "-m", "agenteval", "view", str(folder / "run.jsonl"), "--no-open"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", process.stdout.readline())
    client = httpx.Client(base_url=found.group(1), timeout=30)
    client.get("/", params={"token": found.group(2)})
    csrf = re.search(r'data-csrf="([^"]+)"', client.get("/runs/run/cases/c1").text).group(1)
    yield client, csrf, folder, found.group(2)
    client.close()
    process.terminate()
    _, errors = process.communicate(timeout=10)
    assert "Traceback" not in errors, errors


@pytest.mark.parametrize("path", [
    "/runs/..%2F..%2Fetc%2Fpasswd", "/runs/run/cases/..%2F..%2Fsuite.yaml", "/runs/run?page=-5", "/runs/run?page=99999999999999999999",
    "/runs/run?sort=__class__", "/runs/run?verdict=%00", "/assets/..%2Fapp.py", "/compare?base=nope&new=run", "/runs/run/queue?kind=%3Cscript%3E",
])
def test_a_hostile_address_is_an_answer_not_a_crash(viewer, path):
    client, _, _, token = viewer
    reply = client.get(path)
    assert reply.status_code in (200, 303, 404), reply.text
    assert "Traceback" not in reply.text and token not in reply.text
    assert "root:" not in reply.text and "name: s" not in reply.text
    assert client.get("/runs/run").status_code == 200  # still serving


@pytest.mark.parametrize(("fields", "reason"), [
    ({"score:x": "nan", "verdict:same": "right"}, None),
    ({"verdict:same": "maybe"}, "a review marks"),
    ({"reviewer": "", "verdict:same": "right"}, "reviewer"),
    ({"reviewer": "r" * 500, "verdict:same": "right"}, "reviewer"),
    ({"rep": "-1", "verdict:same": "right"}, None),
])
def test_a_hostile_review_form_writes_nothing(viewer, fields, reason):
    client, csrf, folder, _ = viewer
    form = {"csrf": csrf, "cell": "", "rep": "0", "reviewer": "ana", **fields}
    reply = client.post("/runs/run/cases/c2/review", data=form)
    assert reply.status_code in (303, 400), reply.text
    if reason:
        assert reason in unquote_plus(reply.headers.get("location", ""))
    reviews = folder / "run.reviews.jsonl"
    assert not reviews.exists() or all(json.loads(line)["reviewer"] == "ana" and "maybe" not in line for line in reviews.read_text().splitlines())


def test_writing_cases_without_a_named_cases_file_is_refused(viewer):
    client, csrf, folder, _ = viewer
    reply = client.post("/runs/run/cases-file", data={"csrf": csrf, "case_id": "c1"})
    assert reply.status_code == 404 and "--cases" in reply.text
    assert sorted(path.name for path in folder.iterdir()) == sorted(["suite.yaml", "run.jsonl", "run.summary.json"] + (["run.reviews.jsonl"] if (folder / "run.reviews.jsonl").exists() else []))
