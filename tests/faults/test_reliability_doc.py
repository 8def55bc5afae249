"""docs/reliability.md names the test behind each fault: every name must exist, and every fault test must be named."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from conftest import ROOT

DOC = ROOT / "docs" / "reliability.md"
TEST_FILES = [*sorted((ROOT / "tests" / "faults").glob("test_*.py")), ROOT / "tests" / "test_properties.py"]


def _test_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_test_named_in_the_reliability_doc_exists_and_every_fault_test_is_named():
    named = set(re.findall(r"\btest_\w+", DOC.read_text())) - {f.stem for f in TEST_FILES}
    defined = {name for path in TEST_FILES for name in _test_functions(path)}
    assert not named - defined, f"docs/reliability.md names tests that do not exist: {sorted(named - defined)}"
    this_file = _test_functions(Path(__file__))
    assert not defined - named - this_file, f"fault tests missing from docs/reliability.md: {sorted(defined - named - this_file)}"
