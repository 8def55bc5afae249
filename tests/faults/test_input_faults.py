"""Broken suites and cases files: exit 2 with `file:line: ...` lines and nothing run, or, for input
that is merely unusual (CRLF, a byte-order mark, a 50 MB case), a normal run.

The broken inputs are all given to one `agenteval validate` (it reports every suite in turn), and
each fault is its own test reading the lines about its own folder; a few are also given to `run`
to show that nothing runs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import run_cli
from fault_suites import TRACEBACK, assert_each_case_once, assert_no_traceback, assert_problem_lines

GOOD = [{"id": f"c{i}", "expected": {"a": i}, "output": {"a": i}} for i in range(3)]
SUITE = "name: inputs\nevaluators:\n  - {type: field_accuracy, fields: [{path: a}]}\ncases: %s\n"


def _jsonl(cases, newline: bytes = b"\n") -> bytes:
    return b"".join(json.dumps(case).encode() + newline for case in cases)


def _alias_bomb(indent: str = "") -> str:
    """Keys a..h, each a list of nine references to the one before: `*h` stands for 9^8 strings."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefg", "bcdefgh"):
        lines.append(f"{name}: &{name} [" + ",".join(f"*{previous}" for _ in range(9)) + "]")
    return "".join(indent + line + "\n" for line in lines)


