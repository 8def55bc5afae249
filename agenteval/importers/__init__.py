"""Importers: another tool's eval config in, an agenteval suite out.

Each importer is a pure function from a parsed config (data plus the line of every key, as the
suite loader keeps them) to an `Imported`: the suite dicts, their cases, and every key that could
not be carried over with its `file:line` and why. Files the config refers to (test tables,
prompt files) are read through a `Source`, which knows the config's folder; nothing else is
touched. The CLI writes what comes back and validates it, so an importer never writes a file.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.suite.yaml_nodes import KeyPath, Lines, YamlSyntaxError, decode_utf8, load_yaml


class ImportFailed(Exception):
    """The config cannot be imported at all (unreadable, not a mapping): one clear line."""


@dataclass(frozen=True)
class Skipped:
    """One key that was not carried over (or carried over with a changed meaning, `note=True`)."""

    file: str
    line: int | None
    key: str
    why: str
    note: bool = False

    def render(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key}: {self.why}"


@dataclass
class Imported:
    """What an importer produced: suites (file name -> suite dict) sharing one cases list."""

    suites: dict[str, dict[str, Any]] = field(default_factory=dict)
    cases: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    converted: set[str] = field(default_factory=set)
    config_name: str = ""
    env: dict[str, str] = field(default_factory=dict, repr=False)  # a `.env` file beside the suite (values are secrets)
    predictions: list[dict[str, Any]] | None = None  # {"id", "output"} lines for `--predictions` (promptfoo's --model-outputs)
    predictions_options: list[str] = field(default_factory=list)  # `agenteval run` options choosing the cell they answer
    files: dict[str, str] = field(default_factory=dict)  # checks copied beside the suite (name -> text): a suite reads files in its folder only

    def listing(self) -> list[Skipped]:
        """Everything listed, in file order: the config first, then the files it names."""
        return sorted(self.skipped, key=lambda item: (item.file != self.config_name, item.file, item.line or 0))

    @property
    def not_carried(self) -> list[Skipped]:
        return [item for item in self.listing() if not item.note]

    @property
    def notes(self) -> list[Skipped]:
        return [item for item in self.listing() if item.note]


@dataclass
class Parsed:
    """One parsed file: its data, the line of each key path, and its name as shown in messages."""

    name: str
    data: Any
    lines: Lines
    keys: dict[KeyPath, str] = field(default_factory=dict)  # how a path is named in messages, when not as a key path (a CSV column)

    def line(self, path: KeyPath) -> int | None:
        """The line of `path`, or of its nearest ancestor that has one."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path[:-1]


