"""A Python pipeline's own values (pydantic models, dataclasses, Decimals, numpy, dates, enums...)
scored as the plain values they stand for: through `evaluate`, through `run_suite` with a python
target, and through the results file (`agenteval report` gives the run's own figures)."""

from __future__ import annotations

import dataclasses
import enum
import json
import uuid
from datetime import date, datetime, time, timezone
from decimal import Decimal
from pathlib import Path, PurePosixPath
from types import MappingProxyType

import numpy as np
import pytest
from pydantic import BaseModel

import agenteval
from agenteval.values import ExactNumber, ValueNotPlain, floats, has_exact, is_plain, to_plain
from conftest import read_jsonl, run_cli, write


class Vendor(BaseModel):
    name: str
    country: str | None = None


class Invoice(BaseModel):
    number: str
    vendor: Vendor
    total: Decimal


@dataclasses.dataclass
class Item:
    sku: str
    qty: int


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


ID = uuid.UUID("12345678-1234-5678-1234-567812345678")

# name: (the pipeline's value, its plain form, the field check that scores it)
EXACT = {"match": "exact"}
NUMBER = {"match": "numeric_tolerance", "tolerance": 0.001}
TYPES = {
    "pydantic": (Invoice(number="A-1", vendor=Vendor(name="ACME"), total=Decimal("12.50")),
                 {"number": "A-1", "vendor": {"name": "ACME", "country": None}, "total": 12.5}, EXACT),
    "dataclass": (Item("X-1", 2), {"sku": "X-1", "qty": 2}, EXACT),
    "mapping": (MappingProxyType({"a": 1, "b": [2]}), {"a": 1, "b": [2]}, EXACT),
    "decimal": (Decimal("12.50"), 12.5, NUMBER),
    "numpy_float": (np.float64(3.25), 3.25, NUMBER),
    "numpy_int": (np.int64(7), 7, NUMBER),
    "numpy_bool": (np.bool_(True), True, EXACT),
    "numpy_array": (np.array([[1, 2], [3, 4]]), [[1, 2], [3, 4]], EXACT),
    "date": (date(2024, 3, 1), "2024-03-01", {"match": "date"}),
    "datetime": (datetime(2024, 3, 1, 9, 30, tzinfo=timezone.utc), "2024-03-01T09:30:00+00:00", EXACT),
    "time": (time(9, 30), "09:30:00", EXACT),
    "enum": (Color.RED, "red", EXACT),
    "int_enum": (Level.HIGH, 3, NUMBER),
    "uuid": (ID, str(ID), EXACT),
    "path": (PurePosixPath("docs/a.pdf"), "docs/a.pdf", EXACT),
    "tuple": ((1, "two"), [1, "two"], EXACT),
    "set": ({"b", "a", "c"}, ["a", "b", "c"], EXACT),
}


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_the_plain_form_of_each_type(kind):
    value, plain, _ = TYPES[kind]
    converted = floats(to_plain(value))
    assert converted == plain
    assert json.loads(json.dumps(converted)) == plain  # what JSON can say, nothing else


def _fields(kind: str) -> list[dict]:
    return [{"type": "field_accuracy", "name": "fields", "fields": [{"path": "v", **TYPES[kind][2]}]}]


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_each_type_through_evaluate_as_answer_and_as_expected(kind):
    value, plain, check = TYPES[kind]
    cases = [
        {"id": "answer", "input": {"v": value}, "expected": {"v": plain}, "output": {"v": value}, "metadata": {"v": value}},
        {"id": "expected", "expected": {"v": value}, "output": {"v": plain}},
        {"id": "both", "expected": {"v": value}, "output": {"v": value}},
    ]
    results = {result.case_id: result for result in agenteval.evaluate(cases, _fields(kind))}
    assert {case: (result.verdict, result.score) for case, result in results.items()} == {
        "answer": ("pass", 1.0), "expected": ("pass", 1.0), "both": ("pass", 1.0),
    }
    assert results["answer"].input == {"v": plain} and results["answer"].metadata == {"v": plain}
    assert results["answer"].output == {"v": plain}


