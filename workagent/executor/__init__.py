"""Executor permission checks (spec/agent.md section 16): may a work's executor apply a manifest?

:func:`build_executor_validator` makes the agent's validator; the errors it
raises and what the apply loop makes of them are in :mod:`workagent.executor.base`.
"""

from workagent.executor.caching import build_executor_validator

__all__ = ["build_executor_validator"]
