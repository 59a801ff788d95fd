"""What can be checked of the Dockerfile without a container engine.

No image is built here (the development machine has none). Instead the
Dockerfile is parsed and checked for what a build or a cluster would reject
or regret: copied files that do not exist or are excluded from the build
context, programs that are not the distribution's console scripts, a root or
named user (``runAsNonRoot`` needs a numeric one), floating base images, dev
tools in the runtime stage. The ``/work`` shim is extracted from its heredoc
and run with stand-in programs, and what it passes on is parsed by the real
command lines.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hubcontroller.cli import ManagerCommand, WebhookCommand
from hubcontroller.cli import parse_command_line as parse_hub_command_line
from workagent.cli import AgentCommand
from workagent.cli import parse_command_line as parse_agent_command_line

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
PROGRAMS = ("workagent", "hubcontroller")


# -- a small Dockerfile reader -----------------------------------------------------------


@dataclass
class Instruction:
    """One instruction: keyword, the rest of its (joined) line, its heredocs, its stage."""

    keyword: str
    args: str
    stage: int
    heredocs: dict[str, str] = field(default_factory=dict)


_HEREDOC = re.compile(r"<<-?(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions in order; continuation lines joined, heredoc bodies collected."""
    lines = text.splitlines()
    out: list[Instruction] = []
    stage = -1
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        while line.endswith("\\") and i < len(lines):
            following = lines[i].strip()
            i += 1
            if following.startswith("#"):
                continue  # comments may sit inside a continued instruction
            line = line[:-1].rstrip() + " " + following
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        instruction = Instruction(keyword, args.strip(), stage)
        for marker in _HEREDOC.finditer(args):
            body: list[str] = []
            while i < len(lines) and lines[i] != marker.group(2):
                body.append(lines[i])
                i += 1
            i += 1  # the terminator
            instruction.heredocs[marker.group(2)] = "\n".join(body) + "\n"
        out.append(instruction)
    return out


INSTRUCTIONS = parse_dockerfile(DOCKERFILE.read_text())
FINAL_STAGE = max(i.stage for i in INSTRUCTIONS)


def instructions(keyword: str, stage: int | None = None) -> list[Instruction]:
    """The instructions with ``keyword`` (of one stage, if given)."""
    return [i for i in INSTRUCTIONS if i.keyword == keyword and (stage is None or i.stage == stage)]


def copy_sources(instruction: Instruction) -> list[str]:
    """The context paths a COPY reads (none for ``--from`` or a heredoc)."""
    words = shlex.split(instruction.args)
    if any(w.startswith("--from=") for w in words) or instruction.heredocs:
        return []
    paths = [w for w in words if not w.startswith("--")]
    return paths[:-1]  # the last one is the destination


# -- a small .dockerignore evaluator (Docker's rules: last match wins, parents count) ----


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
            if pattern.startswith("/", i):
                out += "/?"
                i += 1
            continue
        char = pattern[i]
        out += "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
        i += 1
    return re.compile(out)


