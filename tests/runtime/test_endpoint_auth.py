"""The endpoint's delegated authentication and authorization, on kubesim and a real API server.

The endpoint (HTTPS, as the programs serve it) reviews its callers with the
cluster: TokenReviews for bearer tokens, SubjectAccessReviews on the request's
path and verb. The answers are compared with what OCM's agent (library-go)
answered for the same requests, byte for byte where OCM's are fixed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from prometheus_client import REGISTRY

from ocmkit.kube import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, KubeClient
from ocmkit.kube.access import TokenReviewer, UserInfo, access_allowed, subject_access_review
from ocmkit.runtime.endpointauth import ALLOW_SECONDS, DelegatedAuth
from ocmkit.runtime.observability import ObservabilityServer
from ocmkit.runtime.tls import serving_context
from tests.conftest import eventually, pool_for
from tests.support.prepare import User, service_account_user
from tests.support.serving_endpoint import unverified
from tests.support.targets import Cluster, open_cluster

NS = "metrics-callers"
ANONYMOUS_FORBIDDEN = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"forbidden: User \\"system:anonymous\\" cannot get path \\"/metrics\\"",'
    b'"reason":"Forbidden","details":{},"code":403}\n'
)
UNAUTHORIZED = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"Unauthorized","reason":"Unauthorized","code":401}\n'
)


@dataclass
class Answer:
    """One response of the endpoint."""

    status: int
    content_type: str
    body: bytes

    @property
    def message(self) -> str:
        """The message of a Status body."""
        return str(json.loads(self.body)["message"])


@dataclass
class Endpoint:
    """A served endpoint and the cluster reviewing its callers."""

    base: str
    cluster: Cluster
    admin: KubeClient
    reviewer: str

    async def call(
        self, path: str, token: str | None = None, *, method: str = "GET", header: str = ""
    ) -> Answer:
        """``method path`` with bearer ``token`` (or the raw Authorization ``header``)."""
        headers = {"Authorization": header or f"Bearer {token}"} if header or token else {}
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                method, self.base + path, ssl=unverified(), headers=headers
            ) as response,
        ):
            return Answer(response.status, response.headers["Content-Type"], await response.read())

    def reviews(self) -> float:
        """The reviews (TokenReviews and SubjectAccessReviews) the endpoint made so far."""
        labels = {"client": self.reviewer, "verb": "create", "code": "201"}
        return REGISTRY.get_sample_value("kube_client_requests_total", labels) or 0.0


async def serve(kubeconfig: Path, reviewer: str) -> tuple[ObservabilityServer, KubeClient]:
    """An HTTPS endpoint whose callers are reviewed through the client ``reviewer``."""
    client = await KubeClient.from_kubeconfig(str(kubeconfig), qps=0, name=reviewer)
    server = ObservabilityServer(
        "127.0.0.1:0", ssl_context=serving_context(), auth=DelegatedAuth(client)
    )
    await server.start()
    return server, client


@pytest.fixture
async def endpoint(
    cluster: Cluster, target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Endpoint]:
    """The endpoint, reviewing callers with the admin's client of a fresh cluster."""
    reviewer = f"reviewer-{target}-{request.node.name}"
    server, client = await serve(tmp_path / "kubeconfig", reviewer)
    try:
        yield Endpoint(server.url, cluster, client, reviewer)
    finally:
        await server.stop()
        await client.close()


async def grant_metrics(admin: KubeClient, user: User) -> None:
    """Let ``user`` get /metrics (a ClusterRole with the non-resource URL), and wait
    until the API server's authorizer says so."""
    await admin.create(
        CLUSTER_ROLES,
        {
            "metadata": {"name": "metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        },
    )
    await admin.create(
        CLUSTER_ROLE_BINDINGS,
        {
            "metadata": {"name": "metrics-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "metrics-reader",
            },
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.name}
            ],
        },
    )
    review = subject_access_review(
        {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}, "user": user.name}
    )

    async def allowed() -> bool:
        return await access_allowed(admin, review)

    # The endpoint keeps a denial for 10 s: ask only once RBAC is in effect.
    await eventually(allowed, what="RBAC to allow the reader /metrics")


async def test_without_credentials_only_the_probes_answer(endpoint: Endpoint) -> None:
    answer = await endpoint.call("/metrics")
    assert (answer.status, answer.content_type, answer.body) == (
        403,
        "application/json",
        ANONYMOUS_FORBIDDEN,
    )
    for probe in ("/healthz", "/livez", "/readyz"):
        answer = await endpoint.call(probe)
        assert (answer.status, answer.body) == (200, b"ok"), probe
    # What is not served is forbidden before it is missing.
    answer = await endpoint.call("/nothing")
    assert answer.status == 403
    assert answer.message == 'forbidden: User "system:anonymous" cannot get path "/nothing"'
    # Another scheme, or an empty token ("Bearer", "Bearer  x"), is no credential.
    for header in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer  x"):
        assert (await endpoint.call("/metrics", header=header)).body == ANONYMOUS_FORBIDDEN


