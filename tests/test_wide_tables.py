"""Tables too wide for the terminal are split, never crushed: identifier columns (the cell, the
cases) keep their content's width, headers fold only between words, and `COLUMNS` sets the width
when output is piped. At 80, 120 and 200 columns, piped and on a terminal, with 2 and 40 evaluators."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console

from conftest import run_cli
from test_reports import run_in_terminal

from agenteval.reports.table import render_cells, render_summary

CELLS = ["gpt-4o-mini/terse", "claude-3-5-haiku/detailed"]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TABLE = ("┏", "┃", "┡", "│", "└", "┗", "┣", "┠")


def _evaluators(count):
    return [f"llm-rubric-{i}" if i % 2 else f"contains-any-{i}" for i in range(count)]


def _lines(count):
    """Result lines of two cells, 3 cases each, every case judged by `count` evaluators."""
    lines = []
    for cell, (target, prompt) in enumerate(label.split("/") for label in CELLS):
        for case in range(3):
            results = [
                {"name": name, "type": "contains", "score": ((i + case) % 3 + cell) / 4, "verdict": "pass" if (i + case) % 3 + cell >= 2 else "fail"}
                for i, name in enumerate(_evaluators(count))
            ]
            passed = all(item["verdict"] == "pass" for item in results)
            lines.append({
                "run_id": "r1", "suite": "wide", "case_id": f"case-{case}", "score": sum(item["score"] for item in results) / count,
                "verdict": "pass" if passed else "fail", "evaluator_results": results, "target": target, "prompt": prompt,
            })
    return lines


def _summary(count):
    from agenteval.results import Summary, case_from_dict

    summary = Summary(1, [tuple(label.split("/")) for label in CELLS])
    for line in _lines(count):
        summary.add(case_from_dict(line))
    return {"suite": "wide", **summary.to_dict()}


def _tables(text):
    """The lines of every table, and every row of a table as its cells' texts."""
    lines = [line.rstrip() for line in _ANSI.sub("", text).splitlines()]
    table = [line for line in lines if line[:1] in _TABLE]
    rows = [[cell.strip() for cell in line.strip("│┃").split("│" if line.startswith("│") else "┃")] for line in table if line[:1] in ("│", "┃")]
    return lines, table, rows


def _check_fitted(text, width, count):
    lines, table, rows = _tables(text)
    text = "\n".join(lines)  # as read: colours off
    assert table and all(len(line) <= width for line in table), max(table, key=len)
    body = [row for row in rows if row and row[0] in CELLS]
    for label in CELLS:  # each cell's row, whole, with its cases beside it, in the table of the cells' figures
        assert any(row[0] == label and row[1] == "3" for row in body), (label, text)
    shown = {cell for row in rows for cell in row}
    for name in _evaluators(count):  # every evaluator named whole (a header or the first cell of a row)
        assert name in shown or any(name == line.strip("┃│ ").split("┃")[0].strip() for line in table) or name in text.split(), name
    words = set(text.split())
    assert {"pass", "rate", "mean", "score"} <= words  # headers fold between words, never inside one
    assert not {"pas", "s", "rat", "e"} & words
    return lines


@pytest.mark.parametrize("count", [2, 40])
@pytest.mark.parametrize("width", [80, 120, 200])
@pytest.mark.parametrize("terminal", [False, True])
def test_the_cells_tables_fit_the_width_and_keep_every_name_whole(count, width, terminal):
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=terminal, color_system="standard" if terminal else None, highlight=False)
    render_cells(_summary(count), console)
    lines = _check_fitted(out.getvalue(), width, count)
    if count == 2 and width >= 120:  # it fits: one table, as before
        assert [line for line in lines if line.startswith("Cells")] == ["Cells"]
    if count == 40:  # the figures, then each evaluator's mean per cell in a table of its own
        assert "Cells by evaluator" in lines
        by_evaluator = lines[lines.index("Cells by evaluator"):]
        header = next(line for line in by_evaluator if line.startswith("┃"))
        assert [cell.strip() for cell in header.strip("┃").split("┃")] == ["evaluator", *CELLS]
        row = next(line for line in by_evaluator if line.startswith("│ llm-rubric-39 "))
        assert [cell.strip() for cell in row.strip("│").split("│")] == ["llm-rubric-39", "0.250", "0.500"]


