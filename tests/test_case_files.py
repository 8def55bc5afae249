"""Cases files are read and validated once: a JSONL run streams validated lines again without a
second validation, refuses lines that changed since, and selection is decided while validating."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc

import pytest

from agenteval.suite.case_index import CaseIndex, IdHashes
from agenteval.suite.loader import CasesChanged, Selection, _duplicate_ids, load_suite
from agenteval.suite.models import Case

from conftest import read_jsonl, run_cli, write

EVALUATORS = "evaluators: [{type: field_accuracy, fields: [{path: a}]}]\n"


def jsonl_suite(folder, records, **suite_keys):
    (folder / "cases.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    extra = "".join(f"{key}: {json.dumps(value)}\n" for key, value in suite_keys.items())
    return write(folder, "s.yaml", "name: demo\n" + extra + EVALUATORS + "cases: cases.jsonl\n")


def numbered(count, **extra):
    return [{"id": f"c{i}", "expected": {"a": i}, "output": {"a": i}, **extra} for i in range(count)]


# --- built once, the same as validated -----------------------------------------------------------

RECORDS = [
    {"id": 7, "expected": {"a": 1}},
    {"id": "b", "input": {"q": [1, 2]}, "expected": None, "output": None, "tags": ["x"], "metadata": {"m": 1}},
    {"id": "c", "expected": 1, "evaluators": [{"name": "extra", "type": "field_accuracy", "fields": [{"path": "a"}]}]},
]


def test_cases_streamed_at_run_time_equal_their_validated_models(tmp_path):
    loaded = load_suite(jsonl_suite(tmp_path, RECORDS))
    streamed = list(loaded.iter_cases())
    validated = [Case.model_validate(record) for record in RECORDS]
    assert [case.model_dump() for case in streamed] == [case.model_dump() for case in validated]
    assert [case.has_output for case in streamed] == [False, True, False]
    assert [case.id for case in streamed] == ["7", "b", "c"]
    assert streamed[0].tags == [] and streamed[0].tags is not validated[0].tags


PLAIN_ACCEPTED = [
    {"id": "a"}, {"id": 0}, {"id": -5, "input": [1, {"x": None}], "expected": "e", "output": {"o": 1.5}},
    {"id": "é", "tags": [], "metadata": {}}, {"id": "t", "tags": ["x", "y"], "metadata": {"k": [1], "j": {"n": None}}},
]
PLAIN_REFUSED = [  # each goes to pydantic (valid or not), never through the fast path
    {"id": ""}, {"id": True}, {"id": None}, {"id": 1.0}, {"id": 10**18}, {"id": "a\ud800"}, {"input": 1},
    {"id": "a", "tags": "x"}, {"id": "a", "tags": [1]}, {"id": "a", "tags": None}, {"id": "a", "metadata": []},
    {"id": "a", "metadata": {1: 2}}, {"id": "a", "threshold": 0.5}, {"id": "a", "extra": 1}, {"id": "a", "evaluators": []},
    {"id": "a", "turns": ["hi"]}, ["not", "a", "dict"],
]


def test_the_validation_fast_path_builds_what_pydantic_builds_and_leaves_the_rest_to_it():
    plain = Case.plain_builder()
    for record in PLAIN_ACCEPTED:
        fast, validated = plain(record), Case.model_validate(record)
        assert fast is not None, record
        assert fast.model_dump() == validated.model_dump() and fast.model_fields_set == validated.model_fields_set, record
        assert list(fast.__dict__) == list(validated.__dict__)
        if "tags" in record:  # its own list and dict, as validation gives it
            assert fast.tags is not record["tags"] and fast.metadata is not record["metadata"]
    for record in PLAIN_REFUSED:
        assert plain(record) is None, record


def test_json_and_yaml_cases_are_kept_from_their_one_read(tmp_path):
    for name, text in (("cases.json", json.dumps(numbered(2))), ("cases.yaml", "- {id: c0, expected: 1}\n- {id: c1, expected: 2}\n")):
        (tmp_path / name).write_text(text)
        loaded = load_suite(write(tmp_path, "s.yaml", "name: demo\n" + EVALUATORS + f"cases: {name}\n"))
        (tmp_path / name).unlink()
        assert [case.id for case in loaded.iter_cases()] == ["c0", "c1"]


# --- a cases file that changes after validation ----------------------------------------------------

def _stream_until_it_breaks(loaded):
    ids = []
    with pytest.raises(CasesChanged) as caught:
        for case in loaded.iter_cases():
            ids.append(case.id)
    return ids, str(caught.value)


def test_a_line_edited_after_validation_stops_the_stream_at_that_line(tmp_path):
    suite = jsonl_suite(tmp_path, numbered(5))
    loaded = load_suite(suite)
    lines = (tmp_path / "cases.jsonl").read_text().splitlines()
    lines[3] = '{"id": "c3", "expected": '  # now invalid JSON
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    ids, message = _stream_until_it_breaks(loaded)
    assert ids == ["c0", "c1", "c2"]
    assert message == (
        f"{tmp_path / 'cases.jsonl'}:4: the cases file changed after it was validated; "
        "the run stopped here (fix or restore it, then --resume)"
    )


def test_a_valid_but_different_line_is_refused_too(tmp_path):
    loaded = load_suite(jsonl_suite(tmp_path, numbered(3)))
    changed = numbered(3)
    changed[1]["expected"] = {"a": 99}
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(record) + "\n" for record in changed))
    ids, message = _stream_until_it_breaks(loaded)
    assert ids == ["c0"] and ":2: the cases file changed" in message


def test_a_cut_or_extended_file_is_refused(tmp_path):
    loaded = load_suite(jsonl_suite(tmp_path, numbered(3)))
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(record) + "\n" for record in numbered(2)))
    ids, message = _stream_until_it_breaks(loaded)
    assert ids == ["c0", "c1"] and message.endswith("(it now ends after 2 of 3 cases)")
    loaded = load_suite(jsonl_suite(tmp_path, numbered(2)))
    with (tmp_path / "cases.jsonl").open("a") as handle:
        handle.write(json.dumps(numbered(3)[2]) + "\n")
    ids, message = _stream_until_it_breaks(loaded)
    assert ids == ["c0", "c1"] and ":3: the cases file changed" in message


def test_a_file_rewritten_with_the_same_cases_in_other_line_ends_is_still_trusted(tmp_path):
    loaded = load_suite(jsonl_suite(tmp_path, numbered(3)))
    (tmp_path / "cases.jsonl").write_bytes(b"".join(json.dumps(record).encode() + b"\r\n" for record in numbered(3)))
    assert [case.id for case in loaded.iter_cases()] == ["c0", "c1", "c2"]


def test_a_deleted_cases_file_is_a_clear_error(tmp_path):
    loaded = load_suite(jsonl_suite(tmp_path, numbered(2)))
    (tmp_path / "cases.jsonl").unlink()
    ids, message = _stream_until_it_breaks(loaded)
    assert ids == [] and message.startswith(f"{tmp_path / 'cases.jsonl'}: cannot read the cases file any more")


SLOW_TARGET = "import json, sys, time\ncase = json.load(sys.stdin)\ntime.sleep(0.15)\nprint(json.dumps({'a': case['q']}))\n"


def test_editing_the_cases_file_mid_run_stops_cleanly_and_resume_finishes(tmp_path):
    (tmp_path / "slow.py").write_text(SLOW_TARGET)
    # 4 KB a line: the stream's read-ahead buffer cannot already hold the line edited below
    records = [{"id": f"c{i}", "input": {"q": i, "pad": "z" * 4000}, "expected": {"a": i}} for i in range(12)]
    suite = jsonl_suite(tmp_path, records, target={"type": "command", "command": ["python", "slow.py"]})
    out = tmp_path / "r.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "agenteval", "run", str(suite), "-o", str(out), "--workers", "1", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out.exists() and out.read_text().count("\n") >= 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    original = (tmp_path / "cases.jsonl").read_text()
    lines = original.splitlines()
    lines[7] = '{"id": "c7", "expected": '
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert f"error: {tmp_path / 'cases.jsonl'}:8: the cases file changed after it was validated" in stderr
    finished = [result["case_id"] for result in read_jsonl(out)]
    assert finished == [f"c{i}" for i in range(7)]
    (tmp_path / "cases.jsonl").write_text(original)
    again = run_cli("run", suite, "-o", out, "--resume", "-q", "--workers", "4", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert sorted(result["case_id"] for result in read_jsonl(out)) == sorted(f"c{i}" for i in range(12))


# --- selection decided while validating ------------------------------------------------------------

def test_selection_is_counted_while_validating_and_applied_while_streaming(tmp_path):
    records = [dict(record, tags=["odd"] if i % 2 else []) for i, record in enumerate(numbered(10))]
    suite = jsonl_suite(tmp_path, records)
    everything = load_suite(suite)
    assert everything.selected is None and everything.case_count == 10
    by_tag = load_suite(suite, Selection(tags=("odd",), shard=(2, 2)))
    assert (by_tag.case_count, len(by_tag.selected)) == (10, 2)
    assert [case.id for case in by_tag.iter_cases()] == ["c3", "c7"]
    by_glob = load_suite(suite, Selection(filters=("c1*", "c2")))
    assert [case.id for case in by_glob.iter_cases()] == ["c1", "c2"]
    assert "c1" in by_glob.selected and "c3" not in by_glob.selected and "nope" not in by_glob.selected
    assert by_glob.selected & {"c1", "c3", "nope"} == {"c1"}


def test_shards_split_the_matching_cases_in_file_order(tmp_path):
    suite = jsonl_suite(tmp_path, numbered(7))
    shards = [[case.id for case in load_suite(suite, Selection(shard=(i, 3))).iter_cases()] for i in (1, 2, 3)]
    assert shards == [["c0", "c3", "c6"], ["c1", "c4"], ["c2", "c5"]]


def test_inline_cases_are_selected_the_same_way(tmp_path):
    suite = write(tmp_path, "s.yaml", "name: demo\n" + EVALUATORS + "cases:\n" + "".join(f"  - {{id: c{i}, expected: 1}}\n" for i in range(5)))
    loaded = load_suite(suite, Selection(filters=("c[13]",)))
    assert [case.id for case in loaded.iter_cases()] == ["c1", "c3"] and len(loaded.selected) == 2


# --- the compact id index --------------------------------------------------------------------------

def test_id_hashes_hold_many_ids_with_their_flags():
    hashes = IdHashes()
    assert all(hashes.add(hash(f"id-{i}"), i % 3 == 0) for i in range(50_000))
    assert not hashes.add(hash("id-42"), False)
    assert [hashes.flag(hash(f"id-{i}")) for i in (0, 1, 2, 3, 49_999)] == [True, False, False, True, False]
    assert hashes.flag(hash("never added")) is None


class _SameHash(str):
    """Two different ids with one hash: what a 64-bit collision looks like."""

    def __hash__(self) -> int:
        return 12345


def test_equal_id_hashes_of_different_ids_are_not_reported_as_duplicates(tmp_path):
    index = CaseIndex(Selection())
    first, second, third = _SameHash("a"), _SameHash("b"), _SameHash("a")
    for case_id in (first, second, third):
        index.add(case_id, [])
    rows = [(first, 1, ()), (second, 2, ()), (third, 3, ())]
    assert [p.render() for p in _duplicate_ids(rows, index, tmp_path / "c.jsonl")] == [
        f"{tmp_path / 'c.jsonl'}:3: id: duplicate case id 'a' (first at line 1)"
    ]


def test_duplicate_ids_far_apart_in_a_large_file_are_found(tmp_path):
    records = numbered(3000)
    records.append(dict(records[17]))
    with pytest.raises(Exception) as caught:
        load_suite(jsonl_suite(tmp_path, records))
    assert [p.render() for p in caught.value.problems] == [
        f"{tmp_path / 'cases.jsonl'}:3001: id: duplicate case id 'c17' (first at line 18)"
    ]


def test_what_loading_keeps_per_case_is_a_few_dozen_bytes(tmp_path):
    suite = jsonl_suite(tmp_path, numbered(20_000))
    load_suite(suite)  # warm imports and caches
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        loaded = load_suite(suite, Selection(tags=("none",), filters=("c1*",)))
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(loaded.selected) == 0 and loaded.case_count == 20_000
    assert kept / 20_000 < 40, f"{kept / 20_000:.0f} bytes per case"
