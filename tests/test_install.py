"""The door: the distribution's own name on PyPI, and every install hint that names it."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = "agent-eval-trials"


def test_the_distribution_has_a_name_of_its_own_and_the_command_stays():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DIST
    assert project["scripts"] == {"agent-eval": "agent_eval.cli:main"}


def test_no_install_hint_names_the_unrelated_project():
    files = [p for d in ("agent_eval", "docs", "cases", "bench") for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".md", ".js", ".html") and "__pycache__" not in p.parts]
    files += [ROOT / "README.md", ROOT / "Makefile"]
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"(?<![/\w.-])agent-eval\[", line)
            or re.search(r"pip install\s+['\"]?agent-eval(?!-trials)", line)]
    assert hits == []
    readme = (ROOT / "README.md").read_text()
    assert f"pip install '{DIST}[mcp]'" in readme or f"'{DIST}[mcp]'" in (ROOT / "docs" / "mcp.md").read_text()


def test_version_prints_the_installed_distributions_version():
    from importlib.metadata import version

    from tests.cli import run_cli

    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout == f"agent-eval {version(DIST)}\n"
    assert version(DIST) == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
