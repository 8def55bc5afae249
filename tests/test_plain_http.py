"""The plain http.client path of Endpoints against a real local server: what it sends, the encodings
it decodes, kept-alive connections a server closed, and what it leaves to httpx (proxies, query
parameters, URLs httpx would rewrite)."""

import gzip
import json
import zlib

import pytest
from plain_server import PlainServer, Scripted

from agenteval.endpoints import Connection, EndpointError, Endpoints
from agenteval.endpoints.plain_http import USER_AGENT, plain_target, proxies_configured

BODY = {"model": "m", "messages": [{"role": "user", "content": "héllo"}]}


def settings(**keys):
    return Connection.model_validate({"backoff": 0.01, "retries": 0, **keys})


def headers_of(seen):
    return {name.lower(): value for name, value in seen.headers}


def test_a_json_post_is_sent_as_httpx_would_send_it():
    with PlainServer() as server:
        endpoints = Endpoints()
        reply = endpoints.send(settings(headers={"X-Team": "evals"}), "POST", server.url + "/v1/chat", BODY)
        endpoints.close()
    assert reply.status == 200 and reply.data == {"ok": True}
    (seen,) = server.seen
    assert seen.line == "POST /v1/chat HTTP/1.1"
    assert seen.body == json.dumps(BODY, ensure_ascii=False, separators=(",", ":")).encode()
    sent = headers_of(seen)
    assert sent["content-type"] == "application/json" and sent["content-length"] == str(len(seen.body))
    assert sent["user-agent"] == USER_AGENT and sent["x-team"] == "evals" and sent["accept-encoding"] == "gzip, deflate"


