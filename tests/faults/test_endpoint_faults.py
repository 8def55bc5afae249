"""Live models against a misbehaving server: every figure a server sends is checked, every wait is
bounded, a bad reply or setting is one case's error, a secret never leaves, and the response cache
stays one plain file whose failures never fail a run.

Each test runs the real `agenteval` command in a subprocess against a real server on 127.0.0.1
(tests/llm_server.py, with faults queued for the next requests).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import MEASURE, read_jsonl, write
from fault_suites import TRACEBACK
from llm_server import Fault, LLMServer, calls

from agenteval.endpoints import Connection, EndpointError, Endpoints
from agenteval.endpoints.pacing import MAX_RETRY_AFTER_S, Gate, parse_retry_after

GRADE = {"correct": {"reasoning": "same", "score": 5}}


def agenteval(*args: object, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`agenteval ARGS` in a fresh process, with `env` laid over the environment."""
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "agenteval", *map(str, args)],
        cwd=cwd, env=environ, capture_output=True, text=True, timeout=timeout, check=False,
    )


def assert_clean(done: subprocess.CompletedProcess[str], code: int) -> None:
    assert TRACEBACK not in done.stderr + done.stdout, done.stderr
    assert done.returncode == code, done.stderr


def one_line(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def chat_suite(folder: Path, target: str, evaluators: str, cases: list[dict]) -> Path:
    with (folder / "cases.jsonl").open("w") as handle:
        for case in cases:
            handle.write(json.dumps(case) + "\n")
    return write(folder, "suite.yaml", f"name: live\n{target}\nevaluators:\n{evaluators}\ncases: cases.jsonl\n")


def openai_target(server: LLMServer, **keys: object) -> str:
    settings = {"type": "openai", "base_url": server.base_url, "model": "m", "backoff": 0.01, **keys}
    return f"target: {json.dumps(settings)}"


def judge_evaluator(server: LLMServer, **keys: object) -> str:
    settings = {
        "type": "llm_judge", "base_url": server.base_url, "model": "j", "backoff": 0.01,
        "criteria": [{"name": "correct", "description": "right", "scale": "likert5"}], **keys,
    }
    return f"  - {json.dumps(settings)}"


def replying(*contents: str):
    """A chat handler answering with `contents` in turn (the last one repeats)."""
    queue, lock = list(contents), threading.Lock()

    def reply(body: dict) -> dict:
        with lock:
            content = queue.pop(0) if len(queue) > 1 else queue[0]
        return {"role": "assistant", "content": content}

    return reply


# --- every figure from a server is checked ------------------------------------------------------

EMBEDDING_FAULTS = {
    "nan": ('{"data": [{"index": 0, "embedding": [NaN, 1.0]}, {"index": 1, "embedding": [0.0, 1.0]}]}', "not a finite number (nan)"),
    "infinity": ('{"data": [{"index": 0, "embedding": [Infinity, 1.0]}, {"index": 1, "embedding": [0.0, 1.0]}]}', "not a finite number (inf)"),
    "boolean": ('{"data": [{"index": 0, "embedding": [true, 1.0]}, {"index": 1, "embedding": [0.0, 1.0]}]}', "not a finite number (True)"),
    "null": ('{"data": [{"index": 0, "embedding": [null, 1.0]}, {"index": 1, "embedding": [0.0, 1.0]}]}', "not a finite number (None)"),
    "lengths_differ": ('{"data": [{"index": 0, "embedding": [1.0, 1.0, 1.0]}, {"index": 1, "embedding": [0.0, 1.0]}]}', "differ in length (2, 3)"),
    "zero_vector": ('{"data": [{"index": 0, "embedding": [0.0, 0.0]}, {"index": 1, "embedding": [0.0, 1.0]}]}', "holds a vector of zeros"),
    "too_few": ('{"data": [{"index": 0, "embedding": [1.0, 0.0]}]}', "has 1 vectors for 2 texts"),
    "error_object": ('{"error": {"message": "model not loaded"}}', "the server answered with an error"),
}


@pytest.mark.parametrize("fault", list(EMBEDDING_FAULTS))
def test_an_unusable_embedding_is_an_error_verdict_and_never_cached(tmp_path, fault):
    body, message = EMBEDDING_FAULTS[fault]
    with LLMServer() as server:
        server.fail(Fault("status", 200, body=body))
        suite = chat_suite(
            tmp_path, "",
            f'  - {{type: semantic_similarity, base_url: "{server.base_url}", model: e, threshold: 0.8, retries: 0}}',
            [{"id": "c1", "expected": "The capital of France is Paris.", "output": "I like turtles."}],
        )
        done = agenteval("run", suite, "-o", "r.jsonl", "-q", cwd=tmp_path)
        assert_clean(done, 3)
        line = read_jsonl(tmp_path / "r.jsonl")[0]
        assert line["verdict"] == "error"
        assert message in line["evaluator_results"][0]["error"]
        again = agenteval("run", suite, "-o", "r2.jsonl", "-q", cwd=tmp_path)  # the server now answers well
        assert server.count("/embeddings") == 2  # the bad reply was not cached
    assert_clean(again, 1)
    assert read_jsonl(tmp_path / "r2.jsonl")[0]["verdict"] == "fail"  # turtles are not Paris


def test_embeddings_near_the_ends_of_the_float_range_are_compared_exactly(tmp_path):
    with LLMServer() as server:
        server.fail(Fault("status", 200, body='{"data": [{"index": 0, "embedding": [1e200, 1e200]}, {"index": 1, "embedding": [2e200, 2e200]}]}'))
        suite = chat_suite(
            tmp_path, "", f'  - {{type: semantic_similarity, base_url: "{server.base_url}", model: e, cache: false}}',
            [{"id": "c1", "expected": "a", "output": "b"}],
        )
        done = agenteval("run", suite, "-o", "r.jsonl", "-q", cwd=tmp_path)
    assert_clean(done, 0)
    assert read_jsonl(tmp_path / "r.jsonl")[0]["evaluator_results"][0]["details"]["similarity"] == pytest.approx(1.0)


JUDGE_REPLIES = {
    "off_scale": ('{"correct": {"reasoning": "great", "score": 7}}', "score 7 is outside likert5"),
    "incomplete": ('{"other": {"reasoning": "?", "score": 5}}', "criterion 'correct' is missing"),
    "nan_score": ('{"correct": {"reasoning": "?", "score": NaN}}', "is not a finite number"),
}


@pytest.mark.parametrize("fault", list(JUDGE_REPLIES))
def test_an_unusable_judge_reply_is_an_error_and_never_cached(tmp_path, fault):
    content, message = JUDGE_REPLIES[fault]
    with LLMServer(chat=replying(content, content, json.dumps(GRADE))) as server:
        suite = chat_suite(tmp_path, "", judge_evaluator(server), [{"id": "c1", "input": "q", "expected": "ref", "output": "cand"}])
        done = agenteval("run", suite, "-o", "r1.jsonl", "-q", cwd=tmp_path)
        assert_clean(done, 3)
        assert message in read_jsonl(tmp_path / "r1.jsonl")[0]["evaluator_results"][0]["error"]
        assert server.count() == 2  # asked once more, then given up
        again = agenteval("run", suite, "-o", "r2.jsonl", "-q", cwd=tmp_path)  # the server now grades well
        assert server.count() == 3  # neither unusable reply came from the cache
        third = agenteval("run", suite, "-o", "r3.jsonl", "-q", cwd=tmp_path)
        assert server.count() == 3  # the usable one did
    assert_clean(again, 0)
    assert_clean(third, 0)
    assert read_jsonl(tmp_path / "r3.jsonl")[0]["evaluator_results"][0]["details"]["usage"]["cached"] is True


CHAT_FAULTS = {
    "empty_choices": ('{"choices": []}', "the reply has no choices[0].message"),
    "error_in_a_200": ('{"error": {"message": "quota exceeded"}}', "the server answered with an error: \"{'message': 'quota exceeded'}\""),
    "html_in_a_200": ("<html>oops</html>", "HTTP 200 with a body that is not JSON: '<html>oops</html>'"),
    "a_list": ("[1, 2, 3]", "the reply has no choices[0].message: '[1, 2, 3]'"),
    "nested_100000_deep": ("[" * 100_000 + "]" * 100_000, "HTTP 200 with a body that is not JSON"),
    "a_5000_digit_integer": ('{"choices": ' + "9" * 5000 + "}", "HTTP 200 with a body that is not JSON"),
}


@pytest.mark.parametrize("fault", list(CHAT_FAULTS))
def test_an_unusable_target_reply_is_that_cases_error_and_never_cached(tmp_path, fault):
    body, message = CHAT_FAULTS[fault]
    with LLMServer(chat=replying("ok")) as server:
        server.fail(Fault("status", 200, body=body))
        suite = chat_suite(
            tmp_path, openai_target(server, temperature=0, retries=0, concurrency=1), "  - {type: equals, path: content}",
            [{"id": "c1", "input": "hi", "expected": {"content": "ok"}}, {"id": "c2", "input": "there", "expected": {"content": "ok"}}],
        )
        done = agenteval("run", suite, "-o", "r1.jsonl", "-q", "--workers", "1", cwd=tmp_path)
        again = agenteval("run", suite, "-o", "r2.jsonl", "-q", cwd=tmp_path)
        assert server.count() == 3  # c1 asked again; c2 from the cache
    assert_clean(done, 3)
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "r1.jsonl")}
    assert lines["c1"]["verdict"] == "error" and message in lines["c1"]["error"]
    assert lines["c2"]["verdict"] == "pass"
    assert_clean(again, 0)


