"""The same extractor checked from test code: inline cases through the `agenteval_run` fixture."""

import sys
from pathlib import Path

import pytest

from agenteval.testing import assert_passed

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # extractor.py, beside pytest.ini
from extractor import extract  # noqa: E402

CASES = [
    {"id": "plain", "input": "Invoice: P-1\nFrom: Pied Piper\nTotal: 10", "expected": {"number": "P-1", "total": 10.0}},
    {"id": "thousands", "input": "Invoice: P-2\nFrom: Pied Piper\nTotal: 1,000.50", "expected": {"number": "P-2", "total": 1000.5}},
]
FIELDS = [{"name": "header", "type": "field_accuracy", "fields": [{"path": "number"}, {"path": "total", "match": "numeric_tolerance", "tolerance": 0.01}]}]


@pytest.mark.agenteval(cases=CASES, evaluators=FIELDS)
def test_extractor_reads_every_header(agenteval_run):
    assert_passed(agenteval_run(task=extract))
