"""The cells a run covers: every target of the suite crossed with every prompt, or the ones chosen
with `--target` and `--prompt`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from agenteval.cells import Cell

if TYPE_CHECKING:
    from agenteval.suite.models import Suite


class CellChoiceError(ValueError):
    """A `--target` or `--prompt` names nothing the suite defines."""


def suite_cells(suite: Suite, targets: Iterable[str] = (), prompts: Iterable[str] = ()) -> list[Cell]:
    """The cells, targets in the order the suite lists them, prompts within each target. Raises
    CellChoiceError naming a chosen name that the suite lacks (with the closest it has)."""
    named = suite.named_targets()
    chosen_targets, chosen_prompts = list(dict.fromkeys(targets)), list(dict.fromkeys(prompts))
    if chosen_targets:
        _check_choice("--target", chosen_targets, [name for name, _ in named if name is not None], "targets")
        named = [(name, target) for name, target in named if name in chosen_targets]
    prompt_names: list[str | None] = [None] if suite.prompts is None else list(suite.prompts)
    if chosen_prompts:
        _check_choice("--prompt", chosen_prompts, [name for name in prompt_names if name is not None], "prompts")
        prompt_names = [name for name in prompt_names if name in chosen_prompts]
    cells = []
    for target_name, target in named:
        for prompt_name in prompt_names:
            spec = target
            if prompt_name is not None:
                assert suite.prompts is not None
                spec = target.model_copy(update={"messages": suite.prompts[prompt_name]})
            cells.append(Cell(target_name, prompt_name, spec))
    return cells


def _check_choice(option: str, chosen: list[str], known: list[str], key: str) -> None:
    if not known:
        raise CellChoiceError(f"{option}: the suite has no `{key}:` to choose from")
    for name in chosen:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise CellChoiceError(f"{option} {name}: the suite has no such {key[:-1]}{hint} (known: {', '.join(known)})")
