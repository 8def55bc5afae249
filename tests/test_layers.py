"""Layers: every import points one way (command line, API, run machinery, stores and reports,
results, evaluators, targets and endpoints, foundations), as docs/architecture.md describes.

The contracts live in pyproject.toml ([tool.importlinter]) and are checked by import-linter's own
command line, in a fresh process. grimp (import-linter's graph) counts function-level and
TYPE_CHECKING imports too: a lazy import is still a dependency of meaning.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def lint_imports(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports ARGS` (the console script installed beside this Python), with no cache."""
    program = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    assert program is not None, "lint-imports is not installed: pip install -e '.[dev]'"
    return subprocess.run([program, "--no-cache", *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=120)


def top_level(module: str) -> str:
    """`agenteval.evaluators.text.regex` -> `agenteval.evaluators`; the package itself stays itself."""
    return ".".join(module.split(".")[:2])


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_import_contracts_in_pyproject_are_kept():
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert {contract["type"] for contract in contracts} >= {"layers", "forbidden", "independence"}
    layers = next(contract for contract in contracts if contract["type"] == "layers")
    assert layers["exhaustive"] is True  # a new module must be given a floor before the contract passes
    done = lint_imports()
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contracts)} kept, 0 broken." in done.stdout


def test_the_linter_sees_lazy_imports_and_reports_a_layer_upside_down(tmp_path):
    """A contract that puts evaluators above results is broken (results import evaluators); and
    agenteval.runs imports the runner only inside make_runner and the suite loader only for type
    checking, yet both count: the check sees more than module-level imports."""
    config = tmp_path / "upside_down.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "agenteval"\n\n'
        '[[tool.importlinter.contracts]]\nname = "upside down"\ntype = "layers"\ncontainers = ["agenteval"]\n'
        'layers = ["evaluators", "results"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "lazy"\ntype = "forbidden"\n'
        'source_modules = ["agenteval.runs"]\nforbidden_modules = ["agenteval.runner", "agenteval.suite"]\n'
    )
    done = lint_imports(config)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "upside down BROKEN" in done.stdout and "lazy BROKEN" in done.stdout
    assert "agenteval.results -> agenteval.evaluators.base (l." in done.stdout
    assert "agenteval.runs -> agenteval.runner (l." in done.stdout  # inside make_runner
    assert "agenteval.runs -> agenteval.suite.loader (l." in done.stdout  # under TYPE_CHECKING


def test_no_cycle_between_the_top_level_modules_and_packages():
    graph = grimp.build_graph("agenteval", cache_dir=None)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if top_level(module) != top_level(imported):
                edges.setdefault(top_level(module), set()).add(top_level(imported))
    assert "agenteval.suite" in edges["agenteval.runner"]  # the graph is the real one, lazy imports included
    assert cycles(edges) == []
    # Only the package itself imports back up to agenteval/__init__.py's names; nothing imports it.
    assert not any("agenteval" in targets for targets in edges.values())


def test_no_cycle_between_the_modules_of_one_package():
    """Inside a package too, imports point one way: e.g. the conversation driver and the simulated
    user share their text check from below (agenteval.usable), not from each other."""
    graph = grimp.build_graph("agenteval", cache_dir=None)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if module != imported and module.rpartition(".")[0] == imported.rpartition(".")[0]:
                edges.setdefault(module, set()).add(imported)
    assert "agenteval.conversations.transcript" in edges["agenteval.conversations.driver"]  # the real graph
    assert "agenteval.conversations.driver" not in edges.get("agenteval.conversations.simulated_user", set())
    assert "agenteval.usable" in graph.find_modules_directly_imported_by("agenteval.conversations.simulated_user")
    assert cycles(edges) == []