def ignored(path: str, rules: list[str]) -> bool:
    """Whether ``path`` (relative, ``/``-separated) is left out of the build context."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: k + 1]) for k in range(len(parts))]
    result = False
    for rule in rules:
        negate = rule.startswith("!")
        pattern = os.path.normpath(rule.lstrip("!").strip("/"))
        regex = _pattern_regex(pattern)
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            result = not negate
    return result


def dockerignore_rules() -> list[str]:
    """The patterns of ``.dockerignore``, comments and blank lines dropped."""
    lines = DOCKERIGNORE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


# -- the build ---------------------------------------------------------------------------


def test_multi_stage_on_one_pinned_slim_python_311_base() -> None:
    froms = instructions("FROM")
    assert len(froms) >= 2, "a build stage and a runtime stage"
    images = [shlex.split(f.args)[0] for f in froms]
    for image in images:
        name, _, tag = image.partition(":")
        assert "@sha256:" in image or re.fullmatch(r"3\.11\.\d+-slim(-\w+)?", tag), (
            f"{image}: pin the base image by a full version tag (python:3.11.X-slim-...)"
        )
        assert name == "python"
    # The virtual environment links to the base interpreter: same image in both stages.
    assert len(set(images)) == 1, images


def test_dependencies_come_from_the_lock_without_dev_tools() -> None:
    syncs = [r for r in instructions("RUN") if "uv sync" in r.args]
    assert syncs, "uv sync installs the dependencies"
    for run in syncs:
        assert "--frozen" in run.args, "install exactly what uv.lock says"
        assert "--no-dev" in run.args, "no dev group (pytest, ruff, mypy) in the image"
        assert run.stage < FINAL_STAGE
    # The Makefile's uv version is the one the image installs.
    makefile_uv = re.search(r"^UV_VERSION := (\S+)", (REPO / "Makefile").read_text(), re.M)
    assert makefile_uv is not None
    assert f'"uv=={makefile_uv.group(1)}"' in DOCKERFILE.read_text()


def test_the_runtime_stage_has_no_build_or_dev_tools() -> None:
    final = [i for i in INSTRUCTIONS if i.stage == FINAL_STAGE]
    for instruction in final:
        text = instruction.args + "".join(instruction.heredocs.values())
        for tool in ("uv ", "pip install", "pytest", "ruff", "mypy", "apt-get install"):
            assert tool not in text, f"{tool.strip()!r} in the runtime stage: {instruction}"
    copies = instructions("COPY", FINAL_STAGE)
    from_build = [c for c in copies if "--from=" in c.args]
    assert [shlex.split(c.args)[-2:] for c in from_build] == [["/app/.venv", "/app/.venv"]]


def test_copied_files_exist_and_are_in_the_build_context() -> None:
    rules = dockerignore_rules()
    sources = [s for c in instructions("COPY") for s in copy_sources(c)]
    assert {"pyproject.toml", "uv.lock", "ocmkit", "workagent", "hubcontroller", "schemas"} <= set(
        sources
    )
    for source in sources:
        assert (REPO / source).exists(), f"COPY {source}: no such file in the repository"
        assert not ignored(source, rules), f"COPY {source}: excluded by .dockerignore"
    # Python sources inside the copied packages are sent; caches and the rest are not.
    assert not ignored("ocmkit/runtime/manager.py", rules)
    for left_out in (".git/HEAD", ".venv/bin/python", "tests/conftest.py", "demo/app.py"):
        assert ignored(left_out, rules), left_out
    assert ignored("workagent/__pycache__/agent.cpython-311.pyc", rules)


def test_every_package_of_the_wheel_is_copied() -> None:
    # hatchling builds the wheel from these directories: a missing one is a broken image.
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    sources = {s for c in instructions("COPY") for s in copy_sources(c)}
    assert set(packages) <= sources
    # The project metadata names its readme: it must be in the context too.
    assert pyproject["project"]["readme"] in sources


def test_user_is_numeric_and_not_root() -> None:
    users = instructions("USER", FINAL_STAGE)
    assert users, "the runtime stage sets USER"
    user = users[-1].args
    assert re.fullmatch(r"\d+(:\d+)?", user), f"USER {user}: numeric, for runAsNonRoot"
    uid, _, gid = user.partition(":")
    assert int(uid) == 65532 and int(uid) != 0
    assert gid in ("", "65532")


def test_programs_are_the_distributions_console_scripts() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    shim = shim_text()
    assert set(re.findall(r"\b(workagent|hubcontroller)\b", shim)) == set(PROGRAMS)
    for program in PROGRAMS:
        assert program in scripts, f"{program} is not in [project.scripts]"
    # The console scripts live in the virtual environment, which is first on PATH.
    envs = " ".join(e.args for e in instructions("ENV", FINAL_STAGE))
    assert 'PATH="/app/.venv/bin:${PATH}"' in envs
    assert "UV_PROJECT_ENVIRONMENT=/app/.venv" in " ".join(e.args for e in instructions("ENV"))


def test_entrypoint_is_the_shim_in_exec_form() -> None:
    entrypoint = instructions("ENTRYPOINT", FINAL_STAGE)
    assert [e.args for e in entrypoint] == ['["/work"]']
    shim_copy = [c for c in instructions("COPY", FINAL_STAGE) if c.heredocs]
    assert len(shim_copy) == 1 and "--chmod=0755" in shim_copy[0].args
    assert shim_copy[0].args.split()[-1] == "/work"
    # Heredocs in COPY need the BuildKit front end of dockerfile syntax 1.4 or later.
    first = DOCKERFILE.read_text().splitlines()[0]
    assert re.fullmatch(r"# syntax=docker/dockerfile:1\.(\d+)", first)
    assert int(first.rsplit(".", 1)[1]) >= 4


def test_the_dockerfile_says_it_was_not_built() -> None:
    assert "NOT BUILT" in DOCKERFILE.read_text()


# -- the /work shim ----------------------------------------------------------------------


def shim_text() -> str:
    """The body of the ``/work`` shim heredoc."""
    for instruction in instructions("COPY", FINAL_STAGE):
        for body in instruction.heredocs.values():
            if instruction.args.split()[-1] == "/work":
                return body
    raise AssertionError("no /work heredoc in the runtime stage")


@pytest.fixture
def shim(tmp_path: Path) -> Path:
    """The shim, with stand-ins for both programs on its PATH that print their argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in PROGRAMS:
        stub = bin_dir / program
        stub.write_text(f'#!/bin/sh\nprintf "%s\\n" {program} "$@"\n')
        stub.chmod(0o755)
    path = tmp_path / "work"
    path.write_text(shim_text())
    path.chmod(0o755)
    return path


