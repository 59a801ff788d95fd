"""Wire constants: how they group, and values fixed by the API.

That every constant and enum value is spelled as the API specification spells
it is checked against the specification itself by ``make conformance``
(``conformance/test_wire_spec.py``).
"""

from __future__ import annotations

from schemas import wire
from schemas.cluster_v1 import TaintEffect


def wire_constants() -> dict[str, str]:
    """Every string constant of :mod:`schemas.wire`, by name."""
    return {
        name: value
        for name, value in vars(wire).items()
        if name.isupper() and isinstance(value, str)
    }


def test_constant_groups() -> None:
    assert wire.WORK_CONDITION_TYPES[-1] == "Deleting"
    assert wire.MANIFEST_CONDITION_TYPES[-1] == "StatusFeedbackSynced"
    assert wire.CONDITION_MANIFESTWORK_APPLIED == "ManifestworkApplied"
    rule_reasons = [
        v for k, v in wire_constants().items() if k.startswith("REASON_CONDITION_RULE_")
    ]
    assert len(rule_reasons) == 4
    assert all(r.startswith(wire.CONDITION_RULE_REASON_PREFIX) for r in rule_reasons)


def test_taint_effects() -> None:
    assert [e.value for e in TaintEffect] == ["NoSelect", "PreferNoSelect", "NoSelectIfNew"]
