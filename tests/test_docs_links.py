"""Every relative link in the README and docs/ names a file that exists, and a heading that it has."""
from __future__ import annotations

import re
from pathlib import Path

from tests.builders import ROOT

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    body = _FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", body, re.M)}


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_slug_follows_githubs_rule():
    assert _slug("Failed or error") == "failed-or-error"
    assert _slug("From Python: `run_suite`") == "from-python-run_suite"
    assert _slug("`--gate METRIC[=MAX_DROP]`") == "--gate-metricmax_drop"


def test_every_relative_link_resolves_to_a_file_and_heading():
    broken = []
    for page in _pages():
        body = _FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in _LINK.findall(body):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