@pytest.mark.parametrize("width", [80, 120, 200])
def test_columns_sets_the_width_of_piped_output(tmp_path, width):
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(line) + "\n" for line in _lines(40)))
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "report", str(results), "--show-failures", "0"],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": str(width)},
    )
    assert done.returncode == 1, done.stderr
    lines = _check_fitted(done.stdout, width, 40)  # the Evaluators table is 85 wide; at 80, 72 with its headers shortened
    evaluators = lines[lines.index("Evaluators") + 1:]
    assert len(evaluators[0]) == (72 if width == 80 else 85) and ("mean ms" in evaluators[1]) == (width > 80)


def test_piped_output_without_columns_is_120_wide(tmp_path):
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(line) + "\n" for line in _lines(40)))
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    done = subprocess.run([sys.executable, "-m", "agenteval", "report", str(results)], capture_output=True, text=True, env=env)
    _check_fitted(done.stdout, 120, 40)


@pytest.mark.parametrize("width", [80, 200])
def test_on_a_terminal_the_tables_fit_its_width(tmp_path, width):
    results = tmp_path / "r.jsonl"
    results.write_text("".join(json.dumps(line) + "\n" for line in _lines(40)))
    code, screen = run_in_terminal("report", results, "--show-failures", "0", columns=width)
    assert code == 1, screen
    _check_fitted(screen, width, 40)


def test_a_wide_evaluators_table_is_split_and_keeps_its_names_on_one_line():
    """Any table, not only the cells': at 60 characters the Evaluators table is whole, its headers
    short and its least useful columns left out (named below it); too many columns for 40 make two
    tables, each starting with the evaluator's name, rather than names wrapped over lines."""
    summary = _summary(2)
    out = io.StringIO()
    render_summary(summary, Console(file=out, width=60, color_system=None, highlight=False))
    lines, table, rows = _tables(out.getvalue())
    assert all(len(line) <= 60 for line in table)
    assert "Evaluators" in lines and "Evaluators (1 of 2)" not in lines
    assert rows[0] == ["evaluator", "score", "pass", "part", "fail", "err"]
    assert "not shown at 60 columns: type, mean ms" in [line.strip() for line in lines]
    out = io.StringIO()
    render_summary(summary, Console(file=out, width=40, color_system=None, highlight=False))
    lines, table, rows = _tables(out.getvalue())
    assert all(len(line) <= 40 for line in table)
    assert "Evaluators (1 of 2)" in lines and "Evaluators (2 of 2)" in lines
    names = [row[0] for row in rows if row[0] in _evaluators(2)]
    assert names == _evaluators(2) * 2  # whole, once per table


