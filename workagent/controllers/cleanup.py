"""The agent's cleanup controllers, built in one place for the composition root.

:func:`cleanup_controllers` builds the ManifestWorkFinalizer (section 8.1),
the AppliedManifestWorkFinalizer (section 8.2) and the eviction of unmanaged
AppliedManifestWorks (section 15), registering their event handlers on the
hub ManifestWork and spoke AppliedManifestWork informers of ``deps``.
"""

from __future__ import annotations

from ocmkit.runtime import Controller
from workagent.controllers.amw_finalizer import AppliedManifestWorkFinalizer
from workagent.controllers.deps import AgentDeps
from workagent.controllers.eviction import UnmanagedAppliedWorkEvictor
from workagent.controllers.mw_finalizer import ManifestWorkFinalizer


def cleanup_controllers(deps: AgentDeps) -> list[Controller]:
    """The cleanup controllers for ``deps``; register each with the Manager.

    Call it once per ``deps`` (each call registers another set of handlers),
    preferably before the informers start so that no event is missed; added
    later, the handlers first see every cached object as an add.
    """
    return [
        ManifestWorkFinalizer(deps).controller(),
        AppliedManifestWorkFinalizer(deps).controller(),
        UnmanagedAppliedWorkEvictor(deps).controller(),
    ]
