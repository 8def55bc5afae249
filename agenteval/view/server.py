"""Start the viewer: a socket on a free loopback port, the URL with its token, Uvicorn serving the app."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path

from agenteval.view.app import Settings, create_app
from agenteval.view.runs import Runs

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free one the system picks). Raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(runs: Runs, *, host: str, port: int, open_browser: bool, cases_file: Path | None,
          echo: Callable[[str], None]) -> None:
    """Serve until interrupted; prints the URL (with its token) first."""
    import uvicorn

    sock = listen(host, port)
    bound = sock.getsockname()[1]
    # on loopback, only its own names (a page elsewhere cannot reach it by DNS rebinding); opened to
    # other machines (--allow-remote), any name they reach it by: the token guards it
    hosts = tuple(dict.fromkeys([host, *LOOPBACK])) if is_loopback(host) else None
    settings = Settings(runs, hosts=hosts, cases_file=cases_file)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/?token={settings.token}"
    echo(f"agenteval view: {url}")
    echo("press Ctrl+C to stop")
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    config = uvicorn.Config(create_app(settings), log_level="warning", access_log=False, lifespan="off", server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
