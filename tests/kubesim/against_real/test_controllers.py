"""What kube-controller-manager does: ClusterRole aggregation, garbage collection.

Scenarios run on kubesim and on the real apiserver at once; see
tests/kubesim/against_real/__init__.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import eventually
from tests.kubesim.truth import Record, Side, configmap, namespace, same

pytestmark = pytest.mark.realkube


async def test_aggregated_cluster_role(sides: tuple[Side, Side]) -> None:
    """An aggregated ClusterRole has no rules when created; the aggregation
    controller then writes the rules of the roles it selects (in name order, each
    once), follows their changes, and empties it when none is left."""
    roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    selector = {"matchLabels": {"truth-aggregate": "yes"}}

    def part(name: str, *rules: tuple[str, str, str]) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": {"truth-aggregate": "yes"}},
            "rules": [
                {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                for group, resource, verb in rules
            ],
        }

    async def read(side: Side) -> dict[str, Any]:
        return (await side.call("GET", f"{roles}/truth-agg")).json

    async def scenario(side: Side, rec: Record) -> None:
        created = await side.call(
            "POST",
            roles,
            {
                "metadata": {"name": "truth-agg"},
                "aggregationRule": {"clusterRoleSelectors": [selector]},
            },
        )
        rec.answer("created: no rules", created)
        await side.call(
            "POST", roles, part("truth-b", ("", "pods", "get"), ("", "configmaps", "list"))
        )
        await side.call(
            "POST", roles, part("truth-a", ("", "configmaps", "list"), ("apps", "deployments", "*"))
        )
        await side.call(
            "POST",
            roles,
            {
                "metadata": {"name": "truth-other"},
                "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
            },
        )

        async def rules_of(count: int) -> bool:
            return len((await read(side)).get("rules") or []) == count

        await eventually(lambda: rules_of(3), what="the rules aggregated")
        rec.add("aggregated", await read(side))
        await side.call("DELETE", f"{roles}/truth-b")
        await eventually(lambda: rules_of(2), what="a selected role gone")
        rec.add("one part left", (await read(side))["rules"])
        await side.call("DELETE", f"{roles}/truth-a")

        async def emptied() -> bool:
            return (await read(side)).get("rules") is None

        await eventually(emptied, what="no rules left")
        rec.add("none left", await read(side))

    await same(scenario, sides)


# -- deletion with owners ------------------------------------------------------------------------


async def test_deletion_propagation(sides: tuple[Side, Side]) -> None:
    """Foreground, background and orphaning deletion of an owner with a dependent: the
    answers, and what is left once the garbage collector is done."""
    ns = "owners"
    cms = f"/api/v1/namespaces/{ns}/configmaps"

    async def scenario(side: Side, rec: Record) -> None:
        await namespace(side, ns)
        for policy in ("Foreground", "Background", "Orphan"):
            owner = (await side.call("POST", cms, configmap(f"owner-{policy.lower()}"))).json
            dependent = configmap(f"dependent-{policy.lower()}")
            dependent["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "blockOwnerDeletion": True,
                }
            ]
            assert (await side.call("POST", cms, dependent)).status == 201
            answer = await side.call(
                "DELETE",
                f"{cms}/{owner['metadata']['name']}",
                {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy},
            )
            rec.answer(f"{policy}: delete", answer)

            async def owner_gone(name: str = owner["metadata"]["name"]) -> bool:
                return (await side.call("GET", f"{cms}/{name}")).status == 404

            await eventually(owner_gone, what=f"{policy}: the owner gone")
            left = await side.call("GET", f"{cms}/{dependent['metadata']['name']}")
            if policy == "Background" and left.status == 200:
                # The collector deletes the dependent after the owner: wait for it.
                async def dependent_gone(name: str = dependent["metadata"]["name"]) -> bool:
                    return (await side.call("GET", f"{cms}/{name}")).status == 404

                await eventually(dependent_gone, what="the dependent collected")
                left = await side.call("GET", f"{cms}/{dependent['metadata']['name']}")
            rec.answer(f"{policy}: the dependent after", left)

    await same(scenario, sides)
