"""Which ``manifestConfigs`` entry applies to a manifest (spec/agent.md section 6)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from schemas.work_v1 import ManifestConfigOption, ManifestWorkSpec, ResourceIdentifier


@lru_cache(maxsize=512)
def _glob(pattern: str) -> re.Pattern[str]:
    # ``*`` matches any run of characters, anchored at both ends; nothing else is special.
    return re.compile(".*".join(re.escape(chunk) for chunk in pattern.split("*")))


def wildcard_match(pattern: str, value: str) -> bool:
    """``pattern`` (with ``*`` wildcards) matches all of ``value``."""
    if pattern in (value, "*"):
        return True
    return "*" in pattern and _glob(pattern).fullmatch(value) is not None


def identifier_matches(
    ident: ResourceIdentifier, group: str, resource: str, namespace: str, name: str
) -> bool:
    """Group and resource exactly, namespace and name with wildcards."""
    return (
        ident.group == group
        and ident.resource == resource
        and wildcard_match(ident.namespace, namespace)
        and wildcard_match(ident.name, name)
    )


def find_manifest_config(
    options: list[ManifestConfigOption] | None,
    group: str,
    resource: str,
    namespace: str,
    name: str,
) -> ManifestConfigOption | None:
    """The effective config of one resource, or None when nothing configures it.

    Condition rules, feedback rules and the update strategy come from the
    first matching option that sets them; ``feedbackScrapeType`` from the
    last matching option. Without rules or a strategy there is no config.
    """
    matching = [
        option
        for option in options or []
        if identifier_matches(option.resource_identifier, group, resource, namespace, name)
    ]
    if not matching:
        return None
    condition_rules = next((o.condition_rules for o in matching if o.condition_rules), None)
    feedback_rules = next((o.feedback_rules for o in matching if o.feedback_rules), None)
    strategy = next((o.update_strategy for o in matching if o.update_strategy is not None), None)
    if not condition_rules and not feedback_rules and strategy is None:
        return None
    return ManifestConfigOption(
        resource_identifier=ResourceIdentifier(
            group=group, resource=resource, namespace=namespace, name=name
        ),
        condition_rules=condition_rules,
        feedback_rules=feedback_rules,
        update_strategy=strategy,
        feedback_scrape_type=matching[-1].feedback_scrape_type,
    )


def work_spec(work: dict[str, Any]) -> tuple[ManifestWorkSpec, list[Any]]:
    """A work's spec without the manifests, validated, and the raw manifests.

    Manifests stay raw: each one's problems are reported on that manifest alone
    (a hub with an older CRD may send one without apiVersion or kind). Raises
    ValueError for a spec the schema refuses.
    """
    raw = dict(work.get("spec") or {})
    manifests = list((raw.pop("workload", None) or {}).get("manifests") or [])
    return ManifestWorkSpec.model_validate(raw), manifests
