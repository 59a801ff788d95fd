"""RBAC authorization against stored Role/ClusterRole/RoleBinding/ClusterRoleBinding objects.

This mirrors what kube-apiserver's authorizer chain (the ``system:masters``
privileged-group authorizer followed by the RBAC authorizer) answers:

* ClusterRoleBindings are visited first, then - for namespaced requests - the
  RoleBindings of the request's namespace; the first rule that allows the
  request wins and is named in the reason
  (``RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "u"``).
* A denial carries no reason unless an applicable binding points at a missing
  role, in which case the reason lists those lookup errors, as the apiserver does.
* Rule matching follows ``rbac/v1`` helpers exactly: ``*`` wildcards for verbs,
  groups and resources, ``*/sub`` for a subresource of any resource, exact
  ``resource/sub``, resourceNames that only match requests naming one of them,
  and nonResourceURLs with a trailing-``*`` prefix form.

The module also answers the ``authorization.k8s.io`` review kinds
(:func:`subject_access_review`) and words the Forbidden message
(:func:`describe_denial`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesim import errors
from kubesim.jsonvalues import go_quote
from kubesim.objectmeta import OBJECT_META_FIELDS

RBAC_GROUP = "rbac.authorization.k8s.io"
AUTHORIZATION_GROUP = "authorization.k8s.io"
AUTHORIZATION_VERSION = f"{AUTHORIZATION_GROUP}/v1"

AUTHENTICATED_GROUP = "system:authenticated"
ANONYMOUS_USER = "system:anonymous"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"

SAR_KIND = "SubjectAccessReview"
LOCAL_SAR_KIND = "LocalSubjectAccessReview"
SELF_SAR_KIND = "SelfSubjectAccessReview"

# Cache bounds, so that a stream of distinct requests cannot grow memory without
# limit: decisions, subjects (user + groups + namespace), request shapes per subject.
_DECISION_CACHE_SIZE = 8192
_SUBJECT_CACHE_SIZE = 1024
_SHAPE_CACHE_SIZE = 256

Lister = Callable[[str, str], Iterable[Mapping[str, Any]]]
"""``lister(api_group, plural)`` -> every stored object of that resource, all namespaces."""


@dataclass(frozen=True)
class Attributes:
    """What a request asks to do, as the apiserver's ``authorizer.Attributes``.

    For resource requests fill ``api_group``/``resource``/``subresource``/
    ``namespace``/``name``; for non-resource requests set
    ``resource_request=False`` and ``path`` (e.g. ``/healthz``).
    """

    user: str
    groups: tuple[str, ...]
    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    resource_request: bool = True


@dataclass(frozen=True)
class Decision:
    """An authorization answer; ``reason`` is worded as the apiserver words it."""

    allowed: bool
    reason: str


# ---------------------------------------------------------------------------
# Policy rules


@dataclass(frozen=True)
class _Rule:
    """One PolicyRule, normalised (nil and empty lists are the same)."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def parse(cls, raw: Any) -> _Rule | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(
            verbs=_strings(raw.get("verbs")),
            api_groups=_strings(raw.get("apiGroups")),
            resources=_strings(raw.get("resources")),
            resource_names=_strings(raw.get("resourceNames")),
            non_resource_urls=_strings(raw.get("nonResourceURLs")),
        )

    def allows(self, attrs: Attributes) -> bool:
        """Whether this rule grants ``attrs`` (the rbac/v1 ``RuleAllows``)."""
        return self.matches_shape(attrs) and self.names_allow(attrs)

    def matches_shape(self, attrs: Attributes) -> bool:
        """Everything of :meth:`allows` but the resource name."""
        if not ("*" in self.verbs or attrs.verb in self.verbs):
            return False
        if not attrs.resource_request:
            return self._url_matches(attrs.path)
        if not ("*" in self.api_groups or attrs.api_group in self.api_groups):
            return False
        return self._resource_matches(attrs.resource, attrs.subresource)

    def names_allow(self, attrs: Attributes) -> bool:
        """The resourceNames part of :meth:`allows`."""
        # An empty list means any name; otherwise the request must name one of
        # them, so list/watch/create/deletecollection (no name) never match.
        # Non-resource requests have no name and URL rules no resourceNames.
        return not self.resource_names or attrs.name in self.resource_names

    def _resource_matches(self, resource: str, subresource: str) -> bool:
        combined = f"{resource}/{subresource}" if subresource else resource
        for entry in self.resources:
            if entry in ("*", combined):
                return True
            # "*/status" grants that subresource of every resource. Note that
            # "pods/*" is *not* a wildcard for the apiserver: it only matches a
            # literal "pods/*", so it is deliberately not special-cased here.
            if subresource and entry == f"*/{subresource}":
                return True
        return False

    def _url_matches(self, path: str) -> bool:
        for url in self.non_resource_urls:
            if url in ("*", path):
                return True
            if url.endswith("*") and path.startswith(url.rstrip("*")):
                return True
        return False

    def as_dict(self) -> dict[str, Any]:
        """The rule as an ``rbac/v1`` PolicyRule (empty lists omitted, verbs kept)."""
        out: dict[str, Any] = {"verbs": list(self.verbs)}
        if self.api_groups:
            out["apiGroups"] = list(self.api_groups)
        if self.resources:
            out["resources"] = list(self.resources)
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        if self.non_resource_urls:
            out["nonResourceURLs"] = list(self.non_resource_urls)
        return out


