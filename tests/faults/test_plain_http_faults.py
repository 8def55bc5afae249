"""Hostile replies on the plain http.client path: a gzip bomb, a flood of headers, a lying
Content-Length, a server that stops reading the request. Each is one request's clear error,
bounded in memory, never a traceback."""

import gzip

import pytest
from plain_server import PlainServer, Scripted

from agenteval.endpoints import Connection, EndpointError, Endpoints

BODY = {"model": "m", "messages": []}


def settings(**keys):
    return Connection.model_validate({"backoff": 0.01, "retries": 0, **keys})


def test_a_gzip_bomb_is_cut_at_max_response_mb():
    bomb = gzip.compress(b"0" * (64 << 20))  # 64 MiB of zeros in about 64 KB
    with PlainServer() as server:
        server.script.append(Scripted(body=bomb, headers={"Content-Encoding": "gzip"}))
        with pytest.raises(EndpointError, match=r"the reply is larger than 1 MiB \(max_response_mb\)"):
            Endpoints().send(settings(max_response_mb=1), "POST", server.url + "/x", BODY)


def test_a_flood_of_headers_is_a_retried_protocol_error():
    flood = {f"X-H{i}": "v" for i in range(150)}
    with PlainServer() as server:
        server.script.extend([Scripted(headers=flood), Scripted(body=b'{"fine": 1}')])
        reply = Endpoints().send(settings(retries=1), "POST", server.url + "/x", BODY)
    assert reply.data == {"fine": 1} and reply.attempts == 2


def test_a_flood_of_headers_every_time_is_one_clear_error():
    flood = {f"X-H{i}": "v" for i in range(150)}
    with PlainServer() as server:
        server.script.append(Scripted(headers=flood))
        with pytest.raises(EndpointError, match=r"^POST http://127\.0\.0\.1:\d+/x: RemoteProtocolError: .*headers"):
            Endpoints().send(settings(), "POST", server.url + "/x", BODY)


def test_a_server_that_stops_reading_a_large_request_is_cut_at_the_attempt_s_timeout():
    """The socket blocks (no timeout per call): the attempt's watchdog shuts it at the deadline, also
    while a request too large for the socket buffers waits to be written."""
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()  # and never reads
    endpoints = Endpoints()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat"
    started = time.monotonic()
    with pytest.raises(EndpointError, match=r"timed out after 0.5s"):
        endpoints.send(settings(timeout=0.5), "POST", url, {"text": "x" * 64_000_000})
    took = time.monotonic() - started
    endpoints.close()
    for conn in accepted:
        conn.close()
    listener.close()
    assert took < 4
