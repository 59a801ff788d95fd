"""Connection settings of one cluster, from a kubeconfig or the pod's service account.

kubernetes_asyncio parses the kubeconfig (contexts, clusters, users, data vs.
file fields, exec and auth-provider plugins); this module turns the result
into what our aiohttp transport needs: a base URL, an SSL context, a proxy
and a source of ``Authorization`` headers that keeps up with token rotation.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader
from kubernetes_asyncio.config.kube_config import KubeConfigLoader, KubeConfigMerger

from ocmkit.kube.certpair import CertificatePairError, load_cert_pair
from ocmkit.kube.credentials import (
    Credentials,
    ExecCredentials,
    StaticCredentials,
    TokenFileCredentials,
)
from ocmkit.kube.errors import KubeConfigError

# Read at call time (not import time) so tests can point them elsewhere.
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SERVICE_ACCOUNT_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"


@dataclass(frozen=True)
class ClusterConfig:
    """Where a cluster is and how to authenticate to it."""

    host: str
    credentials: Credentials
    ssl_context: ssl.SSLContext | None = None
    proxy: str | None = None
    tls_server_name: str | None = None


def _check_files(paths: str) -> None:
    """Fail clearly on missing or non-kubeconfig files before the loader's vaguer errors."""
    found = False
    for part in paths.split(os.pathsep):
        if not part:
            continue
        path = Path(part).expanduser()
        if not path.exists():
            continue
        found = True
        try:
            doc = yaml.safe_load(path.read_text())
        except OSError as exc:
            # strerror alone: the message names the path already ("Is a directory").
            raise KubeConfigError(f"cannot read kubeconfig {path}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise KubeConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise KubeConfigError(
                f"kubeconfig {path} is not valid YAML: {yaml_problem(exc)}"
            ) from exc
        if not isinstance(doc, dict):
            raise KubeConfigError(f"kubeconfig {path} is not a kubeconfig (expected a mapping)")
    if not found:
        raise KubeConfigError(f"kubeconfig not found: {paths}")


def yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: where and what, instead of PyYAML's multi-line excerpt."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return str(problem)


async def load_kubeconfig(path: str | None = None, *, context: str | None = None) -> ClusterConfig:
    """Load a cluster's settings from a kubeconfig file (default: ``$KUBECONFIG``).

    Raises KubeConfigError naming the file and the problem.
    """
    # $KUBECONFIG may be a ":"-separated list.
    default = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    paths = str(path) if path is not None else default
    _check_files(paths)
    cfg = Configuration()
    try:
        merged = KubeConfigMerger(paths)
        if merged.config is None:
            raise KubeConfigError(f"kubeconfig not found: {paths}")
        if not merged.config.safe_get("contexts"):
            raise KubeConfigError(f"kubeconfig {paths} has no contexts")
        if context is None and not merged.config.safe_get("current-context"):
            raise KubeConfigError(f"kubeconfig {paths} has no current-context and none was given")
        # config_base_path=None: relative file references resolve against each file's dir.
        loader = KubeConfigLoader(
            config_dict=merged.config, active_context=context, config_base_path=None
        )
        cluster = loader._cluster
        if cluster is None or not cluster.safe_get("server"):
            raise KubeConfigError(f"kubeconfig {paths}: the cluster of the context has no server")
        await loader.load_and_set(cfg)
        credentials = _kubeconfig_credentials(loader, cfg)
        ssl_context = _ssl_context(cfg, paths)
    except (ConfigException, AssertionError, KeyError, TypeError, ValueError, OSError) as exc:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, AssertionError):
            detail = "a context, cluster or user it refers to is missing"
        raise KubeConfigError(f"invalid kubeconfig {paths}: {detail}") from exc
    return ClusterConfig(
        host=str(cfg.host).rstrip("/"),
        credentials=credentials,
        ssl_context=ssl_context,
        proxy=_proxy(cfg),
        tls_server_name=getattr(cfg, "tls_server_name", None) or None,
    )


def _kubeconfig_credentials(loader: Any, cfg: Any) -> Credentials:
    # The loader resolved the credentials once; pick a source that can renew them.
    # (It keeps the chosen user section in a private attribute: the only way to
    # know whether the token came from a file or a plugin.)
    user = loader._user
    header = cfg.api_key.get("BearerToken") or None
    if user is not None and "exec" in user and header:
        return ExecCredentials(
            user["exec"], header=header, expiry=getattr(loader, "exec_plugin_expiry", None)
        )
    if user is not None and not user.safe_get("token") and user.safe_get("tokenFile"):
        base = Path(user.path).resolve().parent if user.path else Path.cwd()
        return TokenFileCredentials(base / str(user["tokenFile"]))
    return StaticCredentials(header)


def load_in_cluster() -> ClusterConfig:
    """Settings from the pod's service account (``KUBERNETES_SERVICE_HOST``/``_PORT``).

    Raises KubeConfigError when not running in a pod.
    """
    loader = InClusterConfigLoader(
        token_filename=SERVICE_ACCOUNT_TOKEN,
        cert_filename=SERVICE_ACCOUNT_CA,
        try_refresh_token=False,
    )
    cfg = Configuration()
    try:
        loader.load_and_set(cfg)
        ssl_context = _ssl_context(cfg, "in-cluster configuration")
        credentials = TokenFileCredentials(SERVICE_ACCOUNT_TOKEN)
    except (ConfigException, OSError, ssl.SSLError) as exc:
        raise KubeConfigError(f"in-cluster configuration unavailable: {exc}") from exc
    return ClusterConfig(
        host=str(cfg.host).rstrip("/"),
        credentials=credentials,
        ssl_context=ssl_context,
        proxy=_proxy(cfg),
    )


def _ssl_context(cfg: Any, source: str) -> ssl.SSLContext | None:
    if not str(cfg.host).startswith("https"):
        return None
    try:
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
        if cfg.cert_file:
            load_cert_pair(ctx, cfg.cert_file, cfg.key_file or cfg.cert_file)
    except (ssl.SSLError, OSError, CertificatePairError) as exc:
        raise KubeConfigError(
            f"{source}: invalid TLS material (CA, client certificate or key): {exc}"
        ) from exc
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _is_loopback(host: str) -> bool:
    # Go's ProxyFromEnvironment never proxies requests to the local host.
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _proxy(cfg: Any) -> str | None:
    """The kubeconfig's ``proxy-url``, else the environment's proxy for this host (as Go does)."""
    if cfg.proxy:
        return str(cfg.proxy)
    parts = urlsplit(str(cfg.host))
    host = parts.hostname or ""
    if not host or _is_loopback(host) or urllib.request.proxy_bypass(host):
        return None
    proxies = urllib.request.getproxies_environment()
    return proxies.get(parts.scheme) or None
