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
    import agent_eval

    assert agent_eval.__version__ == version(DIST)  # the package's own copy never drifts from pyproject


def make_plan(target: str, venv: Path) -> str:
    """What `make TARGET` would run (`make -n`), with .venv at `venv`."""
    import subprocess

    done = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_demo_installs_the_runtime_and_mcp_only_and_make_test_adds_dev(tmp_path):
    venv = tmp_path / ".venv"  # missing: both targets start from nothing
    demo, test, dist = make_plan("demo", venv), make_plan("test", venv), make_plan("dist", venv)
    assert "pip install -q -e '.[mcp]'" in demo and "[dev]" not in demo
    assert "cases/test_cases.json" in demo and "cases/demo_agent_cases.json" in demo and "mcp_cases.json" in demo
    assert "pip install -q -e '.[dev]'" in test and "pytest" in test
    assert "-m build --outdir dist" in dist and "[dev]" not in dist
    # after `make test`, the dev venv serves the demo too: nothing is installed again
    venv.mkdir()
    for stamp in (".installed", ".demo-installed"):
        (venv / stamp).touch()
    assert "pip install" not in make_plan("demo", venv) and "pip install" not in make_plan("test", venv)
