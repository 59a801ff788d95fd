"""Where the reference documents are: ``../shared`` beside the repository, or ``$OCM_SHARED``.

The folder is not part of the repository: it holds the specification
(``spec/``), the user documentation the project implements (``seeds/``) and
the reference data the test fixtures were taken from (``reference/``).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The environment variable that overrides the folder's location.
ENV = "OCM_SHARED"


def shared_folder() -> Path:
    """``$OCM_SHARED`` if set, else ``shared`` beside the repository."""
    configured = os.environ.get(ENV)
    return Path(configured).resolve() if configured else REPO.parent / "shared"


SHARED = shared_folder()
SEEDS = SHARED / "seeds"
SPEC = SHARED / "spec"
REFERENCE = SHARED / "reference"
#: What the conformance tests read; all of it must be there.
REQUIRED = (SEEDS, SPEC / "api.md", REFERENCE / "apiserver", REFERENCE / "crds")


def missing() -> list[Path]:
    """The required paths that do not exist."""
    return [path for path in REQUIRED if not path.exists()]