_ALL_RESOURCES = _Rule(verbs=("*",), api_groups=("*",), resources=("*",))
_ALL_URLS = _Rule(verbs=("*",), non_resource_urls=("*",))


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(v for v in value if isinstance(v, str))


def _parse_rules(obj: Mapping[str, Any]) -> tuple[_Rule, ...]:
    raw = obj.get("rules")
    if not isinstance(raw, list):
        return ()
    return tuple(r for r in (_Rule.parse(item) for item in raw) if r is not None)


# ---------------------------------------------------------------------------
# Label selectors (a local matcher: aggregation needs only this much)


def _selector_matches(selector: Any, labels: Mapping[str, Any]) -> bool:
    """``metav1.LabelSelector`` semantics; an invalid selector matches nothing.

    An empty selector matches everything (``LabelSelectorAsSelector`` gives
    ``labels.Everything()``), which is also what the aggregation controller sees.
    """
    if not isinstance(selector, Mapping):
        return False
    match_labels = selector.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        return False
    for key, value in match_labels.items():
        if labels.get(key) != value:
            return False
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return False
    for expr in expressions:
        if not isinstance(expr, Mapping):
            return False
        key = expr.get("key")
        op = expr.get("operator")
        values = expr.get("values") or []
        if not isinstance(key, str) or not isinstance(values, list):
            return False
        present = key in labels
        if op in ("In", "NotIn"):
            if not values:  # rejected by LabelSelectorAsSelector
                return False
            inside = present and labels[key] in values
            if inside != (op == "In"):
                return False
        elif op in ("Exists", "DoesNotExist"):
            if values:  # rejected by LabelSelectorAsSelector
                return False
            if present != (op == "Exists"):
                return False
        else:
            return False
    return True


# ---------------------------------------------------------------------------
# The binding index, rebuilt lazily after invalidate()

_SubjectKey = tuple[str, str]  # ("user", name) or ("group", name)


@dataclass(frozen=True)
class _Binding:
    describe: str  # 'ClusterRoleBinding "x" of ClusterRole "y"'
    subjects: tuple[str, ...]  # description of each subject, by subject index
    rules: tuple[_Rule, ...]
    error: str  # why the role reference did not resolve ("" when it did)


@dataclass
class _Grants:
    """The rules one subject holds in one namespace, in the apiserver's visiting order."""

    entries: list[tuple[_Rule, str]]  # each rule with the reason it would allow with
    denial: str  # the reason when nothing allows: lookup errors of applicable bindings
    # Entries whose rule matches a request shape (all but the resource name):
    # most requests differ only by name, so the scan happens once per shape.
    by_shape: dict[tuple[Any, ...], list[tuple[_Rule, str]]] = field(default_factory=dict)

    def decide(self, attrs: Attributes) -> Decision:
        shape = (
            attrs.verb,
            attrs.api_group,
            attrs.resource,
            attrs.subresource,
            attrs.path,
            attrs.resource_request,
        )
        matching = self.by_shape.get(shape)
        if matching is None:
            matching = [(r, why) for r, why in self.entries if r.matches_shape(attrs)]
            if len(self.by_shape) >= _SHAPE_CACHE_SIZE:
                self.by_shape.clear()
            self.by_shape[shape] = matching
        for rule, reason in matching:
            if rule.names_allow(attrs):
                return Decision(True, reason)
        return Decision(False, self.denial)