def test_a_wrong_value_of_each_kind_still_misses():
    cases = [
        {"id": "decimal", "expected": {"v": Decimal("12.50")}, "output": {"v": np.float64(12.75)}},
        {"id": "model", "expected": {"v": Vendor(name="ACME")}, "output": {"v": Vendor(name="Acme")}},
        {"id": "date", "expected": {"v": date(2024, 3, 1)}, "output": {"v": date(2024, 3, 2)}},
    ]
    checks = [{"type": "field_accuracy", "fields": [{"path": "v", "match": "numeric_tolerance", "tolerance": 0.01}]}]
    results = {r.case_id: r for r in agenteval.evaluate(cases[:1], checks)}
    assert (results["decimal"].verdict, results["decimal"].evaluator_results[0].misses) == ("fail", ["v"])
    results = {r.case_id: r for r in agenteval.evaluate(cases[1:], [{"type": "field_accuracy", "fields": [{"path": "v"}]}])}
    assert [results[case].verdict for case in ("model", "date")] == ["fail", "fail"]


def test_the_issue_reports_pydantic_and_dataclass_answers_scored_by_their_fields():
    expected = Invoice(number="A-1", vendor=Vendor(name="ACME"), total=Decimal("300.00"))
    answers = {
        "model": Invoice(number="A-1", vendor=Vendor(name="ACME"), total=Decimal("300.0")),
        "numpy": {"number": "A-1", "vendor": {"name": "ACME"}, "total": np.float64(300.0)},
        "int64": {"number": "A-1", "vendor": {"name": "ACME"}, "total": np.int64(300)},
    }
    fields = [{"type": "field_accuracy", "fields": [
        {"path": "number"}, {"path": "vendor.name"}, {"path": "total", "match": "numeric_tolerance", "tolerance": 0.01}]}]
    run = agenteval.evaluate([{"id": key, "expected": expected, "output": answer} for key, answer in answers.items()], fields)
    assert {r.case_id: (r.verdict, r.score, r.evaluator_results[0].hits) for r in run} == {
        key: ("pass", 1.0, ["number", "vendor.name", "total"]) for key in answers
    }


# -- through run_suite with a python target, and the results file -----------------------------------------

TARGET_MODULE = '''
import dataclasses, enum, uuid
from datetime import date, datetime, time, timezone
from decimal import Decimal
from pathlib import PurePosixPath
from types import MappingProxyType

import numpy as np
from pydantic import BaseModel


class Vendor(BaseModel):
    name: str
    country: str | None = None


class Invoice(BaseModel):
    number: str
    vendor: Vendor
    total: Decimal


@dataclasses.dataclass
class Item:
    sku: str
    qty: int


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


VALUES = {
    "pydantic": lambda: Invoice(number="A-1", vendor=Vendor(name="ACME"), total=Decimal("12.50")),
    "dataclass": lambda: Item("X-1", 2),
    "mapping": lambda: MappingProxyType({"a": 1, "b": [2]}),
    "decimal": lambda: Decimal("12.50"),
    "numpy_float": lambda: np.float64(3.25),
    "numpy_int": lambda: np.int64(7),
    "numpy_bool": lambda: np.bool_(True),
    "numpy_array": lambda: np.array([[1, 2], [3, 4]]),
    "date": lambda: date(2024, 3, 1),
    "datetime": lambda: datetime(2024, 3, 1, 9, 30, tzinfo=timezone.utc),
    "time": lambda: time(9, 30),
    "enum": lambda: Color.RED,
    "int_enum": lambda: Level.HIGH,
    "uuid": lambda: uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "path": lambda: PurePosixPath("docs/a.pdf"),
    "tuple": lambda: (1, "two"),
    "set": lambda: {"b", "a", "c"},
}


def answer(kind):
    return {"v": VALUES[kind]()}


async def answer_later(kind):
    return {"v": VALUES[kind]()}
'''


