"""A result store of one's own (docs/stores.md, "Writing your own store"): the documented example
runs as written, continues a run, reads it back, and a store without a `url` is refused at once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agenteval
from agenteval.stores import Store, StoreError
from conftest import ROOT

CASES = [{"id": "a", "expected": {"total": 10}, "output": {"total": 10}}, {"id": "b", "expected": {"total": 1}, "output": {"total": 2}}]
FIELDS = [{"type": "field_accuracy", "fields": [{"path": "total"}]}]


def _documented_store() -> str:
    page = (ROOT / "docs" / "stores.md").read_text()
    section = page.split("## Writing your own store", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_documented_store_runs_as_written_and_reads_its_runs_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(_documented_store(), "docs/stores.md", "exec"), names)  # noqa: S102 - the docs' own example
    run = names["run"]
    assert run.summary["pass_rate"] == 1.0 and run.summary["results_store"] == "folder:my-runs"
    saved = Path("my-runs") / f"{run.run_id}.jsonl"
    assert saved.is_file() and (Path("my-runs") / f"{run.run_id}.summary.json").is_file()
    assert [result.case_id for result in run.results()] == ["a"]  # read back through read_run

    store_class = names["FolderStore"]
    first = agenteval.run_suite({"name": "s", "evaluators": FIELDS, "cases": CASES}, store=store_class("runs"), filters=["a"])
    first.summary
    again = agenteval.run_suite({"name": "s", "evaluators": FIELDS, "cases": CASES}, store=store_class("runs"), resume=True)
    assert again.run_id == first.run_id and again.todo_count == 1  # case a was saved: only b is left
    again.summary
    assert sorted(result.case_id for result in again.results()) == ["a", "b"]


class NoUrl(Store):
    def open_run(self, run, resume=False):
        raise AssertionError("never reached")

    def save(self, result):
        raise AssertionError("never reached")

    def close_run(self, run_id, summary):
        raise AssertionError("never reached")

    def read_run(self, run_id):
        raise AssertionError("never reached")


@pytest.mark.parametrize("url", [None, "", "   ", 42])
def test_a_store_without_a_url_is_refused_before_anything_runs(url):
    store = NoUrl()
    if url is not None:
        store.url = url
    with pytest.raises(StoreError, match=r"test_custom_store\.NoUrl has no `url` .*a non-empty text `url`"):
        agenteval.evaluate(CASES, FIELDS, store=store)
    with pytest.raises(StoreError, match="has no `url`"):
        agenteval.monitor(FIELDS, store=store)(lambda value: value)


def test_a_store_that_is_neither_a_url_nor_a_store_is_a_run_error():
    with pytest.raises(agenteval.RunError, match="store= takes a URL such as sqlite:///runs.db, or a Store; got dict"):
        agenteval.evaluate(CASES, FIELDS, store={"url": "x"})