class Source:
    """Reads the files a config refers to, relative to the config's folder, as `Parsed` values.

    A downloaded config is data: only files inside `root` (the config's folder unless the user
    widens it with `--root`) are read, once symlinks are resolved. `missing(ref)` says why a
    reference cannot be read, for the importer to list at its line; the readers refuse an
    outside path too, so a reference no check saw is never read either."""

    def __init__(self, folder: Path, main: Parsed, root: Path | None = None) -> None:
        self.folder = folder
        self.main = main
        self.root = (root if root is not None else folder).resolve()

    def path(self, ref: str) -> Path:
        return self.folder / strip_file_prefix(ref)

    def outside(self, ref: str) -> str | None:
        """Why `ref` may not be read (it leads outside the root, through `..`, an absolute path or a
        symlink), or None."""
        name = strip_file_prefix(ref)
        try:
            resolved = self.path(name).resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            return f"{name} cannot be resolved ({exc}); not read"
        if resolved == self.root or self.root in resolved.parents:
            return None
        how = "leads outside the config's folder through a symlink" if _through_symlink(self.folder, name, self.root) else "is outside the config's folder"
        return f"{name} {how}; not read (an import reads files inside that folder only: copy the file there, or widen it with --root DIR)"

    def missing(self, ref: str) -> str | None:
        """Why `ref` cannot be read (outside the folder, not found), or None when it can."""
        why = self.outside(ref)
        if why is not None:
            return why
        return None if self.path(ref).is_file() else f"{strip_file_prefix(ref)} not found"

    def exists(self, ref: str) -> bool:
        return self.missing(ref) is None

    def glob(self, ref: str) -> list[str]:
        """The names a pattern matches, in promptfoo's order (sorted); a pattern that leaves the
        folder (`..`, absolute) is not expanded, so `missing` lists it."""
        import glob
        import os

        pattern = strip_file_prefix(ref)
        if not any(ch in pattern for ch in "*?["):
            return [pattern]
        fixed = os.path.dirname(re.split(r"[*?\[]", pattern, maxsplit=1)[0]) or "."
        if self.outside(fixed) is not None:  # not even listed: the folders a pattern walks are outside too
            return [pattern]
        found = glob.glob(os.path.join(glob.escape(str(self.folder)), pattern), recursive=True)
        return sorted(os.path.relpath(path, self.folder) for path in found if os.path.isfile(path))

    def text(self, ref: str) -> str:
        why = self.outside(ref)
        if why is not None:
            raise ImportFailed(why)
        try:
            return decode_utf8(self.path(ref).read_bytes())
        except OSError as exc:
            raise ImportFailed(f"{strip_file_prefix(ref)}: cannot read: {exc.strerror or exc}") from None
        except YamlSyntaxError as exc:
            raise ImportFailed(f"{strip_file_prefix(ref)}:{exc.line}: {exc}") from None

    def parsed(self, ref: str) -> Parsed:
        """A YAML or JSON file with the line of each key."""
        name = strip_file_prefix(ref)
        return parse_yaml_text(self.text(ref), name)

    def jsonl(self, ref: str) -> list[tuple[int, Any]]:
        """(line number, value) of each non-blank line of a JSONL file."""
        name = strip_file_prefix(ref)
        rows = []
        for number, line in enumerate(self.text(ref).splitlines(), 1):
            if line.strip():
                try:
                    rows.append((number, json.loads(line)))
                except ValueError as exc:
                    raise ImportFailed(f"{name}:{number}: not valid JSON: {exc}") from None
        return rows

    def csv(self, ref: str) -> list[tuple[int, dict[str, str]]]:
        """(line number, row by header) of each row of a CSV (or, by extension, TSV) file."""
        name = strip_file_prefix(ref)
        text = self.text(ref)
        delimiter = "\t" if name.lower().endswith(".tsv") else ","
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
        rows = []
        for row in reader:
            rows.append((reader.line_num, {str(k).strip(): (v or "") for k, v in row.items() if k is not None}))
        return rows


def _through_symlink(folder: Path, name: str, root: Path) -> bool:
    """Whether `name` leaves `root` only once a symlink on its way is followed."""
    import os

    lexical = Path(os.path.normpath(folder.resolve() / name))
    return lexical == root or root in lexical.parents


def parse_yaml_text(text: str, name: str) -> Parsed:
    """YAML (JSON is YAML) with lines; a syntax error or a duplicate key is an ImportFailed naming its line."""
    try:
        data, lines, duplicates = load_yaml(text)
    except YamlSyntaxError as exc:
        raise ImportFailed(f"{name}:{exc.line or 1}: {exc}") from None
    if duplicates:
        line, _path, message = duplicates[0]
        raise ImportFailed(f"{name}:{line}: {message}")
    return Parsed(name, data, lines)


def read_config(path: Path, root: Path | None = None) -> tuple[Parsed, Source]:
    """The config file parsed with lines, and a Source for the files it names (inside `root`,
    by default the config's folder)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ImportFailed(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = decode_utf8(raw)
    except YamlSyntaxError as exc:
        raise ImportFailed(f"{path}:{exc.line}: {exc}") from None
    parsed = parse_yaml_text(text, path.name)
    if not isinstance(parsed.data, dict):
        raise ImportFailed(f"{path}: expected a mapping of keys at the top, got {type(parsed.data).__name__}")
    return parsed, Source(path.parent, parsed, root)


def strip_file_prefix(ref: str) -> str:
    return ref[len("file://"):] if ref.startswith("file://") else ref


def slug(text: str, fallback: str = "suite") -> str:
    """A short name of letters, digits, dots, dashes and underscores."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:100].strip("-._")
    return cleaned or fallback


class Names:
    """Unique evaluator names within one scope (a suite, a case, a composite), never clashing with `taken`."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self.used: set[str] = set(taken or ())

    def take(self, wanted: str) -> str:
        base = slug(wanted, "check")
        name, n = base, 2
        while name in self.used:
            name, n = f"{base}-{n}", n + 1
        self.used.add(name)
        return name


def canonical_json(value: Any) -> str:
    """The text `as_json: true` compares with: sorted keys, no spaces, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
