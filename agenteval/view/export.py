"""`agenteval view --export DIR`: the same pages as static files (runs, each run's first page of
cases, its agreement panel and those cases), for a CI artifact. Rendered by the app itself, so
they look as the live viewer does; forms are left out and links point at the files."""

from __future__ import annotations

import re
from pathlib import Path

from agenteval.view.app import COOKIE, Settings, _static_name, create_app
from agenteval.view.runs import Runs

CASES_PER_RUN = 50


def export(runs: Runs, folder: Path) -> list[Path]:
    """Write the pages into `folder` (created); the files written."""
    from starlette.testclient import TestClient

    settings = Settings(runs, hosts=("testserver",), static=True)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with TestClient(create_app(settings), cookies={COOKIE: settings.token}, raise_server_exceptions=False) as client:
        def save(path: str) -> str:
            reply = client.get(path)
            if reply.status_code != 200:
                raise ExportError(f"{path}: {reply.status_code} {reply.text[:200]}")
            target = folder / _static_name(path.split("?")[0], {})
            target.write_bytes(reply.content)
            written.append(target)
            return reply.text

        for asset in ("report.css", "view.css", "view.js"):
            save(f"/assets/{asset}")
        save("/")
        for run in settings.runs.all():
            page = save(f"/runs/{run.key}")
            save(f"/runs/{run.key}/agreement")
            for case_link in re.findall(r'class="case-link" href="([^"]+)"', page)[:CASES_PER_RUN]:
                case = case_link[: -len(".html")].split("~cases~", 1)[1]
                save(f"/runs/{run.key}/cases/{case}")
    return written


class ExportError(RuntimeError):
    """A page could not be rendered for the export."""
