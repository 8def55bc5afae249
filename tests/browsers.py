"""Finding a Chromium for the HTML report tests: one on PATH, else Playwright's own.

Without one the browser tests are skipped with the reason locally, and fail in CI (CI=true), where
`.ci/run` installs the distribution's Chromium, as the PostgreSQL tests do with their server.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium() -> Path | None:
    """The first of chromium, chromium-browser, google-chrome on PATH, else the browser Playwright
    installed for itself (`playwright install chromium`), else None."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return Path(found)
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            own = Path(playwright.chromium.executable_path)
    except Exception:  # noqa: BLE001 (no driver, or no browser of its own: both mean "none here")
        return None
    return own if own.exists() else None


def chromium_or_skip() -> Path:
    found = find_chromium()
    if found is None:
        message = (f"no Chromium found: none of {', '.join(NAMES)} is on PATH and Playwright has no browser of its own "
                   "(apt-get install chromium, or playwright install chromium)")
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: .ci/run installs it, so this is an error)")
        pytest.skip(message)
    return found
