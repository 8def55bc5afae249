"""Environment files (`.env`): `--env-file PATH` and the suite's `env_file:` key.

A value from a file never replaces a variable the process already has (the shell's, CI's),
unless the run asks for it (`--env-override`): the file is a default, not a surprise. The values
are usually keys, so no message here shows one: a problem names the file, the line and the key.
"""

from __future__ import annotations

import os
import re
from collections.abc import MutableMapping
from pathlib import Path

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$", re.DOTALL)
_LINE_ENDS = re.compile(r"\r\n|\r|\n")  # only these end a line: U+2028, U+0085, \f... are part of a value


# Every name an env file applied in this process gave (set or not): `--executor ray` sends these
# variables, with this process's values, to its workers (agenteval.ray_executor._env_vars).
NAMES_READ: set[str] = set()


class EnvFileError(Exception):
    """A file that cannot be read, or a line that is not `NAME=value`: the message names file:line."""


def read_env_file(path: Path) -> dict[str, str]:
    """NAME=value lines (`export NAME=value` too), ended by \\n, \\r\\n or \\r alone; `#` comments and
    blank lines are skipped. A value in single quotes is taken as is, one in double quotes has \\n,
    \\t, \\" and \\\\ escapes, and an unquoted value ends at ` #`. A NUL byte in a value is refused."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise EnvFileError(f"{path}: cannot read the env file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise EnvFileError(f"{path}: the env file is not UTF-8 text") from None
    values: dict[str, str] = {}
    for number, line in enumerate(_LINE_ENDS.split(text.removesuffix("\n")) if text else [], start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise EnvFileError(f"{path}:{number}: not a NAME=value line")
        name, raw = match.groups()
        values[name] = _value(raw, path, number, name)
        if "\0" in values[name]:
            raise EnvFileError(f"{path}:{number}: the value of {name} holds a NUL byte, which no environment variable can hold")
    return values


def _value(raw: str, path: Path, number: int, name: str) -> str:
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = _closing(raw, quote)
        if end < 0 or raw[end + 1:].strip() and not raw[end + 1:].strip().startswith("#"):
            raise EnvFileError(f"{path}:{number}: the value of {name} has no closing {quote} (a value spans one line)")
        inner = raw[1:end]
        if quote == '"':
            inner = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), inner)
        return inner
    return re.split(r"\s+#", raw, maxsplit=1)[0]


def _closing(raw: str, quote: str) -> int:
    i = 1
    while i < len(raw):
        if raw[i] == "\\" and quote == '"':
            i += 2
            continue
        if raw[i] == quote:
            return i
        i += 1
    return -1


def suite_env(paths: list[Path]) -> dict[str, str]:
    """The variables a suite's `env_file:` gives its run: each the process environment lacks (a
    later file's value wins). os.environ is left as it is, so a program running suites through the
    Python API keeps its own environment, and two suites in it each see their own values."""
    merged: dict[str, str] = {}
    for path in paths:
        merged.update(read_env_file(path))
    return {name: value for name, value in merged.items() if name not in os.environ}


def apply_env_files(paths: list[Path], override: bool = False, environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Read every file (a later file's value wins over an earlier one's), then set each variable
    the environment lacks (or every one, with `override`). Returns the names set."""
    environ = os.environ if environ is None else environ
    merged: dict[str, str] = {}
    for path in paths:
        merged.update(read_env_file(path))
    NAMES_READ.update(merged)
    applied = [name for name in merged if override or name not in environ]
    for name in applied:
        environ[name] = merged[name]
    return applied