async def test_a_token_that_does_not_authenticate_is_refused_everywhere(
    endpoint: Endpoint,
) -> None:
    before = endpoint.reviews()
    for path in ("/metrics", "/healthz", "/readyz"):
        answer = await endpoint.call(path, "not-a-token")
        assert (answer.status, answer.content_type, answer.body) == (
            401,
            "application/json",
            UNAUTHORIZED,
        ), path
    # A failed token is asked about again every time, as library-go does.
    assert endpoint.reviews() - before == 3


async def test_a_token_gets_what_rbac_grants_it(endpoint: Endpoint) -> None:
    reader = await service_account_user(endpoint.cluster, endpoint.admin, NS, "reader")
    stranger = await service_account_user(endpoint.cluster, endpoint.admin, NS, "stranger")
    await grant_metrics(endpoint.admin, reader)

    answer = await endpoint.call("/metrics", reader.token)
    assert answer.status == 200, answer.body
    assert answer.content_type.startswith("text/plain; version=0.0.4")
    assert b"# TYPE kube_client_requests_total counter" in answer.body
    # Reviewed once (a TokenReview, a SubjectAccessReview), then kept for 35 s.
    before = endpoint.reviews()
    assert (await endpoint.call("/metrics", reader.token)).status == 200
    assert endpoint.reviews() == before

    # RBAC grants get, not post, on /metrics only.
    answer = await endpoint.call("/metrics", reader.token, method="POST")
    assert answer.status == 403
    assert answer.message == f'forbidden: User "{reader.name}" cannot post path "/metrics"'
    answer = await endpoint.call("/nothing", reader.token)
    assert answer.message == f'forbidden: User "{reader.name}" cannot get path "/nothing"'

    answer = await endpoint.call("/metrics", stranger.token)
    assert (answer.status, answer.content_type) == (403, "application/json")
    assert answer.message == f'forbidden: User "{stranger.name}" cannot get path "/metrics"'

    # system:masters needs no review, only its token's.
    before = endpoint.reviews()
    assert (await endpoint.call("/metrics", endpoint.cluster.admin_token)).status == 200
    assert endpoint.reviews() - before == 1


async def test_concurrent_reviews_of_a_new_token_share_one_request(endpoint: Endpoint) -> None:
    """Callers asking about the same new token at once (a client's first requests) share
    one TokenReview, as library-go's token cache does, whether it authenticates or not;
    only an authenticated token is kept afterwards."""
    reader = await service_account_user(endpoint.cluster, endpoint.admin, NS, "concurrent")
    reviewer = TokenReviewer(endpoint.admin, ALLOW_SECONDS)
    for token, authenticated in ((reader.token, True), ("not-a-token", False)):
        before = endpoint.reviews()
        answers = await asyncio.gather(*(reviewer.review(token) for _ in range(8)))
        assert endpoint.reviews() - before == 1, token
        assert len(set(answers)) == 1, answers
        assert isinstance(answers[0], UserInfo) is authenticated, answers[0]
    assert "not-a-token" not in str(answers[0])  # why it failed, without the token
    before = endpoint.reviews()
    assert await reviewer.review(reader.token) == await reviewer.review(reader.token)
    assert isinstance(await reviewer.review("not-a-token"), str)
    assert endpoint.reviews() - before == 1  # the failed token, asked about again


async def test_reviews_the_program_may_not_make_are_refused_not_passed(
    target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A program whose identity may not create reviews serves nobody /metrics: a
    token gets 401, an anonymous caller 500 with the API server's refusal, as OCM's."""
    async with open_cluster(target, pool_for(request, target), enforce_rbac=True) as cluster:
        cluster.write_kubeconfig(tmp_path / "admin")
        admin = await KubeClient.from_kubeconfig(str(tmp_path / "admin"), qps=0)
        weak = await service_account_user(cluster, admin, NS, "weak")
        cluster.write_kubeconfig(tmp_path / "weak", token=weak.token)
        server, client = await serve(tmp_path / "weak", f"weak-{target}")
        endpoint = Endpoint(server.url, cluster, client, f"weak-{target}")
        try:
            answer = await endpoint.call("/metrics", cluster.admin_token)
            assert (answer.status, answer.body) == (401, UNAUTHORIZED)
            answer = await endpoint.call("/metrics")
            assert answer.status == 500
            assert answer.content_type == "text/plain; charset=utf-8"
            text = answer.body.decode()
            # The API server's refusal as it wrote it, as OCM's agent answers.
            assert text == (
                'Internal Server Error: "/metrics": subjectaccessreviews.authorization.k8s.io '
                f'is forbidden: User "{weak.name}" cannot create resource "subjectaccessreviews" '
                'in API group "authorization.k8s.io" at the cluster scope\n'
            )
            assert (await endpoint.call("/readyz")).status == 200
        finally:
            await server.stop()
            await client.close()
            await admin.close()
