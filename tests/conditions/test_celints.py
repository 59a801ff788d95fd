"""The fast path for celpy's integers keeps celpy's results and overflow errors."""

from __future__ import annotations

import pytest
from celpy import celtypes

from workagent.conditions import celints


def test_fast_path_is_celpys_result() -> None:
    celints.install()
    celints.install()  # idempotent: one wrapper, not two
    assert getattr(celtypes.IntType.__new__, "fast_path", False)
    for cls, inside, outside in (
        (celtypes.IntType, (-(2**63), 0, 2**63 - 1), (2**63, -(2**63) - 1)),
        (celtypes.UintType, (0, 2**64 - 1), (-1, 2**64)),
    ):
        for value in inside:
            made = cls(value)
            assert type(made) is cls and int(made) == value
        for value in outside:
            with pytest.raises(ValueError, match="overflow"):
                cls(value)
    # Other sources take celpy's path: truncation, hex strings, IntType itself.
    assert celtypes.IntType(celtypes.DoubleType(-1.9)) == -1
    assert celtypes.IntType("0x10") == 16
    same = celtypes.IntType(5)
    assert celtypes.IntType(same) is same
    # Arithmetic goes through it and keeps the int64 range.
    assert type(celtypes.IntType(2) + celtypes.IntType(3)) is celtypes.IntType
    with pytest.raises(ValueError, match="overflow"):
        celtypes.IntType(2**62) * celtypes.IntType(2)
