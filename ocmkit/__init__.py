"""What the work agent and the hub controller are both built on (docs/architecture.md).

It imports neither :mod:`workagent` nor :mod:`hubcontroller`.
"""
