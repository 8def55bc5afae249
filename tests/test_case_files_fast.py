"""The fast paths of loading a JSONL cases file are held to the slow ones: validating a plain record
without building its case reports exactly what building it reports, the run's builder builds what
pydantic builds, and the inline fingerprint is `fingerprint`."""

from __future__ import annotations

import io
import json

import pytest

import agenteval.suite.loader as loader
from agenteval.suite.case_files import fingerprint, marked_lines, records
from agenteval.suite.loader import SuiteInvalid, Selection, load_suite
from agenteval.suite.models import Case, plain_id

from conftest import write

EVALUATORS = "evaluators: [{type: field_accuracy, fields: [{path: a}]}]\n"

VALID_LINES = [
    '{"id":"a","expected":{"a":1},"output":{"a":1}}',
    '{"id": 7, "expected": {"a": 1}}',
    '{"id": -3, "input": [1, {"x": null}], "expected": "e", "output": 1.5e300}',
    '{"id": 999999999999999999}',
    '{"id": 1000000000000000000}',  # past the fast path's integers: pydantic's
    '{"id": "\\u00e9t\\u00e9", "tags": [], "metadata": {}}',
    '{"id": "t", "tags": ["x", "y"], "metadata": {"k": [1], "j": {"n": null}}}',
    '{"id": "odd", "tags": ["x"]}',
    '{"id": "th", "threshold": 0.5, "tags": ["y"]}',
    '{"id": "own", "expected": {"a": 2}, "evaluators": [{"name": "mine", "type": "field_accuracy", "fields": [{"path": "a"}]}]}',
    '{"id": "nulls", "input": null, "expected": null, "output": null}',
]
INVALID_LINES = [
    '{"id": ""}', '{"id": true}', '{"id": null}', '{"id": 1.5}', '{"expected": 1}',
    '{"id": 123456789012345678901234567890}', '{"id": "tg", "tags": "x"}', '{"id": "tn", "tags": [1]}',
    '{"id": "tz", "tags": null}', '{"id": "md", "metadata": []}', '{"id": "th2", "threshold": 2}',
    '{"id": "ex", "extra": 1}', '{"id": "ty", "inptu": {"q": 1}}', '[1, 2]', '"text"', '12', 'null',
    '{"id": "a"}', '{"id": "7"}',  # duplicates of valid lines: an int id is its text
    '{"id": "cut", "expected": ', '{"id": NaN}', '{"id": "a\\ud800"}', '{"id": "inf", "output": 1e400}',
]


def _suite(folder, lines, eol="\n", keys=EVALUATORS):
    folder.mkdir(exist_ok=True)
    (folder / "cases.jsonl").write_bytes(("\ufeff" + eol.join(lines) + eol).encode() + b"\xff\xfe\n   \n\t\n")
    return write(folder, "s.yaml", "name: demo\n" + keys + "cases: cases.jsonl\n")


def _outcome(suite, selection=Selection()):
    try:
        loaded = load_suite(suite, selection)
    except SuiteInvalid as invalid:
        return [problem.render() for problem in invalid.problems]
    cases = list(loaded.iter_cases())
    return loaded.case_count, len(loaded.selected or ()), [(case.model_dump(), case.model_fields_set) for case in cases]


@pytest.fixture
def slow(monkeypatch):
    """Loading as it was before the fast path: every record built (and validated) by `_CaseChecks.case`."""
    def use_it():
        monkeypatch.setattr(loader, "plain_id", lambda record: None)
    return use_it


def test_validating_without_building_reports_every_problem_as_building_does(tmp_path, slow):
    lines = [line for pair in zip(VALID_LINES, INVALID_LINES) for line in pair] + INVALID_LINES[len(VALID_LINES):]
    suite = _suite(tmp_path, lines)
    fast = _outcome(suite)
    # a suite with defaults to merge, or without evaluators, takes every record the slow way
    others = [_outcome(_suite(tmp_path / name, lines, keys=keys)) for name, keys in (
        ("defaults", EVALUATORS + "defaults: {tags: [d], input: {k: 1}}\n"), ("none", ""))]
    slow()
    assert fast == _outcome(suite)
    assert others == [_outcome(_suite(tmp_path / name, lines, keys=keys)) for name, keys in (
        ("defaults", EVALUATORS + "defaults: {tags: [d], input: {k: 1}}\n"), ("none", ""))]
    assert "have no evaluators, and the suite defines none" in "\n".join(others[1])
    assert "`defaults.input` has keys to merge, but this input is a list" in "\n".join(others[0])
    rendered = "\n".join(fast)
    assert len(fast) >= len(INVALID_LINES) and "duplicate case id 'a' (first at line 1)" in rendered
    assert "duplicate case id '7' (first at line 3)" in rendered and "not valid UTF-8" in rendered