@pytest.fixture(scope="module")
def typed_suite(tmp_path_factory):
    folder = tmp_path_factory.mktemp("types")
    write(folder, "typed_pipeline.py", TARGET_MODULE)
    cases = [{"id": kind, "input": kind, "expected": {"v": plain}} for kind, (_, plain, _) in sorted(TYPES.items())]
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    checks = {kind: TYPES[kind][2] for kind in TYPES}
    evaluators = [
        {"name": "fields", "type": "field_accuracy", "fields": [{"path": "v", **checks[kind]}]} for kind in ["decimal"]
    ]
    return folder, evaluators, checks


@pytest.mark.parametrize("function", ["typed_pipeline:answer", "typed_pipeline:answer_later"])
def test_each_type_from_a_python_target_in_a_suite_file(typed_suite, tmp_path, function):
    folder, _, checks = typed_suite
    lines = [
        "name: typed", f"target: {{type: python, function: '{function}', max_concurrency: 4}}", "cases: cases.jsonl", "evaluators:",
        "  - type: field_accuracy", "    name: fields", "    fields: [{path: v, match: exact}]",
    ]
    for kind, check in sorted(checks.items()):
        if check is not EXACT:
            lines.append(f"  - {{type: field_accuracy, name: {kind}, fields: [{{path: v, {', '.join(f'{k}: {v}' for k, v in check.items())}}}]}}")
    suite = write(folder, f"suite-{function.rpartition(':')[2]}.yaml", "\n".join(lines) + "\n")
    out = tmp_path / "r.jsonl"
    run = agenteval.run_suite(suite, output=out)
    results = {result.case_id: result for result in run}
    summary = run.summary
    for kind, (_, plain, check) in TYPES.items():
        by_name = {e.name: e for e in results[kind].evaluator_results}
        assert results[kind].output == {"v": plain}, kind
        assert by_name["fields" if check is EXACT else kind].score == 1.0, kind
        assert results[kind].usage["latency_ms"] >= 0
    assert summary["workers"] == 4
    # the results line writes the Decimal with its own digits; reading it back gives the run's figures
    rows = {row["case_id"]: row for row in read_jsonl(out)}
    line = next(text for text in out.read_text().splitlines() if '"case_id":"decimal"' in text)
    assert '"output":{"v":12.50}' in line
    assert rows["pydantic"]["output"]["v"]["total"] == 12.5
    report = run_cli("report", out, "--json")
    figures = json.loads(report.stdout)
    for key in ("counts", "pass_rate", "mean_score", "evaluators", "fields"):
        assert figures[key] == summary[key], key


def test_the_results_file_of_evaluate_keeps_decimal_digits_and_reports_the_same_figures(tmp_path):
    out = tmp_path / "r.jsonl"
    cases = [
        {"id": "a", "input": {"doc": Path("a.pdf")}, "expected": {"total": Decimal("10.10")}, "output": {"total": Decimal("10.10")}},
        {"id": "b", "input": {"doc": Path("b.pdf")}, "expected": {"total": Decimal("7")}, "output": {"total": Decimal("7.50")}},
    ]
    run = agenteval.evaluate(cases, [{"type": "field_accuracy", "fields": [{"path": "total", "match": "numeric_tolerance", "tolerance": 0.01}]}], output=out)
    yielded = {result.case_id: result.output for result in run}
    summary = run.summary
    assert yielded == {"a": {"total": 10.1}, "b": {"total": 7.5}}
    assert all(type(value["total"]) is float for value in yielded.values())  # what the caller gets is plain
    text = out.read_text()
    assert '"output":{"total":10.10}' in text and '"output":{"total":7.50}' in text
    assert '"input":{"doc":"a.pdf"}' in text
    figures = json.loads(run_cli("report", out, "--json").stdout)
    assert (figures["counts"], figures["pass_rate"], figures["mean_score"]) == (summary["counts"], 0.5, 0.5)
    assert figures["fields"] == summary["fields"]


# -- what cannot be converted ------------------------------------------------------------------------------


