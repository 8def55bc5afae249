"""agenteval: a fast, strict eval runner for extraction pipelines and AI agents."""

__version__ = "0.1.0"
