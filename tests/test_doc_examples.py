"""The docs run: every `console` block of README.md and docs/*.md is executed and its output compared.

A `console` block holds commands after `$ ` (a line ending in `\\` continues on the next), each
followed by the output it prints. The command runs in bash, in a scratch folder holding a copy of
examples/, with CI=1 (no progress bar) and a fixed terminal width. Output is compared line by
line, trailing spaces ignored; in the documented output `<...>` (e.g. `<time>`, `<suite dir>`)
stands for any text within one line, and a line `...` for any number of lines. A command's exit
status is 0 unless its line ends in `# exit N`. A block right after `<!-- doctest: skip: WHY -->`
is not run (an install command, a server that is not there); WHY must be given.
tests/test_docs.py checks that every block of commands is a console block or says why it is skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"(?P<before>(?:<!--[^\n]*-->\n)?)```(?P<lang>[a-z]*)\n(?P<body>.*?)```", re.S)
_SKIP = re.compile(r"<!-- doctest: skip: (?P<why>\S.*?) -->")
_EXIT = re.compile(r"\s+# exit (\d+)$")


@dataclass
class Step:
    command: str
    output: list[str]
    status: int


@dataclass
class Block:
    doc: Path
    line: int
    steps: list[Step]

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def console_blocks(docs: list[Path] = DOCS) -> list[Block]:
    """The console blocks of `docs` that are run (the examples' READMEs are read by their own tests)."""
    blocks = []
    for doc in docs:
        text = doc.read_text()
        for fence in _FENCE.finditer(text):
            if fence["lang"] != "console" or _SKIP.search(fence["before"]):
                continue
            line = text.count("\n", 0, fence.start("body"))
            blocks.append(Block(doc, line, _steps(fence["body"])))
    return blocks


def _steps(body: str) -> list[Step]:
    steps: list[Step] = []
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith("$ "):
            raise AssertionError(f"a console block must start each command with '$ ', got {line!r}")
        command = line[2:]
        while command.endswith("\\") and index + 1 < len(lines):
            index += 1
            command = command + "\n" + lines[index]  # bash reads the backslash-newline as one line
        status = 0
        found = _EXIT.search(command)
        if found:
            status, command = int(found[1]), command[: found.start()]
        output = []
        index += 1
        while index < len(lines) and not lines[index].startswith("$ "):
            output.append(lines[index])
            index += 1
        steps.append(Step(command, output, status))
    return steps


def _matches(shown: list[str], printed: list[str]) -> bool:
    """Whether `printed` fits the documented `shown` lines (`<...>` any text, `...` any lines)."""
    pattern = "".join("(?:.*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + "\n" for line in shown)
    pattern = re.sub(r"<[^<>\n]+>", lambda _: "[^\n]*?", pattern)
    text = "".join(line.rstrip() + "\n" for line in printed)
    return re.fullmatch(pattern, text) is not None


BLOCKS = console_blocks()


def test_the_doc_harness_compares_output_with_placeholders_and_ellipses():
    assert _matches(["results: <path>", "...", "done"], ["results: a/b.jsonl", "x", "y", "done"])
    assert not _matches(["results: <path>", "done"], ["results: a/b.jsonl", "x", "done"])
    assert _matches(["a  ", "b"], ["a", "b   "])
    steps = _steps("$ echo a \\\n  b  # exit 0\na b\n$ false  # exit 1\n")
    assert [(step.command, step.output, step.status) for step in steps] == [("echo a \\\n  b", ["a b"], 0), ("false", [], 1)]
    done = subprocess.run(["bash", "-c", steps[0].command], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "a b\n")  # a continued command runs as one


@pytest.mark.parametrize("block", BLOCKS, ids=[block.id for block in BLOCKS])
def test_console_block_runs_as_documented(block: Block, tmp_path: Path):
    # Response caches come along: examples/qa-llm runs offline from the one committed beside it.
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("agenteval-results"))
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    env = {**os.environ, "CI": "1", "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    for step in block.steps:
        done = subprocess.run(
            ["bash", "-c", step.command], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, timeout=300,
        )
        printed = done.stdout.splitlines()
        assert done.returncode == step.status, f"{block.id}: `{step.command}` exited {done.returncode}:\n{done.stdout}"
        assert _matches(step.output, printed), (
            f"{block.id}: `{step.command}` printed\n" + "\n".join(printed) + "\nbut the doc shows\n" + "\n".join(step.output)
        )
