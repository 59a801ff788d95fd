"""Relative links in the docs and the README point at files and headings that exist.

A link ``[text](page.md#anchor)`` must name a file of the repository and, with
an anchor, a heading of that page (GitHub's anchor rules: lower case, spaces
to ``-``, punctuation dropped). Links to other sites are not followed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$", re.M)
_FENCED = re.compile(r"^```.*?^```", re.M | re.S)


def anchor(title: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*_]", "", title).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of every heading of a page (code blocks left out)."""
    text = _FENCED.sub("", page.read_text(encoding="utf-8"))
    return {anchor(m["title"]) for m in _HEADING.finditer(text)}


def links(page: Path) -> list[str]:
    """Every relative link target of a page (code blocks left out)."""
    text = _FENCED.sub("", page.read_text(encoding="utf-8"))
    targets = [m["target"] for m in _LINK.finditer(text)]
    return [t for t in targets if not re.match(r"[a-z]+:", t)]


def test_anchor_rules() -> None:
    assert anchor("Executor: whose permissions apply a work") == (
        "executor-whose-permissions-apply-a-work"
    )
    assert anchor("Garbage collection after completion (TTL)") == (
        "garbage-collection-after-completion-ttl"
    )
    assert anchor("Admin API (`/kubesim/`)") == "admin-api-kubesim"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no such heading in {file.name}")
    assert not broken, f"{page.relative_to(REPO)}: {broken}"
