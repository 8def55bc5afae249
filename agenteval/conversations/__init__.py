"""Conversations: a case's scripted `turns:` or a simulated `user:` played against the target, and
evaluators scoped to a turn, the last reply or the whole conversation. Above targets and
evaluators, below the runner."""