@pytest.mark.parametrize("selection", [Selection(), Selection(tags=("x",)), Selection(shard=(2, 3)), Selection(filters=("t*", "7"), first=2)])
def test_valid_files_load_and_stream_the_same_cases_either_way(tmp_path, slow, selection):
    for eol in ("\n", "\r\n"):
        suite = _suite(tmp_path, VALID_LINES, eol)
        (tmp_path / "cases.jsonl").write_bytes((tmp_path / "cases.jsonl").read_bytes().replace(b"\xff\xfe\n", b""))
        fast = _outcome(suite, selection)
        assert isinstance(fast, tuple) and fast[0] == len(VALID_LINES), fast
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(loader, "plain_id", lambda record: None)
            assert fast == _outcome(suite, selection)


def test_plain_id_is_the_id_validation_gives_or_none(tmp_path):
    for line in VALID_LINES + INVALID_LINES:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        found = plain_id(record)
        if found is None:
            continue
        case = Case.model_validate(record)  # accepted: pydantic accepts it too, with that id
        assert case.id == found and type(found) is str, line
    assert [plain_id(json.loads(line)) for line in VALID_LINES[:4]] == ["a", "7", "-3", "999999999999999999"]
    assert plain_id(json.loads(VALID_LINES[4])) is None and plain_id({"id": "a", "tags": ("x",)}) is None


def test_the_builder_builds_what_validation_builds():
    for line in VALID_LINES:
        record = json.loads(line)
        built, validated = Case.builder()(json.loads(line)), Case.model_validate(record)
        if "evaluators" not in record:  # (evaluator configs, which validation builds on either path, hold objects of their own)
            assert built == validated, line  # (pydantic compares values, extra and private attributes)
        assert built.model_fields_set == validated.model_fields_set and list(built.__dict__) == list(validated.__dict__)
        assert built.model_dump_json() == validated.model_dump_json()
    first, second = (Case.builder()({"id": "a"}) for _ in range(2))
    first.tags.append("mine")
    first.metadata["k"] = 1
    assert second.tags == [] and second.metadata == {}  # each case its own defaults


def test_the_inline_fingerprint_is_fingerprint_and_ignores_only_line_ends():
    text = b"\xef\xbb\xbf{\"id\": 1}\n\n  \r\n{\"id\": 2}\r\n{\"id\": 3}"
    marked = list(marked_lines(io.BytesIO(text)))
    assert [(number, raw) for number, _, raw in marked] == [(1, b'{"id": 1}\n'), (4, b'{"id": 2}\r\n'), (5, b'{"id": 3}')]
    assert [mark for _, mark, _ in marked] == [fingerprint(raw) for _, _, raw in marked]
    for line in (b'{"id": 2}', b'{"id": 2}\n', b'{"id": 2}\r\n', b'{"id": 2}\r\r\n'):
        assert fingerprint(line) == marked[1][1]
    assert fingerprint(b'{"id": 2} \n') != marked[1][1] and fingerprint(b'{"id":2}\n') != marked[1][1]
    assert all(mark for _, mark, _ in marked) and fingerprint(b"x") == fingerprint(b"x\n")
    assert [(n, m) for n, m, _ in records(loader.Path("c.jsonl"), io.BytesIO(text))] == [(n, m) for n, m, _ in marked]


def test_a_last_line_given_its_line_end_later_is_still_trusted_and_a_line_added_after_it_is_not(tmp_path):
    suite = write(tmp_path, "s.yaml", "name: demo\n" + EVALUATORS + "cases: cases.jsonl\n")
    (tmp_path / "cases.jsonl").write_bytes(b'{"id": "c0"}\n{"id": "c1"}')
    loaded = load_suite(suite)
    (tmp_path / "cases.jsonl").write_bytes(b'{"id": "c0"}\r\n{"id": "c1"}\n')
    assert [case.id for case in loaded.iter_cases()] == ["c0", "c1"]
    (tmp_path / "cases.jsonl").write_bytes(b'{"id": "c0"}\n{"id": "c1"}\n\n{"id": "c2"}\n')
    with pytest.raises(loader.CasesChanged) as caught:
        list(loaded.iter_cases())
    assert str(caught.value).startswith(f"{tmp_path / 'cases.jsonl'}:4: the cases file changed after it was validated")


def test_a_duplicate_between_a_plain_record_and_one_pydantic_validates_is_found(tmp_path):
    suite = _suite(tmp_path, ['{"id": "x", "threshold": 0.5}', '{"id": "y"}', '{"id": "x"}'])
    (tmp_path / "cases.jsonl").write_text('{"id": "x", "threshold": 0.5}\n{"id": "y"}\n{"id": "x"}\n')
    with pytest.raises(SuiteInvalid) as caught:
        load_suite(suite)
    assert [p.render() for p in caught.value.problems] == [f"{tmp_path / 'cases.jsonl'}:3: id: duplicate case id 'x' (first at line 1)"]
