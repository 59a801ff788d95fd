"""The in-process kubesim: start, stop, restart, users, kubeconfigs, admin calls.

Tests use :class:`KubeSim` as a fixture; ``kubesim serve`` wraps the same
class. Stopping keeps the stored state, so ``restart`` brings the "cluster"
back on the same port with the same objects, as a restarted apiserver with
the same etcd would.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import os
import secrets
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubesim.api import Api
from kubesim.faults import FaultRule, Journal
from kubesim.resources import Registry
from kubesim.server import Server, ServerState, User
from kubesim.store import Store
from kubesim.workloads import WorkloadSimulator

ADMIN_USER = "kubesim-admin"


class KubeSim:
    """An emulated Kubernetes API server listening on loopback."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = False,
        simulate_workloads: bool = False,
        watch_history: int = 10000,
        enforce_rbac: bool = False,
        bookmark_interval: float = 60.0,
        workload_delay: float = 0.2,
    ) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self.store = Store(history=watch_history)
        self.api = Api(self.store, Registry())
        self.state = ServerState(
            enforce_rbac=enforce_rbac,
            bookmark_interval=bookmark_interval,
            refuse=self._refuse,
        )
        self.admin_token = secrets.token_hex(16)
        admin = User(ADMIN_USER, ("system:masters", "system:authenticated"))
        self.state.tokens[self.admin_token] = admin
        if not tls:
            self.state.anonymous = admin
        self.server = Server(self.api, self.state)
        self._simulate = simulate_workloads
        self._workload_delay = workload_delay
        self._workloads: WorkloadSimulator | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._ssl: ssl.SSLContext | None = None
        self._ca_pem = b""
        self._certdir: tempfile.TemporaryDirectory[str] | None = None

    # -- lifecycle -----------------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL of the running server."""
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.host}:{self.port}"

    async def start(self) -> str:
        """Start serving (port 0 picks a free port, kept across restarts); returns the URL."""
        if self.tls and self._ssl is None:
            self._ssl = self._make_tls()
        self.api.start()
        if self._simulate and self._workloads is None:
            self._workloads = WorkloadSimulator(self.api, delay=self._workload_delay)
            self._workloads.start()
        self._runner = web.AppRunner(self.server.app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await self._listen()
        self.state.server_address = f"{self.host}:{self.port}"
        return self.url

    async def _listen(self) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(
            self._runner, self.host, self.port, ssl_context=self._ssl, reuse_address=True
        )
        await self._site.start()
        if self.port == 0:
            server = self._site._server
            assert server is not None
            sockets = getattr(server, "sockets", None) or []
            self.port = sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop serving; every open watch ends. State is kept for ``start``/``restart``."""
        self.store.close_watches()
        if self._workloads is not None:
            await self._workloads.stop()
            self._workloads = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._site = None
        await self.api.stop()

    async def restart(self, downtime: float = 0.0) -> None:
        """Stop, stay down ``downtime`` seconds, then serve again on the same port."""
        await self.stop()
        if downtime:
            await asyncio.sleep(downtime)
        await self.start()

    async def _refuse(self, seconds: float) -> None:
        """Refuse connections for a while: stop listening and drop open connections."""
        self.state.faults.refuse_until = time.monotonic() + seconds
        if self._site is not None:
            await self._site.stop()
            self._site = None
        await asyncio.sleep(seconds)
        self.state.faults.refuse_until = 0.0
        if self._runner is not None:
            await self._listen()

    async def __aenter__(self) -> KubeSim:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- identities and kubeconfigs ----------------------------------------------------
    def add_user(self, name: str, groups: tuple[str, ...] = (), token: str | None = None) -> str:
        """Register a bearer token for ``name``; returns the token."""
        token = token or secrets.token_hex(16)
        all_groups = (
            groups if "system:authenticated" in groups else (*groups, "system:authenticated")
        )
        self.state.tokens[token] = User(name, all_groups)
        return token

    def revoke(self, token: str) -> None:
        """Forget a bearer token: every later request carrying it is answered 401.

        Watches opened with it stay open, as kube-apiserver authenticates a
        request once, when it arrives.
        """
        self.state.tokens.pop(token, None)

    def kubeconfig(self, *, token: str | None = None, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig dict for this server (the admin's token unless another is given)."""
        cluster: dict[str, Any] = {"server": self.url}
        if self.tls:
            cluster["certificate-authority-data"] = base64.b64encode(self._ca_pem).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kubesim", "cluster": cluster}],
            "users": [{"name": "kubesim", "user": {"token": token or self.admin_token}}],
            "contexts": [
                {
                    "name": "kubesim",
                    "context": {"cluster": "kubesim", "user": "kubesim", "namespace": namespace},
                }
            ],
            "current-context": "kubesim",
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | os.PathLike[str], *, token: str | None = None) -> Path:
        """Write a kubeconfig atomically (temp file + rename) and return its path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(fd, "w") as fh:
                yaml.safe_dump(self.kubeconfig(token=token), fh, sort_keys=False)
            os.chmod(tmp, 0o600)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    # -- faults (the same operations as the admin HTTP API) ----------------------------
    def inject(self, **rule: Any) -> FaultRule:
        """Add a fault rule (keywords as in the admin API: verb, resource, code, count, ...)."""
        fault = FaultRule.from_json(rule)
        self.state.faults.rules.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Remove every fault rule."""
        self.state.faults.clear()

    def journal(self) -> Journal:
        """The requests answered so far, with who sent them and when."""
        return self.state.journal

    def close_watches(self) -> int:
        """End every open watch."""
        return self.store.close_watches()

    def expire_watches(self) -> int:
        """Compact the history and end every watch with a 410 ERROR event."""
        self.store.compact()
        return self.store.close_watches(expire=True)

    # -- TLS -------------------------------------------------------------------------------
    def _make_tls(self) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubesim")])
        now = datetime.datetime.now(datetime.UTC)
        alt: list[x509.GeneralName] = [x509.DNSName("localhost")]
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(self.host)))
        except ValueError:
            alt.append(x509.DNSName(self.host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        self._ca_pem = cert.public_bytes(serialization.Encoding.PEM)
        self._certdir = tempfile.TemporaryDirectory(prefix="kubesim-tls-")
        cert_path = Path(self._certdir.name) / "tls.crt"
        key_path = Path(self._certdir.name) / "tls.key"
        cert_path.write_bytes(self._ca_pem)
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert_path, key_path)
        return ctx

    @property
    def ca_pem(self) -> bytes:
        """The self-signed CA certificate (TLS mode)."""
        return self._ca_pem