def test_the_judge_grades_the_last_complete_object_of_its_reply(tmp_path):
    reply = 'The format is {"correct": {"score": 5}}. My grade: {"correct": {"reasoning": "wrong city", "score": 1}}'
    with LLMServer(chat=replying(reply)) as server:
        suite = chat_suite(tmp_path, "", judge_evaluator(server), [{"id": "c1", "input": "q", "expected": "ref", "output": "cand"}])
        done = agenteval("run", suite, "-o", "-", "-q", cwd=tmp_path)
    assert_clean(done, 1)
    result = json.loads(done.stdout)["evaluator_results"][0]
    assert result["verdict"] == "fail" and result["details"]["criteria"]["correct"]["raw_score"] == 1
    assert result["details"]["criteria"]["correct"]["reasoning"] == "wrong city"


def test_a_rerun_of_a_live_target_with_a_judge_sends_no_request(tmp_path):
    """The judge grades what the model said, not the answer's `usage` (which says `cached` on a replay)."""

    def chat(body: dict) -> dict:
        is_judge = body["model"] == "j"
        return {"role": "assistant", "content": json.dumps(GRADE) if is_judge else "Paris"}

    with LLMServer(chat=chat) as server:
        suite = chat_suite(
            tmp_path, openai_target(server, temperature=0), judge_evaluator(server),
            [{"id": f"c{i}", "input": f"capital {i}?", "expected": "Paris"} for i in range(3)],
        )
        first = agenteval("run", suite, "-o", "r1.jsonl", "-q", cwd=tmp_path)
        sent = server.count()
        again = agenteval("run", suite, "-o", "r2.jsonl", "-q", cwd=tmp_path)
        prompt = next(r.body["messages"][1]["content"] for r in server.received if r.body["model"] == "j")
        assert server.count() == sent == 6  # 3 answers and 3 grades, then nothing
    assert_clean(first, 0)
    assert_clean(again, 0)
    assert '"content": "Paris"' in prompt and "usage" not in prompt and "latency_ms" not in prompt
    assert [line["score"] for line in read_jsonl(tmp_path / "r2.jsonl")] == [1.0, 1.0, 1.0]


