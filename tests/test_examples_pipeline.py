"""examples/pipeline: the seed extraction pipeline, through the CLI (a python target) and from
Python (pipeline.py: aevaluate, the schema's own types, a Python check, SQLite at the end)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import EXAMPLES, read_jsonl, run_cli

FOLDER = EXAMPLES / "pipeline"

SCORES = {  # case: (verdict, score, {evaluator: score}) from the suite
    "inv-001": ("pass", 1.0, {"header": 1.0, "header_dataset": 1.0, "items": 1.0}),
    "inv-002": ("pass", 1.0, {"header": 1.0, "header_dataset": 1.0, "items": 1.0}),
    "inv-003": ("fail", 0.9048, {"header": 0.8571, "header_dataset": 0.8571, "items": 1.0}),
    "inv-004": ("fail", 0.6984, {"header": 0.7143, "header_dataset": 0.7143, "items": 0.6667}),
    "inv-005": ("fail", 0.9333, {"header": 1.0, "header_dataset": 1.0, "items": 0.8}),
    "inv-006": ("fail", 0.9484, {"header": 0.9881, "header_dataset": 0.8571, "items": 1.0}),
}


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pipeline") / "r.jsonl"
    done = run_cli("run", FOLDER / "suite.yaml", "-o", out)
    return done, {row["case_id"]: row for row in read_jsonl(out)}, json.loads(out.with_suffix(".summary.json").read_text()), out


def test_the_suite_scores_the_extractor_as_pinned(cli_run):
    done, rows, summary, _ = cli_run
    assert done.returncode == 1, done.stderr
    got = {
        case: (row["verdict"], round(row["score"], 4), {e["name"]: round(e["score"], 4) for e in row["evaluator_results"]})
        for case, row in rows.items()
    }
    assert got == SCORES
    assert summary["counts"] == {"total": 6, "passed": 2, "failed": 4, "errored": 0}
    assert round(summary["mean_score"], 4) == 0.9142
    assert round(summary["dataset_metrics"]["header_dataset"]["macro_f1"], 4) == 0.9048
    assert round(summary["dataset_metrics"]["items"]["macro_f1"], 4) == 0.9091
    assert summary["fields"]["header"]["invoice_date"]["accuracy"] == pytest.approx(5 / 6)
    assert summary["workers"] == 4


def test_the_results_line_keeps_the_extractors_decimal_digits(cli_run):
    _, rows, _, out = cli_run
    line = next(text for text in out.read_text().splitlines() if '"case_id":"inv-001"' in text)
    assert '"subtotal":165.00,"tax":33.00,"total":198.00' in line
    assert rows["inv-001"]["output"]["invoice_date"] == "2024-03-01"
    assert rows["inv-003"]["output"]["invoice_date"] == "2024-05-03"  # read month-first


def test_the_python_pipeline_stores_its_run_in_sqlite(tmp_path):
    db = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, str(FOLDER / "pipeline.py"), "--db", str(db)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[:7] == [
        "6 invoices: 2 passed, 4 failed, 0 errored; mean score 0.852",
        "  header          mean 0.927",
        "  header_dataset  mean 0.905",
        "  items           mean 0.911",
        "  consistency     mean 0.667",
        "  header_dataset  macro-F1 0.905",
        "  items           macro-F1 0.909",
    ]
    history = run_cli("history", "--store", f"sqlite:///{db}", "--format", "json")
    runs = json.loads(history.stdout)["runs"]
    assert [(run["suite"], run["total"], run["passed"]) for run in runs] == [("invoice-pipeline-py", 6, 2)]
    assert runs[0]["evaluators"]["consistency"] == {"type": "callable", "count": 6, "mean_score": pytest.approx(4 / 6), "pass_rate": pytest.approx(4 / 6)}
    report = json.loads(run_cli("report", "--store", f"sqlite:///{db}", "latest", "--json").stdout)
    assert report["counts"] == {"total": 6, "passed": 2, "failed": 4, "errored": 0}
