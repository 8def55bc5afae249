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
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import read_jsonl, run_cli, write

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


def _viewer(source, cwd):
    """`agenteval view SOURCE` in a child process: (the process, a client holding its cookie, the CSRF token getter)."""
    process = subprocess.Popen([sys.executable, "-m", "agenteval", "view", str(source), "--no-open"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", process.stdout.readline())
    assert found, process.stderr.read()
    client = httpx.Client(base_url=found.group(1), timeout=30)
    client.get("/", params={"token": found.group(2)})
    return process, client


def _stopped(process) -> str:
    process.terminate()
    _, errors = process.communicate(timeout=10)
    return errors


def _lines_of_one_length(results: list[dict]) -> list[bytes]:
    """Result lines padded to one length: a file rewritten with them puts another case at each old offset."""
    lines = [json.dumps(result | {"metadata": {"pad": ""}}) for result in results]
    longest = max(map(len, lines))
    return [line.replace('"pad": ""', '"pad": "' + "x" * (longest - len(line)) + '"').encode() + b"\n" for line in lines]


def test_a_results_file_replaced_while_viewed_is_read_again_and_a_review_goes_to_the_case_shown(tmp_path):
    """A results file copied over (`compare --update-baseline`, a `cp`) by a longer one with other
    cases at the old offsets: the viewer reads it again, each case page shows that case's own
    answer, and a review saved there names that case."""
    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{name: same, type: equals}]\ncases: cases.jsonl\n")
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": f"c{i:02d}", "expected": "yes", "output": f"answer {i:02d}"}) + "\n" for i in range(21)))
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "all.jsonl", "-q").returncode == 1
    lines = _lines_of_one_length([json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()])
    (tmp_path / "view").mkdir()
    viewed = tmp_path / "view" / "r.jsonl"
    viewed.write_bytes(b"".join(lines[1:]))  # c01..c20
    process, client = _viewer(tmp_path / "view", tmp_path)
    try:
        assert "answer 05" in client.get("/runs/r/cases/c05").text
        viewed.write_bytes(b"".join(lines))  # the same file, now c00..c20: c04 where c05 was
        shown = client.get("/runs/r/cases/c05").text
        assert "answer 05" in shown and "answer 04" not in shown
        csrf = re.search(r'data-csrf="([^"]+)"', shown).group(1)
        reply = client.post("/runs/r/cases/c05/review", data={"csrf": csrf, "cell": "", "rep": "0", "reviewer": "ana",
                                                               "verdict:same": "right", "note": "reviewing c05"})
        assert reply.status_code == 303 and "saved=1" in reply.headers["location"], reply.text
        assert "21 cases" in client.get("/runs/r").text
    finally:
        errors = _stopped(process)
    saved = [json.loads(line) for line in (tmp_path / "view" / "r.reviews.jsonl").read_text().splitlines()]
    assert [(review["case_id"], review["note"]) for review in saved] == [("c05", "reviewing c05")]
    assert "Traceback" not in errors, errors


def test_result_lines_with_wrongly_typed_fields_are_left_out_and_the_others_are_shown(tmp_path):
    """One line whose tags, evaluator results, cell or verdict have the wrong type is a problem on
    the page; every other line of the run is indexed, opens and pages."""
    from agenteval.view.index import RunIndex

    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{name: same, type: equals}]\ncases: cases.jsonl\n")
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": f"c{i}", "expected": "yes", "output": "yes"}) + "\n" for i in range(10)))
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q").returncode == 0
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    broken = {1: {"tags": 5}, 2: {"tags": [{}]}, 3: {"evaluator_results": 5}, 4: {"target": ["a"]},
              5: {"evaluator_results": [{"name": ["same"], "verdict": "pass"}]}, 6: {"verdict": ["pass"]}}
    results = tmp_path / "view.jsonl"
    results.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(line | broken.get(i, {})) + "\n" for i, line in enumerate(lines)).encode())
    index = RunIndex(results)
    index.follow(10)
    assert index.case_ids == ["c0", "c7", "c8", "c9"]  # the first line too, after its byte-order mark
    assert len(index.problems) == 6 and all("is not a result" in problem for problem in index.problems), index.problems
    assert [index.result(row).case_id for row in index.all_rows()] == ["c0", "c7", "c8", "c9"]
    assert index.page().total == 4 and index.counts()["verdicts"]["pass"] == 4
    process, client = _viewer(results, tmp_path)
    try:
        page = client.get("/runs/view").text
        assert "4 cases" in page and "is not a result" in page, page
        assert client.get("/runs/view/cases/c9").status_code == 200 and client.get("/runs/view/cases/c1").status_code == 404
    finally:
        errors = _stopped(process)
    assert "Traceback" not in errors, errors


