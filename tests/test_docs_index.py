"""docs/index.md lists every page of docs/ under one of its four kinds, and the README stays a door."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("## Learn: a tutorial", "## Do: how-to guides", "## Look up: reference", "## Understand: explanations")


def test_the_index_lists_every_page_by_task():
    index = (ROOT / "docs" / "index.md").read_text()
    assert [line for line in index.splitlines() if line.startswith("## ")] == list(KINDS)
    linked = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages - linked == set(), "add these pages to docs/index.md"


def test_the_readme_is_a_door_of_at_most_200_lines():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    quick = readme[readme.index("## Quick start"):]
    quick = quick[:quick.index("\n## ", 1)]
    commands = re.findall(r"```\n(.*?)```", quick, re.S)
    assert [line for block in commands for line in block.splitlines()] == ["make demo", "make test"]
    for heading in ("## Install", "## An example", "docs/index.md"):
        assert heading in readme
