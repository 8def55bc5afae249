"""Hostile replies on the plain http.client path: a gzip bomb, a flood of headers, a lying
Content-Length. Each is one request's clear error, bounded in memory, never a traceback."""

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
