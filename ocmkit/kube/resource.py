"""API resources (group, version, plural, kind, scope) and a few well-known ones."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    """One API resource: where it is served and what kind of object it holds."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base_path(self) -> str:
        """The URL prefix of the resource's group-version (``/api/v1``, ``/apis/g/v``)."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def __str__(self) -> str:
        # "configmaps" or "deployments.apps": how kubectl and error messages name it.
        return f"{self.plural}.{self.group}" if self.group else self.plural


def split_api_version(api_version: str) -> tuple[str, str]:
    """``"apps/v1"`` -> ``("apps", "v1")``; ``"v1"`` -> ``("", "v1")``.

    Raises ValueError for an empty string or more than one slash.
    """
    group, sep, version = api_version.rpartition("/")
    if not version or "/" in group or (sep and not group):
        raise ValueError(f"invalid apiVersion {api_version!r}")
    return group, version


# Core group.
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
SERVICES = Resource("", "v1", "services", "Service", True)

# Other built-in groups.
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
JOBS = Resource("batch", "v1", "jobs", "Job", True)
CRDS = Resource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False
)
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True)
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False
)
TOKEN_REVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)

# Open Cluster Management (served once their CRDs are installed).
MANIFESTWORKS = Resource(
    "work.open-cluster-management.io", "v1", "manifestworks", "ManifestWork", True
)
APPLIED_MANIFESTWORKS = Resource(
    "work.open-cluster-management.io", "v1", "appliedmanifestworks", "AppliedManifestWork", False
)
MANIFESTWORK_REPLICASETS = Resource(
    "work.open-cluster-management.io",
    "v1alpha1",
    "manifestworkreplicasets",
    "ManifestWorkReplicaSet",
    True,
)
PLACEMENTS = Resource(
    "cluster.open-cluster-management.io", "v1beta1", "placements", "Placement", True
)
PLACEMENT_DECISIONS = Resource(
    "cluster.open-cluster-management.io", "v1beta1", "placementdecisions", "PlacementDecision", True
)
