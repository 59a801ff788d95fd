"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager.

The binaries come from ``make realkube`` (built from the Go module proxy into
``.tools/kube/<version>/``). One :class:`Etcd` can back several
:class:`ControlPlane` instances (each apiserver uses its own etcd prefix), so
a hub and a spoke cost one etcd.

Every process is started in its own session with ``PR_SET_PDEATHSIG``: if the
test run dies, even by SIGKILL, the kernel kills them too. Each data folder
carries the owner's pid; :func:`sweep_stale` removes folders whose owner is
gone, so an interrupted run leaves nothing behind for long.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.processes import free_port

REPO = Path(__file__).resolve().parents[2]
BUILD_MODULE = REPO / "tests" / "support" / "realkube-build"
RUN_PREFIX = "ocmwork-realkube-"
OWNER_FILE = "owner.pid"

#: The controllers of kube-controller-manager that the tests rely on: namespace
#: deletion, garbage collection (owner references, foreground deletion), the
#: default ServiceAccount of each namespace, aggregated ClusterRoles and the
#: release of deleted claims' protection finalizer (every new claim gets one).
#: The workload controllers (deployment, replicaset, job, ...) do not run, so a
#: status the tests write to a Deployment or Job is not overwritten.
CONTROLLERS = (
    "namespace-controller",
    "garbage-collector-controller",
    "serviceaccount-controller",
    "clusterrole-aggregation-controller",
    "persistentvolumeclaim-protection-controller",
)

#: The Go runtime settings of kube-apiserver and kube-controller-manager. A test's
#: control plane lives for seconds: collecting garbage only near a memory limit
#: (rather than at every doubling of the heap) saves about a fifth of its start-up CPU,
#: which is most of the real leg's CPU on two cores.
SHORT_LIVED_GO = {"GOGC": "off", "GOMEMLIMIT": "1GiB"}

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}


class ControlPlaneError(RuntimeError):
    """A process of the control plane failed to start or exited early."""


def kube_version() -> str:
    """The ``k8s.io/kubernetes`` version pinned in the build module's go.mod."""
    for line in (BUILD_MODULE / "go.mod").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "k8s.io/kubernetes":
            return parts[1]
    raise ControlPlaneError(f"{BUILD_MODULE / 'go.mod'} does not require k8s.io/kubernetes")


def bin_dir() -> Path:
    """Where ``make realkube`` puts the binaries; a clear error when they are missing."""
    folder = REPO / ".tools" / "kube" / kube_version()
    missing = [
        name
        for name in ("etcd", "kube-apiserver", "kube-controller-manager")
        if not (folder / name).is_file()
    ]
    if missing:
        raise ControlPlaneError(
            f"{', '.join(missing)} not built in {folder}: run `make realkube` (needs Go)"
        )
    return folder


def informersync_binary() -> Path:
    """The client-go informer probe ``make realkube`` builds (tests/support/realkube-build/informersync)."""
    path = REPO / ".tools" / "kube" / kube_version() / "informersync"
    if not path.is_file():
        raise ControlPlaneError(f"{path} not built: run `make realkube` (needs Go)")
    return path


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(root: Path | None = None) -> list[Path]:
    """Remove data folders of earlier runs whose owning process is gone; returns them."""
    base = root or Path(tempfile.gettempdir())
    removed = []
    for folder in base.glob(RUN_PREFIX + "*"):
        try:
            owner = int((folder / OWNER_FILE).read_text())
        except (OSError, ValueError):
            owner = 0
        if owner and _pid_alive(owner):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def make_run_dir(name: str) -> Path:
    """A fresh data folder for one control plane, tagged with this process's pid.

    The folder is made and tagged under a name the sweep does not match, then
    renamed: a sweep (another thread's, another run's) never sees it untagged.
    """
    sweep_stale()
    making = Path(tempfile.mkdtemp(prefix=f".{RUN_PREFIX}{name}-"))
    (making / OWNER_FILE).write_text(str(os.getpid()))
    folder = making.with_name(making.name[1:])
    making.rename(folder)
    return folder


