"""Writing an import: the suite files and their shared cases file, nothing else.

Existing files are never replaced unless asked (`--force`), so importing into a folder that
already holds a suite loses nothing.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import yaml

from agenteval.importers import ImportFailed, Imported


class _Dumper(yaml.SafeDumper):
    """Block style, keys in the order written, long texts as `|` blocks."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not any(ch in value for ch in "\r\t") and value == value.rstrip(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def write_import(imported: Imported, out_dir: Path, source_name: str, tool: str, force: bool = False) -> list[Path]:
    """Write the suites and `cases.jsonl` into `out_dir`; the paths written (suites first)."""
    targets = [out_dir / name for name in imported.suites] + [out_dir / "cases.jsonl"]
    existing = [str(path) for path in targets if path.exists()]
    if existing and not force:
        raise ImportFailed(f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; give --force to replace, or another -o DIR")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        header = f"# Imported from {source_name} by `agenteval import {tool}`: keys not carried over were listed then.\n"
        for name, suite in imported.suites.items():
            body = yaml.dump(suite, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)
            (out_dir / name).write_text(header + body, encoding="utf-8")
        with (out_dir / "cases.jsonl").open("wb") as handle:
            for case in imported.cases:
                handle.write(orjson.dumps(case) + b"\n")
    except OSError as exc:
        raise ImportFailed(f"{out_dir}: cannot write: {exc.strerror or exc}") from None
    return targets