def test_an_object_with_no_plain_form_names_the_case_and_the_path():
    class Opaque:
        pass

    cases = [
        {"id": "ok", "expected": {"v": 1}, "output": {"v": 1}},
        {"id": "bad", "expected": {"v": 1}, "output": {"items": [{"v": 1}, {"v": Opaque()}]}},
        {"id": "bytes", "expected": {"v": b"raw"}, "output": {"v": 1}},
    ]
    with pytest.raises(agenteval.SuiteInvalid) as caught:
        agenteval.evaluate(cases, [{"type": "field_accuracy", "fields": [{"path": "v"}]}])
    messages = [problem.message for problem in caught.value.problems]
    assert len(messages) == 2
    assert messages[0].startswith("case 'bad': `output.items[1].v`: a ")
    assert "Opaque has no plain form" in messages[0]
    assert messages[1].startswith("case 'bytes': `expected.v`: a builtins.bytes has no plain form")


def test_conversion_edges():
    assert to_plain({1: "a", Color.RED: "b"}) == {"1": "a", "red": "b"}
    with pytest.raises(ValueNotPlain, match=r"^x: a mapping key of type tuple"):
        to_plain({(1, 2): "a"}, "x")
    assert np.isnan(to_plain(np.float64("nan"))) and to_plain(np.float32("inf")) == float("inf")
    assert np.isnan(to_plain(Decimal("NaN"))) and to_plain(Decimal("-Infinity")) == float("-inf")
    with pytest.raises(ValueNotPlain, match="beyond the float range"):
        to_plain(Decimal("1e400"))
    exact = to_plain({"a": [Decimal("1.10")]})
    assert type(exact["a"][0]) is ExactNumber and exact["a"][0].text == "1.10" and has_exact(exact)
    assert type(floats(exact)["a"][0]) is float
    plain = {"a": [1, 2.5, "x", None, True]}
    assert to_plain(plain) is plain  # nothing to convert: the same object, no copy
    deep: list = []
    for _ in range(300):
        deep = [deep]
    with pytest.raises(ValueNotPlain, match="nested deeper than 200 levels"):
        to_plain(deep)


def _nested(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_the_plain_check_agrees_with_the_conversion():
    """`is_plain` (what spares a plain value the conversion's copy) is True exactly when `to_plain`
    gives the value back as it is, up to the nesting limit."""
    class Text(str):
        pass

    cycle: dict = {}
    cycle["self"] = cycle
    plain = [None, "x", 1, 2.5, True, float("nan"), 10**40, [], {}, {"a": [1, {"b": None, "c": [True, "é"]}]}, _nested(201)]
    for value in plain:
        assert is_plain(value) and to_plain(value) is value
    converted = [
        (1, 2), {"a": (1,)}, {1: "a"}, {"a": [Decimal("1.5")]}, [ExactNumber(Decimal("1.50"))], {"a": Text("x")},
        {"a": {"b": [Color.RED]}}, MappingProxyType({"a": 1}), [{"a": 1}, np.int64(3)], {"v": Vendor(name="ACME")},
    ]
    for value in converted:
        assert not is_plain(value)
        assert to_plain(value) is not value and is_plain(floats(to_plain(value)))
    for value in (_nested(202), cycle):
        assert not is_plain(value)
        with pytest.raises(ValueNotPlain):
            to_plain(value)


def test_floats_copies_only_what_holds_an_exact_number():
    exact = to_plain({"a": {"x": 1, "y": Decimal("2.50"), "z": "t"}, "b": {"c": [1, 2]}, "d": [Decimal("1.5"), "s"]})
    plain = floats(exact)
    assert plain == {"a": {"x": 1, "y": 2.5, "z": "t"}, "b": {"c": [1, 2]}, "d": [1.5, "s"]}
    assert list(plain) == ["a", "b", "d"] and list(plain["a"]) == ["x", "y", "z"]  # the order kept
    assert plain["b"] is exact["b"]  # nothing exact inside: the same object
    assert type(exact["a"]["y"]) is ExactNumber and type(plain["a"]["y"]) is float and type(plain["d"][0]) is float
