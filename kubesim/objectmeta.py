"""metav1.ObjectMeta's JSON fields, in Go's struct order (what every kind's metadata holds)."""

from __future__ import annotations

from typing import Final

OBJECT_META_FIELDS: Final = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)
