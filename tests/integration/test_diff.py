"""``workagent diff``, the real command, against a hub and a spoke (kubesim and real).

One work covers every update strategy on objects that exist and objects that
do not; the command's output, exit code and the spoke's own request record
(kubesim's journal, a real apiserver's audit log) are
checked: every write it sent was a dry run (``dryRun=All``), the objects are
unchanged, and the answer per strategy is what the agent would do. Bad input
gets one line and exit code 2.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from demo.examples import hello_deployment
from ocmkit.kube import APPLIED_MANIFESTWORKS, CONFIGMAPS, DEPLOYMENTS, MANIFESTWORKS, KubeClient
from tests.integration.conftest import (
    configmap,
    hub_hash_of,
    work_body,
)
from tests.support.manifests import strategy
from tests.support.processes import REPO
from tests.support.programs import CLUSTER
from tests.support.requests import RequestRecord
from tests.support.targets import Cluster
from workagent.controllers.ownership import applied_work_owner
from workagent.identity import applied_work_name
from workagent.settings import SPOKE_USER_AGENT


async def diff(*args: str) -> tuple[int, str, str]:
    """Run ``workagent diff ARGS``; (exit code, stdout, stderr)."""
    uv = shutil.which("uv")
    command = (
        [uv, "run", "--frozen", "--no-sync", "workagent", "diff", *args]
        if uv
        else [sys.executable, "-m", "workagent", "diff", *args]
    )
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=str(REPO),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    return process.returncode or 0, out.decode(), err.decode()


def section(out: str, header: str) -> str:
    """The output from the line starting with ``header`` up to the next header line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith("ConfigMap ")), len(lines)
    )
    return "\n".join(lines[start:end])


async def test_each_strategy_and_no_write(
    hub_client: KubeClient, spoke_client: KubeClient, spoke: Cluster, tmp_path: Path
) -> None:
    the_hash = hub_hash_of(tmp_path)
    amw = await spoke_client.create(
        APPLIED_MANIFESTWORKS,
        {
            "apiVersion": APPLIED_MANIFESTWORKS.api_version,
            "kind": APPLIED_MANIFESTWORKS.kind,
            "metadata": {"name": applied_work_name(the_hash, "w")},
            "spec": {"hubHash": the_hash, "manifestWorkName": "w", "agentID": the_hash},
        },
    )
    owner = applied_work_owner(amw)
    for name, value in (("upd", "old"), ("same", "v"), ("ssa", "old"), ("co", "old"), ("ro", "x")):
        body = configmap(name, k=value)
        body["metadata"]["ownerReferences"] = [owner]
        await spoke_client.create(CONFIGMAPS, body)
    manifests = [
        configmap("upd", k="new"),
        configmap("same", k="v"),
        configmap("upd-new", k="1"),
        configmap("ssa", k="new"),
        configmap("ssa-new", k="1"),
        configmap("co", k="new"),
        configmap("co-new", k="1"),
        configmap("ro", k="changed"),
    ]
    configs = [
        # Forced: the test client wrote k; without force the agent would fail on the conflict.
        strategy("ssa", "ServerSideApply", force=True),
        strategy("ssa-new", "ServerSideApply"),
        strategy("co", "CreateOnly"),
        strategy("co-new", "CreateOnly"),
        strategy("ro", "ReadOnly"),
    ]
    work = work_body("w", manifests, manifestConfigs=configs)
    spoke_config = str(tmp_path / "spoke.kubeconfig")
    hub_config = str(tmp_path / "hub.kubeconfig")

    async def diff_file(name: str, work: dict[str, Any]) -> tuple[int, str, str]:
        """``workagent diff -f`` of ``work`` (written to ``name``) against the test clusters."""
        (tmp_path / name).write_text(yaml.safe_dump(work))
        path = str(tmp_path / name)
        return await diff("-f", path, "--kubeconfig", spoke_config, "--hub-kubeconfig", hub_config)

    requests = RequestRecord(spoke)
    code, out, err = await diff_file("work.yaml", work)
    assert code == 1, out + err
    assert "would change" in section(out, "ConfigMap default/upd (manifest 0, Update)")
    assert "-  k: old\n+  k: new" in section(out, "ConfigMap default/upd (")
    assert section(out, "ConfigMap default/same (") == (
        "ConfigMap default/same (manifest 1, Update): no changes"
    )
    created = section(out, "ConfigMap default/upd-new (manifest 2, Update): would create")
    assert "--- /dev/null" in created and "+  k: '1'" in created
    assert "+  name: upd-new" in created and f"+  - uid: {owner['uid']}" not in created
    assert owner["uid"] in created  # the owner reference the agent gives it
    ssa = section(out, "ConfigMap default/ssa (manifest 3, ServerSideApply): would change")
    assert "-  k: old\n+  k: new" in ssa
    ssa_new = section(out, "ConfigMap default/ssa-new (manifest 4, ServerSideApply): would create")
    assert "+  k: '1'" in ssa_new and owner["uid"] in ssa_new  # apply, then the owner patch
    assert section(out, "ConfigMap default/co (") == (
        "ConfigMap default/co (manifest 5, CreateOnly): CreateOnly, content left alone"
    )
    assert "would create" in section(out, "ConfigMap default/co-new (manifest 6, CreateOnly)")
    assert section(out, "ConfigMap default/ro (") == (
        "ConfigMap default/ro (manifest 7, ReadOnly): ReadOnly, never written"
    )
    for noise in ("managedFields", "resourceVersion", "creationTimestamp", "generation:"):
        assert noise not in out
    assert err == ""

    # Nothing was written: every write the command sent was a dry run, and it sent some.
    writes = requests.sent_writes(user_agents=(SPOKE_USER_AGENT,))
    assert len(writes) >= 6, writes
    assert all(e.dry_run for e in writes), [e for e in writes if not e.dry_run]
    for name, value in (("upd", "old"), ("ssa", "old"), ("co", "old"), ("ro", "x")):
        assert (await spoke_client.get(CONFIGMAPS, name, "default"))["data"] == {"k": value}
    listed = (await spoke_client.list(CONFIGMAPS, "default"))["items"]
    assert not {"upd-new", "ssa-new", "co-new"} & {c["metadata"]["name"] for c in listed}

    # The same work read from the hub gives the same answer.
    await hub_client.create(MANIFESTWORKS, work)
    code, from_hub, err = await diff(
        "--work", "w", "--spoke-cluster-name", CLUSTER, "--hub-kubeconfig", hub_config,
        "--kubeconfig", spoke_config,
    )  # fmt: skip
    assert (code, from_hub, err) == (1, out, "")

    # A manifest the agent would fail on: said with the API server's error, exit 2.
    conflict = work_body("w", [configmap("ssa", k="mine")],
                         manifestConfigs=[strategy("ssa", "ServerSideApply")])  # fmt: skip
    code, out, err = await diff_file("conflict.yaml", conflict)
    assert code == 2, out + err
    assert out.startswith(
        "ConfigMap default/ssa (manifest 0, ServerSideApply): would fail: Apply failed with 1 "
        'conflict: conflict with "integration-test"'
    ), out

    # Only what is already so: exit 0.
    steady = work_body("w", [configmap("same", k="v"), configmap("ro", k="y")],
                       manifestConfigs=[strategy("ro", "ReadOnly")])  # fmt: skip
    code, out, err = await diff_file("steady.json", steady)
    assert (code, err) == (0, ""), out
    assert out.splitlines() == [
        "ConfigMap default/same (manifest 0, Update): no changes",
        "ConfigMap default/ro (manifest 1, ReadOnly): ReadOnly, never written",
    ]


