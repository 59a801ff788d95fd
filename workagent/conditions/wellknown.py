"""The built-in rules behind ``type: WellKnownConditions`` (spec/agent.md 13.1).

A rule is looked up by the live object's exact group/version/kind and the
rule's ``condition``; only ``Complete`` for ``batch/v1 Job`` and ``v1 Pod``
exist. No match means no condition at all. The expressions are OCM's,
verbatim, so they fail the same way (a Pod without ``status.phase`` is a
``no such key: phase`` error, as in OCM).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from workagent.conditions.protocol import CelProgram
from workagent.feedback.wellknown import group_version_kind

_JOB_COMPLETE: Final = CelProgram(
    expressions=(
        "hasConditions(object.status)"
        " ? object.status.conditions.filter(c, c.type == 'Complete' || c.type == 'Failed')"
        ".exists(c, c.status == 'True')"
        " : false",
    ),
    message_expression='result ? "Job is finished" : "Job is not finished"',
)

_POD_COMPLETE: Final = CelProgram(
    expressions=("object.status.phase in ['Succeeded', 'Failed']",),
    message_expression='"Pod is in phase " + object.status.phase',
)

# (group, version, kind), as the feedback's GroupVersionKind -> condition -> rule.
_RULES: Final[Mapping[tuple[str, str, str], Mapping[str, CelProgram]]] = {
    ("batch", "v1", "Job"): {"Complete": _JOB_COMPLETE},
    ("", "v1", "Pod"): {"Complete": _POD_COMPLETE},
}


def well_known_rule(obj: Mapping[str, Any], condition: str) -> CelProgram | None:
    """The CEL of the built-in rule for this object's GVK and ``condition``, if any."""
    return _RULES.get(group_version_kind(obj), {}).get(condition)
