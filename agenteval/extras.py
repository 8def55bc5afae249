"""Optional dependencies, grouped in extras, and what to say when one is missing.

`geometry`: shapely, scipy (exact polygon IoU, optimal pairing). `text`: vaderSentiment, afinn,
better-profanity (offline sentiment lexicons and the default toxicity word list). `store`:
SQLAlchemy, psycopg (SQL result stores). `otel`: the OpenTelemetry SDK, OTLP exporter and semantic
conventions (--otel).
`ray`: Ray (--executor ray). `view`: Starlette and Uvicorn (`agenteval view`). `mcp`: the MCP
Python SDK (tools from MCP servers, the `mcp` target). `pandas`: pandas (a run's results as a
DataFrame). `bedrock`: botocore (the `bedrock` target's AWS credentials and SigV4 signing).
`azure`: azure-identity (the `azure_openai` target's `entra_id: true`). `gemini`: google-auth (Vertex AI
credentials for the gemini target). `all`: every one of them.

A suite whose evaluators need a package that is not installed is refused when it loads (`validate`
and `run` exit 2), naming the evaluator and the `pip install` that fixes it: such a suite would
only error on every case.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

# Top-level module -> (package name on PyPI, extra that installs it).
PACKAGES = {
    "shapely": ("shapely", "geometry"),
    "scipy": ("scipy", "geometry"),
    "vaderSentiment": ("vaderSentiment", "text"),
    "afinn": ("afinn", "text"),
    "better_profanity": ("better-profanity", "text"),
    "sqlalchemy": ("sqlalchemy", "store"),
    "psycopg": ("psycopg", "store"),
    "opentelemetry": ("opentelemetry-sdk", "otel"),
    "quickjs": ("quickjs-ng", "javascript"),
    "starlette": ("starlette", "view"),
    "uvicorn": ("uvicorn", "view"),
    "mcp": ("mcp", "mcp"),
    "pandas": ("pandas", "pandas"),
    "botocore": ("botocore", "bedrock"),
    "azure": ("azure-identity", "azure"),
    "google": ("google-auth", "gemini"),  # google.auth (Vertex AI credentials)
}


class MissingDependency(ImportError):
    """A feature needs a package that is not installed; the message says how to install it."""


class MissingExtra(str):
    """The message of `missing_warning`: the suite loader reports it as an error, not a warning,
    since every case the evaluator scores would be an error."""


def install_hint(module: str) -> str:
    """`pip install 'agenteval[extra]'` for the extra that ships `module`."""
    package, extra = PACKAGES.get(module.split(".")[0], (module.split(".")[0], None))
    return f"pip install 'agenteval[{extra}]'" if extra else f"pip install {package}"


def _package(module: str) -> str:
    top = module.split(".")[0]
    return PACKAGES.get(top, (top, None))[0]


def require(module: str, feature: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependency(f"{feature} needs {_package(module)}: {install_hint(module)}") from None


def package_folder(module: str, feature: str) -> Path:
    """Where an installed package's files are, without importing it (to read a data file it ships)."""
    spec = _find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency(f"{feature} needs {_package(module)}: {install_hint(module)}")
    return Path(next(iter(spec.submodule_search_locations)))


def missing_warning(module: str, feature: str) -> MissingExtra | None:
    """A load-time problem when `module` is not installed, else None. Evaluators return it from
    `warnings()`; being a MissingExtra, the loader makes it an error naming the evaluator."""
    if _find_spec(module) is None:
        return MissingExtra(f"{feature} needs {_package(module)}, which is not installed: {install_hint(module)}")
    return None


def installed(module: str) -> bool:
    """Whether `module` can be imported, found without importing it."""
    return _find_spec(module) is not None


def _find_spec(module: str) -> importlib.machinery.ModuleSpec | None:
    try:
        return importlib.util.find_spec(module.split(".")[0])
    except (ImportError, ValueError):  # a module blocked in sys.modules, or one without a spec
        return None
