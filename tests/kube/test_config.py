"""Loading clusters: kubeconfig errors, contexts, TLS, in-cluster, token files, exec plugins."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim.sim import KubeSim
from ocmkit.kube import NAMESPACES, KubeClient, KubeConfigError, Unauthorized
from ocmkit.kube import config as config_module
from tests.support.throwaway_pki import (
    new_key,
    pem,
    pem_encrypted_key,
    pem_key,
    signed_certificate,
)


def _one_context(cluster: dict[str, Any], user: dict[str, Any]) -> dict[str, Any]:
    """A kubeconfig whose current context joins ``cluster`` and ``user``."""
    return {
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
    }


def _write(path: Path, doc: Any) -> str:
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return str(path)


async def test_missing_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="not found"):
        await KubeClient.from_kubeconfig(str(tmp_path / "absent"))


async def test_default_path_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "from-env"))
    with pytest.raises(KubeConfigError, match="from-env"):
        await KubeClient.from_kubeconfig()


@pytest.mark.parametrize(
    ("contents", "message"),
    [
        ("{ this is: [not yaml", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping"),
        ("", "expected a mapping"),
        ({"apiVersion": "v1", "kind": "Config"}, "no contexts"),
        (
            {"contexts": [{"name": "c", "context": {"cluster": "x", "user": "u"}}]},
            "no current-context",
        ),
        (
            {
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "missing", "user": "u"}}],
                "clusters": [],
                "users": [],
            },
            "missing",
        ),
        (
            _one_context({}, {"token": "t"}),
            "no server",
        ),
        (
            _one_context(
                {"server": "https://127.0.0.1:1", "certificate-authority-data": "bm90IGEgY2VydA=="},
                {"token": "t"},
            ),
            "TLS",
        ),
    ],
)
async def test_invalid_kubeconfig_contents(tmp_path: Path, contents: Any, message: str) -> None:
    path = _write(tmp_path / "kc", contents)
    with pytest.raises(KubeConfigError, match=message) as exc:
        await KubeClient.from_kubeconfig(path)
    assert path in str(exc.value)


async def test_unknown_context(sim: KubeSim, tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="nope"):
        await KubeClient.from_kubeconfig(str(tmp_path / "kubeconfig"), context="nope")


async def test_explicit_context_and_merged_files(sim: KubeSim, tmp_path: Path) -> None:
    doc = sim.kubeconfig()
    doc["contexts"].append({"name": "broken", "context": {"cluster": "nowhere", "user": "kubesim"}})
    doc["current-context"] = "broken"
    first = _write(tmp_path / "first", doc)
    async with await KubeClient.from_kubeconfig(first, context="kubesim", qps=0) as client:
        await client.create(NAMESPACES, {"metadata": {"name": "ctx"}})
    # KUBECONFIG-style lists merge; the first file's current-context is used.
    second = _write(tmp_path / "second", {"apiVersion": "v1", "kind": "Config"})
    good = _write(tmp_path / "good", sim.kubeconfig())
    async with await KubeClient.from_kubeconfig(f"{good}:{second}", qps=0) as client:
        assert (await client.get(NAMESPACES, "ctx"))["metadata"]["name"] == "ctx"


async def test_tls_kubeconfig_with_ca_data_and_user_agent(tmp_path: Path) -> None:
    async with KubeSim(tls=True) as sim:
        path = sim.write_kubeconfig(tmp_path / "kc")
        async with await KubeClient.from_kubeconfig(str(path), qps=0) as client:
            assert client.config.ssl_context is not None
            await client.create(NAMESPACES, {"metadata": {"name": "tls"}})


async def test_an_encrypted_client_key_is_an_error_not_a_passphrase_prompt(
    tmp_path: Path,
) -> None:
    # OpenSSL would ask for the passphrase on the terminal (EINVAL without one).
    key = new_key()
    cert_file, key_file = tmp_path / "client.crt", tmp_path / "client.key"
    cert_file.write_bytes(pem(signed_certificate("client", key)))
    key_file.write_bytes(pem_encrypted_key(key))
    doc = _one_context(
        {"server": "https://127.0.0.1:1"},
        {"client-certificate": str(cert_file), "client-key": str(key_file)},
    )
    path = _write(tmp_path / "kc", doc)
    with pytest.raises(KubeConfigError) as exc:
        await KubeClient.from_kubeconfig(path)
    assert "the private key is encrypted (an unencrypted key is needed)" in str(exc.value)
    key_file.write_bytes(pem_key(key))
    async with await KubeClient.from_kubeconfig(path) as client:
        assert client.config.ssl_context is not None


async def test_token_file_is_reread_after_a_401(tmp_path: Path) -> None:
    async with KubeSim(tls=True) as sim:
        old = sim.add_user("robot", groups=("system:masters",))
        token_file = tmp_path / "token"
        token_file.write_text(old + "\n")
        doc = sim.kubeconfig()
        # A relative tokenFile resolves against the kubeconfig's directory.
        doc["users"][0]["user"] = {"tokenFile": "token"}
        path = _write(tmp_path / "kc", doc)
        async with await KubeClient.from_kubeconfig(path, qps=0) as client:
            await client.create(NAMESPACES, {"metadata": {"name": "a"}})
            # Rotate: the old token stops working, the file gets the new one.
            del sim.state.tokens[old]
            token_file.write_text(sim.add_user("robot", groups=("system:masters",)))
            with pytest.raises(Unauthorized):
                await client.get(NAMESPACES, "a")
            assert (await client.get(NAMESPACES, "a"))["metadata"]["name"] == "a"


EXEC_PLUGIN = """
import json, pathlib, sys
here = pathlib.Path(sys.argv[1])
runs = here / "runs"
runs.write_text(str(int(runs.read_text() or "0") + 1) if runs.exists() else "1")
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1beta1",
    "kind": "ExecCredential",
    "status": {"token": (here / "token").read_text().strip()},
}))
"""


async def test_exec_plugin_runs_once_and_again_after_a_401(tmp_path: Path) -> None:
    async with KubeSim(tls=True) as sim:
        old = sim.add_user("robot", groups=("system:masters",))
        (tmp_path / "token").write_text(old)
        (tmp_path / "plugin.py").write_text(EXEC_PLUGIN)
        doc = sim.kubeconfig()
        doc["users"][0]["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": sys.executable,
                "args": [str(tmp_path / "plugin.py"), str(tmp_path)],
                "interactiveMode": "Never",
            }
        }
        path = _write(tmp_path / "kc", doc)
        async with await KubeClient.from_kubeconfig(path, qps=0) as client:
            for name in ("a", "b", "c"):
                await client.create(NAMESPACES, {"metadata": {"name": name}})
            assert (tmp_path / "runs").read_text() == "1"
            del sim.state.tokens[old]
            (tmp_path / "token").write_text(sim.add_user("robot", groups=("system:masters",)))
            with pytest.raises(Unauthorized):
                await client.get(NAMESPACES, "a")
            assert (await client.get(NAMESPACES, "a"))["metadata"]["name"] == "a"
            assert (tmp_path / "runs").read_text() == "2"


async def test_exec_plugin_failure_is_a_config_error(tmp_path: Path) -> None:
    doc = _one_context(
        {"server": "http://127.0.0.1:1"},
        {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": sys.executable,
                "args": ["-c", "import sys; sys.exit(3)"],
            }
        },
    )
    with pytest.raises(KubeConfigError, match="returned 3"):
        await KubeClient.from_kubeconfig(_write(tmp_path / "kc", doc))


async def test_in_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeConfigError, match="in-cluster"):
        await KubeClient.in_cluster()
    async with KubeSim(tls=True) as sim:
        token = tmp_path / "token"
        token.write_text(sim.admin_token)
        ca = tmp_path / "ca.crt"
        ca.write_bytes(sim.ca_pem)
        monkeypatch.setattr(config_module, "SERVICE_ACCOUNT_TOKEN", str(token))
        monkeypatch.setattr(config_module, "SERVICE_ACCOUNT_CA", str(ca))
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(sim.port))
        async with await KubeClient.in_cluster(qps=0, user_agent="work-agent") as client:
            assert client.config.host == f"https://127.0.0.1:{sim.port}"
            made = await client.create(NAMESPACES, {"metadata": {"name": "pod"}})
            assert made["metadata"]["managedFields"][0]["manager"] == "work-agent"


def test_proxy_from_environment_skips_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "internal.example")

    class Cfg:
        proxy = None
        host = "https://api.example:6443"

    assert config_module._proxy(Cfg()) == "http://proxy.example:3128"
    Cfg.host = "https://127.0.0.1:6443"
    assert config_module._proxy(Cfg()) is None
    Cfg.host = "https://internal.example:6443"
    assert config_module._proxy(Cfg()) is None