def test_semantic_similarity_sends_at_most_batch_size_texts_per_request(tmp_path):
    with LLMServer() as server:
        suite = chat_suite(
            tmp_path, "",
            f'  - {{type: semantic_similarity, base_url: "{server.base_url}", model: e, batch_size: 1, cache: false, threshold: 0}}',
            [{"id": f"c{i}", "expected": f"reference {i}", "output": f"candidate {i}"} for i in range(4)],
        )
        done = agenteval("run", suite, "-o", "r.jsonl", "-q", "--workers", "4", cwd=tmp_path)
        sizes = [len(request.body["input"]) for request in server.received]
    assert_clean(done, 0)
    assert sizes == [1] * 8


# --- every wait is bounded ----------------------------------------------------------------------

@pytest.mark.parametrize("value", ["inf", "nan", "-5", "1e400"])
def test_a_non_finite_retry_after_is_ignored_and_the_retry_goes_out(tmp_path, value):
    with LLMServer(chat=replying("ok")) as server:
        server.fail(Fault("status", 429, headers={"Retry-After": value}))
        suite = chat_suite(
            tmp_path, openai_target(server, retries=2), "  - {type: equals, path: content}",
            [{"id": "c1", "input": "hi", "expected": {"content": "ok"}}],
        )
        started = time.monotonic()
        done = agenteval("run", suite, "-o", "r.jsonl", "-q", cwd=tmp_path, timeout=60)
        took = time.monotonic() - started
        assert server.count() == 2
    assert_clean(done, 0)
    assert took < 15


def test_a_server_asking_for_a_long_pause_is_held_to_the_documented_maximum():
    assert MAX_RETRY_AFTER_S == 60
    assert parse_retry_after("999999") == 60.0
    assert parse_retry_after("Tue, 01 Jan 2199 00:00:00 GMT") == 60.0
    assert parse_retry_after("inf") is None and parse_retry_after("nan") is None
    gate = Gate(concurrency=1, rate_limit=None)
    gate.hold(float("inf"))  # ignored
    gate.hold(1e9)  # cut to 60 s
    assert gate._next_start - time.monotonic() <= 60.0


