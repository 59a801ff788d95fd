"""The conformance suite runs only with the reference documents: without them it stops."""

from __future__ import annotations

import pytest

from conformance.shared import ENV, SHARED, missing


def pytest_configure(config: pytest.Config) -> None:
    """Stop before collecting anything when the reference folder is incomplete."""
    absent = missing()
    if absent:
        raise pytest.UsageError(
            f"the conformance suite compares the project with the reference documents in "
            f"{SHARED} (set {ENV} to their folder); not found: "
            + ", ".join(str(path) for path in absent)
        )
