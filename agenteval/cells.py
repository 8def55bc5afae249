"""Cells: a suite with `targets:` and `prompts:` runs each case once per (target, prompt) pair.

A cell is named by its target and prompt; a run of one unnamed target without prompts has a
single cell named by neither, and its result lines look as they always did. These few functions
name cells and key results by cell wherever results are counted, resumed or paired.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

@dataclass(frozen=True, slots=True)
class Cell:
    """One (target, prompt) pair of a run and the target config that answers in it (a model
    target with the prompt's messages in place of its own)."""

    target: str | None
    prompt: str | None
    spec: Any

    @property
    def label(self) -> str:
        return cell_label(self.target, self.prompt)

    @property
    def names(self) -> tuple[str | None, str | None]:
        return self.target, self.prompt


def cell_label(target: str | None, prompt: str | None) -> str:
    """`gpt-a/terse`, `gpt-a` (no prompts), `terse` (one unnamed target), or "" (the single cell)."""
    return "/".join(name for name in (target, prompt) if name is not None)


def cell_key(case_id: str, target: str | None, prompt: str | None) -> str | tuple[str, str | None, str | None]:
    """What identifies one case's run in one cell: the case id itself in a run of one unnamed cell
    (so resuming and pairing work as before), else (case id, target, prompt)."""
    if target is None and prompt is None:
        return case_id
    return (case_id, target, prompt)
