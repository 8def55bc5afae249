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


ENV_FILE = ".env"
PREDICTIONS_FILE = "predictions.jsonl"


def write_import(imported: Imported, out_dir: Path, source_name: str, tool: str, force: bool = False) -> list[Path]:
    """Write the suites, `cases.jsonl` and, when the import has them, `.env` (mode 0600: its values
    are usually keys) and `predictions.jsonl` into `out_dir`; the paths written, the suites first."""
    targets = [out_dir / name for name in imported.suites] + [out_dir / "cases.jsonl"]
    if imported.env:
        targets.append(out_dir / ENV_FILE)
    if imported.predictions is not None:
        targets.append(out_dir / PREDICTIONS_FILE)
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
        if imported.env:
            _write_private(out_dir / ENV_FILE, "".join(env_line(name, value) + "\n" for name, value in imported.env.items()))
        if imported.predictions is not None:
            with (out_dir / PREDICTIONS_FILE).open("wb") as handle:
                for line in imported.predictions:
                    handle.write(orjson.dumps(line) + b"\n")
    except OSError as exc:
        raise ImportFailed(f"{out_dir}: cannot write: {exc.strerror or exc}") from None
    return targets


def _write_private(path: Path, text: str) -> None:
    """`text` into `path`, readable by its owner only, from the first byte (a file replaced under
    --force is made private too)."""
    import os

    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


def env_line(name: str, value: str) -> str:
    """`NAME=value` as agenteval.suite.env_files reads it back unchanged: single quotes (taken as
    they are) unless the value holds one or a line break, then double quotes with escapes."""
    if "'" not in value and "\n" not in value:
        return f"{name}='{value}'"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'{name}="{escaped}"'