def run_shim(shim: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the shim as the container would, with the stand-ins first on PATH."""
    env = {**os.environ, "PATH": f"{shim.parent / 'bin'}:{os.environ.get('PATH', '')}"}
    return subprocess.run(
        ["/bin/sh", str(shim), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
@pytest.mark.parametrize(
    ("args", "program"),
    [
        # Kubernetes `args` of OCM's deployments, after the image's ENTRYPOINT /work.
        (["/work", "agent", "--spoke-cluster-name=cluster1"], "workagent"),
        (["/work", "manager", "--feature-gates=ManifestWorkReplicaSet=true"], "hubcontroller"),
        (["/work", "webhook-server", "--port=9443"], "hubcontroller"),
        # `command: [/work, ...]` (no second /work), flags before the command.
        (["agent", "--spoke-cluster-name=cluster1"], "workagent"),
        (["--v=2", "manager"], "hubcontroller"),
        # `docker run IMAGE workagent ...`
        (["workagent", "--version"], "workagent"),
        (["hubcontroller", "manager", "--help"], "hubcontroller"),
    ],
)
def test_shim_hands_every_argument_to_the_right_program(
    shim: Path, args: list[str], program: str
) -> None:
    done = run_shim(shim, *args)
    assert done.returncode == 0, done.stderr
    received = done.stdout.splitlines()
    assert received[0] == program
    passed = args[1:] if args[0] == program else args
    assert received[1:] == passed


def test_shim_output_parses_with_the_real_command_lines(shim: Path) -> None:
    operator_args = [
        "/work",
        "agent",
        "--spoke-cluster-name=cluster1",
        "--workload-source-config=/spoke/hub-kubeconfig/kubeconfig",
        "--status-sync-interval=60s",
    ]
    received = run_shim(shim, *operator_args).stdout.splitlines()
    assert received[0] == "workagent"
    command = parse_agent_command_line(received[1:])
    assert isinstance(command, AgentCommand)
    assert command.settings.cluster_name == "cluster1"
    assert command.settings.status_sync_interval == 60.0

    received = run_shim(shim, "/work", "manager", "--disable-leader-election").stdout.split()
    assert received[0] == "hubcontroller"
    assert isinstance(parse_hub_command_line(received[1:]), ManagerCommand)
    received = run_shim(shim, "/work", "webhook-server", "--port=9443").stdout.split()
    assert isinstance(parse_hub_command_line(received[1:]), WebhookCommand)


def test_shim_without_a_command_prints_usage(shim: Path) -> None:
    for args, code in (([], 0), (["--help"], 0), (["/work", "bogus"], 2)):
        done = run_shim(shim, *args)
        assert done.returncode == code, args
        assert done.stdout == ""
        assert "usage: /work agent [flags]" in done.stderr