@pytest.mark.parametrize("key, value, message", [
    ("rate_limit", "1.0e-9", "must be >= 0.1, got 1e-09"),
    ("timeout", ".inf", "must be a finite number, got inf"),
    ("backoff", "1.0e+9", "must be <= 60.0, got 1000000000.0"),
    ("max_response_mb", "0", "must be > 0.0, got 0"),
    ("base_url", "localhost:11434/v1", "'localhost:11434/v1': the URL must begin with http:// or https://"),
    ("base_url", "ftp://127.0.0.1/v1", "'ftp://127.0.0.1/v1': the URL must begin with http:// or https://"),
    ("base_url", "http://[::1/v1", "'http://[::1/v1': malformed URL (Invalid IPv6 URL)"),
    ("base_url", "http://127.0.0.1:port/v1", "'http://127.0.0.1:port/v1': malformed URL (Port could not be cast to integer value as 'port')"),
])
def test_an_insane_setting_is_refused_at_load_with_file_and_line(tmp_path, key, value, message):
    target = {"type": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", key: value}
    lines = ["name: e", "target:", *(f"  {k}: {v}" for k, v in target.items()),
             "evaluators: [{type: equals, path: content}]", "cases: [{id: a, input: hi, expected: ok}]"]
    write(tmp_path, "suite.yaml", "\n".join(lines) + "\n")
    done = agenteval("validate", "suite.yaml", cwd=tmp_path)
    assert_clean(done, 2)
    line = lines.index(f"  {key}: {value}") + 1
    assert one_line(done.stderr) == [f"suite.yaml:{line}: target.{key}: {message}", "suite.yaml: 1 error"]


def test_an_http_url_without_a_scheme_is_refused_at_load(tmp_path):
    write(tmp_path, "suite.yaml", "name: e\ntarget: {type: http, url: 'localhost:8000/extract'}\n"
          "evaluators: [{type: equals}]\ncases: [{id: a, input: hi, expected: ok}]\n")
    done = agenteval("validate", "suite.yaml", cwd=tmp_path)
    assert_clean(done, 2)
    assert "suite.yaml:2: target.url: 'localhost:8000/extract': the URL must begin with http:// or https://" in done.stderr


def test_a_url_from_the_environment_is_checked_when_sent(tmp_path):
    suite = chat_suite(
        tmp_path, 'target: {type: openai, base_url: "${LLM_URL}", model: m}', "  - {type: equals, path: content}",
        [{"id": "c1", "input": "hi", "expected": {"content": "ok"}}, {"id": "c2", "input": "there", "expected": {"content": "ok"}}],
    )
    done = agenteval("run", suite, "-o", "r.jsonl", "-q", cwd=tmp_path, env={"LLM_URL": "http://[::1/v1"})
    assert_clean(done, 3)
    errors = [line["error"] for line in read_jsonl(tmp_path / "r.jsonl")]
    assert errors == ["openai target: POST ***/chat/completions: malformed URL (Invalid IPv6 URL)"] * 2


def test_a_reply_that_trickles_in_is_cut_at_the_timeout_of_the_whole_attempt(tmp_path):
    with LLMServer() as server:
        server.fail(Fault("drip", seconds=0.5))
        suite = chat_suite(
            tmp_path, openai_target(server, timeout=2, retries=0), "  - {type: equals, path: content}",
            [{"id": "c1", "input": "hi", "expected": {"content": "ok"}}],
        )
        started = time.monotonic()
        done = agenteval("run", suite, "-o", "r.jsonl", "-q", cwd=tmp_path, timeout=60)
        took = time.monotonic() - started
    assert_clean(done, 3)
    assert read_jsonl(tmp_path / "r.jsonl")[0]["error"].endswith("/chat/completions: timed out after 2s")
    assert took < 8  # the drip alone would take 30 s


def test_an_endless_reply_is_cut_at_max_response_mb_and_memory_stays_bounded(tmp_path):
    with LLMServer() as server:
        server.fail(Fault("endless"))
        suite = chat_suite(
            tmp_path, openai_target(server, max_response_mb=4, retries=0), "  - {type: equals, path: content}",
            [{"id": "c1", "input": "hi", "expected": {"content": "ok"}}, {"id": "c2", "input": "there", "expected": {"content": "echo: there"}}],
        )
        peak = tmp_path / "peak"
        done = subprocess.run(
            [*MEASURE, str(peak), sys.executable, "-m", "agenteval", "run", str(suite), "-o", "r.jsonl", "-q", "--workers", "1"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )
    assert_clean(done, 3)
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    assert lines["c1"]["error"].endswith("/chat/completions: the reply is larger than 4 MiB (max_response_mb)")
    assert lines["c2"]["verdict"] == "pass"
    assert float(peak.read_text()) < 200  # MB; the server would send 512 MiB


# --- a bad reply or setting is one case's error -----------------------------------------------------

def test_a_corrupt_gzip_body_is_that_cases_error_and_the_run_goes_on(tmp_path):
    with LLMServer(chat=replying("ok")) as server:
        server.fail(Fault("status", 200, headers={"Content-Encoding": "gzip"}, body="\x1f\x08not-gzip-at-all"))
        suite = chat_suite(
            tmp_path, openai_target(server, retries=0), "  - {type: equals, path: content}",
            [{"id": f"c{i}", "input": "hi", "expected": {"content": "ok"}} for i in range(5)],
        )
        done = agenteval("run", suite, "-o", "r.jsonl", "-q", "--workers", "1", cwd=tmp_path)
    assert_clean(done, 3)
    lines = read_jsonl(tmp_path / "r.jsonl")
    assert [line["verdict"] for line in lines] == ["error", "pass", "pass", "pass", "pass"]
    assert "the reply body could not be decoded" in lines[0]["error"]


def test_closing_the_endpoints_while_worker_threads_still_send_never_fails():
    """A stopped run closes its endpoints while threads it left behind still ask for clients."""
    with LLMServer() as server:
        settings = Connection(base_url=server.base_url, model="m", retries=0)
        unexpected: list[BaseException] = []

        def one_request(endpoints: Endpoints) -> None:
            try:
                endpoints.send(settings, "POST", server.base_url + "/chat/completions", {"model": "m", "messages": []})
            except EndpointError:
                pass
            except BaseException as exc:  # noqa: BLE001 - what the test looks for
                unexpected.append(exc)

        for _ in range(10):
            endpoints = Endpoints()
            threads = [threading.Thread(target=one_request, args=(endpoints,)) for _ in range(24)]
            for i, thread in enumerate(threads):
                thread.start()
                if i == 12:
                    endpoints.close()
            for thread in threads:
                thread.join(10)
            endpoints.close()
    assert unexpected == []


# --- a secret never leaves ----------------------------------------------------------------------

def html_data(path: Path) -> str:
    """The gzip+base64 data an HTML report embeds, decoded (a secret would hide in it otherwise)."""
    text = path.read_text()
    encoded = re.search(r'<script id="agenteval-data" type="application/gzip;base64">\n(.*?)\n</script>', text, re.S)
    assert encoded is not None
    return text + gzip.decompress(base64.b64decode(encoded.group(1))).decode()


def assert_secret_never_leaves(core: str, folder: Path, done: subprocess.CompletedProcess[str]) -> list[str]:
    """No file under `folder` (results, summary, JUnit, Markdown, the HTML data decoded, the cache)
    and neither output stream holds `core`, a distinctive part of every secret of the run (so its
    escaped forms are caught too). Returns the names of the files looked at."""
    looked = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix in (".py", ".yaml") or path.name == "cases.jsonl":
            continue  # what the user wrote
        data = path.read_bytes()
        text = html_data(path) if path.suffix == ".html" else data.decode("utf-8", "replace")
        if path.suffix == ".sqlite":
            text = "".join(zlib.decompress(row[0]).decode() for row in sqlite3.connect(path).execute("SELECT value FROM responses"))
        assert core not in text, f"a secret is written to {path.name}"
        looked.append(path.name)
    assert core not in done.stdout, "a secret is printed on stdout"
    assert core not in done.stderr, "a secret is printed on stderr"
    return looked


KEY_FORMS = {
    "trailing_crlf": lambda key: key + "\r\n",  # a .env saved with Windows line ends
    "inner_cr": lambda key: key[:8] + "\r" + key[8:],
    "non_ascii": lambda key: key[:8] + "\u201c" + key[8:] + "\u201d",
}


@pytest.mark.parametrize("form", list(KEY_FORMS))
def test_a_secret_never_leaves_through_any_channel(tmp_path, form):
    core = uuid.uuid4().hex
    env = {
        "SVC_KEY": f"AIza-{core}-url", "SVC_TOKEN": f"tok-{core}-header", "SVC_API_KEY": KEY_FORMS[form](f"sk-live-{core}-api"),
        "JUDGE_SEGMENT": f"seg-{core}-path", "JUDGE_TOKEN": f"jt-{core}-header", "JUDGE_KEY": KEY_FORMS[form](f"sk-judge-{core}-api"),
    }
    echo_key = Fault("status", 500, body=json.dumps({"error": f"bad key sk-live-{core}-api"}))  # a server that echoes the key
    with LLMServer(chat=replying(json.dumps(GRADE))) as server:
        # c0's target: 500 echoing the key; c1's: 200 without the answer; c2's: answered, then its judge: 500
        server.fail(echo_key, Fault("status", 200, body="{}"), Fault("sleep", seconds=0), Fault("status", 500, body="down"))
        target = {
            "type": "http", "url": server.url + "/extract?key=${SVC_KEY}", "headers": {"X-Token": "${SVC_TOKEN}"},
            "api_key_env": "SVC_API_KEY", "response_path": "echo", "retries": 0,
        }
        judge = judge_evaluator(server, base_url=server.url + "/${JUDGE_SEGMENT}/v1", headers={"X-Judge": "${JUDGE_TOKEN}"},
                                api_key_env="JUDGE_KEY", retries=0, path="")
        suite = chat_suite(tmp_path, f"target: {json.dumps(target)}", judge,
                           [{"id": f"c{i}", "input": {"q": i}, "expected": {"q": i}} for i in range(5)])
        done = agenteval("run", suite, "-o", "r.jsonl", "--workers", "1", "--junit", "j.xml", "--markdown", "m.md",
                         "--html", "h.html", cwd=tmp_path, env=env)
        received = list(server.received)
    assert_clean(done, 3)
    looked = assert_secret_never_leaves(core, tmp_path, done)
    assert {"r.jsonl", "r.summary.json", "j.xml", "m.md", "h.html"} <= set(looked)
    lines = {line["case_id"]: line for line in read_jsonl(tmp_path / "r.jsonl")}
    if form == "trailing_crlf":  # sent stripped through every channel, and the failures name the URL redacted
        target_request, judge_request = received[0], next(r for r in received if r.path.endswith("/chat/completions"))
        assert target_request.path == f"/extract?key=AIza-{core}-url"
        assert target_request.headers["Authorization"] == f"Bearer sk-live-{core}-api"
        assert target_request.headers["X-Token"] == f"tok-{core}-header"
        assert judge_request.path == f"/seg-{core}-path/v1/chat/completions"
        assert judge_request.headers["Authorization"] == f"Bearer sk-judge-{core}-api"
        assert lines["c0"]["error"] == f"http target: POST {server.url}/extract?key=***: HTTP 500: '{{\"error\": \"bad key ***\"}}'"
        assert lines["c1"]["error"] == "http target: the response has no `echo`: '{}'"
        assert lines["c2"]["evaluator_results"][0]["error"] == f"llm_judge: POST {server.url}/***/v1/chat/completions: HTTP 500: 'down'"
        assert [lines[c]["verdict"] for c in ("c3", "c4")] == ["pass", "pass"]
    else:  # a key that cannot be sent: every case errors naming the variable, and nothing is sent
        assert received == []
        assert all("SVC_API_KEY (api_key_env) holds a character that cannot be sent" in line["error"] for line in lines.values())


class _Collector(ThreadingHTTPServer):
    """An OTLP/HTTP receiver on 127.0.0.1 keeping every export's raw bytes (spans are protobuf:
    their strings are plain UTF-8 in it)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                collector.bodies.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _echoed(kind: str, server: LLMServer, seen: str) -> tuple[dict, str, list[Fault]]:
    """(the target, where its answer holds what the server echoed, the faults that play the echo)."""
    pause = Fault("sleep", seconds=0)  # a request answered as usual
    if kind == "openai":
        target = {"type": "openai", "base_url": server.base_url, "model": "m", "temperature": 0, "retries": 0,
                  "api_key_env": "ECHO_KEY", "headers": {"X-Token": "${ECHO_TOKEN}"}}
        return target, "content", [Fault("status", 200, body=json.dumps({"choices": [{"message": {"role": "assistant", "content": seen}}]}))]
    if kind == "anthropic":
        target = {"type": "anthropic", "base_url": server.url, "model": "m", "temperature": 0, "retries": 0,
                  "api_key_env": "ECHO_KEY", "headers": {"X-Token": "${ECHO_TOKEN}"}}
        body = {"id": "m", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": seen}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
        return target, "content", [Fault("status", 200, body=json.dumps(body))]
    if kind == "gemini":
        target = {"type": "gemini", "base_url": server.url, "model": "m", "temperature": 0, "retries": 0,
                  "api_key_env": "ECHO_KEY", "headers": {"X-Token": "${ECHO_TOKEN}"}}
        body = {"candidates": [{"content": {"role": "model", "parts": [{"text": seen}]}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}, "modelVersion": "m"}
        return target, "content", [Fault("status", 200, body=json.dumps(body))]
    if kind == "http":
        target = {"type": "http", "url": server.url + "/svc?k=${ECHO_KEY}", "headers": {"X-Token": "${ECHO_TOKEN}"},
                  "retries": 0, "cache": True}
        return target, "echo", [Fault("status", 200, body=json.dumps({"echo": seen}))]
    server.play(calls(("lookup", {})), {"role": "assistant", "content": "done"})
    tool = {"name": "lookup", "parameters": {"type": "object"}, "http": {
        "url": server.url + "/tool", "headers": {"Authorization": "Bearer ${ECHO_KEY}", "X-Token": "${ECHO_TOKEN}"}, "cache": True}}
    target = {"type": "openai", "base_url": server.base_url, "model": "m", "temperature": 0, "retries": 0, "tools": [tool]}
    return target, "tool_calls[0].result.echo", [pause, Fault("status", 200, body=json.dumps({"echo": seen})), pause]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "http", "http_tool"])
def test_a_secret_a_server_echoes_in_a_200_reply_is_redacted_where_the_reply_enters(tmp_path, kind):
    """A key (`api_key_env`, or `${NAME}` in a URL or header) that a server echoes in a usable reply
    is `***` in the answer, and so in the results, reports, the response cache and the spans; a
    judge's unusable reply echoing its own key is `***` in its error (and so in the spans) too."""
    core = uuid.uuid4().hex
    key, token, judge_key = f"sk-{core}-key", f"tok-{core}-header", f"sk-{core}-judge"
    seen = f"I saw Bearer {key} and {token}"
    judge_echo = Fault("status", 200, body=json.dumps({"choices": [{"message": {"role": "assistant", "content": f"key {judge_key}?"}}]}))
    with LLMServer() as server, _Collector() as collector:
        target, path, echo = _echoed(kind, server, seen)
        judge = judge_evaluator(server, api_key_env="JUDGE_KEY", retries=0)
        suite = chat_suite(tmp_path, f"target: {json.dumps(target)}",
                           f"  - {{type: contains, path: {json.dumps(path)}, reference: saw}}\n{judge}", [{"id": "c1", "input": "hi"}])
        env = {"ECHO_KEY": key, "ECHO_TOKEN": token, "JUDGE_KEY": judge_key, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
               "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
        server.fail(*echo, judge_echo, judge_echo)
        first = agenteval("run", suite, "-o", "r.jsonl", "--html", "h.html", "--junit", "j.xml", "--otel", cwd=tmp_path, env=env)
        sent = len(server.received)
        server.fail(judge_echo, judge_echo)  # a replay: the target's reply from the cache, the judge asked again
        again = agenteval("run", suite, "-o", "again.jsonl", "--html", "again.html", "--otel", cwd=tmp_path, env=env)
        replayed = server.received[sent:]
    assert_clean(first, 3)
    assert_clean(again, 3)
    assert [request.path for request in replayed] == ["/v1/chat/completions"] * 2  # the judge only
    assert any(core in request.headers.get("Authorization", "") + request.headers.get("x-goog-api-key", "") + request.path
               for request in server.received)  # sent where it belongs
    for out in ("r.jsonl", "again.jsonl"):
        (line,) = read_jsonl(tmp_path / out)
        answer = line["output"]
        for part in path.replace("[0]", ".0").split("."):
            answer = answer[int(part)] if part.isdigit() else answer[part]
        assert answer == "I saw Bearer *** and ***", line["output"]
        assert line["evaluator_results"][0]["verdict"] == "pass"
        assert line["evaluator_results"][1]["error"].endswith("'key ***?'"), line["evaluator_results"][1]
    looked = assert_secret_never_leaves(core, tmp_path, first)
    assert {"r.jsonl", "r.summary.json", "h.html", "j.xml", "responses.sqlite"} <= set(looked)
    assert core not in again.stdout + again.stderr
    assert collector.bodies and not [body for body in collector.bodies if core.encode() in body], "a secret is in a span"
    assert any(b"***" in body for body in collector.bodies)  # the judge's error, redacted, is in its span


def test_a_judge_on_an_anthropic_model_never_lets_its_key_out(tmp_path):
    """A `models:` entry of type anthropic used by a judge: a key the server echoes in an error, in
    an unreadable reply and in a grade is `***` in every error, result, report and the cache."""
    core = uuid.uuid4().hex
    key = f"sk-ant-{core}"

    def message(text: str) -> Fault:
        return Fault("status", 200, body=json.dumps({
            "id": "msg", "type": "message", "role": "assistant", "model": "claude", "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 5},
        }))

    grade = {"correct": {"reasoning": f"the key is {key}", "score": 5}}
    with LLMServer() as server:
        # c0's judge: a 500 echoing the key; c1's: twice unreadable, echoing it; c2's: a grade quoting it
        server.fail(Fault("status", 500, body=json.dumps({"error": f"bad key {key}"})), message(f"key {key}?"), message(f"key {key}?"),
                    message(json.dumps(grade)))
        models = {"claude": {"type": "anthropic", "base_url": server.url, "model": "claude", "api_key_env": "CLAUDE_KEY", "retries": 0}}
        judge = {"type": "llm_judge", "endpoint": "claude", "criteria": [{"name": "correct", "description": "right", "scale": "likert5"}]}
        suite = chat_suite(tmp_path, f"models: {json.dumps(models)}\ntarget: {{type: recorded}}", f"  - {json.dumps(judge)}",
                           [{"id": f"c{i}", "input": "q", "output": "a"} for i in range(3)])
        done = agenteval("run", suite, "-o", "r.jsonl", "--workers", "1", "--html", "h.html", "--junit", "j.xml", cwd=tmp_path,
                         env={"CLAUDE_KEY": key})
        received = list(server.received)
    assert_clean(done, 3)
    assert [request.headers["x-api-key"] for request in received] == [key] * 4  # sent where it belongs
    lines = {line["case_id"]: line["evaluator_results"][0] for line in read_jsonl(tmp_path / "r.jsonl")}
    assert lines["c0"]["error"] == f"llm_judge: anthropic target: POST {server.url}/v1/messages: HTTP 500: '{{\"error\": \"bad key ***\"}}'"
    assert lines["c1"]["error"] == "llm_judge: the reply could not be read after a retry (no JSON object in the reply): 'key ***?'"
    assert lines["c2"]["verdict"] == "pass" and lines["c2"]["details"]["criteria"]["correct"]["reasoning"] == "the key is ***"
    looked = assert_secret_never_leaves(core, tmp_path, done)
    assert {"r.jsonl", "r.summary.json", "h.html", "j.xml", "responses.sqlite"} <= set(looked)


@pytest.mark.parametrize("models, evaluator, message", [
    ({"claude": {"type": "antropic", "model": "c"}}, None,
     "models.claude.type: unknown model type 'antropic'; did you mean 'anthropic'? (known: openai, anthropic, bedrock, azure_openai, gemini)"),
    ({"claude": {"type": "command", "model": "c"}}, None,
     "models.claude.type: a command target cannot be asked a conversation (it has no step()): a model type is one of openai, anthropic, bedrock, azure_openai, gemini"),
    ({"claude": {"type": "anthropic", "model": "c", "api_key_env": "NO_SUCH_CLAUDE_KEY"}}, None,
     "models.claude.api_key_env: environment variable NO_SUCH_CLAUDE_KEY is not set: it holds the Anthropic API key (`api_key_env`); "
     "set it, or name another variable"),
    ({"claude": {"type": "anthropic", "model": "c", "api_key_env": "CLAUDE_KEY", "messages": [{"role": "user", "content": "hi"}]}}, None,
     "models.claude: `messages` says what a target asks, not how to reach a model: give it on the target or judge, not under `models:`"),
    ({"claude": {"type": "anthropic", "model": "c", "api_key_env": "CLAUDE_KEY"}}, {"type": "semantic_similarity", "endpoint": "claude"},
     "evaluators[0].endpoint: 'claude' is a model of type anthropic, which has no embeddings: semantic_similarity needs a model of type openai or bedrock or azure_openai or gemini"),
])
def test_a_models_entry_that_cannot_serve_is_one_line_at_load(tmp_path, models, evaluator, message):
    evaluator = evaluator or {"type": "llm_judge", "endpoint": "claude", "criteria": [{"name": "ok", "description": "fine"}]}
    suite = chat_suite(tmp_path, f"models: {json.dumps(models)}\ntarget: {{type: recorded}}", f"  - {json.dumps(evaluator)}",
                       [{"id": "c0", "input": "q", "output": "a"}])
    secret = f"sk-ant-{uuid.uuid4().hex}"
    done = agenteval("run", suite, "-o", "r.jsonl", cwd=tmp_path, env={"CLAUDE_KEY": secret})
    assert_clean(done, 2)
    assert one_line(done.stderr) == [f"{suite}:{2 if message.startswith('models') else 5}: {message}"]
    assert secret not in done.stdout + done.stderr and not (tmp_path / "r.jsonl").exists()


def test_an_openai_target_naming_an_anthropic_model_is_refused_at_its_line(tmp_path):
    models = {"claude": {"type": "anthropic", "model": "c", "api_key_env": "CLAUDE_KEY"}}
    suite = chat_suite(tmp_path, f"models: {json.dumps(models)}\ntarget: {{type: openai, endpoint: claude}}", "  - {type: equals}",
                       [{"id": "c0", "input": "q", "expected": "a"}])
    done = agenteval("validate", suite, cwd=tmp_path, env={"CLAUDE_KEY": "k"})
    assert_clean(done, 2)
    assert one_line(done.stderr)[0] == (f"{suite}:3: target.endpoint: 'claude' is a model of type anthropic: a target of type openai "
                                        "needs a model under `models:` of type openai (or one without `type:`)")


# --- caches are plain files ---------------------------------------------------------------------

def test_a_cache_dir_that_is_a_file_exits_2_with_one_line(tmp_path):
    suite = chat_suite(tmp_path, 'target: {type: openai, base_url: "http://127.0.0.1:1/v1", model: m, temperature: 0}',
                       "  - {type: equals, path: content}", [{"id": "c1", "input": "hi", "expected": {"content": "ok"}}])
    (tmp_path / "not-a-folder").write_text("x")
    done = agenteval("run", suite, "-o", "r.jsonl", "--cache-dir", "not-a-folder", cwd=tmp_path)
    assert_clean(done, 2)
    assert one_line(done.stderr) == [
        f"error: cannot use not-a-folder for the response cache: not-a-folder is a file, not a folder (give --cache-dir a folder, or --no-cache)"
    ]


def _cached_run(tmp_path: Path, server: LLMServer, cases: int, *args: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    suite = chat_suite(tmp_path, openai_target(server, temperature=0), "  - {type: equals, path: content, reference_path: a}",
                       [{"id": f"c{i}", "input": f"q{i}", "expected": {"a": f"echo: q{i}"}} for i in range(cases)])
    out = f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    return tmp_path / out, agenteval("run", suite, "-o", out, "-q", *args, cwd=tmp_path)


def test_records_of_another_version_or_damaged_ones_are_misses(tmp_path):
    with LLMServer() as server:
        # one request at a time: the records are stored in the cases' order, so a replay's first lookup
        # reads the three after its own ahead, the damaged ones among them
        suite = chat_suite(tmp_path, openai_target(server, temperature=0, concurrency=1), "  - {type: equals, path: content, reference_path: a}",
                           [{"id": f"c{i}", "input": f"q{i}", "expected": {"a": f"echo: q{i}"}} for i in range(4)])
        first = agenteval("run", suite, "-o", "r0.jsonl", "-q", cwd=tmp_path)
        db = sqlite3.connect(tmp_path / ".agenteval/cache/responses.sqlite")
        keys = [row[0] for row in db.execute("SELECT key FROM responses ORDER BY rowid")]
        db.execute("UPDATE responses SET value = ? WHERE key = ?", (zlib.compress(json.dumps({"v": 2, "reply": {}}).encode()), keys[1]))
        db.execute("UPDATE responses SET value = ? WHERE key = ?", (b"not zlib at all", keys[2]))
        db.execute("UPDATE responses SET value = ? WHERE key = ?", ("text, not bytes", keys[3]))
        db.commit()
        db.close()
        again = agenteval("run", suite, "-o", "r1.jsonl", "-q", cwd=tmp_path)
        assert server.count() == 7  # the three spoiled records were asked for again, the first was not
    assert_clean(first, 0)
    assert_clean(again, 0)
    assert [line["verdict"] for line in read_jsonl(tmp_path / "r1.jsonl")] == ["pass"] * 4
    warnings = [line for line in one_line(again.stderr) if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith("warning: response cache ") and warnings[0].endswith(
        "responses.sqlite: a record could not be read (error: Error -3 while decompressing data: incorrect header check); "
        "it counts as a miss"
    ), warnings


def test_a_cache_another_run_holds_open_never_fails_the_run(tmp_path):
    with LLMServer() as server:
        _cached_run(tmp_path, server, 2)
        other = sqlite3.connect(tmp_path / ".agenteval/cache/responses.sqlite", isolation_level=None)
        other.execute("PRAGMA journal_mode = WAL")
        other.execute("BEGIN")
        other.execute("SELECT count(*) FROM responses").fetchone()  # another run, mid-read
        started = time.monotonic()
        out, done = _cached_run(tmp_path, server, 6)  # writes 4 new replies, then closes the shared file
        took = time.monotonic() - started
        other.execute("COMMIT")
        other.close()
    assert_clean(done, 0)
    assert took < 8  # closing does not wait for the other run
    assert (tmp_path / "r1.summary.json").exists() and len(read_jsonl(out)) == 6
    db = sqlite3.connect(tmp_path / ".agenteval/cache/responses.sqlite")
    assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == 6


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_under_the_cache_is_one_warning_and_the_run_completes(tmp_path):
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tiny)], check=True, capture_output=True)
    try:
        with LLMServer(chat=lambda body: {"role": "assistant", "content": os.urandom(1500).hex()}) as server:
            suite = chat_suite(tmp_path, openai_target(server, temperature=0), "  - {type: length, path: content, min: 3000}",
                               [{"id": f"c{i}", "input": f"q{i}", "expected": None} for i in range(120)])
            done = agenteval("run", suite, "-o", "r.jsonl", "-q", "--cache-dir", tiny / "cache", cwd=tmp_path)
    finally:
        subprocess.run(["umount", str(tiny)], check=False, capture_output=True)
    assert_clean(done, 0)
    assert len(read_jsonl(tmp_path / "r.jsonl")) == 120 and (tmp_path / "r.summary.json").exists()
    warnings = [line for line in one_line(done.stderr) if line.startswith("warning: response cache")]
    assert len(warnings) == 1 and "the run goes on without storing more" in warnings[0]


def test_after_a_ray_run_the_cache_is_one_self_contained_file(tmp_path):
    pytest.importorskip("ray")
    with LLMServer() as server:
        out, done = _cached_run(tmp_path, server, 40, "--executor", "ray", "--batch-size", "5")
        assert server.count() == 40
    assert_clean(done, 0)
    assert len(read_jsonl(out)) == 40
    folder = tmp_path / ".agenteval" / "cache"
    assert sorted(path.name for path in folder.iterdir()) == ["responses.sqlite"]
    committed = tmp_path / "committed"
    committed.mkdir()
    (committed / "responses.sqlite").write_bytes((folder / "responses.sqlite").read_bytes())  # the file alone
    assert sqlite3.connect(committed / "responses.sqlite").execute("SELECT count(*) FROM responses").fetchone()[0] == 40