async def test_keys_the_agent_set_and_the_manifest_dropped_show_as_removed(
    spoke_client: KubeClient, tmp_path: Path
) -> None:
    """The agent removes what its last manifest set and the new one does not: the diff
    recalls that from the agent's managedFields entry, as a restarted agent does."""
    applied = hello_deployment(1)
    applied["spec"]["minReadySeconds"] = 7
    spoke_config = str(tmp_path / "spoke.kubeconfig")
    async with await KubeClient.from_kubeconfig(spoke_config, user_agent=SPOKE_USER_AGENT) as agent:
        await agent.create(DEPLOYMENTS, applied)
    (tmp_path / "work.yaml").write_text(yaml.safe_dump(work_body("w", [hello_deployment(1)])))
    code, out, err = await diff("-f", str(tmp_path / "work.yaml"), "--kubeconfig", spoke_config)
    assert code == 1, out + err
    assert "\nDeployment default/hello (manifest 0, Update): would change\n" in out, out
    removed = [line for line in out.splitlines() if line.startswith("-") and line[:3] != "---"]
    added = [line for line in out.splitlines() if line.startswith("+") and line[:3] != "+++"]
    # The dropped key goes; the defaults the create owns stay; the owner is added.
    assert removed == ["-  minReadySeconds: 7"], out
    assert added[0] == "+  ownerReferences:" and not any("spec" in line for line in added), out
    live = await spoke_client.get(DEPLOYMENTS, "hello", "default")
    assert live["spec"]["minReadySeconds"] == 7  # a dry run only


async def test_bad_input_is_one_line_and_exit_code_2(
    spoke_client: KubeClient, tmp_path: Path
) -> None:
    spoke_config = str(tmp_path / "spoke.kubeconfig")
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: [unclosed\n")
    (tmp_path / "configmap.yaml").write_text(yaml.safe_dump(configmap("x")))
    (tmp_path / "work.yaml").write_text(yaml.safe_dump(work_body("w", [configmap("x")])))
    # A kubeconfig whose server does not answer.
    dead = yaml.safe_load((tmp_path / "spoke.kubeconfig").read_text())
    dead["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"
    (tmp_path / "dead.kubeconfig").write_text(yaml.safe_dump(dead))
    cases = [
        (["-f", str(tmp_path / "broken.yaml"), "--kubeconfig", spoke_config], "is not valid YAML"),
        (["-f", str(tmp_path / "configmap.yaml"), "--kubeconfig", spoke_config], "is not a ManifestWork"),
        (["-f", str(tmp_path / "missing.yaml"), "--kubeconfig", spoke_config], "cannot read"),
        (["-f", str(tmp_path / "work.yaml"), "--kubeconfig", str(tmp_path / "dead.kubeconfig")], "managed cluster"),
        (["-f", str(tmp_path / "work.yaml"), "--work", "w"], "exactly one of -f FILE and --work NAME"),
    ]  # fmt: skip
    for args, message in cases:
        code, out, err = await diff(*args)
        assert code == 2, (args, out, err)
        assert out == "", (args, out)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, err)
        assert lines[0].startswith("workagent"), err
