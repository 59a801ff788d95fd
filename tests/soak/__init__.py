"""The soak test: random works, changes, deletions and faults for a long while.

``make soak`` (``python -m tests.soak --duration 10m --seed N``) runs a hub and
a spoke kubesim in this process and the real agent as a child process
(``python -m workagent agent``), then loops: a burst of random operations on
the hub's ManifestWorks mixed with injected faults, then a quiet period in
which the faults are lifted and the clusters must converge
(:func:`tests.faults.invariants.problems` empty) within a bounded time.
Cheaper safety invariants are checked continuously in between, and the
agent's RSS and CPU time are sampled from ``/proc`` throughout. See
``docs/reliability.md`` for what the figures of a run mean.
"""
