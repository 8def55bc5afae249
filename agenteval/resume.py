"""What a resumed run must share with the run it continues: `--resume` is that run, never another.

When a run starts it records a fingerprint of its suite (each top-level key of the resolved
suite, hashed), of its cases (their files' bytes, or the inline cases) and of its selection (the
cells, --filter, --tag, --shard, --first, --sample, --evaluator, --repeat). A resume compares
its own with the recorded one and is refused, naming each difference, when they differ: the cases
already saved were scored by the other suite, or the other selection, and would be mixed with the
new ones. A resume that chooses no cases (none of --filter, --tag, --shard, --first, --sample)
may widen a run begun on some of them: the saved cases are the same suite's, and the rest are scored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from agenteval.cells import cell_label

if TYPE_CHECKING:
    from agenteval.suite.loader import LoadedSuite

_CHUNK = 1 << 20


def fingerprint(
    loaded: LoadedSuite, config: dict[str, Any], *, filters: Iterable[str] = (), tags: Iterable[str] = (),
    shard: tuple[int, int] | None = None, evaluators: Iterable[str] | None = None, repeat: int = 1,
    first: int | None = None, sample: int | None = None, seed: int = 0,
) -> dict[str, Any]:
    """The run's fingerprint: plain JSON, a few hundred bytes whatever the number of cases."""
    return {
        "suite": {str(key): _digest(value) for key, value in config.items()},
        "cases": _cases_digest(loaded),
        "cells": [cell_label(*cell.names) for cell in loaded.cells],
        "selection": {
            "--filter": sorted(filters), "--tag": sorted(tags), "--shard": f"{shard[0]}/{shard[1]}" if shard else None,
            "--evaluator": sorted(evaluators) if evaluators is not None else None, "--repeat": repeat,
            **({"--first": first} if first is not None else {}),
            **({"--sample": sample, "--sample-seed": seed} if sample is not None else {}),
        },
    }


def differences(recorded: Any, current: dict[str, Any]) -> list[str]:
    """What differs between the fingerprint a run recorded and this one's, in words; [] when none
    (or when the run recorded none: an older version's run is continued as it always was)."""
    if not isinstance(recorded, dict):
        return []
    found = []
    before, now = recorded.get("suite"), current["suite"]
    if isinstance(before, dict):
        changed = sorted(key for key in {*before, *now} if before.get(key) != now.get(key))
        found += [f"the suite's `{key}`" for key in changed]
    if recorded.get("cases") != current["cases"]:
        found.append("the cases")
    if recorded.get("cells") != current["cells"]:
        found.append(f"the cells (the run has {_listed(recorded.get('cells'))}; this one {_listed(current['cells'])})")
    chosen = recorded.get("selection") if isinstance(recorded.get("selection"), dict) else {}
    widened = not any(current["selection"].get(option) for option in _CASE_CHOICES)
    for option, value in current["selection"].items():
        if widened and option in _CASE_CHOICES:
            continue  # a resume of every case widens a run begun on some (a shard, a filter): it scores the rest
        if chosen.get(option) != value:
            found.append(f"{option} (the run: {_shown(chosen.get(option))}; this one: {_shown(value)})")
    return found


_CASE_CHOICES = ("--filter", "--tag", "--shard", "--first", "--sample", "--sample-seed")  # options that choose cases


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()[:16]


def _cases_digest(loaded: LoadedSuite) -> str:
    """A hash of the cases: the bytes of each cases file (streamed), or the inline cases."""
    digest = hashlib.sha256()
    files = [part[0] for part in loaded.parts] if loaded.parts is not None else [loaded.cases_file] if loaded.cases_file else []
    for path in files:
        digest.update(str(path.name).encode() + b"\0")
        try:
            with path.open("rb") as handle:
                while chunk := handle.read(_CHUNK):
                    digest.update(chunk)
        except OSError as exc:  # it was read to validate it: a file gone since is a difference
            digest.update(f"unreadable: {exc.strerror}".encode())
    if not files:
        for case in loaded.cases or ():
            digest.update(_case_bytes(case.model_dump(mode="json")))
    return digest.hexdigest()[:16]


def _case_bytes(case: Any) -> bytes:
    """An inline case as bytes to hash: orjson's, or (an integer past 64 bits, which YAML allows)
    Python's json, which writes any value."""
    try:
        return orjson.dumps(case, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=repr)
    except orjson.JSONEncodeError:
        import json

        return json.dumps(case, sort_keys=True, default=repr).encode()


def _listed(cells: Any) -> str:
    if not isinstance(cells, list):
        return "none recorded"
    shown = ", ".join(str(cell) for cell in cells[:8]) + (f" and {len(cells) - 8} more" if len(cells) > 8 else "")
    return shown or "the one target"


def _shown(value: Any) -> str:
    if value is None or value == []:
        return "none"
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)
