"""`agenteval view --export DIR`: the same pages as static files (runs, each run's first page of
cases, its agreement panel and those cases), for a CI artifact. Rendered by the app itself, so
they look as the live viewer does; forms are left out and links point at the files."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from agenteval.view.app import Settings, _static_name, case_path, create_app
from agenteval.view.runs import Run, Runs

CASES_PER_RUN = 50


def export(runs: Runs, folder: Path) -> list[Path]:
    """Write the pages into `folder` (created), each run read whole first; the files written.
    A file in the way that is a symlink or no regular file is refused (ExportError), never written through."""
    settings = Settings(runs, hosts=("testserver",), static=True)
    app = create_app(settings)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(path: str) -> None:
        status, body = asyncio.run(_get(app, path, f"{settings.cookie}={settings.token}"))
        if status != 200:
            raise ExportError(f"{unquote(path)}: {status} {_text_of(body.decode(errors='replace'))}")
        target = folder / _static_name(path, {})
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise ExportError(f"{target}: not a regular file (a symlink, or a folder); not replaced")
        target.write_bytes(body)
        written.append(target)

    for asset in ("report.css", "view.css", "view.js"):
        save(f"/assets/{asset}")
    runs_listed = settings.runs.all()
    for run in runs_listed:
        _read_whole(run)
    save("/")
    for run in runs_listed:
        save(f"/runs/{run.key}")
        save(f"/runs/{run.key}/agreement")
        for group in run.index.page(size=CASES_PER_RUN).groups:  # the run page's first cases, in its order
            save(case_path(run.key, group[0].case_id))
    return written


async def _get(app: Any, path: str, cookie: str) -> tuple[int, bytes]:
    """GET `path` (percent-encoded) from the app, as a server would hand it the request: the status and the body."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": unquote(path), "raw_path": path.encode(), "root_path": "", "query_string": b"",
        "headers": [(b"host", b"testserver"), (b"cookie", cookie.encode())],
        "client": ("127.0.0.1", 0), "server": ("testserver", 80),
    }
    status, parts = 500, []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(parts)


def _read_whole(run: Run) -> None:
    """Wait for a store's run to be copied and for the index to reach the end of the file: a page
    rendered before would show a run half read."""
    if run.copying is not None:
        run.copying.join()
    run.sync(force=True)
    run.index.complete = run.summary() is not None  # (as a page asks: a finished run's last line is whole)
    while not run.index.refresh():
        pass


def _text_of(page: str) -> str:
    """The words of an error page, without its markup, in one short line."""
    from html import unescape

    return " ".join(unescape(re.sub(r"<[^>]+>", " ", page.split("</nav>", 1)[-1])).split())[:200]


class ExportError(RuntimeError):
    """A page could not be rendered for the export."""
