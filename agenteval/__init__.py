"""agenteval: a fast, strict eval runner for extraction pipelines and AI agents.

`agenteval.run_suite(...)` runs a suite and `agenteval.evaluate(...)` scores answers held in
memory (see agenteval.api; `aevaluate` for asyncio programs; `load_run` reads a finished run again); `agenteval.monitor(...)` evaluates a
sampled share of a live function's calls (agenteval.monitoring). All are imported when first used, so
`import agenteval` stays cheap.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`'s: importing typing would cost a judge script milliseconds
if TYPE_CHECKING:
    from typing import Any

    from agenteval.api import FinishedRun, RunError, RunSettings, SuiteRun, aevaluate, evaluate, evaluator, load_run, run_suite
    from agenteval.evaluators.callable import CheckContext
    from agenteval.monitoring import Monitor, monitor
    from agenteval.results import CaseResult
    from agenteval.run_context import RunContext
    from agenteval.run_context import current_run
    from agenteval.suite.loader import SuiteInvalid
    from agenteval.values import ValueNotPlain, to_plain
    from agenteval.version import __version__

__all__ = [
    "CaseResult", "CheckContext", "FinishedRun", "Monitor", "RunError", "RunSettings", "SuiteInvalid", "SuiteRun",
    "RunContext", "ValueNotPlain", "__version__", "aevaluate", "current_run", "evaluate", "evaluator", "load_run", "monitor",
    "run_suite", "to_plain",
]

_LAZY = {
    "__version__": "agenteval.version",  # its own module, so nothing inside the package imports this one
    "run_suite": "agenteval.api",
    "evaluate": "agenteval.api",
    "aevaluate": "agenteval.api",
    "evaluator": "agenteval.api",
    "CheckContext": "agenteval.evaluators.callable",
    "monitor": "agenteval.monitoring",
    "Monitor": "agenteval.monitoring",
    "to_plain": "agenteval.values",
    "ValueNotPlain": "agenteval.values",
    "SuiteRun": "agenteval.api",
    "RunSettings": "agenteval.api",
    "FinishedRun": "agenteval.api",
    "load_run": "agenteval.api",
    "current_run": "agenteval.run_context",
    "RunContext": "agenteval.run_context",
    "RunError": "agenteval.api",
    "CaseResult": "agenteval.results",
    "SuiteInvalid": "agenteval.suite.loader",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agenteval' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module), name)