ODD_IDS = ["HumanEval/0", "case 1", "café~%2F?#:", ".", "..", "中" * 90]


def test_an_export_links_every_case_page_whatever_its_id_and_writes_through_no_symlink(tmp_path):
    """Case ids with a slash, a space, `%`, `?`, `#`, `~`, non-ASCII letters, `.`/`..` or 270 bytes:
    each gets a page whose link a browser follows to it (a file name without `%` escapes, and no
    longer than a file system takes); a symlink where a page goes is refused, not written through."""
    from playwright.sync_api import sync_playwright

    from browsers import ARGS, chromium_or_skip

    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{name: same, type: equals}]\ncases: cases.jsonl\n")
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": case_id, "expected": "a", "output": f"answer of {case_id}"}) + "\n" for case_id in ODD_IDS))
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "runs" / "r.jsonl", "-q").returncode == 1  # (every answer differs)
    done = run_cli("view", tmp_path / "runs", "--export", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    links = re.findall(r'class="case-link" href="([^"]+)"', (tmp_path / "site" / "runs~r.html").read_text())
    assert len(links) == len(ODD_IDS) and all("%" not in unquote_plus(link) and len(unquote_plus(link).encode()) <= 205 for link in links), links
    chromium = chromium_or_skip()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=ARGS)
        page = browser.new_page()
        shown = []
        for number in range(len(ODD_IDS)):
            page.goto((tmp_path / "site" / "runs~r.html").as_uri())
            page.click(f"a.case-link >> nth={number}")
            shown.append(page.inner_text("#case-id"))
        browser.close()
    assert sorted(shown) == sorted(ODD_IDS)
    outside = write(tmp_path, "precious.txt", "keep me\n")
    (tmp_path / "site" / "index.html").unlink()
    (tmp_path / "site" / "index.html").symlink_to(outside)
    done = run_cli("view", tmp_path / "runs", "--export", tmp_path / "site")
    assert done.returncode == 2 and "index.html: not a regular file" in done.stderr and "<" not in done.stderr, done.stderr
    assert outside.read_text() == "keep me\n"


def test_an_export_waits_for_a_large_run_to_be_read_whole(tmp_path):
    """A run the viewer takes over a second to index is exported whole: the page counts every case,
    and says nothing is still being read."""
    (tmp_path / "runs").mkdir()
    with (tmp_path / "runs" / "big.jsonl").open("wb") as handle:
        for i in range(60_000):
            handle.write(json.dumps({"run_id": "big", "suite": "big", "case_id": f"case-{i:06d}", "score": 1.0, "verdict": "pass",
                                     "output": f"answer {i}", "expected": f"answer {i}", "input": {"q": f"question {i}"} ,
                                     "evaluator_results": [{"name": "same", "type": "equals", "score": 1.0, "verdict": "pass"}],
                                     "tags": [f"t{i % 3}"], "duration_ms": 1.0}).encode() + b"\n")
    done = run_cli("view", tmp_path / "runs", "--export", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "runs~big.html").read_text()
    assert "60000 cases · page 1 of 1200" in page and "reading the file" not in page, page[:2000]


