"""Every flag the programs list in ``--help`` is documented.

The help texts are taken from the installed console scripts, exactly as a
user runs them (``workagent agent --help``, ``hubcontroller manager --help``,
``hubcontroller webhook-server --help``), so a flag added to a command line
without a line in the docs fails here. The agent's flags belong in
``docs/operations.md``, the hub's in ``docs/hub.md``; a flag counts as
documented when the page shows it in backticks (a table row or the text).

``tests/unit/test_cli.py`` checks the agent's flag *definitions* against
``docs/operations.md``; this checks what ``--help`` prints, for all three
commands.
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

#: (program, command) -> the page that documents its flags.
COMMANDS = {
    ("workagent", "agent"): "operations.md",
    ("hubcontroller", "manager"): "hub.md",
    ("hubcontroller", "webhook-server"): "hub.md",
    ("hubcontroller", "grpc-server"): "hub.md",
}

# A flag entry: two spaces, an optional short form, the long form; aliases follow
# as "(also --name)".
_ENTRY = re.compile(r"^  (?:(-\w), )?(--[\w-]+)(?:[^\n]*?\(also (--[\w-]+)\))?", re.M)


def console_script(program: str) -> list[str]:
    """The installed script of this environment (else ``python -m``)."""
    script = Path(sys.executable).parent / program
    return [str(script)] if script.exists() else [sys.executable, "-m", program]


@cache
def help_text(program: str, command: str) -> str:
    """What ``<program> <command> --help`` prints."""
    done = subprocess.run(
        [*console_script(program), command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=REPO,
    )
    return done.stdout


def flags_in_help(text: str) -> list[str]:
    """Every flag a help text lists: long names and their aliases (``--cluster-name``).

    One-letter forms (``-v``, ``-h``) are other spellings of a long flag listed
    on the same line, so the long one stands for both.
    """
    flags: list[str] = []
    for _short, long, alias in _ENTRY.findall(text):
        flags += [f for f in (long, alias) if f]
    return flags


def test_help_entries_are_found() -> None:
    agent = flags_in_help(help_text("workagent", "agent"))
    assert {"--spoke-cluster-name", "--cluster-name", "--v", "--help"} <= set(agent)
    assert len(agent) > 30
    manager = flags_in_help(help_text("hubcontroller", "manager"))
    assert {"--work-driver-config", "--feature-gates", "--listen"} <= set(manager)
    webhook = flags_in_help(help_text("hubcontroller", "webhook-server"))
    assert {"--manifestLimit", "--certdir", "--port"} <= set(webhook)


@pytest.mark.parametrize(("program", "command"), list(COMMANDS))
def test_every_flag_in_help_is_documented(program: str, command: str) -> None:
    page = COMMANDS[program, command]
    doc = (DOCS / page).read_text(encoding="utf-8")
    missing = [f for f in flags_in_help(help_text(program, command)) if f"`{f}" not in doc]
    assert not missing, f"`{program} {command} --help` flags not in docs/{page}: {missing}"