def test_history_piped_honours_columns(tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(json.dumps({"name": "s", "evaluators": [{"type": "equals"}], "cases": [{"id": "c", "expected": "x", "output": "x"}]}))
    assert run_cli("run", suite, "-q", cwd=tmp_path).returncode == 0
    done = subprocess.run([sys.executable, "-m", "agenteval", "history"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "70"})
    table = [line for line in done.stdout.splitlines() if line[:1] in _TABLE]
    assert table and all(len(line) <= 70 for line in table), done.stdout


def _header(lines, title):
    """The header cells of the table titled `title`."""
    start = lines.index(title)
    row = next(line for line in lines[start:] if line.startswith("┃"))
    return [cell.strip() for cell in row.strip("┃").split("┃")]


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_invoices_run_is_whole_and_readable_at_60_80_and_120_columns(tmp_path, width):
    """Every table of a real run shows whole (abbreviated headers, then the least useful columns
    left out, named in a caption), no line is wider than the terminal, and the run's time stays
    with its label."""
    from conftest import EXAMPLES

    env = {**os.environ, "COLUMNS": str(width)}
    run = subprocess.run([sys.executable, "-m", "agenteval", "run", str(EXAMPLES / "invoices" / "suite.yaml"), "-o", str(tmp_path / "r.jsonl"),
                          "--show-failures", "0"], capture_output=True, text=True, env=env)
    report = subprocess.run([sys.executable, "-m", "agenteval", "report", str(tmp_path / "r.jsonl"), "--show-failures", "0"],
                            capture_output=True, text=True, env=env)
    counts = {  # broken between its parts where the width runs out, never inside one
        120: ["8 cases: 3 passed, 5 failed, 0 errored  pass rate 37.5%  mean score 0.925  in <time>"],
        80: ["8 cases: 3 passed, 5 failed, 0 errored  pass rate 37.5%  mean score 0.925", "in <time>"],
        60: ["8 cases: 3 passed, 5 failed, 0 errored  pass rate 37.5%", "mean score 0.925  in <time>"],
    }[width]
    for done in (run, report):
        assert done.returncode == 1, done.stderr
        lines = [line.rstrip() for line in done.stdout.splitlines() if not line.startswith(("slowest: ", "results: "))]
        assert not [line for line in lines if " of 2)" in line], done.stdout
        assert all(len(line) <= width for line in lines), max(lines, key=len)
        expected = counts if done is run else [line.removesuffix("  in <time>") for line in counts if line != "in <time>"]  # a report has no time
        assert [re.sub(r"in \d+\.\d\ds$", "in <time>", line) for line in lines[1:len(expected) + 1]] == expected
    lines = [line.rstrip() for line in run.stdout.splitlines()]
    evaluators, fields = _header(lines, "Evaluators"), _header(lines, "Fields across the dataset")
    if width == 120:
        assert evaluators == ["evaluator", "type", "mean score", "pass", "partial", "fail", "error", "mean ms"]
        assert fields == ["evaluator", "field", "accuracy", "hits/scored", "mean score", "skipped"]
    elif width == 80:
        assert evaluators == ["evaluator", "type", "score", "pass", "part", "fail", "err", "ms"]
        assert fields == ["evaluator", "field", "accuracy", "hits", "score", "skip"]
    else:
        assert evaluators == ["evaluator", "score", "pass", "part", "fail", "err"]
        assert fields == ["evaluator", "field", "accuracy", "hits", "score"]
        assert "not shown at 60 columns: type, mean ms" in [line.strip() for line in lines]
        assert "not shown at 60 columns: skipped" in [line.strip() for line in lines]


@pytest.mark.parametrize("width", [60, 80, 120])
def test_history_leaves_the_start_time_out_rather_than_wrap_it(tmp_path, width):
    """Each run on one line: its start time whole or not shown (its run id holds it too), never its
    date over one line and its time under it."""
    suite = tmp_path / "s.yaml"
    suite.write_text(json.dumps({"name": "s", "evaluators": [{"type": "equals"}], "cases": [{"id": "c", "expected": "x", "output": "x"}]}))
    for _ in range(2):
        assert run_cli("run", suite, "-q", cwd=tmp_path).returncode == 0
    done = subprocess.run([sys.executable, "-m", "agenteval", "history"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": str(width)})
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    assert all(len(line) <= width for line in lines), done.stdout
    runs = lines[:lines.index(next(line for line in lines if line.startswith("└")))]
    rows = [[cell.strip() for cell in line.strip("│").split("│")] for line in runs if line.startswith("│")]
    assert len(rows) == 2 and all(re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", row[0]) for row in rows), rows
    assert _header(lines, "s: 2 runs") == {
        120: ["run", "started (UTC)", "cases", "pass rate", "vs previous", "mean score"],
        80: ["run", "cases", "rate", "vs prev", "score"],
        60: ["run", "rate", "vs prev", "score"],
    }[width]
    if width == 120:
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row[1]) for row in rows), rows
    else:
        shown = "started (UTC)" if width == 80 else "started (UTC), cases"
        assert f"not shown at {width} columns: {shown}" in [line.strip() for line in lines]


def test_the_evaluator_list_wraps_its_descriptions_under_themselves_on_a_terminal():
    from agenteval.evaluators import BUILT_IN_TYPES

    indent = max(map(len, BUILT_IN_TYPES)) + 2
    code, screen = run_in_terminal("evaluators", columns=60)
    assert code == 0, screen
    lines = [line.rstrip() for line in screen.splitlines()]
    assert all(len(line) <= 60 for line in lines), max(lines, key=len)
    starts = [index for index, line in enumerate(lines) if not line.startswith(" ")]
    assert [lines[index].split()[0] for index in starts] == list(BUILT_IN_TYPES)
    assert all(line.startswith(" " * indent) and line[indent] != " " for line in lines if line.startswith(" "))
    contains = starts[list(BUILT_IN_TYPES).index("contains")]
    assert lines[contains:starts[starts.index(contains) + 1]] == [
        f"{'contains':<{indent}}The candidate text contains the",
        f"{'':<{indent}}reference strings: `mode: all` scores",
        f"{'':<{indent}}the share found, `any` needs one.",
    ]
    assert len(lines) > len(BUILT_IN_TYPES)
    piped = run_cli("evaluators").stdout.splitlines()  # a pipe without COLUMNS: one line each, for grep
    assert [line.split()[0] for line in piped] == list(BUILT_IN_TYPES)
    assert f"{'contains':<{indent - 2}}  The candidate text contains the reference strings: `mode: all` scores the share found, `any` needs one." in piped