def test_the_failures_queue_of_a_matrix_run_reviews_each_failing_cell_and_skips_none(tmp_path):
    """In a run of several cells the failures queue opens each result that did not pass at its own
    cell (not the case's first, which may have passed), and a review of one cell of a case leaves
    the case's other failing cells in the queue."""
    from urllib.parse import parse_qs, urlsplit

    from conftest import EXAMPLES, read_jsonl

    results = tmp_path / "runs" / "m.jsonl"
    assert run_cli("run", EXAMPLES / "compare-models" / "suite.yaml", "-o", results, "-q").returncode == 1
    labels = {}  # (target, prompt) -> the cell's label
    failing = []
    for line in read_jsonl(results):
        label = f"{line['target']}/{line['prompt']}"
        labels[(line["target"], line["prompt"])] = label
        if line["verdict"] != "pass":
            failing.append((line["case_id"], label))
    assert len({case_id for case_id, _ in failing}) < len(failing)  # some case fails in more than one cell
    process, client = _viewer(tmp_path / "runs", tmp_path)
    visited = []
    try:
        location = client.get("/runs/m/queue", params={"kind": "failures"}).headers["location"]
        while "saved=1" not in location and len(visited) <= len(failing):  # (saved=1: back on its own page, nothing left)
            address = urlsplit(location)
            case_id = unquote_plus(address.path.rsplit("/", 1)[1])
            cell = parse_qs(address.query)["cell"][0]
            page = client.get(location).text
            assert f"Reviewing {cell}" in page, page
            visited.append((case_id, cell))
            csrf = re.search(r'data-csrf="([^"]+)"', page).group(1)
            reply = client.post(f"/runs/m/cases/{case_id}/review", data={
                "csrf": csrf, "cell": cell, "rep": "0", "reviewer": "ana", "note": "seen", "queue": "failures"})
            assert reply.status_code == 303, reply.text
            location = reply.headers["location"]
    finally:
        errors = _stopped(process)
    assert visited == failing
    assert "Traceback" not in errors, errors


