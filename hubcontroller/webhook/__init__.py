"""The validating admission webhook for ManifestWork and ManifestWorkReplicaSet (issue 7).

Entry point: :func:`run_webhook_server` with :class:`WebhookSettings`. The
rules run without HTTP through :func:`validate` / :func:`validate_json`, with
the ``execute-as`` SubjectAccessReview injected as an :data:`AccessCheck`
(:class:`HubAccessReviewer` asks the hub).
"""

from hubcontroller.webhook.access import AccessCheck, ExecuteAsRequest, HubAccessReviewer
from hubcontroller.webhook.admission import UserInfo
from hubcontroller.webhook.certs import CertificateError
from hubcontroller.webhook.core import AdmissionValidator, validate, validate_json
from hubcontroller.webhook.resources import MANIFESTWORK, MANIFESTWORK_REPLICASET, WebhookResource
from hubcontroller.webhook.server import WebhookServer, run_webhook_server, served_resources
from hubcontroller.webhook.settings import ValidationOptions, WebhookSettings

__all__ = [
    "MANIFESTWORK",
    "MANIFESTWORK_REPLICASET",
    "AccessCheck",
    "AdmissionValidator",
    "CertificateError",
    "ExecuteAsRequest",
    "HubAccessReviewer",
    "UserInfo",
    "ValidationOptions",
    "WebhookResource",
    "WebhookServer",
    "WebhookSettings",
    "run_webhook_server",
    "served_resources",
    "validate",
    "validate_json",
]
