"""Offline text evaluators: small rules (equals, contains, regex, length, JSON checks) and the lexical suite.

Each type's module is imported when a suite uses it (the registry in agenteval.evaluators)."""
