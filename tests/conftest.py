"""Shared helpers: the real CLI as a subprocess, real files in tmp dirs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SCHEMAS = ROOT / "schemas"


def run_cli(*args: str | Path, cwd: Path | None = None, timeout: float = 120, input: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """`agenteval ARGS` in a fresh process, as a user would run it."""
    return subprocess.run(
        [sys.executable, "-m", "agenteval", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, input=input,
    )


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.fixture
def cli():
    return run_cli
