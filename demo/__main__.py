"""``python -m demo``: run the demo and exit with its result."""

from __future__ import annotations

import sys

from demo.app import main

if __name__ == "__main__":
    sys.exit(main())