@dataclass
class _Index:
    """A snapshot of every binding, indexed by the subject keys that apply."""

    bindings: list[_Binding] = field(default_factory=list)
    # Each key maps to (binding position, subject position); cluster bindings
    # come first in ``bindings`` so sorting positions keeps the apiserver's
    # visiting order (ClusterRoleBindings, then RoleBindings).
    cluster: dict[_SubjectKey, list[tuple[int, int]]] = field(default_factory=dict)
    namespaced: dict[str, dict[_SubjectKey, list[tuple[int, int]]]] = field(default_factory=dict)
    decisions: dict[tuple[Any, ...], Decision] = field(default_factory=dict)
    grants: dict[tuple[Any, ...], _Grants] = field(default_factory=dict)

    def grants_for(self, user: str, groups: tuple[str, ...], namespace: str) -> _Grants:
        """What the subject holds in ``namespace`` (memoised)."""
        key = (user, groups, namespace)
        found = self.grants.get(key)
        if found is None:
            entries: list[tuple[_Rule, str]] = []
            failures: list[str] = []
            for pos, subject in self.candidates(_keys(user, groups), namespace):
                binding = self.bindings[pos]
                if binding.error:
                    failures.append(binding.error)
                    continue
                reason = f"RBAC: allowed by {binding.describe} to {binding.subjects[subject]}"
                entries.extend((rule, reason) for rule in binding.rules)
            found = _Grants(entries, f"RBAC: {_aggregate(failures)}" if failures else "")
            if len(self.grants) >= _SUBJECT_CACHE_SIZE:
                self.grants.clear()
            self.grants[key] = found
        return found

    def candidates(self, keys: Iterable[_SubjectKey], namespace: str) -> list[tuple[int, int]]:
        """Applicable (binding, first matching subject) pairs, in visiting order."""
        first: dict[int, int] = {}
        tables = [self.cluster]
        if namespace:
            tables.append(self.namespaced.get(namespace, {}))
        for key in keys:
            for table in tables:
                for pos, subject in table.get(key, ()):
                    if subject < first.get(pos, subject + 1):
                        first[pos] = subject
        return sorted(first.items())


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _by_name(objs: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    usable = [o for o in objs if isinstance(o, Mapping) and _str(_meta(o).get("name"))]
    return sorted(
        usable, key=lambda o: (_str(_meta(o).get("namespace")), _str(_meta(o).get("name")))
    )


class _ClusterRoles:
    """ClusterRole rules with aggregation resolved (what the controller converges to).

    The aggregation controller writes into an aggregated role the rules of every
    other ClusterRole its selectors match; once it has also written those roles,
    nested aggregations are included. So a role's effective rules are its own
    plus those of every role reachable through selector matches, in depth-first
    order, deduplicated (cycles included, which simply stop).
    """

    def __init__(self, objs: Iterable[Mapping[str, Any]]) -> None:
        self._objs = {_str(_meta(o).get("name")): o for o in _by_name(objs)}
        self._own = {name: _parse_rules(obj) for name, obj in self._objs.items()}
        self._edges: dict[str, list[str]] = {}
        self._resolved: dict[str, tuple[_Rule, ...]] = {}

    def get(self, name: str) -> tuple[_Rule, ...] | None:
        if name not in self._objs:
            return None
        resolved = self._resolved.get(name)
        if resolved is None:
            rules: dict[_Rule, None] = {}
            visited: set[str] = set()
            stack = [name]
            while stack:
                current = stack.pop()
                if current in visited:
                    continue
                visited.add(current)
                rules.update(dict.fromkeys(self._own[current]))
                stack.extend(reversed(self._matches(current)))
            resolved = self._resolved[name] = tuple(rules)
        return resolved

    def _matches(self, name: str) -> list[str]:
        """Other ClusterRoles selected by ``name``'s aggregation rule, in order."""
        edges = self._edges.get(name)
        if edges is None:
            edges = []
            for selector in _aggregation_selectors(self._objs[name]):
                for other, obj in self._objs.items():
                    labels = _meta(obj).get("labels")
                    # The controller never aggregates a role into itself.
                    if other != name and _selector_matches(
                        selector, labels if isinstance(labels, Mapping) else {}
                    ):
                        edges.append(other)
            self._edges[name] = edges
        return edges


def _aggregation_selectors(obj: Mapping[str, Any]) -> list[Any]:
    rule = obj.get("aggregationRule")
    if not isinstance(rule, Mapping):
        return []
    selectors = rule.get("clusterRoleSelectors")
    return list(selectors) if isinstance(selectors, list) else []


def _build_index(lister: Lister) -> _Index:
    cluster_roles = _ClusterRoles(lister(RBAC_GROUP, "clusterroles"))
    roles: dict[tuple[str, str], tuple[_Rule, ...]] = {}
    for obj in _by_name(lister(RBAC_GROUP, "roles")):
        meta = _meta(obj)
        roles[(_str(meta.get("namespace")), _str(meta.get("name")))] = _parse_rules(obj)

    index = _Index()

    def resolve(ref: Mapping[str, Any], namespace: str) -> tuple[tuple[_Rule, ...], str]:
        kind, name = _str(ref.get("kind")), _str(ref.get("name"))
        if kind == "ClusterRole":
            found = cluster_roles.get(name)
            return (found, "") if found is not None else ((), _not_found("clusterrole", name))
        if kind == "Role":
            # A ClusterRoleBinding naming a Role looks in namespace "": never found.
            role = roles.get((namespace, name))
            return (role, "") if role is not None else ((), _not_found("role", name))
        return (), f"unsupported role reference kind: {go_quote(kind)}"

    def add(obj: Mapping[str, Any], namespace: str) -> None:
        meta = _meta(obj)
        name = _str(meta.get("name"))
        ref = obj.get("roleRef")
        ref = ref if isinstance(ref, Mapping) else {}
        rules, error = resolve(ref, namespace)
        ref_kind, ref_name = _str(ref.get("kind")), _str(ref.get("name"))
        if namespace:
            label = f"RoleBinding {go_quote(name + '/' + namespace)}"
            table = index.namespaced.setdefault(namespace, {})
        else:
            label = f"ClusterRoleBinding {go_quote(name)}"
            table = index.cluster
        raw_subjects = obj.get("subjects")
        subjects = raw_subjects if isinstance(raw_subjects, list) else []
        descriptions: list[str] = []
        pos = len(index.bindings)
        for i, subject in enumerate(subjects):
            key, text = _subject_key(subject, namespace)
            descriptions.append(text)
            if key is not None:
                table.setdefault(key, []).append((pos, i))
        index.bindings.append(
            _Binding(
                describe=f"{label} of {ref_kind} {go_quote(ref_name)}",
                subjects=tuple(descriptions),
                rules=rules,
                error=error,
            )
        )

    for obj in _by_name(lister(RBAC_GROUP, "clusterrolebindings")):
        add(obj, "")
    for obj in _by_name(lister(RBAC_GROUP, "rolebindings")):
        namespace = _str(_meta(obj).get("namespace"))
        if namespace:
            add(obj, namespace)
    return index


def _subject_key(subject: Any, binding_namespace: str) -> tuple[_SubjectKey | None, str]:
    """The index key a subject applies to, and its description for reasons."""
    if not isinstance(subject, Mapping):
        return None, ""
    kind, name = _str(subject.get("kind")), _str(subject.get("name"))
    if kind == "User":
        return ("user", name), f"User {go_quote(name)}"
    if kind == "Group":
        return ("group", name), f"Group {go_quote(name)}"
    if kind == "ServiceAccount":
        # The authorizer defaults an unset subject namespace to the binding's
        # (RoleBindings only; a ClusterRoleBinding has none, so it never matches).
        namespace = _str(subject.get("namespace")) or binding_namespace
        text = f"ServiceAccount {go_quote(name + '/' + namespace)}"
        if not namespace:
            return None, text
        return ("user", f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"), text
    return None, f"{kind} {go_quote(name)}"


def _not_found(resource: str, name: str) -> str:
    # The informer listers' NotFound uses the singular resource name.
    return f"{resource}.{RBAC_GROUP} {go_quote(name)} not found"


def _aggregate(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: deduplicated, bracketed when several."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# ---------------------------------------------------------------------------
# The authorizer


class RbacAuthorizer:
    """Authorizes requests from the stored RBAC objects.

    Bindings and roles are read once through ``lister`` and indexed by subject;
    decisions are memoised. Call :meth:`invalidate` whenever any Role,
    ClusterRole, RoleBinding or ClusterRoleBinding changes.
    """

    def __init__(
        self,
        lister: Lister,
        *,
        superusers: Iterable[str] = (),
        supergroups: Iterable[str] = ("system:masters",),
    ) -> None:
        self._lister = lister
        self._superusers = frozenset(superusers)
        self._supergroups = frozenset(supergroups)
        self._index: _Index | None = None
        self._generation = 0
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        """Drop the cached bindings and decisions (cheap; rebuilt on next use)."""
        with self._lock:
            self._generation += 1
            self._index = None

    def authorize(self, attrs: Attributes) -> Decision:
        """Decide a request of an authenticated user (``system:authenticated`` implied)."""
        return self._decide(attrs, _with_authenticated(attrs.user, attrs.groups))

    def rules_for(self, user: str, groups: Sequence[str], namespace: str) -> list[dict[str, Any]]:
        """Every PolicyRule granted to the user in ``namespace`` (SelfSubjectRulesReview).

        Like the apiserver, the privileged-group authorizer contributes the
        all-resources and all-URLs rules first, then the RBAC rules in visiting
        order (not deduplicated). Bindings whose role is missing add nothing.
        """
        effective = _with_authenticated(user, tuple(groups))
        out: list[dict[str, Any]] = []
        if self._is_super(user, effective):
            out += [_ALL_RESOURCES.as_dict(), _ALL_URLS.as_dict()]
        grants = self._snapshot().grants_for(user, effective, namespace)
        out.extend(rule.as_dict() for rule, _ in grants.entries)
        return out

    def _is_super(self, user: str, groups: Iterable[str]) -> bool:
        return user in self._superusers or not self._supergroups.isdisjoint(groups)

    def _decide(self, attrs: Attributes, groups: tuple[str, ...]) -> Decision:
        if self._is_super(attrs.user, groups):
            # The privileged-group authorizer allows without giving a reason.
            return Decision(True, "")
        index = self._snapshot()
        key = (
            attrs.user,
            groups,
            attrs.verb,
            attrs.api_group,
            attrs.resource,
            attrs.subresource,
            attrs.namespace,
            attrs.name,
            attrs.path,
            attrs.resource_request,
        )
        cached = index.decisions.get(key)
        if cached is not None:
            return cached
        decision = self._evaluate(index, attrs, groups)
        if len(index.decisions) >= _DECISION_CACHE_SIZE:
            index.decisions.clear()
        index.decisions[key] = decision
        return decision

    @staticmethod
    def _evaluate(index: _Index, attrs: Attributes, groups: tuple[str, ...]) -> Decision:
        # Non-resource requests have no namespace, so only ClusterRoleBindings apply.
        namespace = attrs.namespace if attrs.resource_request else ""
        return index.grants_for(attrs.user, groups, namespace).decide(attrs)

    def _snapshot(self) -> _Index:
        index = self._index
        if index is not None:
            return index
        generation = self._generation
        # Built outside the lock: the lister may be slow. A build that raced an
        # invalidate() is used for this request but not kept.
        index = _build_index(self._lister)
        with self._lock:
            if generation == self._generation:
                self._index = index
        return index


def _with_authenticated(user: str, groups: Iterable[str]) -> tuple[str, ...]:
    out = tuple(groups)
    if user != ANONYMOUS_USER and AUTHENTICATED_GROUP not in out:
        out += (AUTHENTICATED_GROUP,)
    return out


def _keys(user: str, groups: Iterable[str]) -> list[_SubjectKey]:
    return [("user", user), *(("group", g) for g in dict.fromkeys(groups))]


# ---------------------------------------------------------------------------
# Forbidden message


def describe_denial(attrs: Attributes, reason: str = "") -> str:
    """The apiserver's Forbidden message body for a denied request.

    ``User "u" cannot get resource "configmaps" in API group "" in the namespace "ns"``;
    ``... at the cluster scope`` without a namespace; ``User "u" cannot get path "/x"``
    for non-resource requests. A non-empty ``reason`` is appended after ``": "``
    as the apiserver does.
    """
    user, verb = go_quote(attrs.user), attrs.verb
    if not attrs.resource_request:
        message = f"User {user} cannot {verb} path {go_quote(attrs.path)}"
    else:
        resource = attrs.resource
        if attrs.subresource:
            resource += "/" + attrs.subresource
        where = (
            f"in the namespace {go_quote(attrs.namespace)}"
            if attrs.namespace
            else "at the cluster scope"
        )
        message = (
            f"User {user} cannot {verb} resource {go_quote(resource)} "
            f"in API group {go_quote(attrs.api_group)} {where}"
        )
    return f"{message}: {reason}" if reason else message


# ---------------------------------------------------------------------------
# SubjectAccessReview and friends

_RESOURCE_ATTRIBUTE_FIELDS = (
    "namespace",
    "verb",
    "group",
    "version",
    "resource",
    "subresource",
    "name",
)


def subject_access_review(
    body: Mapping[str, Any],
    authorizer: RbacAuthorizer,
    *,
    requesting_user: str,
    requesting_groups: Sequence[str] = (),
    url_namespace: str | None = None,
    kind: str | None = None,
) -> dict[str, Any]:
    """Answer a SubjectAccessReview, LocalSubjectAccessReview or SelfSubjectAccessReview.

    ``kind`` defaults to the body's kind (else LocalSubjectAccessReview when
    ``url_namespace`` is given, SubjectAccessReview otherwise). The answer echoes
    the spec as ``authorization.k8s.io/v1`` serialises it and adds
    ``status: {allowed[, reason]}``. SelfSubjectAccessReview checks
    ``requesting_user``/``requesting_groups``; the other two check
    ``spec.user``/``spec.groups`` verbatim (no implied ``system:authenticated``,
    as in the apiserver).

    Raises :class:`kubesim.errors.ApiError`: 422 Invalid for validation errors,
    400 BadRequest for namespace problems of a LocalSubjectAccessReview.
    """
    kind = kind or _str(body.get("kind")) or (LOCAL_SAR_KIND if url_namespace else SAR_KIND)
    if kind not in (SAR_KIND, LOCAL_SAR_KIND, SELF_SAR_KIND):
        raise errors.bad_request(f"not a SubjectAccessReview: {kind}")
    raw_meta = body.get("metadata")
    metadata: dict[str, Any] = dict(raw_meta) if isinstance(raw_meta, Mapping) else {}
    raw_spec = body.get("spec")
    spec: Mapping[str, Any] = raw_spec if isinstance(raw_spec, Mapping) else {}

    # The generic create handler first reconciles metadata.namespace with the
    # URL: defaulted from it, a 400 when different, cleared for cluster scope.
    namespace = _str(metadata.get("namespace"))
    if kind == LOCAL_SAR_KIND:
        if namespace and url_namespace and namespace != url_namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace "
                "sent on the request"
            )
        namespace = namespace or (url_namespace or "")
    else:
        namespace = ""
    metadata["namespace"] = namespace

    resource = _attributes(spec.get("resourceAttributes"), _RESOURCE_ATTRIBUTE_FIELDS)
    non_resource = _attributes(spec.get("nonResourceAttributes"), ("path", "verb"))
    user = _str(spec.get("user"))
    groups = list(_strings(spec.get("groups")))

    causes = _validate_spec(resource, non_resource)
    if kind != SELF_SAR_KIND and not user and not groups:
        causes.append(
            errors.field_invalid(
                "spec.user", user, "at least one of user or group must be specified"
            )
        )
    if _metadata_set(metadata, ignore_namespace=kind == LOCAL_SAR_KIND):
        detail = "must be empty except for namespace" if kind == LOCAL_SAR_KIND else "must be empty"
        causes.append(_cause("metadata", _go_object_meta(metadata), detail))
    if kind == LOCAL_SAR_KIND:
        if resource is not None and resource.get("namespace", "") != namespace:
            causes.append(
                errors.field_invalid(
                    "spec.resourceAttributes.namespace",
                    resource.get("namespace", ""),
                    "must match metadata.namespace",
                )
            )
        if non_resource is not None:
            causes.append(
                _cause(
                    "spec.nonResourceAttributes",
                    _go_non_resource(non_resource),
                    "disallowed on this kind of request",
                )
            )
    if causes:
        # v1.35 names no kind: the message reads `.authorization.k8s.io "" is invalid`.
        raise errors.invalid("", "", causes, AUTHORIZATION_GROUP)
    if kind == LOCAL_SAR_KIND:
        if not url_namespace:
            raise errors.bad_request("namespace is required on this type: ")
        if url_namespace != namespace:
            raise errors.bad_request(
                f"spec.resourceAttributes.namespace must match namespace: {url_namespace}"
            )

    if kind == SELF_SAR_KIND:
        subject, subject_groups = requesting_user, tuple(requesting_groups)
    else:
        subject, subject_groups = user, tuple(groups)
    if resource is not None:
        attrs = Attributes(
            user=subject,
            groups=subject_groups,
            verb=resource.get("verb", ""),
            api_group=resource.get("group", ""),
            resource=resource.get("resource", ""),
            subresource=resource.get("subresource", ""),
            namespace=resource.get("namespace", ""),
            name=resource.get("name", ""),
        )
    else:  # exactly one of the two is set: validated above
        non_resource = non_resource or {}
        attrs = Attributes(
            user=subject,
            groups=subject_groups,
            verb=non_resource.get("verb", ""),
            path=non_resource.get("path", ""),
            resource_request=False,
        )
    # The requester of a self review is authenticated like any request; a
    # (local) review checks exactly the user and groups it names.
    if kind == SELF_SAR_KIND:
        decision = authorizer.authorize(attrs)
    else:
        decision = authorizer._decide(attrs, subject_groups)

    echoed: dict[str, Any] = {}
    if resource is not None:
        echoed["resourceAttributes"] = resource
    if non_resource is not None:
        echoed["nonResourceAttributes"] = non_resource
    if kind != SELF_SAR_KIND:
        if user:
            echoed["user"] = user
        if groups:
            echoed["groups"] = groups
        extra = spec.get("extra")
        if isinstance(extra, Mapping) and extra:
            echoed["extra"] = {str(k): list(_strings(v)) for k, v in extra.items()}
        uid = _str(spec.get("uid"))
        if uid:
            echoed["uid"] = uid

    out_meta: dict[str, Any] = {}
    if namespace:
        out_meta["namespace"] = namespace
    # The server adds metadata.managedFields for the create (manager from the User-Agent).
    status: dict[str, Any] = {"allowed": decision.allowed}
    # RBAC never denies outright (it has no opinion), so "denied" is never set.
    if decision.reason:
        status["reason"] = decision.reason
    return {
        "kind": kind,
        "apiVersion": AUTHORIZATION_VERSION,
        "metadata": out_meta,
        "spec": echoed,
        "status": status,
    }


def _attributes(raw: Any, fields: Sequence[str]) -> dict[str, str] | None:
    """A (Non)ResourceAttributes as v1 serialises it: known fields, empties dropped.

    ``None`` when absent or JSON null (a nil pointer); ``{}`` stays a set value.
    """
    if not isinstance(raw, Mapping):
        return None
    return {f: raw[f] for f in fields if isinstance(raw.get(f), str) and raw[f]}


def _validate_spec(
    resource: Mapping[str, str] | None, non_resource: Mapping[str, str] | None
) -> list[dict[str, Any]]:
    causes: list[dict[str, Any]] = []
    if resource is not None and non_resource is not None:
        causes.append(
            _cause(
                "spec.nonResourceAttributes",
                _go_non_resource(non_resource),
                "cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non_resource is None:
        # The bad value is the nil nonResourceAttributes pointer: shown as null.
        causes.append(
            errors.field_invalid(
                "spec.resourceAttributes",
                None,
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )
        )
    return causes


def _cause(path: str, shown: str, detail: str) -> dict[str, Any]:
    """A FieldValueInvalid cause whose bad value is already Go-formatted."""
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {detail}",
        "field": path,
    }


def _metadata_set(metadata: Mapping[str, Any], *, ignore_namespace: bool) -> bool:
    # Semantic equality with an empty ObjectMeta: managedFields are ignored,
    # and null, "", 0 and empty collections all count as unset.
    for key, value in metadata.items():
        if key == "managedFields" or (key == "namespace" and ignore_namespace):
            continue
        if value not in (None, "", 0, {}, []):
            return True
    return False


# ---------------------------------------------------------------------------
# Go formatting, for messages that embed Go values


def _go_non_resource(attrs: Mapping[str, str]) -> str:
    # The internal-version struct the validation runs on has no JSON tags.
    return errors.go_json(
        {"Path": attrs.get("path", ""), "Verb": attrs.get("verb", "")}, sort=False
    )


def _go_object_meta(meta: Mapping[str, Any]) -> str:
    """A ``metav1.ObjectMeta`` bad value as JSON (v1.35), fields in Go's order."""
    shown = {
        key: meta[key] for key in OBJECT_META_FIELDS if meta.get(key) not in (None, "", 0, {}, [])
    }
    for key in ("labels", "annotations"):  # maps: Go writes their keys sorted
        if isinstance(shown.get(key), Mapping):
            shown[key] = dict(sorted(shown[key].items()))
    return errors.go_json(shown, sort=False)
