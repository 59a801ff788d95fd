"""The admission rules of ManifestWork (hub.md §5.2) and ManifestWorkReplicaSet (§5.3).

Each rule function returns when the request is allowed and raises a
:class:`~hubcontroller.webhook.admission.Rejection` otherwise: BadRequest
(400) for what OCM rejects with ``apierrors.NewBadRequest``, Denied (403) for
its plain errors. Messages are OCM's, verbatim.
"""

from __future__ import annotations

from typing import Final

from hubcontroller.webhook.access import AccessCheck, ExecuteAsRequest
from hubcontroller.webhook.admission import DELETE, UPDATE, BadRequest, Denied, UserInfo
from hubcontroller.webhook.manifests import manifests_problem
from hubcontroller.webhook.resources import Executor, WorkObject
from hubcontroller.webhook.settings import ValidationOptions
from ocmkit.kube.access import ServiceAccount
from schemas import wire

MANIFESTS_EMPTY: Final = "manifests should not be empty"
EXECUTOR_SERVICE_ACCOUNT_NIL: Final = "executor service account can not be nil"
REPLICASET_DISABLED: Final = "ManifestWorkReplicaSet feature is disabled"
SERVICE_ACCOUNT: Final = "ServiceAccount"

#: Who a work without executor runs as when NilExecutorValidating is on: the agent's
#: own service account, with an empty namespace (OCM's choice, kept for the SAR name).
DEFAULT_EXECUTOR: Final = Executor(SERVICE_ACCOUNT, ServiceAccount("", "klusterlet-work-sa"))


async def validate_manifest_work(
    operation: str,
    new: WorkObject | None,
    old: WorkObject | None,
    user: UserInfo,
    options: ValidationOptions,
    access: AccessCheck,
) -> None:
    """§5.2: manifests, then who may run the work as its executor."""
    if operation == DELETE or new is None:
        return
    if not new.manifests:
        raise BadRequest(MANIFESTS_EMPTY)
    problem = manifests_problem(new.manifests, options.manifest_limit)
    if problem is not None:
        raise BadRequest(problem)
    # An update that leaves the executor alone needs no permission check, so a
    # user may edit the manifests of a work someone else set the executor of.
    if operation == UPDATE and old is not None and old.executor == new.executor:
        return
    await check_executor(new, user, options, access)


async def check_executor(
    work: WorkObject, user: UserInfo, options: ValidationOptions, access: AccessCheck
) -> None:
    """Require ``execute-as`` for the work's executor (or the default one, behind a gate)."""
    executor = work.executor
    if executor is None:
        if wire.GATE_NIL_EXECUTOR_VALIDATING not in options.feature_gates:
            return
        executor = DEFAULT_EXECUTOR
    account = executor.service_account
    # OCM tests only the ServiceAccount type here (the CRD allows no other) and
    # would crash on another type without an account; refusing is the safe reading.
    if account is None:
        raise BadRequest(EXECUTOR_SERVICE_ACCOUNT_NIL)
    try:
        allowed = await access(ExecuteAsRequest(user, work.namespace, account))
    except Exception as err:
        raise BadRequest(error_text(err)) from err
    if not allowed:
        raise BadRequest(
            f"user {user.username} cannot manipulate the Manifestwork with executor "
            f"{account.namespace}/{account.name} in namespace {work.namespace}"
        )


def validate_replica_set(
    operation: str, new: WorkObject | None, options: ValidationOptions
) -> None:
    """§5.3: the gate, then the template's manifests (no executor check at this level)."""
    if wire.GATE_MANIFEST_WORK_REPLICA_SET not in options.feature_gates:
        raise Denied(REPLICASET_DISABLED)
    if operation == DELETE or new is None:
        return
    problem = manifests_problem(new.manifests, options.manifest_limit)
    if problem is not None:
        raise BadRequest(problem)


def error_text(err: BaseException) -> str:
    """What Go's ``err.Error()`` would say: the API's Status message for API errors."""
    message = getattr(err, "message", None)
    if isinstance(message, str) and message:
        return message
    return str(err) or type(err).__name__