def test_two_viewers_open_in_one_browser_keep_their_own_access(tmp_path):
    """A browser keeps one cookie jar for every port of 127.0.0.1: opening a second viewer must not
    log the first one out (its review form would then be refused)."""
    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{type: equals}]\ncases: [{id: c1, expected: a, output: a}]\n")
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "a" / "r.jsonl", "-q").returncode == 0
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "b" / "r.jsonl", "-q").returncode == 0
    first, browser = _viewer(tmp_path / "a", tmp_path)
    second = None
    try:
        second = subprocess.Popen([sys.executable, "-m", "agenteval", "view", str(tmp_path / "b"), "--no-open"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", second.stdout.readline())
        assert browser.get(f"{found.group(1)}/", params={"token": found.group(2)}, follow_redirects=True).status_code == 200
        assert browser.get("/runs/r").status_code == 200  # the first viewer, in the same jar, still lets it in
        assert browser.get(f"{found.group(1)}/runs/r").status_code == 200
        assert httpx.get(f"{found.group(1)}/runs/r").status_code == 403  # and without its token, no one gets in
    finally:
        errors = _stopped(first) + (_stopped(second) if second is not None else "")
    assert "Traceback" not in errors, errors


def test_a_viewer_opened_to_other_machines_answers_them_by_any_name_with_the_token(tmp_path):
    """`--host 0.0.0.0 --allow-remote`: other machines reach it by this machine's address or name,
    never `0.0.0.0`; each of those is answered with the token, and refused without it."""
    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{type: equals}]\ncases: [{id: c1, expected: a, output: a}]\n")
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q").returncode == 0
    process = subprocess.Popen([sys.executable, "-m", "agenteval", "view", str(tmp_path / "r.jsonl"), "--no-open", "--host", "0.0.0.0",
                                "--allow-remote"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        found = re.search(r"http://0\.0\.0\.0:(\d+)/\?token=(\S+)", process.stdout.readline())
        assert found
        port, token = found.groups()
        for name in ("127.0.0.1", "localhost", "viewer.example.internal"):  # (the name a remote browser would send)
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"host": f"{name}:{port}"}) as client:
                assert client.get("/runs/r").status_code == 403
                assert client.get("/", params={"token": token}, follow_redirects=True).status_code == 200, name
                assert client.get("/runs/r").status_code == 200
    finally:
        errors = _stopped(process)
    assert "Traceback" not in errors, errors


def test_a_huge_answer_is_cut_on_its_case_page_and_a_search_finds_text_in_any_case(tmp_path):
    """A 2,000,000-character answer: its case page shows the first 100,000 characters and says how
    long it is (it was 2 MB of page). Searching `ÉCOLE`, `école`, `привет` or `ПРИВЕТ` finds the
    answer `Straße ÉCOLE Привет`, also in a line written with \\u escapes."""
    from agenteval.view.index import RunIndex

    def line(case_id: str, output: str) -> dict:
        return {"run_id": "r", "suite": "s", "case_id": case_id, "score": 1.0, "verdict": "pass", "output": output,
                "evaluator_results": [{"name": "same", "type": "equals", "score": 1.0, "verdict": "pass"}]}

    results = tmp_path / "r.jsonl"
    results.write_text(
        json.dumps(line("huge", "<b>x</b>" * 250_000), ensure_ascii=False) + "\n"
        + json.dumps(line("words", "Straße ÉCOLE Привет"), ensure_ascii=False) + "\n"
        + json.dumps(line("escaped", "Straße ÉCOLE Привет")) + "\n"  # (\\u00c9COLE ...)
        + json.dumps(line("other", "nothing here"), ensure_ascii=False) + "\n", encoding="utf-8")
    index = RunIndex(results)
    index.follow(10)
    for text in ("ÉCOLE", "école", "привет", "ПРИВЕТ", "straße"):
        found = [group[0].case_id for group in index.page(text=text).groups]
        assert found == ["words", "escaped"], (text, found)
    process, client = _viewer(results, tmp_path)
    try:
        page = client.get("/runs/r/cases/huge").text
    finally:
        errors = _stopped(process)
    assert len(page) < 500_000 and "(cut: 2,000,000 characters in all" in page, len(page)  # (was over 4 MB of escaped text)
    assert "Traceback" not in errors, errors


def test_a_score_off_its_criterions_scale_is_refused_from_the_review_form(tmp_path):
    """The form's number field keeps a likert5 score within 1-5 in a browser; a request that sends 99
    or 3.5 anyway (the browser's checks bypassed) is refused by the server, and nothing is written."""
    import shutil

    from conftest import EXAMPLES

    shutil.copytree(EXAMPLES / "review" / "run", tmp_path / "run")
    reviews = tmp_path / "run" / "run.reviews.jsonl"
    before = reviews.read_bytes()
    process, client = _viewer(tmp_path / "run", tmp_path)
    try:
        csrf = re.search(r'data-csrf="([^"]+)"', client.get("/runs/run/cases/ticket-05").text).group(1)
        form = {"csrf": csrf, "cell": "", "rep": "0", "reviewer": "carol"}
        for value in ("99", "0", "3.5"):
            reply = client.post("/runs/run/cases/ticket-05/review", data={**form, "score:empathy": value})
            assert reply.status_code == 303 and "not on its scale (1 to 5)" in unquote_plus(reply.headers["location"]), reply.headers
        assert reviews.read_bytes() == before
        reply = client.post("/runs/run/cases/ticket-05/review", data={**form, "score:empathy": "4"})
        assert "saved=1" in reply.headers["location"]
    finally:
        errors = _stopped(process)
    assert json.loads(reviews.read_text().splitlines()[-1])["scores"] == {"empathy": 4}
    assert "Traceback" not in errors, errors


def test_the_viewers_compare_counts_a_case_missing_from_the_new_run_as_agenteval_compare_does(tmp_path):
    """Cases that passed in BASE and are missing from NEW are regressions in `agenteval compare`; the
    viewer's side by side lists and counts them the same way (it left them out of its count)."""
    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{name: same, type: equals}]\ncases: cases.jsonl\n")
    for name, size, wrong_every in (("old", 9, 3), ("new", 6, 2)):
        write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": f"c{i}", "expected": "a", "output": "b" if i % wrong_every == 0 else "a"}) + "\n"
                                               for i in range(size)))
        assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "runs" / f"{name}.jsonl", "-q").returncode == 1
    printed = run_cli("compare", tmp_path / "runs" / "old.jsonl", tmp_path / "runs" / "new.jsonl")
    assert "Regressions (4)" in printed.stdout and "Only in base (3)" in printed.stdout, printed.stdout
    process, client = _viewer(tmp_path / "runs", tmp_path)
    try:
        page = client.get("/compare", params={"base": "old", "new": "new"}).text
    finally:
        errors = _stopped(process)
    assert re.search(r'id="compare-counts">4 regressions, 1 improvement, 3 unchanged verdicts, 3 only in old</p>', page), page
    rows = re.findall(r'<tr class="regression"><td><a href="/runs/(\w+)/cases/(\w+)">', page)
    assert sorted(rows) == [("new", "c2"), ("new", "c4"), ("old", "c7"), ("old", "c8")]  # (a missing case opens in the run that has it)
    assert page.count('<span class="v missing">missing</span>') == 2
    assert "Traceback" not in errors, errors


