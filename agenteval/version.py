"""agenteval's version, in a module of its own: the modules that record it in results (api,
monitoring, tracing) import it from here, not from the package, so no import points back up
at `agenteval/__init__.py`."""

__version__ = "0.1.0"
