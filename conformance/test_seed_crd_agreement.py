"""The user documentation's work examples: the upstream CRD, our CRD and our models agree.

Every example goes through both CRDs (kubesim's CRD schema engine, as
kube-apiserver stores a custom object) with the same result, and the models
accept exactly the examples the CRDs accept (``tests/schemas/test_crd_agreement.py``
does the same for the samples and the broken inputs).
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.seeds import Example, work_examples
from schemas import SchemaValidationError, parse_object
from tests.schemas.test_crd_agreement import same_outcome

WORK = work_examples()


@pytest.mark.parametrize("item", WORK, ids=lambda item: item[0].id)
def test_seed_examples_behave_the_same(item: tuple[Example, dict[str, Any]]) -> None:
    example, doc = item
    causes = same_outcome(doc)
    try:
        parse_object(doc)
        model_ok = True
    except SchemaValidationError:
        model_ok = False
    assert model_ok == (not causes), f"{example.id}: model and CRD disagree: {causes}"