def test_a_case_whose_id_a_review_cannot_hold_says_so_instead_of_a_form_that_always_fails(tmp_path):
    """Case ids of 201 characters or of spaces only run and show, but no review can name them: the
    case page says so instead of offering a form whose every save was refused."""
    ids = ["x" * 201, "   ", "fine"]
    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{name: same, type: equals}]\ncases: cases.jsonl\n")
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": case_id, "expected": "a", "output": "a"}) + "\n" for case_id in ids))
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "r.jsonl", "-q").returncode == 0
    process, client = _viewer(tmp_path / "r.jsonl", tmp_path)
    try:
        pages = {case_id: client.get(f"/runs/r/cases/{_quote(case_id)}").text for case_id in ids}
    finally:
        errors = _stopped(process)
    for case_id in ids[:2]:
        assert 'id="unreviewable"' in pages[case_id] and 'id="review-form"' not in pages[case_id]
    assert 'id="review-form"' in pages["fine"] and 'id="unreviewable"' not in pages["fine"]
    assert "Traceback" not in errors, errors


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def test_a_finished_run_whose_last_line_lost_its_newline_shows_every_case(tmp_path):
    """A results file saved without its final newline (edited by hand): a finished run (it has its
    summary) shows its last case too, as `report` counts it; a run still being written waits for it."""
    from agenteval.view.index import RunIndex

    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{name: same, type: equals}]\ncases: cases.jsonl\n")
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": f"c{i}", "expected": "a", "output": "a"}) + "\n" for i in range(4)))
    assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "runs" / "r.jsonl", "-q").returncode == 0
    results = tmp_path / "runs" / "r.jsonl"
    results.write_bytes(results.read_bytes().rstrip(b"\n"))
    growing = RunIndex(results)
    growing.follow(10)
    assert growing.case_ids == ["c0", "c1", "c2"]  # (no summary: the last line may still be being written)
    process, client = _viewer(tmp_path / "runs", tmp_path)
    try:
        page = client.get("/runs/r").text
        count = client.get("/runs/r/count.json").json()
        case = client.get("/runs/r/cases/c3")
    finally:
        errors = _stopped(process)
    assert "4 cases" in page and count["cases"] == 4 and count["finished"] is True
    assert case.status_code == 200
    assert "Traceback" not in errors, errors


DOT_IDS = [".", "..", "a/../b", "a/..", "./x", "%2e", "~2E", "HumanEval/0"]


