"""The soak's own record of what the hub should hold, and random works to put there.

Every work is named ``soak-<n>`` (never reused) and holds 1 to 5 ConfigMaps,
sometimes Secrets, sometimes a Deployment, all in ``default``. The record
also keeps every object name any work ever listed: the agent may only ever
create objects some work asked for.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass, field
from typing import Any

from ocmkit.kube import CONFIGMAPS, DEPLOYMENTS, SECRETS
from tests.faults.invariants import ObjectKey
from tests.integration.conftest import (
    configmap,
)

NAMESPACE = "default"
#: A work that can never be fully applied (its second ConfigMap's namespace does not
#: exist): present for the whole soak, so every other work must converge beside it.
POISON = "soak-poison"
POISON_MISSING_NAMESPACE = "soak-missing"
LABEL_VALUES = ("gold", "silver", "bronze")


def _token(rng: random.Random, length: int = 8) -> str:
    return "".join(rng.choices(string.ascii_lowercase + string.digits, k=length))


def secret(name: str, value: str) -> dict[str, Any]:
    """A Secret manifest in ``default``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {"token": base64.b64encode(value.encode()).decode()},
    }


def deployment(name: str, replicas: int, tag: str) -> dict[str, Any]:
    """A Deployment manifest in ``default``."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": f"busybox:{tag}"}]},
            },
        },
    }


def poison_manifests() -> list[dict[str, Any]]:
    """The poison work's manifests: one that applies, one that never can."""
    return [
        configmap(f"{POISON}-ok", NAMESPACE, v="1"),
        configmap(f"{POISON}-bad", POISON_MISSING_NAMESPACE, v="1"),
    ]


def object_key(manifest: dict[str, Any]) -> ObjectKey:
    """The (group, resource, namespace, name) a manifest of the soak's kinds names."""
    res = {"ConfigMap": CONFIGMAPS, "Secret": SECRETS, "Deployment": DEPLOYMENTS}[manifest["kind"]]
    meta = manifest["metadata"]
    return (res.group, res.plural, meta.get("namespace") or "", meta["name"])


@dataclass
class Work:
    """What one work should look like on the hub."""

    manifests: list[dict[str, Any]]
    labels: dict[str, str]


@dataclass
class Workload:
    """The works the soak created and has not deleted, and the objects ever asked for."""

    rng: random.Random
    works: dict[str, Work] = field(default_factory=dict)
    ever_listed: set[ObjectKey] = field(default_factory=set)
    created: int = 0

    def manifests(self, name: str) -> list[dict[str, Any]]:
        """Random manifests for work ``name``: names stable across calls, content not."""
        rng = self.rng
        out = [
            configmap(f"{name}-cm-{i}", NAMESPACE, v=_token(rng), n=str(i))
            for i in range(rng.randint(1, 5))
        ]
        out += [
            secret(f"{name}-secret-{i}", _token(rng, 16)) for i in range(rng.choice((0, 0, 1, 2)))
        ]
        if rng.random() < 0.3:
            out.append(deployment(f"{name}-app", rng.randint(1, 3), rng.choice(("1.36", "1.37"))))
        rng.shuffle(out)
        self.ever_listed.update(object_key(m) for m in out)
        return out

    def labels(self) -> dict[str, str]:
        """Random work labels (possibly none, so label removal is exercised too)."""
        rng = self.rng
        return {k: rng.choice(LABEL_VALUES) for k in ("tier", "team") if rng.random() < 0.5}

    def new_name(self) -> str:
        """A work name never used before."""
        self.created += 1
        return f"soak-{self.created}"

    def pick(self) -> str | None:
        """A random existing work of the soak (never the poison), or None."""
        names = sorted(n for n in self.works if n != POISON)
        return self.rng.choice(names) if names else None