@dataclass
class Process:
    """One child process with its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def check_alive(self) -> None:
        """Raise with the end of the log if the process has exited."""
        code = self.popen.poll()
        if code is not None:
            tail = self.log.read_text(errors="replace")[-3000:]
            raise ControlPlaneError(f"{self.name} exited with {code}:\n{tail}")

    def stop(self, timeout: float = 10.0, *, kill: bool = False) -> None:
        """SIGTERM (SIGKILL with ``kill``), then SIGKILL after ``timeout``; waits for the exit."""
        if self.popen.poll() is None:
            if kill:
                self.popen.kill()
            else:
                self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def _environ() -> dict[str, str]:
    """A copy of this process's environment, taken from any thread.

    pytest sets and removes ``PYTEST_CURRENT_TEST`` on the main thread while
    the pool's threads start planes: a copy that meets the change starts over.
    """
    while True:
        try:
            return dict(os.environ)
        except (KeyError, RuntimeError):
            continue


# Loopback only, from pool threads: no proxy, and no look at the environment for one
# (urllib's lookup walks os.environ, which the main thread may be changing).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def spawn(name: str, argv: list[str], log: Path, *, env: dict[str, str] | None = None) -> Process:
    """Start ``argv`` with its output in ``log``; it dies with the thread that spawns it.

    ``setpriv --pdeathsig`` (util-linux) sets the parent-death signal before it
    execs ``argv``: safer than a ``preexec_fn`` in a process with threads. The
    signal follows the spawning *thread*, so spawn from long-lived threads only.
    ``env`` is added to this process's environment.
    """
    with log.open("wb") as out:
        popen = subprocess.Popen(
            ["setpriv", "--pdeathsig", "KILL", "--", *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**_environ(), **env} if env else None,
        )
    return Process(name, popen, log)


def wait_for(check: Any, what: str, timeout: float, processes: tuple[Process, ...] = ()) -> None:
    """Poll ``check()`` until true; fail early when one of ``processes`` exits."""
    deadline = time.monotonic() + timeout
    while True:
        for proc in processes:
            proc.check_alive()
        if check():
            return
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)  # sleep-ok: polling a child process with a deadline


class Etcd:
    """A single-member etcd on loopback with a throwaway data folder."""

    def __init__(self, binaries: Path | None = None) -> None:
        self.binaries = binaries or bin_dir()
        self.dir = make_run_dir("etcd")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: Process | None = None

    def start(self, timeout: float = 60.0) -> None:
        """Start etcd and wait until it answers ``/health``."""
        peer = f"http://127.0.0.1:{free_port()}"
        self.process = spawn(
            "etcd",
            [
                str(self.binaries / "etcd"),
                "--name=default",
                f"--data-dir={self.dir / 'data'}",
                f"--listen-client-urls={self.url}",
                f"--advertise-client-urls={self.url}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--listen-metrics-urls=",
                # A test cluster's data is thrown away: skip fsync, as envtest does.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            self.dir / "etcd.log",
        )

        def healthy() -> bool:
            try:
                with _OPENER.open(self.url + "/health", timeout=2) as resp:
                    return bool(json.loads(resp.read()).get("health") == "true")
            except (OSError, ValueError):
                return False

        wait_for(healthy, "etcd /health", timeout, (self.process,))

    def stop(self) -> None:
        """Stop etcd and remove its folder."""
        if self.process is not None:
            self.process.stop()
            self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass(frozen=True)
class Identity:
    """A user of the token authenticator."""

    name: str
    groups: tuple[str, ...]
    token: str = field(default_factory=lambda: secrets.token_hex(16))


#: The identities every control plane knows: the admin, and restricted users for
#: the agent and the hub controller (they get only what RBAC grants them).
ADMIN = "admin"
AGENT = "ocm-work-agent"
HUB = "ocm-hub-controller"


def _default_identities() -> dict[str, Identity]:
    return {
        ADMIN: Identity("realkube-admin", ("system:masters",)),
        AGENT: Identity("system:serviceaccount:open-cluster-management-agent:work-agent-test", ()),
        HUB: Identity("system:serviceaccount:open-cluster-management-hub:hub-controller-test", ()),
    }


class ControlPlane:
    """kube-apiserver and kube-controller-manager over an :class:`Etcd`, on 127.0.0.1.

    Token authentication (``identities``), RBAC, service-account token signing
    (TokenRequest works), and an audit log at Metadata level as JSON lines, from
    which :meth:`audit_events` reads the server's own record of every request.
    ``pki``: the cert folder of a plane started before (:attr:`cert_dir`), whose
    self-signed serving certificate (for 127.0.0.1) this one uses rather than
    generating keys of its own.
    """

    def __init__(
        self,
        name: str,
        etcd: Etcd,
        *,
        controllers: tuple[str, ...] = CONTROLLERS,
        binaries: Path | None = None,
        pki: Path | None = None,
    ) -> None:
        self.name = name
        self.pki = pki
        self.etcd = etcd
        self.controllers = controllers
        self.binaries = binaries or bin_dir()
        self.dir = make_run_dir(name)
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.identities = _default_identities()
        self.audit_log = self.dir / "audit.log"
        self.processes: list[Process] = []
        self._ca_pem = b""

    # -- identities and kubeconfigs ----------------------------------------------------
    @property
    def admin_token(self) -> str:
        """The bearer token of the admin (``system:masters``)."""
        return self.identities[ADMIN].token

    @property
    def ca_pem(self) -> bytes:
        """The PEM bundle that verifies the apiserver's serving certificate."""
        return self._ca_pem

    def kubeconfig(self, *, token: str | None = None, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig dict for this server (the admin's token unless another is given)."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": self.name,
                    "cluster": {
                        "server": self.url,
                        "certificate-authority-data": base64.b64encode(self._ca_pem).decode(),
                    },
                }
            ],
            "users": [{"name": self.name, "user": {"token": token or self.admin_token}}],
            "contexts": [
                {
                    "name": self.name,
                    "context": {"cluster": self.name, "user": self.name, "namespace": namespace},
                }
            ],
            "current-context": self.name,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | os.PathLike[str], *, token: str | None = None) -> Path:
        """Write a kubeconfig (mode 0600) and return its path."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(self.kubeconfig(token=token), sort_keys=False))
        target.chmod(0o600)
        return target

    # -- lifecycle -----------------------------------------------------------------------
    def _write_inputs(self) -> None:
        lines = [
            f'{ident.token},{ident.name},{ident.name},"{",".join(ident.groups)}"'
            for ident in self.identities.values()
        ]
        (self.dir / "tokens.csv").write_text("\n".join(lines) + "\n")
        (self.dir / "tokens.csv").chmod(0o600)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (self.dir / "sa.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        (self.dir / "sa.pub").write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        (self.dir / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))

    @property
    def cert_dir(self) -> Path:
        """The apiserver's cert folder (its self-signed serving certificate and key)."""
        return self.dir / "pki"

    def _apiserver_argv(self) -> list[str]:
        d = self.dir
        return [
            str(self.binaries / "kube-apiserver"),
            f"--etcd-servers={self.etcd.url}",
            f"--etcd-prefix=/{self.name}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.cert_dir}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC",
            f"--token-auth-file={d / 'tokens.csv'}",
            f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--allow-privileged=true",
            f"--audit-policy-file={d / 'audit-policy.yaml'}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
            "--audit-log-maxsize=0",
            "--profiling=false",
        ]

    def _controller_manager_argv(self) -> list[str]:
        d = self.dir
        return [
            str(self.binaries / "kube-controller-manager"),
            f"--kubeconfig={d / 'admin.kubeconfig'}",
            f"--controllers={','.join(self.controllers)}",
            "--leader-elect=false",
            "--secure-port=0",
            f"--service-account-private-key-file={d / 'sa.key'}",
            "--concurrent-namespace-syncs=4",
            "--concurrent-gc-syncs=8",
        ]

    def _start_apiserver(self, timeout: float, attempts: int = 3) -> Process:
        """Start kube-apiserver and wait for /readyz; on a port taken meanwhile, try another."""
        cert = self.cert_dir / "apiserver.crt"
        for attempt in range(attempts):
            apiserver = spawn(
                "kube-apiserver",
                self._apiserver_argv(),
                self.dir / "kube-apiserver.log",
                env=SHORT_LIVED_GO,
            )
            self.processes.append(apiserver)
            try:
                wait_for(cert.exists, "the apiserver's serving certificate", timeout, (apiserver,))
                # The file is written once; a short read retry covers seeing it half-written.
                wait_for(lambda: b"END CERTIFICATE" in cert.read_bytes(), "the certificate", 10)
                self._ca_pem = cert.read_bytes()
                wait_for(lambda: self._get("/readyz") == 200, "/readyz", timeout, (apiserver,))
            except ControlPlaneError as error:
                if "address already in use" not in str(error) or attempt + 1 == attempts:
                    raise
                self.processes.remove(apiserver)
                self.port = free_port()
                self.url = f"https://127.0.0.1:{self.port}"
                continue
            return apiserver
        raise AssertionError("unreachable")

    def start(self, timeout: float = 120.0) -> None:
        """Start both processes and wait until the server is ready and kcm works."""
        self._write_inputs()
        if self.pki is not None:
            shutil.copytree(self.pki, self.cert_dir)
        apiserver = self._start_apiserver(timeout)
        wait_for(
            lambda: self._get("/api/v1/namespaces/default") == 200,
            "namespace default",
            timeout,
            (apiserver,),
        )
        self.write_kubeconfig(self.dir / "admin.kubeconfig")
        kcm = spawn(
            "kube-controller-manager",
            self._controller_manager_argv(),
            self.dir / "kube-controller-manager.log",
            env=SHORT_LIVED_GO,
        )
        self.processes.append(kcm)
        if "serviceaccount-controller" in self.controllers:
            wait_for(
                lambda: self._get("/api/v1/namespaces/default/serviceaccounts/default") == 200,
                "kube-controller-manager (the default ServiceAccount)",
                timeout,
                (apiserver, kcm),
            )

    def check_alive(self) -> None:
        """Raise if a process of this control plane has exited."""
        for proc in self.processes:
            proc.check_alive()

    def stop(self, *, kill: bool = False) -> None:
        """Stop the processes (controller manager first) and remove the folder.

        ``kill``: SIGKILL at once, for a throwaway control plane whose etcd
        prefix nobody reads again (a graceful apiserver shutdown takes a second).
        """
        for proc in reversed(self.processes):
            proc.stop(kill=kill)
        self.processes.clear()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- plain HTTPS ---------------------------------------------------------------------
    def _ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self._ca_pem.decode())

    def _get(self, path: str, *, user_agent: str | None = None) -> int:
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        if user_agent is not None:
            headers["User-Agent"] = user_agent
        req = urllib.request.Request(self.url + path, headers=headers)
        try:
            https = urllib.request.build_opener(
                urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=self._ssl())
            )
            with https.open(req, timeout=5) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as err:
            return int(err.code)
        except OSError:
            return 0

    # -- the audit log -------------------------------------------------------------------
    def audit_offset(self) -> int:
        """The current end of the audit log: pass it to :meth:`audit_events` later."""
        with contextlib.suppress(FileNotFoundError):
            return self.audit_log.stat().st_size
        return 0

    def settle_audit(self, timeout: float = 10.0) -> None:
        """Wait until requests answered before this call are in the audit log.

        The apiserver writes a request's ``ResponseComplete`` event after its handler has
        returned, which is after the response body went out: a client can hold its answer
        a moment before the event is in the file. A request of our own, sent now and
        waited for in the log, is answered and logged after those earlier writes finished
        (they were microseconds from done when their answers arrived; ours takes a round
        trip).
        """
        marker = f"audit-barrier/{secrets.token_hex(8)}"
        since = self.audit_offset()
        if self._get("/api/v1/namespaces/default", user_agent=marker) == 0:
            return  # the server is gone: nothing more will be logged
        deadline = time.monotonic() + timeout
        while not any(e.get("userAgent") == marker for e in self._events(since)):
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"the audit log did not show {marker} in {timeout}s")
            time.sleep(0.005)

    def audit_events(self, since: int = 0) -> Iterator[dict[str, Any]]:
        """Audit events (one per finished request, watches when they start) after ``since``,
        including every request answered before the call (:meth:`settle_audit`)."""
        self.settle_audit()
        return self._events(since)

    def _events(self, since: int) -> Iterator[dict[str, Any]]:
        with contextlib.suppress(FileNotFoundError), self.audit_log.open("rb") as fh:
            fh.seek(since)
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # being written
                event = json.loads(line)
                if event.get("stage") in ("ResponseComplete", "ResponseStarted", "Panic"):
                    if event.get("stage") == "ResponseComplete" and event.get("verb") == "watch":
                        continue  # counted once, when it started
                    yield event