def test_a_case_whose_id_a_browser_would_normalise_opens_from_every_link_and_its_review_names_it(tmp_path):
    """Case ids `.` and `..` (a browser resolves such a path part away before it asks: their links
    led to a 404 and to the run's page), `a/../b`, `a/..`, `./x`, `%2e` (parts a proxy reading `%2F`
    as `/` would resolve) and `~2E`: each opens in a browser from the run's list, the review queue,
    its "next case" link and the compare page, showing its own answer, and a review saved there
    names that case. An ordinary id keeps the address it had (a bookmark still opens it)."""
    from playwright.sync_api import sync_playwright

    from browsers import ARGS, chromium_or_skip
    from test_view import Server

    write(tmp_path, "suite.yaml", "name: s\nevaluators: [{name: same, type: equals}]\ncases: cases.jsonl\n")
    write(tmp_path, "cases.jsonl", "".join(json.dumps({"id": case_id, "expected": "a", "output": f"answer of {case_id}"}) + "\n" for case_id in DOT_IDS))
    for name in ("r", "s"):
        assert run_cli("run", tmp_path / "suite.yaml", "-o", tmp_path / "runs" / f"{name}.jsonl", "-q").returncode == 1  # (every answer differs)
    chromium = chromium_or_skip()
    server = Server(tmp_path / "runs", cwd=tmp_path)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(chromium), args=ARGS)
            page = browser.new_page()
            page.set_default_timeout(10_000)
            page.goto(server.url)

            def shown() -> tuple[str, str]:
                page.wait_for_selector("body[data-ready=true]")
                return page.inner_text("#case-id"), page.inner_text(".candidate")

            def review(note: str) -> None:
                page.fill("#reviewer", "ana")
                page.check("input[name='verdict:same'][value=right]")
                page.fill("#note", note)
                with page.expect_navigation():
                    page.click("#save-review")

            listed, bookmarked = [], None
            for case_id in DOT_IDS:
                page.goto(f"{server.base}/runs/r")
                link = page.locator("a.case-link", has_text=re.compile("^" + re.escape(case_id) + "$"))
                bookmarked = bookmarked or (link.get_attribute("href") if case_id == "HumanEval/0" else None)
                with page.expect_navigation():
                    link.click()
                listed.append(shown())
                review(f"review of {case_id}")
                page.wait_for_selector("#saved")
            page.goto(f"{server.base}/runs/r/queue?kind=failures")  # every case reviewed in r: none queued
            assert "every one is reviewed" in page.inner_text("body")
            page.goto(f"{server.base}/runs/s/queue?kind=failures")
            queued = [shown()]
            for _ in DOT_IDS[1:4]:  # by the "next case" link
                with page.expect_navigation():
                    page.click("#next-case")
                queued.append(shown())
            for _ in DOT_IDS[3:]:  # by saving a review in the queue (after the last, the first again)
                review(f"queued review of {queued[-1][0]}")
                queued.append(shown())
            compared = []
            for number in range(len(DOT_IDS)):
                page.goto(f"{server.base}/compare?base=r&new=s")
                with page.expect_navigation():
                    page.click(f"#compare-table tbody a >> nth={number}")
                compared.append(shown())
            browser.close()
    finally:
        errors = server.stop()
    expected = [(case_id, f"answer of {case_id}") for case_id in DOT_IDS]
    assert listed == expected
    assert queued == expected + expected[:1]
    assert sorted(compared) == sorted(expected)
    assert [(r["case_id"], r["note"]) for r in read_jsonl(tmp_path / "runs" / "r.reviews.jsonl")] == [(c, f"review of {c}") for c in DOT_IDS]
    assert [(r["case_id"], r["note"]) for r in read_jsonl(tmp_path / "runs" / "s.reviews.jsonl")] == [(c, f"queued review of {c}") for c in DOT_IDS[3:]]
    assert bookmarked == "/runs/r/cases/HumanEval%2F0"
    assert "Traceback" not in errors, errors


@settings(max_examples=300, deadline=None, database=None)
@given(st.text() | st.lists(st.sampled_from([".", "..", "%2e", ".%2E", "~", "~2E", "a", "/", "é"])).map("".join))
def test_every_case_id_has_an_address_no_part_of_which_a_browser_resolves_and_that_reads_back_to_it(case_id):
    """Any case id: its page's address holds no `.` or `..` part, even with its `%2F` read as `/`
    (as a proxy may), and the server reads it back to that id; an id without such a part, not
    starting with `~`, keeps the address it always had."""
    from urllib.parse import unquote

    from agenteval.view.app import _case_id, case_path

    part = case_path("r", case_id).removeprefix("/runs/r/cases/")
    assert "/" not in part and not {unquote(piece) for piece in unquote(part).split("/")} & {".", ".."}
    assert _case_id(unquote(part)) == case_id
    if not case_id.startswith("~") and not {unquote(piece) for piece in case_id.split("/")} & {".", ".."}:
        assert part == _quote(case_id)
