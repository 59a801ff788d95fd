"""Collects this package only when ``PEER_FUZZ`` is set (``make fuzz-peers`` sets it).

Each module runs for many minutes against real control planes and OCM's binaries,
so the runs are not part of ``make test``; without the variable they are not
collected at all (not skipped), and ``make test`` reports nothing for them.
"""

from __future__ import annotations

import os

collect_ignore_glob = [] if os.environ.get("PEER_FUZZ") else ["test_*.py"]
