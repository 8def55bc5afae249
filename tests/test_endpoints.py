"""The shared HTTP client against a real local server: retries, Retry-After, timeouts, pacing, cache, secrets."""

import random
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from conftest import refused_url
from llm_server import Fault, LLMServer

from agenteval.endpoints import Connection, EndpointError, Endpoints, ResponseCache
from agenteval.endpoints.cache import request_key
from agenteval.endpoints.pacing import Gate, parse_retry_after, retry_delay
from agenteval.endpoints.settings import MissingEnvironment, substitute_env

FAST = {"backoff": 0.01}


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def settings(**keys):
    return Connection.model_validate({**FAST, **keys})


def post(endpoints, server, body=None, **keys):
    return endpoints.send(settings(**keys), "POST", server.base_url + "/chat/completions", body or {"model": "m", "messages": []})


# --- retries ------------------------------------------------------------------------------------

def test_a_500_is_retried_and_the_next_answer_counts(server):
    server.fail(Fault("status", 500), Fault("status", 502))
    reply = post(Endpoints(), server, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status == 200 and reply.attempts == 3
    assert reply.data["choices"][0]["message"]["content"] == "echo: hi"
    assert server.count() == 3


def test_retries_exhausted_is_an_error_with_status_attempts_and_body_excerpt(server):
    server.fail(*[Fault("status", 503, body='{"error": "overloaded, try later"}')] * 4)
    with pytest.raises(EndpointError) as caught:
        post(Endpoints(), server, retries=3)
    message = str(caught.value)
    assert "after 4 attempts" in message and "HTTP 503" in message and "overloaded, try later" in message
    assert server.count() == 4


def test_a_404_is_not_retried(server):
    server.fail(Fault("status", 404, body="no such model"))
    with pytest.raises(EndpointError, match=r"HTTP 404: 'no such model'"):
        post(Endpoints(), server)
    assert server.count() == 1


def test_429_waits_for_retry_after(server):
    server.fail(Fault("status", 429, headers={"Retry-After": "1"}))
    started = time.perf_counter()
    reply = post(Endpoints(), server, backoff=0.0)
    elapsed = time.perf_counter() - started
    assert reply.status == 200 and server.count() == 2
    assert 1.0 <= elapsed < 2.0  # backoff 0 alone would have retried at once


def test_retry_after_holds_back_other_requests_to_the_same_endpoint(server):
    endpoints = Endpoints()
    server.fail(Fault("status", 429, headers={"Retry-After": "1"}))
    refused = threading.Thread(target=lambda: post(endpoints, server, backoff=0.0))
    started = time.perf_counter()
    refused.start()
    time.sleep(0.2)
    post(endpoints, server, backoff=0.0)  # not refused itself, but the endpoint asked for a pause
    assert time.perf_counter() - started >= 1.0
    refused.join()
    assert server.count() == 3


def test_a_slow_answer_past_the_timeout_is_an_error_naming_the_timeout(server):
    server.fail(Fault("sleep", seconds=1.5))
    started = time.perf_counter()
    with pytest.raises(EndpointError, match=r"timed out after 0.3s"):
        post(Endpoints(), server, timeout=0.3, retries=0)
    assert time.perf_counter() - started < 1.2


def test_a_timeout_is_retried(server):
    server.fail(Fault("sleep", seconds=1.0))
    reply = post(Endpoints(), server, timeout=0.3, retries=1)
    assert reply.status == 200 and reply.attempts == 2


def test_a_truncated_body_is_retried(server):
    server.fail(Fault("truncate"))
    reply = post(Endpoints(), server)
    assert reply.attempts == 2 and server.count() == 2


def test_a_body_that_is_not_json_is_an_error_with_an_excerpt(server):
    server.fail(*[Fault("not_json")] * 2)
    with pytest.raises(EndpointError) as caught:
        post(Endpoints(), server, retries=1)
    assert "not JSON" in str(caught.value) and "<html>Bad gateway</html>" in str(caught.value)


def test_a_closed_port_is_a_connection_error_after_retries():
    with refused_url() as url, pytest.raises(EndpointError, match="ConnectError"):
        Endpoints().send(settings(retries=1), "POST", url + "/chat/completions", {})


# --- pacing ------------------------------------------------------------------------------------

def parallel(count, call):
    threads = [threading.Thread(target=call) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_concurrency_bounds_requests_in_flight():
    with LLMServer(delay=0.1) as server:
        endpoints = Endpoints()
        parallel(8, lambda: post(endpoints, server, concurrency=3))
        assert server.count() == 8 and server.max_in_flight == 3


def test_rate_limit_spaces_request_starts():
    with LLMServer() as server:
        endpoints = Endpoints()
        started = time.perf_counter()
        parallel(5, lambda: post(endpoints, server, rate_limit=600))  # one every 0.1 s
        assert time.perf_counter() - started >= 0.4


def test_retry_delay_is_exponential_with_jitter_and_honours_retry_after():
    rng = random.Random(7)
    for attempt in range(5):
        ceiling = 0.5 * 2**attempt
        delays = [retry_delay(attempt, 0.5, None, rng) for _ in range(200)]
        assert ceiling / 2 <= min(delays) and max(delays) <= ceiling
        assert max(delays) - min(delays) > ceiling / 4  # jittered, not constant
    assert 3.0 <= retry_delay(0, 0.5, 3.0, rng) <= 3.3


def test_retry_after_reads_seconds_and_http_dates():
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = (now + timedelta(seconds=30)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert parse_retry_after("7", now) == 7.0
    assert parse_retry_after(later, now) == 30.0
    assert parse_retry_after("soon", now) is None and parse_retry_after(None) is None


def test_gate_hold_delays_the_next_start():
    gate = Gate(concurrency=2, rate_limit=None)
    gate.hold(0.3)
    started = time.perf_counter()
    with gate.slot():
        pass
    assert time.perf_counter() - started >= 0.29


# --- cache -------------------------------------------------------------------------------------

def test_a_cached_request_is_not_sent_again(server, tmp_path):
    endpoints = Endpoints(ResponseCache(tmp_path / "c.sqlite"))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    url = server.base_url + "/chat/completions"
    first = endpoints.send(settings(), "POST", url, body, cache=True)
    again = endpoints.send(settings(), "POST", url, body, cache=True)
    assert server.count() == 1
    assert again.cached and not first.cached and again.data == first.data and again.latency_ms == first.latency_ms
    endpoints.send(settings(), "POST", url, {**body, "temperature": 0.5}, cache=True)  # other options: another key
    assert server.count() == 2
    endpoints.close()
    assert not (tmp_path / "c.sqlite-wal").exists()  # folded back into one file on close
    refreshed = Endpoints(ResponseCache(tmp_path / "c.sqlite"), refresh=True)
    assert not refreshed.send(settings(), "POST", url, body, cache=True).cached
    assert server.count() == 3


def test_under_cache_only_a_cached_request_is_answered_and_any_other_is_not_sent(server, tmp_path):
    from agenteval.endpoints.client import NotCached, cache_only

    endpoints = Endpoints(ResponseCache(tmp_path / "c.sqlite"))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    url = server.base_url + "/chat/completions"
    first = endpoints.send(settings(), "POST", url, body, cache=True)
    with cache_only():
        again = endpoints.send(settings(), "POST", url, body, cache=True)
        with pytest.raises(NotCached):
            endpoints.send(settings(), "POST", url, {**body, "temperature": 0.5}, cache=True)  # not in the cache
        with pytest.raises(NotCached):
            endpoints.send(settings(), "POST", url, body)  # not cacheable at all
    assert again.cached and again.data == first.data and server.count() == 1
    seen = []  # the mode is the thread's own: another thread sends as usual meanwhile
    with cache_only():
        other = threading.Thread(target=lambda: seen.append(endpoints.send(settings(), "POST", url, {**body, "seed": 1}, cache=True)))
        other.start()
        other.join()
    assert not seen[0].cached and server.count() == 2
    assert not endpoints.send(settings(), "POST", url, {**body, "seed": 2}, cache=True).cached  # and it ends with the block
    assert server.count() == 3
    endpoints.close()


def test_records_put_from_many_threads_are_read_at_once_and_all_stored_by_close(tmp_path):
    """`put` queues (a writer thread stores): a queued record reads as stored, and close stores every one."""
    import sqlite3
    import threading

    cache = ResponseCache(tmp_path / "c.sqlite")
    records = {f"k{i}": {"status": 200, "data": {"n": i, "text": "x" * i}, "latency_ms": float(i)} for i in range(400)}
    items = list(records.items())

    def put_some(part):
        for key, record in part:
            cache.put(key, record)
            assert cache.get(key) == record  # at once, stored or still queued

    threads = [threading.Thread(target=put_some, args=(items[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.close()
    assert not (tmp_path / "c.sqlite-wal").exists()
    db = sqlite3.connect(tmp_path / "c.sqlite")
    assert db.execute("SELECT count(*) FROM responses").fetchone()[0] == 400
    db.close()
    cache.put("late", {"status": 200, "data": {}, "latency_ms": 1.0})  # after close: reopened, stored by the next close
    cache.close()
    reopened = ResponseCache(tmp_path / "c.sqlite")
    assert reopened.get("late") == {"status": 200, "data": {}, "latency_ms": 1.0} and reopened.get("k399") == records["k399"]
    reopened.close()


def test_a_cache_empty_when_opened_reads_the_file_only_for_keys_it_stored(tmp_path, monkeypatch):
    """A first run's lookups of requests it never stored are misses without a read of the file (what
    another process stores meanwhile is not looked for); a cache opened with records in it, or one
    that stored more than KNOWN_KEYS, reads the file for every key."""
    from agenteval.endpoints import cache as cache_module

    path = tmp_path / "c.sqlite"
    record = {"status": 200, "data": {"n": 1}, "latency_ms": 2.0}
    first = ResponseCache(path)  # no file yet
    first.put("mine", record)
    first.close()  # stored
    assert first.get("mine") == record  # read back from the file
    other = ResponseCache(path)  # opened with a record in it: looks every key up
    other.put("theirs", {**record, "data": {"n": 2}})
    other.close()
    assert first.get("theirs") is None  # not among the keys `first` stored: not read
    third = ResponseCache(path)
    assert third.get("theirs") == {**record, "data": {"n": 2}} and third.get("mine") == record
    third.close()

    monkeypatch.setattr(cache_module, "KNOWN_KEYS", 2)
    fresh = ResponseCache(tmp_path / "d.sqlite")
    for i in range(3):  # one more than it keeps: from then on it reads the file for every key
        fresh.put(f"k{i}", record)
    fresh.close()
    late = ResponseCache(tmp_path / "d.sqlite")
    late.put("late", record)
    late.close()
    assert fresh.get("late") == record and fresh.get("k2") == record and fresh.get("none") is None
    fresh.close()


def traced_reads(monkeypatch) -> list[str]:
    """The SELECTs every SQLite connection the cache opens from now on runs (its readers' included)."""
    import sqlite3

    statements: list[str] = []
    real = sqlite3.connect

    def connect(*args, **kwargs):
        db = real(*args, **kwargs)
        db.set_trace_callback(lambda sql: statements.append(sql) if sql.lstrip().upper().startswith("SELECT") else None)
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)
    return statements


def test_a_re_run_reads_the_records_after_each_one_it_looks_up_in_one_query(tmp_path, monkeypatch):
    """Records asked for in the order they were stored come from one query per AHEAD_ROWS; in another
    order each is read by its key, with a read ahead only now and then; every record is the stored one."""
    import random

    from agenteval.endpoints import cache as cache_module

    path = tmp_path / "c.sqlite"
    records = {f"k{i}": {"status": 200, "data": {"n": i}, "latency_ms": float(i)} for i in range(1000)}
    first = ResponseCache(path)
    for key, record in records.items():
        first.put(key, record)
    first.close()
    reads = traced_reads(monkeypatch)

    def looked_up(order):
        cache = ResponseCache(path)
        reads.clear()
        found = [cache.get(key) for key in order]
        cache.close()
        return found, sum("WHERE key" in sql for sql in reads), sum("rowid >" in sql for sql in reads)

    keys = list(records)
    assert looked_up(keys) == ([records[key] for key in keys], 4, 4)  # k0, k257, k514, k771 by key; 256 after each
    backwards, by_key, ahead = looked_up(keys[::-1])  # nothing read ahead is asked for: it soon reads ahead only to probe
    assert backwards == [records[key] for key in keys[::-1]] and by_key == 1000 and ahead <= 2 + 1000 // cache_module.AHEAD_PROBE
    shuffled = random.Random(7).sample(keys, len(keys))
    assert looked_up(shuffled)[0] == [records[key] for key in shuffled]


def test_a_record_put_after_it_was_read_ahead_is_read_as_put(tmp_path):
    import sqlite3
    import time

    import orjson
    import zlib

    path = tmp_path / "c.sqlite"
    old = {"status": 200, "data": {"v": "old"}, "latency_ms": 1.0}
    new = {"status": 200, "data": {"v": "new"}, "latency_ms": 2.0}
    first = ResponseCache(path)
    for i in range(10):
        first.put(f"k{i}", old)
    first.close()
    cache = ResponseCache(path)
    assert cache.get("k0") == old  # k1..k9 read ahead
    cache.put("k5", new)
    assert cache.get("k5") == new  # queued
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the writer stores it (and lets it go from the queue)
        db = sqlite3.connect(path)
        (stored,) = db.execute("SELECT value FROM responses WHERE key = 'k5'").fetchone()
        db.close()
        if orjson.loads(zlib.decompress(stored)) == new and "k5" not in cache._queued:
            break
        time.sleep(0.01)
    assert cache.get("k5") == new and cache.get("k6") == old
    cache.close()


def test_a_lookup_after_a_put_reads_what_was_put_while_other_threads_read_ahead(tmp_path):
    """Four threads each put new versions of their own keys and read each back at once, while the
    others' lookups read ahead over the whole file and the writer stores batches: no thread ever
    reads an older version than the one it put."""
    import threading

    path = tmp_path / "c.sqlite"
    first = ResponseCache(path)
    for i in range(400):
        first.put(f"k{i}", {"status": 200, "data": {"v": 0}, "latency_ms": 1.0})
    first.close()
    cache = ResponseCache(path)
    stale: list[tuple[str, int, object]] = []

    def churn(part: int) -> None:
        mine = [f"k{i}" for i in range(part, 400, 4)]
        for version in range(1, 6):
            for key in mine:
                cache.get(f"k{(int(key[1:]) + 37) % 400}")  # someone else's: reads ahead from there
                cache.put(key, {"status": 200, "data": {"v": version}, "latency_ms": 1.0})
                got = cache.get(key)
                if got is None or got["data"]["v"] != version:
                    stale.append((key, version, got))

    threads = [threading.Thread(target=churn, args=(part,)) for part in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert stale == []
    assert [cache.get(f"k{i}")["data"]["v"] for i in range(400)] == [5] * 400
    cache.close()


def test_records_read_ahead_stay_within_their_bytes(tmp_path, monkeypatch):
    import os
    import sqlite3

    from agenteval.endpoints import cache as cache_module

    path = tmp_path / "c.sqlite"
    big = {f"k{i}": {"status": 200, "data": {"blob": os.urandom(3000).hex()}, "latency_ms": 1.0} for i in range(40)}
    first = ResponseCache(path)
    for key, record in big.items():
        first.put(key, record)
    first.close()
    db = sqlite3.connect(path)
    sizes = [length for (length,) in db.execute("SELECT length(value) FROM responses WHERE key != 'k0' ORDER BY rowid")]
    db.close()
    fit = max(n for n in range(len(sizes) + 1) if sum(sizes[:n]) <= 20_000)  # of the 39 after k0 (about 3.3 KB each)
    monkeypatch.setattr(cache_module, "AHEAD_BYTES", 20_000)
    cache = ResponseCache(path)
    assert cache.get("k0") == big["k0"]
    kept = dict(cache._ahead)
    assert 2 <= fit <= 10 and list(kept) == [f"k{i}" for i in range(1, fit + 1)] and sum(map(len, kept.values())) <= 20_000
    assert [cache.get(key) for key in big] == list(big.values())
    cache.close()


def test_records_are_stored_as_zlib_streams_any_reader_inflates(tmp_path):
    """Records longer than the compressor's 4 KiB window come back whole, and each stored value is a
    plain zlib stream (what `zlib.decompress` reads, as earlier versions wrote and read them)."""
    import sqlite3
    import zlib

    import orjson

    from agenteval.endpoints.cache import compress

    text = "".join(f"line {i}: {'abcdefghij'[i % 10] * (i % 37)}\n" for i in range(6000))  # ~130 KB
    record = {"status": 200, "data": {"text": text}, "latency_ms": 3.0}
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("big", record)
    assert cache.get("big") == record  # queued
    cache.close()
    db = sqlite3.connect(tmp_path / "c.sqlite")
    (stored,) = db.execute("SELECT value FROM responses WHERE key = 'big'").fetchone()
    db.close()
    assert orjson.loads(zlib.decompress(stored)) == record and len(stored) < len(text) / 4
    again = ResponseCache(tmp_path / "c.sqlite")
    assert again.get("big") == record
    again.close()
    assert zlib.decompress(compress(b"")) == b"" and zlib.decompress(compress(text.encode())) == text.encode()


def test_the_cache_key_covers_url_and_body_but_not_headers():
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert request_key("http://a/v1", body) == request_key("http://a/v1", dict(reversed(body.items())))
    assert request_key("http://a/v1", body) != request_key("http://b/v1", body)
    assert request_key("http://a/v1", body) != request_key("http://a/v1", body, variant=1)


def test_a_file_that_is_not_a_cache_is_refused_with_a_clear_message(tmp_path):
    bad = tmp_path / "responses.sqlite"
    bad.write_text("not a database at all" * 100)
    from agenteval.endpoints import CacheError

    with pytest.raises(CacheError, match="is not a readable response cache"):
        ResponseCache(bad)


def test_reading_a_missing_cache_creates_no_file(tmp_path):
    cache = ResponseCache(tmp_path / "sub" / "responses.sqlite")
    assert cache.get("k") is None
    cache.close()
    assert not (tmp_path / "sub").exists()


# --- secrets -----------------------------------------------------------------------------------

SECRET = "sk-test-0123456789abcdef"


def test_the_api_key_is_sent_as_bearer_and_never_in_errors_or_the_cache(server, tmp_path):
    cache_file = tmp_path / "responses.sqlite"
    endpoints = Endpoints(ResponseCache(cache_file), environ={"MY_KEY": SECRET, "TEAM": "t-42-secret"})
    config = settings(api_key_env="MY_KEY", headers={"X-Team": "${TEAM}"}, retries=0)
    endpoints.send(config, "POST", server.base_url + "/chat/completions", {"model": "m", "messages": []}, cache=True)
    assert server.received[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert server.received[0].headers["X-Team"] == "t-42-secret"
    server.fail(Fault("status", 401, body=f'{{"error": "bad key {SECRET} for team t-42-secret"}}'))
    with pytest.raises(EndpointError) as caught:
        endpoints.send(config, "POST", server.base_url + "/chat/completions", {"model": "m", "messages": [1]})
    assert SECRET not in str(caught.value) and "t-42-secret" not in str(caught.value)
    assert "bad key *** for team ***" in str(caught.value)
    endpoints.close()
    assert SECRET.encode() not in cache_file.read_bytes()
    rows = sqlite3.connect(cache_file).execute("SELECT key, value FROM responses").fetchall()
    assert len(rows) == 1 and SECRET not in rows[0][0]


def test_a_missing_key_variable_is_an_error_naming_it(server):
    with pytest.raises(EndpointError, match="environment variable NOPE_KEY is not set"):
        Endpoints(environ={}).send(settings(api_key_env="NOPE_KEY"), "POST", server.base_url + "/chat/completions", {})
    assert server.count() == 0


def test_env_substitution_with_defaults():
    assert substitute_env("${A}/x/${B:-dflt}", {"A": "1"}) == "1/x/dflt"
    with pytest.raises(MissingEnvironment, match="C is not set"):
        substitute_env("${C}", {})


@pytest.mark.parametrize("keys, message", [
    ({"api_key": "sk-live-abc"}, "a literal `api_key` is not allowed"),
    ({"api_key_env": "sk-live-abcdef123"}, "api_key_env takes the NAME of an environment variable"),
    ({"headers": {"Authorization": "Bearer sk-abc"}}, "header 'Authorization' holds a literal secret"),
])
def test_a_literal_secret_in_the_config_is_refused(keys, message):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message) as caught:
        Connection.model_validate(keys)
    assert "sk-live-abcdef123" not in str(caught.value).split("input_value")[0]


def test_redaction_covers_the_escaped_forms_of_a_secret():
    from agenteval.endpoints.client import redact

    secret = "sk-live-12345\r"
    for shown in ("b'Bearer sk-live-12345\\r'", '"sk-live-12345\\r"', "key=sk-live-12345%0D", "sk-live-12345 (stripped)"):
        assert "sk-live-12345" not in redact(shown, [secret]), shown
    assert redact("key=a%2Fb%3Dc", ["a/b=c"]) == "key=***"


@pytest.mark.parametrize("secret", [
    "sk-live-12345", 'sk-"quoted"\\back', "sk-clé-ünïcode", "sk-tab\there\u2028line", "sk-live-12345\r", "a/b=c&d",
])
def test_a_reply_echoing_a_secret_anywhere_is_redacted_and_one_without_is_left_as_it_is(secret):
    """Values, keys, nested deep, beside escapes and non-ASCII text, in any of its forms; and a
    reply without it comes back unchanged (the same object), with or without large integers."""
    from agenteval.endpoints.client import _forms, redact_reply

    for form in sorted(_forms(secret)):
        for extra in ({}, {"n": 2**70}):  # (an integer orjson cannot write: the walk alone decides)
            reply = {"choices": [{"message": {"content": f"é\n{form}!", form: [1, {"deep": [[f"x{form}"]]}]}}], **extra}
            cleaned = redact_reply(reply, [secret])
            texts = repr(cleaned)
            assert all(shown not in texts for shown in _forms(secret) if shown != "***"), (form, texts)
            assert cleaned["choices"][0]["message"]["content"] == "é\n***!" and cleaned.get("n") == extra.get("n")
    plain = {"choices": [{"message": {"content": "nothing to hide, é\n\"quoted\""}}], "big": 2**70}
    before = repr(plain)
    assert redact_reply(plain, [secret]) is plain and repr(plain) == before
    assert redact_reply({"content": "x"}, []) == {"content": "x"}


def test_a_reply_the_cache_cannot_store_is_skipped_and_the_next_is_stored(tmp_path, capsys):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("bad", {"content": "half an emoji \ud83d"})  # a lone surrogate: not writable as UTF-8
    cache.put("good", {"content": "fine"})
    cache.close()
    again = ResponseCache(tmp_path / "c.sqlite")
    assert again.get("good") == {"content": "fine"} and again.get("bad") is None
    again.close()
    warning = capsys.readouterr().err
    assert warning.count("warning: response cache") == 1 and "it is asked for again next run" in warning


def test_the_request_watchdog_sweeps_finished_attempts_and_still_cuts_a_live_one():
    """A finished attempt's entry leaves the deadline heap at the next sweep (the heap holds about what
    is in flight, not every request of the last `timeout` seconds), and a live one is still shut at
    its deadline."""
    import socket

    from agenteval.endpoints.client import _Watchdog

    watchdog = _Watchdog()
    left, right = socket.socketpair()
    live = watchdog.watch(time.monotonic() + 0.5, left)  # (the first entry starts the thread)
    for _ in range(50_000):  # finished attempts, each watched for 60 s
        watchdog.watch(time.monotonic() + 60, None).cancel()
    assert len(watchdog._heap) <= 2 * _Watchdog.COMPACT_AT
    left.settimeout(5)
    assert left.recv(1) == b""  # shut at the deadline: the blocked read ends
    assert live.fired and not live.done
    left.close()
    right.close()