def test_a_request_s_head_and_body_arrive_in_one_write():
    """One write per request (http.client writes the head and the body apart: two system calls, each
    giving up the GIL). A raw server on 127.0.0.1, already waiting in recv, gets the whole request
    from its first read."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    first_reads: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            for _ in range(3):  # three requests on the kept-alive connection
                data = conn.recv(65536)
                first_reads.append(data)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ok\": true}")

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    endpoints = Endpoints()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat"
    replies = [endpoints.send(settings(), "POST", url, BODY) for _ in range(3)]
    endpoints.close()
    server.join(5)
    listener.close()
    body = json.dumps(BODY, ensure_ascii=False, separators=(",", ":")).encode()
    assert [reply.data for reply in replies] == [{"ok": True}] * 3
    assert len(first_reads) == 3 and all(read.startswith(b"POST /v1/chat HTTP/1.1\r\n") and read.endswith(b"\r\n\r\n" + body) for read in first_reads)


def test_a_header_the_suite_sets_replaces_the_default_whatever_its_case():
    with PlainServer() as server:
        Endpoints().send(settings(headers={"content-type": "application/vnd.api+json"}), "POST", server.url + "/x", BODY)
    names = [name.lower() for name, _ in server.seen[0].headers]
    assert names.count("content-type") == 1 and headers_of(server.seen[0])["content-type"] == "application/vnd.api+json"


def test_requests_from_one_thread_share_one_kept_alive_connection():
    with PlainServer() as server:
        endpoints = Endpoints()
        for _ in range(5):
            endpoints.send(settings(), "POST", server.url + "/x", BODY)
    assert [seen.connection for seen in server.seen] == [1] * 5


def test_a_connection_the_server_closed_while_idle_is_replaced_and_nothing_is_sent_twice():
    with PlainServer() as server:
        server.script.extend([Scripted(close_after=True), Scripted(body=b'{"second": 1}')])
        endpoints = Endpoints()
        first = endpoints.send(settings(), "POST", server.url + "/x", BODY)
        import time

        time.sleep(0.2)  # the server's close reaches the client's idle connection
        second = endpoints.send(settings(), "POST", server.url + "/x", BODY)
    assert first.data == {"ok": True} and second.data == {"second": 1} and second.attempts == 1
    assert [seen.connection for seen in server.seen] == [1, 2]


@pytest.mark.parametrize("encoding, encode", [
    ("gzip", gzip.compress),
    ("deflate", zlib.compress),
    ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, without the zlib header, as some servers send
])
def test_gzip_and_deflate_replies_are_decoded(encoding, encode):
    with PlainServer() as server:
        server.script.append(Scripted(body=encode(b'{"content": "packed"}'), headers={"Content-Encoding": encoding}))
        reply = Endpoints().send(settings(), "POST", server.url + "/x", BODY)
    assert reply.data == {"content": "packed"}


def test_a_reply_in_an_encoding_only_httpx_knows_is_asked_again_through_httpx():
    with PlainServer() as server:
        server.script.append(Scripted(body=b"?", headers={"Content-Encoding": "br"}))
        endpoints = Endpoints()
        reply = endpoints.send(settings(), "POST", server.url + "/x", BODY)
        again = endpoints.send(settings(), "POST", server.url + "/x", BODY)
    assert reply.data == {"ok": True} and again.data == {"ok": True}
    assert len(server.seen) == 3 and endpoints._targets[server.url + "/x"] is None  # the URL goes by httpx from then on
    assert [headers_of(seen)["user-agent"] for seen in server.seen] == [USER_AGENT] * 3


def test_query_parameters_and_a_url_httpx_would_rewrite_go_through_httpx_with_the_same_user_agent():
    with PlainServer() as server:
        endpoints = Endpoints()
        endpoints.send(settings(), "GET", server.url + "/search", params={"q": "a b"})
        endpoints.send(settings(), "POST", server.url + "/v1/./chat", BODY)
    assert [seen.line for seen in server.seen] == ["GET /search?q=a+b HTTP/1.1", "POST /v1/chat HTTP/1.1"]
    assert [headers_of(seen)["user-agent"] for seen in server.seen] == [USER_AGENT] * 2


def test_a_proxy_in_the_environment_is_used(monkeypatch):
    with PlainServer() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        Endpoints().send(settings(), "POST", "http://service.invalid:8000/v1/chat", BODY)
    assert proxy.seen[0].line == "POST http://service.invalid:8000/v1/chat HTTP/1.1"


def test_which_urls_the_plain_path_sends():
    assert plain_target("http://127.0.0.1:8000/v1/chat/completions") is not None
    assert plain_target("https://api.openai.com/v1/chat/completions").port == 443
    assert plain_target("http://[::1]:9/x").host == "::1"
    assert plain_target("http://h").path == "/"
    for rewritten in (
        "http://Host/x", "http://h/a b", "http://h/a/../b", "http://user:pw@h/x", "http://h/x#frag", "http://h?x=1",
        "http://hôst/x", "http://h/é", "http://h:99999/x", "http://h/%zz",
    ):
        assert plain_target(rewritten) is None, rewritten
    assert proxies_configured({"https_proxy": "http://p:3128"}) and proxies_configured({"ALL_PROXY": "socks5://p"})
    assert not proxies_configured({"NO_PROXY": "*", "HTTP_PROXY": ""})


@pytest.fixture
def tls_server(tmp_path):
    """A PlainServer speaking TLS with a self-signed certificate for 127.0.0.1 (made by openssl)."""
    import ssl
    import subprocess

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    with PlainServer() as server:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server._server.socket = context.wrap_socket(server._server.socket, server_side=True)
        server.url = server.url.replace("http://", "https://")
        yield server, cert


def test_https_goes_by_the_plain_path_with_httpx_s_certificate_checks(tls_server, monkeypatch):
    server, cert = tls_server
    with pytest.raises(EndpointError, match="CERTIFICATE_VERIFY_FAILED"):  # not trusted: refused
        Endpoints().send(settings(), "POST", server.url + "/x", BODY)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trusted as httpx trusts it
    endpoints = Endpoints()
    reply = endpoints.send(settings(), "POST", server.url + "/x", BODY)
    assert reply.data == {"ok": True} and len(endpoints._connections) == 1 and not endpoints._clients


def test_an_https_redirect_is_followed_by_httpx(tls_server, monkeypatch):
    server, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server.script.extend([Scripted(307, b"", {"Location": server.url + "/moved"}), Scripted(307, b"", {"Location": server.url + "/moved"})])
    reply = Endpoints().send(settings(), "POST", server.url + "/x", BODY)
    assert reply.data == {"ok": True}
    assert [seen.line for seen in server.seen] == ["POST /x HTTP/1.1", "POST /x HTTP/1.1", "POST /moved HTTP/1.1"]
