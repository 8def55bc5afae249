"""What the terminal is sent: data shown, never obeyed, and tables that keep identifiers whole.

Case ids, misses, reasoning and errors (a target's stderr tail among them) come from data anyone
may have written. A terminal obeys the escape sequences in what it prints (clear the screen, paint
a fake summary, set the window title), so every control character is shown as an escape instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is drawn: `visible` alone stays cheap for messages
    from rich.console import Console, RenderableType
    from rich.table import Table
    from rich.text import Text

# C0 and C1 controls and DEL (ESC among them), line and paragraph separators, and the bidirectional
# marks, embeddings, overrides and isolates that reorder what is shown ("Trojan Source"). Every
# report (terminal, Markdown, JUnit, HTML pages) shows these as escapes: `BIDI` is the part of them
# that is printable elsewhere, for reports whose own escaping knows the rest (a page: `bidi_escaped`).
BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI}]")
BIDI_PATTERN = re.compile(f"[{BIDI}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: str) -> str:
    """`text` with each control character written as an escape (ESC as `\\x1b`, LF as `\\n`)."""
    return _CONTROLS.sub(_escape, text) if _CONTROLS.search(text) else text


def bidi_escaped(text: str) -> str:
    """`text` with each bidirectional mark, embedding, override and isolate written as an escape
    (`\\u202e`), and every other character kept: for a page, where the rest is HTML's to escape and
    line breaks are the data's own (in a JSON value shown there, the escape is JSON's own)."""
    return BIDI_PATTERN.sub(_escape, text) if BIDI_PATTERN.search(text) else text


def visible_lines(text: str) -> str:
    """As `visible`, but line breaks are kept: for messages that are several lines on purpose."""
    return "\n".join(visible(line) for line in text.split("\n"))


@dataclass(frozen=True, slots=True)
class Column:
    """`kind`: "id" (case ids, field paths, evaluator names: never cut), "num" (kept whole; its
    header folds to make room), or "text" (free text: wraps into what is left). `short`: the
    header when the whole ones do not fit on one line; `optional`: left out, highest first, when
    even the short headers do not fit (0: always shown)."""

    header: str
    kind: str = "id"
    short: str | None = None
    optional: int = 0

    @property
    def right(self) -> bool:
        return self.kind == "num"


# header: (its short form, how optional) in the tables reports share, for narrow terminals (see
# `fitted_tables`): a column with a higher number is left out first; 0, never.
SHORT = {
    "mean score": ("score", 0), "partial": ("part", 0), "error": ("err", 0), "errored": ("err", 0), "passed": ("pass", 0),
    "failed": ("fail", 0), "pass rate": ("rate", 0), "hits/scored": ("hits", 0), "precision": ("prec", 0),
    "vs previous": ("vs prev", 0), "mean ms": ("ms", 2), "skipped": ("skip", 2), "started (UTC)": (None, 2),
    "type": (None, 1), "cases": (None, 1), "first": (None, 1),
}


def column(header: str, kind: str = "id") -> Column:
    """A column with its short header and how optional it is (`SHORT`)."""
    return Column(header, kind, *SHORT.get(header, (None, 0)))


_TEXT_MIN = 12  # characters a free-text column keeps however narrow the terminal
PIPED_WIDTH = 120  # a pipe or a file without COLUMNS: wide enough for the tables


def output_width(stream: Any, default: int = PIPED_WIDTH) -> int | None:
    """The width of what is printed to `stream`: None for a terminal (rich asks it, COLUMNS first),
    else `COLUMNS` when it holds a width (a CI log says how wide it shows), else `default`."""
    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError, OSError):
        pass
    columns = os.environ.get("COLUMNS", "").strip()
    return int(columns) if columns.isdigit() and 0 < int(columns) <= 10_000 else default


def joined(width: int, parts: Sequence[Text], gap: str = "  ") -> Text:
    """`parts` on one line, `gap` apart; where the next would pass `width`, it starts a new line
    (a part is never broken: `in 0.61s` stays whole)."""
    from rich.text import Text

    line, used = Text(), 0
    for part in parts:
        if used and used + len(gap) + part.cell_len > width:
            line.append("\n")
            used = 0
        elif used:
            line.append(gap)
            used += len(gap)
        line.append_text(part)
        used += part.cell_len
    return line


def fitted_table(
    console: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[str | Text]],
    *, caption: str | None = None, title_style: str | None = None, keep: int | None = None,
) -> RenderableType:
    """A table as wide as the console allows in which identifiers are never cut and headers never
    fold inside a word; one too wide for that is split into several (see `fitted_tables`)."""
    tables = fitted_tables(console, title, columns, rows, caption=caption, title_style=title_style, keep=keep)
    if len(tables) == 1:
        return tables[0]
    from rich.console import Group

    return Group(*tables)


def fitted_tables(
    console: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[str | Text]],
    *, caption: str | None = None, title_style: str | None = None, keep: int | None = None,
) -> list[Table]:
    """The table, whole and with its headers on one line when that fits: with the full headers,
    else the short ones, else without its optional columns (least useful first, named in the
    caption). Else the last of these, and when even its narrowest layout is wider than the console,
    split by columns into several, each repeating the first `keep` (default: the leading identifiers) and
    titled `title (1 of 3)`.

    Narrowest layout: identifiers and numbers at their content's width and headers folded between
    words, never inside one; free text wraps into at least 12 characters. Only an identifier wider
    than the console alone wraps onto more lines, still whole (never `…`). Cells are plain text
    (shown via `visible`) or rich Text (already safe).
    """
    from rich.text import Text

    headers = [column.header for column in columns]
    cells = [[cell if isinstance(cell, Text) else Text(visible(cell)) for cell in row] for row in rows]
    longest = [max((cell.cell_len for cell in column), default=0) for column in zip(*cells)] or [0] * len(columns)
    if len(longest) < len(columns):
        longest += [0] * (len(columns) - len(longest))
    chosen, columns, fits = _layout(console.width, columns, longest)
    if len(chosen) < len(longest):
        left_out = [header for index, header in enumerate(headers) if index not in chosen]
        caption = "; ".join(part for part in (caption, f"not shown at {console.width} columns: {', '.join(left_out)}") if part)
        cells, longest = [[row[i] for i in chosen] for row in cells], [longest[i] for i in chosen]
    if fits:
        return [_table(console, title, columns, cells, longest, caption, title_style)]
    narrowest = [_narrowest(column, width) for column, width in zip(columns, longest)]
    if keep is None:
        keep = next((index for index, column in enumerate(columns) if column.kind != "id"), len(columns)) or 1
    keep = min(max(keep, 1), len(columns))
    groups: list[list[int]] = []
    for index in range(keep, len(columns)):
        if groups and _outer(len(groups[-1]) + keep + 1) + sum(narrowest[i] for i in (*range(keep), *groups[-1], index)) <= console.width:
            groups[-1].append(index)
        else:
            groups.append([index])
    if len(groups) <= 1:
        return [_table(console, title, columns, cells, longest, caption, title_style)]
    tables = []
    for number, group in enumerate(groups, start=1):
        chosen = [*range(keep), *group]
        tables.append(_table(
            console, f"{title} ({number} of {len(groups)})", [columns[i] for i in chosen], [[row[i] for i in chosen] for row in cells],
            [longest[i] for i in chosen], caption if number == len(groups) else None, title_style,
        ))
    return tables


def _layout(width: int, columns: Sequence[Column], longest: list[int]) -> tuple[list[int], list[Column], bool]:
    """(the indices of the columns shown, those columns as shown, whether they fit `width` with
    every header on one line) of the first layout that does: full headers, short headers, then short
    headers without the optional columns, the highest `optional` first; else of the last of them."""
    short = _shortened(columns)
    droppable = sorted((i for i, column in enumerate(columns) if column.optional), key=lambda i: -columns[i].optional)
    layouts = [(columns, []), *((short, droppable[:count]) for count in range(len(droppable) + 1))]
    for shown, dropped in layouts:
        chosen = [i for i in range(len(columns)) if i not in dropped]
        if _outer(len(chosen)) + sum(_one_line(shown[i], longest[i]) for i in chosen) <= width:
            return chosen, [shown[i] for i in chosen], True
    return chosen, [shown[i] for i in chosen], False


def _shortened(columns: Sequence[Column]) -> list[Column]:
    from dataclasses import replace

    return [replace(column, header=column.short) if column.short else column for column in columns]


def _one_line(column: Column, longest: int) -> int:
    """The narrowest a column gets with its header on one line: free text wraps, the rest is whole."""
    return max(len(column.header), min(longest, _TEXT_MIN) if column.kind == "text" else longest, 1)


def _outer(count: int) -> int:
    """What a table of `count` columns spends beside its cells: a border and two spaces of padding per column, one edge."""
    return 3 * count + 1


def _narrowest(column: Column, longest: int) -> int:
    word = max((len(word) for word in column.header.split()), default=1)
    if column.kind == "text":
        return max(word, min(max(longest, len(column.header)), _TEXT_MIN))
    return max(1, longest, word)


def _table(
    console: Console, title: str, columns: Sequence[Column], cells: list[list[Text]], longest: list[int],
    caption: str | None, title_style: str | None,
) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(
        title=Text(visible(title), style=title_style or "table.title"), title_justify="left",
        caption=None if caption is None else Text(visible(caption), style="table.caption"),
    )
    natural = [max(len(column.header), width) for column, width in zip(columns, longest)]
    available = console.width - _outer(len(columns))
    widths: list[int | None] = [None] * len(columns)
    if sum(natural) > available:
        widths = _squeezed(columns, longest, natural, available)
    for column, width in zip(columns, widths):
        table.add_column(
            column.header, justify="right" if column.right else "left", width=width,
            overflow="fold", no_wrap=False,
        )
    for row in cells:
        table.add_row(*row)
    return table


def _squeezed(columns: Sequence[Column], longest: list[int], natural: list[int], available: int) -> list[int | None]:
    """Widths when the natural ones do not fit: identifiers and numbers first, then headers and text."""
    words = [max((len(word) for word in column.header.split()), default=1) for column in columns]
    widths = [0] * len(columns)
    for index, column in enumerate(columns):
        if column.kind == "num":
            widths[index] = max(1, longest[index])
        elif column.kind == "text":
            widths[index] = min(natural[index], _TEXT_MIN)
        else:
            widths[index] = max(1, longest[index], min(words[index], natural[index]))
    spare = available - sum(widths)
    if spare < 0:  # too narrow even for one identifier beside what is kept: identifiers wrap, whole
        ids = [i for i, column in enumerate(columns) if column.kind == "id"]
        room = max(len(ids), available - sum(widths[i] for i in range(len(columns)) if i not in ids))
        total = sum(widths[i] for i in ids) or 1
        for i in ids:
            widths[i] = max(1, widths[i] * room // total)
        return list(widths)
    for index, column in enumerate(columns):  # headers of numbers unfold to their longest word
        if column.kind == "num" and spare:
            grow = min(spare, max(0, words[index] - widths[index]))
            widths[index] += grow
            spare -= grow
    for index, column in enumerate(columns):  # free text and whole headers take what is left
        if spare:
            grow = min(spare, natural[index] - widths[index])
            widths[index] += grow
            spare -= grow
    return list(widths)
