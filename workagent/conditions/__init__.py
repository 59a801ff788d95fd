"""Condition rules: WellKnownConditions and CEL (spec/agent.md 13), and their aggregation.

:mod:`~workagent.conditions.rules` evaluates a manifest's rules,
:mod:`~workagent.conditions.aggregate` builds the work-level conditions and
:mod:`~workagent.conditions.reasons` holds the wire reasons. CEL runs in worker
processes (:mod:`~workagent.conditions.pool` explains why) that import only
:mod:`~workagent.conditions.protocol`, :mod:`~workagent.conditions.celengine` and
their helpers, so this package imports nothing: a worker does not pay for the
agent-side modules (structlog, pydantic models) at start-up.
"""
