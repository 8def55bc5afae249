"""Evaluator types from other packages: the names of agenteval.evaluators.plugin_registry, kept
importable from here.

The registry that reads the `agenteval.evaluators` entry points lives inside the evaluators
package, beside the base class it checks plugins against, so evaluators and plugins do not
import each other across packages.
"""

from __future__ import annotations

from agenteval.evaluators.plugin_registry import (
    GROUP,
    Plugin,
    PluginError,
    declared_plugins,
    describe,
    evaluator_problem,
    plugin_types,
)

__all__ = ["GROUP", "Plugin", "PluginError", "declared_plugins", "describe", "evaluator_problem", "plugin_types"]
