"""Agents that act: the tool loop a model target runs when its tools have implementations
(`agenteval.agents.tools`, `agenteval.agents.loop`). Above the endpoints, below the targets."""
