"""Who this agent is to the hub (spec/agent.md section 2)."""

from __future__ import annotations

import hashlib


def hub_hash(server: str) -> str:
    """Lowercase hex SHA-256 of the hub server URL exactly as the kubeconfig spells it."""
    return hashlib.sha256(server.encode()).hexdigest()


def applied_work_name(hub_hash_value: str, work_name: str) -> str:
    """Name of the AppliedManifestWork recording ManifestWork ``work_name``."""
    return f"{hub_hash_value}-{work_name}"


def work_name_of(hub_hash_value: str, applied_name: str) -> str | None:
    """The ManifestWork name an AppliedManifestWork of this hub stands for, else None."""
    prefix = f"{hub_hash_value}-"
    return applied_name[len(prefix) :] if applied_name.startswith(prefix) else None
