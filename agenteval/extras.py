"""Optional dependencies (the `geometry` extra: shapely, scipy) and what to say when one is missing."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

EXTRA = "geometry"


class MissingDependency(ImportError):
    """A feature needs a package that is not installed; the message says how to install it."""


def require(module: str, feature: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(f"{feature} needs {module.split('.')[0]}: pip install 'agenteval[{EXTRA}]'") from None


def missing_warning(module: str, feature: str) -> str | None:
    """A load-time warning when `module` is not installed, else None."""
    if importlib.util.find_spec(module.split(".")[0]) is None:
        return f"{feature} needs {module.split('.')[0]}, which is not installed: pip install 'agenteval[{EXTRA}]'"
    return None
