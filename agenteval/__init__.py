"""agenteval: a fast, strict eval runner for extraction pipelines and AI agents.

`agenteval.run_suite(...)` runs a suite and `agenteval.evaluate(...)` scores answers held in
memory (see agenteval.api); both are imported when first used, so `import agenteval` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

TYPE_CHECKING = False  # not `typing`'s: importing typing would cost a judge script milliseconds
if TYPE_CHECKING:
    from typing import Any

    from agenteval.api import RunError, SuiteRun, evaluate, run_suite
    from agenteval.results import CaseResult
    from agenteval.suite.loader import SuiteInvalid

__all__ = ["CaseResult", "RunError", "SuiteInvalid", "SuiteRun", "__version__", "evaluate", "run_suite"]

_LAZY = {
    "run_suite": "agenteval.api",
    "evaluate": "agenteval.api",
    "SuiteRun": "agenteval.api",
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
