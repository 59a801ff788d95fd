"""``make demo``: the work subsystem end to end, on one machine, in one process.

A hub and three managed clusters (kubesim), the hub controller and one work
agent per cluster; the user documentation's examples are applied and the
works' conditions and feedback are shown as they change. ``python -m demo``
runs it (``--help`` for the options); :func:`demo.app.main` is the entry point.

This package is not part of the distribution (``pyproject.toml`` packages
only ``workagent``, ``hubcontroller``, ``schemas`` and ``kubesim``): it is
the one place that composes all of them, which the import contracts forbid
inside those packages (the agent must not import the hub or kubesim).
"""
