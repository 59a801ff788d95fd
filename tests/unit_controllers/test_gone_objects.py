"""Which missing objects the status controller has created again at once.

The end-to-end behaviour (an applied ConfigMap deleted on the cluster comes
back, a ReadOnly one does not) is in tests/integration/test_apply.py; here
the rule itself, case by case, on a manifest's status entry.
"""

from __future__ import annotations

from typing import Any

import pytest

from workagent.controllers.manifestconfig import work_spec
from workagent.controllers.status import gone_while_applied


def entry(group: str, resource: str, *conditions: tuple[str, str, str]) -> dict[str, Any]:
    """A manifest's status entry with these (type, status, reason) conditions."""
    return {
        "resourceMeta": {
            "ordinal": 0,
            "group": group,
            "version": "v1",
            "resource": resource,
            "namespace": "default",
            "name": "x",
        },
        "conditions": [
            {"type": t, "status": s, "reason": r, "message": "", "lastTransitionTime": ""}
            for t, s, r in conditions
        ],
    }


APPLIED = ("Applied", "True", "AppliedManifestComplete")
MISSING = ("Available", "False", "ResourceNotAvailable")
PRESENT = ("Available", "True", "ResourceAvailable")
UNREADABLE = ("Available", "Unknown", "FetchingResourceFailed")


def spec(strategy: str | None = None) -> Any:
    configs = []
    if strategy is not None:
        identifier = {"group": "", "resource": "configmaps", "namespace": "default", "name": "x"}
        configs.append({"resourceIdentifier": identifier, "updateStrategy": {"type": strategy}})
    return work_spec({"spec": {"workload": {"manifests": []}, "manifestConfigs": configs}})[0]


@pytest.mark.parametrize(
    ("case", "group", "resource", "conditions", "strategy", "expected"),
    [
        ("applied and missing", "", "configmaps", (APPLIED, MISSING), None, True),
        ("server-side applied", "", "configmaps", (APPLIED, MISSING), "ServerSideApply", True),
        ("create-only", "", "configmaps", (APPLIED, MISSING), "CreateOnly", True),
        ("a Deployment", "apps", "deployments", (APPLIED, MISSING), None, True),
        ("present", "", "configmaps", (APPLIED, PRESENT), None, False),
        ("not readable", "", "configmaps", (APPLIED, UNREADABLE), None, False),
        ("never applied", "", "configmaps", (("Applied", "False", "x"), MISSING), None, False),
        ("read-only", "", "configmaps", (APPLIED, MISSING), "ReadOnly", False),
        ("complete", "", "configmaps", (APPLIED, MISSING, ("Complete", "True", "x")), None, False),
        ("a Job", "batch", "jobs", (APPLIED, MISSING), None, False),
        ("a Pod", "", "pods", (APPLIED, MISSING), None, False),
    ],
)
def test_what_is_created_again_at_once(
    case: str,
    group: str,
    resource: str,
    conditions: tuple[tuple[str, str, str], ...],
    strategy: str | None,
    expected: bool,
) -> None:
    assert gone_while_applied(entry(group, resource, *conditions), spec(strategy)) is expected, case