def _suite_with_cases(folder: Path, name: str, content: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(content)
    suite = folder / "suite.yaml"
    suite.write_text(SUITE % name)
    return suite


def _run(suite: Path):
    out = suite.parent / "r.jsonl"
    return run_cli("run", suite, "-o", out, "-q", cwd=suite.parent, timeout=60), out


# --- broken cases files and suites: exit 2, `file:line: message` --------------------------------------

BAD_CASES = {
    # fault: (cases file name, content, what the message holds)
    "bad_line_in_the_middle": ("c.jsonl", _jsonl(GOOD[:1]) + b'{"id": "c1", "expected": \n' + _jsonl(GOOD[2:]), "c.jsonl:2: invalid JSON"),
    "not_utf8_in_jsonl": ("c.jsonl", _jsonl(GOOD[:1]) + b'{"id": "c1", "expected": {"a": "caf\xe9"}, "output": 1}\n', "c.jsonl:2: "),
    "not_utf8_in_yaml": ("c.yaml", b'- {id: c0, expected: {a: 0}, output: {a: "caf\xe9"}}\n', "c.yaml"),
    "not_an_object_line": ("c.jsonl", _jsonl(GOOD[:1]) + b"[1, 2]\n", "c.jsonl:2: "),
    "duplicate_ids": ("c.jsonl", _jsonl(GOOD + GOOD[:1]), "c.jsonl:4: "),
    "json_nested_too_deep": ("c.jsonl", _jsonl(GOOD[:1]) + b'{"id": "c1", "expected": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", "c.jsonl:2: "),
    "yaml_alias_bomb": ("c.yaml", ("- id: c0\n  expected: {a: 0}\n  output: {a: 0}\n  metadata:\n" + _alias_bomb("    ") + "    x: *h\n").encode(), "c.yaml"),
    "empty_cases_file": ("c.jsonl", b"", "no cases"),
    "json_is_not_a_list": ("c.json", b'{"id": "c0"}', "c.json"),
}
BAD_SUITES = {
    # fault: (suite bytes, or None for no file, what the message holds)
    "empty_file": (b"", "a suite is a mapping"),
    "a_list": (b"- name: x\n- cases: []\n", "a suite is a mapping"),
    "a_scalar": (b"just some words\n", "a suite is a mapping"),
    "not_utf8": (b"name: caf\xe9\n", "suite.yaml"),
    "invalid_yaml": (b"name: [unclosed\nevaluators: []\n", "suite.yaml:"),
    "control_character": (b"name: a\x1fb\nevaluators: []\ncases: []\n", "suite.yaml"),
    "key_with_a_line_break": (b'name: x\n"bad\\nkey": 1\nevaluators: []\ncases: []\n', "unknown key"),
    # D7: 378 bytes that expand to 9^8 strings
    "alias_bomb": (("name: bomb\n" + _alias_bomb() + "evaluators: []\ncases:\n  - {id: c0, expected: 1, output: 1, metadata: {x: *h}}\n").encode(), "suite.yaml"),
    # D13: deep nesting gave a RecursionError traceback
    "deeply_nested": (("name: deep\nx: " + "[" * 100000 + "]" * 100000 + "\nevaluators: []\ncases: []\n").encode(), "suite.yaml"),
    "deeply_nested_mappings": (("name: deep\nx: " + "{a: " * 20000 + "1" + "}" * 20000 + "\ncases: []\n").encode(), "suite.yaml"),
    "missing_file": (None, "not found"),
    "a_directory": (None, "no suite.yaml in"),
}


def _bad_input(folder: Path, fault: str) -> Path:
    """The suite path to give the CLI for `fault`, with its files written under folder/fault/."""
    if fault in BAD_CASES:
        name, content, _ = BAD_CASES[fault]
        return _suite_with_cases(folder / fault, name, content)
    content = BAD_SUITES[fault][0]
    if fault == "a_directory":
        (folder / fault).mkdir(parents=True)
        return folder / fault
    (folder / fault).mkdir(parents=True)
    suite = folder / fault / "suite.yaml"
    if content is not None:
        suite.write_bytes(content)
    return suite


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """One `agenteval validate` of every broken input: (the finished process, seconds taken, folder, suites)."""
    folder = tmp_path_factory.mktemp("refused")
    suites = {fault: _bad_input(folder, fault) for fault in [*BAD_CASES, *BAD_SUITES]}
    started = time.monotonic()
    done = run_cli("validate", *suites.values(), cwd=folder, timeout=60)
    return done, time.monotonic() - started, folder, suites


@pytest.mark.parametrize("fault", [*BAD_CASES, *BAD_SUITES])
def test_broken_input_is_refused_quickly_with_file_and_line(refused, fault):
    done, seconds, folder, suites = refused
    if TRACEBACK in done.stderr:  # one input crashed `validate`: check this one on its own
        started = time.monotonic()
        done = run_cli("validate", suites[fault], cwd=folder, timeout=60)
        seconds = time.monotonic() - started
    assert TRACEBACK not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    assert seconds < 15, "refusing bad input must be quick (alias expansion and nesting bounded)"
    mine = [line for line in done.stderr.splitlines() if line.startswith((f"{folder / fault}/", f"{folder / fault}:"))]
    assert mine, f"nothing said about {fault}:\n{done.stderr}"
    says = BAD_CASES[fault][2] if fault in BAD_CASES else BAD_SUITES[fault][1]
    assert any(says in line for line in mine), mine
    assert f"{folder / fault}" not in done.stdout, "reported as ok"
    summary = [line for line in mine if line.endswith(("1 error", " errors"))]
    assert len(summary) == 1, mine  # `<suite>: N errors`, once per refused suite


@pytest.mark.parametrize("fault", ["bad_line_in_the_middle", "empty_file", "alias_bomb"])
def test_broken_input_given_to_run_runs_nothing(tmp_path, fault):
    suite = _bad_input(tmp_path, fault)
    done, out = _run(suite)
    name = BAD_CASES[fault][0] if fault in BAD_CASES else "suite.yaml"
    assert_problem_lines(done, name, BAD_CASES[fault][2] if fault in BAD_CASES else BAD_SUITES[fault][1])
    assert not out.exists() or out.stat().st_size == 0, "an invalid suite must not run"


# --- cases files that are unusual but fine ----------------------------------------------------------

FINE_CASES = {
    "crlf_jsonl": ("c.jsonl", _jsonl(GOOD, b"\r\n")),
    "crlf_yaml": ("c.yaml", b"".join(f"- {{id: c{i}, expected: {{a: {i}}}, output: {{a: {i}}}}}\r\n".encode() for i in range(3))),
    "bom_jsonl": ("c.jsonl", b"\xef\xbb\xbf" + _jsonl(GOOD)),
    "bom_json": ("c.json", b"\xef\xbb\xbf" + json.dumps(GOOD).encode()),  # D17
    "bom_yaml": ("c.yaml", b"\xef\xbb\xbf" + json.dumps(GOOD).encode()),
    "blank_lines_jsonl": ("c.jsonl", b"\n" + _jsonl(GOOD, b"\n\n")),
    "no_final_newline": ("c.jsonl", _jsonl(GOOD).rstrip(b"\n")),
}


@pytest.mark.parametrize("fault", FINE_CASES)
def test_unusual_but_valid_cases_file_runs(tmp_path, fault):
    suite = _suite_with_cases(tmp_path, *FINE_CASES[fault])
    done, out = _run(suite)
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert_each_case_once(out, {"c0", "c1", "c2"})


def test_suite_with_crlf_and_a_bom_runs(tmp_path):
    text = "\ufeff" + SUITE.replace("\n", "\r\n") % "c.jsonl"
    (tmp_path / "c.jsonl").write_bytes(_jsonl(GOOD))
    suite = tmp_path / "suite.yaml"
    suite.write_bytes(text.encode("utf-8"))
    done, out = _run(suite)
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert_each_case_once(out, {"c0", "c1", "c2"})


def test_a_50_mb_case_runs_and_is_written_once(tmp_path):
    big = {"id": "big", "input": {"text": "x" * (50 << 20)}, "expected": {"a": 1}, "output": {"a": 1}}
    suite = _suite_with_cases(tmp_path, "c.jsonl", _jsonl(GOOD[:1]) + _jsonl([big]) + _jsonl(GOOD[1:]))
    done, out = _run(suite)
    assert_no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert_each_case_once(out, {"c0", "big", "c1", "c2"})


def test_yaml_merge_key_is_accepted_or_refused_cleanly(tmp_path):
    """D13: `<<: *base` used to raise a ConstructorError traceback (exit 1)."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: m\nevaluators:\n  - &base {type: field_accuracy, fields: [{path: a}]}\n"
        "  - <<: *base\n    name: f\ncases: [{id: a, expected: {a: 1}, output: {a: 1}}]\n"
    )
    done = run_cli("validate", suite, cwd=tmp_path, timeout=30)
    assert_no_traceback(done)
    if done.returncode == 0:
        assert "ok (1 case, 2 evaluators)" in done.stdout
    else:
        assert_problem_lines(done, "suite.yaml", "suite.yaml:")


# --- G26: predictions in a matrix run name a cell the suite has ----------------------------------------

def test_matrix_predictions_naming_unknown_cells_or_none_are_refused_listing_them(tmp_path):
    """A matrix run's `--predictions` whose lines name a target the suite lacks, or no cell at
    all: exit 2 listing each (by its first line), nothing written. Lines for a cell the suite has
    but the run did not choose (`--target small`) are fine."""
    (tmp_path / "suite.yaml").write_text(
        "name: p\ntargets: {small: {type: recorded}, large: {type: recorded}}\n"
        "evaluators: [{type: contains, path: content, reference: Paris}]\ncases: [{id: fr, input: {}}, {id: de, input: {}}]\n"
    )
    lines = [{"id": case, "target": target, "prompt": None, "output": {"content": "Paris"}} for case in ("fr", "de") for target in ("small", "large")]
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(line) + "\n" for line in lines))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + "".join(json.dumps(line) + "\n" for line in [
        {"id": "fr", "target": "ghost", "prompt": None, "output": {"content": "Paris"}},
        {"id": "de", "target": "ghost", "prompt": None, "output": {"content": "Paris"}},
        {"id": "fr", "output": {"content": "Paris"}},
        {"id": "fr", "target": "small", "prompt": "terse", "output": {"content": "Paris"}},
    ]))
    done = run_cli("run", "suite.yaml", "-o", "r.jsonl", "--predictions", bad, cwd=tmp_path)
    assert_no_traceback(done)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: {bad}:5: 2 lines name cell 'ghost', which the suite does not have (targets: large, small; prompts: none)",
        f"{bad}:7: names no cell, in a run of several cells (targets: large, small; prompts: none): give each line `target` (and `prompt`)",
        f"{bad}:8: names cell 'small/terse', which the suite does not have (targets: large, small; prompts: none)",
    ]
    assert not (tmp_path / "r.jsonl").exists()
    chosen = run_cli("run", "suite.yaml", "-o", "r.jsonl", "-q", "--predictions", good, "--target", "small", cwd=tmp_path)
    assert chosen.returncode == 0, chosen.stderr
