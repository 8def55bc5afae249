"""Writing an import: the suite files and their shared cases file, nothing else.

Existing files are never replaced unless asked (`--force`), so importing into a folder that
already holds a suite loses nothing; files are built in a fresh folder and renamed into place.
"""

from __future__ import annotations

import os
import shutil
import tempfile
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
    are usually keys), `predictions.jsonl` and the check files copied from the config's folder into
    `out_dir`; the paths written, the suites first.

    Every file is built in a fresh folder the import creates (beside `out_dir`, or inside it when
    it exists), then moved into place with `rename`, which replaces a directory entry and never
    follows a symlink: nothing is written through a link a downloaded repository planted, and an
    import that fails part-way leaves nothing behind."""
    names = [*imported.suites, "cases.jsonl"]
    if imported.env:
        names.append(ENV_FILE)
    if imported.predictions is not None:
        names.append(PREDICTIONS_FILE)
    names += list(imported.files)
    targets = [out_dir / name for name in names]
    if out_dir.is_symlink():
        raise ImportFailed(f"{out_dir} is a symlink; the import writes into a folder it creates or a real one: give another -o DIR")
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise ImportFailed(f"{out_dir} exists and is not a folder; give another -o DIR")
    existing = [path for path in targets if os.path.lexists(path)]
    if existing and not force:
        shown = ", ".join(str(path) for path in existing)
        raise ImportFailed(f"{shown} already exist{'s' if len(existing) == 1 else ''}; give --force to replace, or another -o DIR")
    odd = [str(path) for path in existing if path.is_symlink() or not path.is_file()]
    if odd:
        raise ImportFailed(f"{', '.join(odd)}: not a regular file (a symlink, a folder or a device); not replaced, even with --force: "
                           "remove it or give another -o DIR")
    fresh = not out_dir.exists()
    try:
        if fresh:
            out_dir.parent.mkdir(parents=True, exist_ok=True)
        build = Path(tempfile.mkdtemp(prefix=".agenteval-import-", dir=out_dir.parent if fresh else out_dir))
    except OSError as exc:
        raise ImportFailed(f"{out_dir}: cannot write: {exc.strerror or exc}") from None
    try:
        header = f"# Imported from {source_name} by `agenteval import {tool}`: keys not carried over were listed then.\n"
        for name, suite in imported.suites.items():
            body = yaml.dump(suite, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False)
            _write_new(build / name, (header + body).encode("utf-8"))
        _write_new(build / "cases.jsonl", b"".join(orjson.dumps(case) + b"\n" for case in imported.cases))
        if imported.env:
            text = "".join(env_line(name, value) + "\n" for name, value in imported.env.items())
            _write_new(build / ENV_FILE, text.encode("utf-8"), private=True)
        if imported.predictions is not None:
            _write_new(build / PREDICTIONS_FILE, b"".join(orjson.dumps(line) + b"\n" for line in imported.predictions))
        for name, text in imported.files.items():
            _write_new(build / name, text.encode("utf-8"))
        if fresh:
            os.chmod(build, 0o777 & ~_umask())
            os.rename(build, out_dir)  # the whole folder appears at once
        else:
            for name in names:
                os.replace(build / name, out_dir / name)  # each file whole; a symlink there is replaced, not followed
    except OSError as exc:
        raise ImportFailed(f"{out_dir}: cannot write: {exc.strerror or exc}; nothing was written") from None
    except (TypeError, ValueError, UnicodeError) as exc:  # a value that cannot be written (a lone surrogate)
        raise ImportFailed(f"{out_dir}: cannot write the import ({exc}); nothing was written") from None
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return targets


def _write_new(path: Path, data: bytes, private: bool = False) -> None:
    """`data` into a file this import creates (O_EXCL, O_NOFOLLOW): never an existing file or a
    link. `private`: readable by its owner only, from the first byte."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    descriptor = os.open(path, flags, 0o600 if private else 0o666)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def env_line(name: str, value: str) -> str:
    """`NAME=value` as agenteval.suite.env_files reads it back unchanged: single quotes (taken as
    they are) unless the value holds one or a line break, then double quotes with escapes."""
    if "'" not in value and "\n" not in value:
        return f"{name}='{value}'"
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'{name}="{escaped}"'
