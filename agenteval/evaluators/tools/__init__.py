"""Agent tool-use evaluators: the `tool_calls` type and the trajectory reader it is built on."""

from agenteval.evaluators.tools.evaluator import ToolCalls

__all__ = ["ToolCalls"]
