"""The wheel a user installs: built from the sources, installed into a new venv outside the repository,
then `agent-eval --version`, `validate` and `run` on a suite written in a temporary folder.

This test earns its subprocesses: the installed process is what is under test. To stay cheap it does not
download the dependencies again. The new venv gets agent-eval from the wheel alone (`pip install --no-deps
--no-index`), and sees, through a .pth line, a folder that holds only the distributions the wheel's own
Requires-Dist names and what they require in turn, taken from this environment. So the package's files
come from the wheel, the dependencies are exactly the declared runtime ones (no extra, no dev tool: `mcp`
and pytest are absent), and nothing of the repository is on the path. AGENT_EVAL_REAL_INSTALL=1 installs
the dependencies from the package index instead (about a minute).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import orjson
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
DIST = "agent-eval-trials"

TOOLS = '''
from agent_eval import tool


@tool
def get_balance(account: str, env: dict) -> int:
    """The balance of an account."""
    return env["balances"][account]
'''

AGENT = '''
def agent(task):
    balance = task.call_tool("get_balance", account="alice")
    return f"Alice has {balance} euros."
'''


def build_wheel(tmp: Path) -> Path:
    """The wheel, built by pip from a copy of the sources (the repository's build/ folder is never used)."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "agent_eval", src / "agent_eval", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(src)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp / "dist").glob("*.whl")
    return wheel


def runtime_closure(requires: list[str]) -> set[str]:
    """The distributions `requires` (Requires-Dist lines without an extra) pull in, as pip would install."""
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    todo = [(Requirement(line), frozenset[str]()) for line in requires]
    while todo:
        req, wanted = todo.pop()
        if req.marker and not any(req.marker.evaluate({"extra": e}) for e in (wanted or {""})):
            continue
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        names.add(key[0])
        todo += [(Requirement(line), key[1]) for line in metadata.distribution(req.name).requires or []]
    return names


def link_dependencies(names: set[str], into: Path) -> None:
    """Symlink each distribution's top-level files and metadata folder into `into`."""
    into.mkdir()
    for name in names:
        dist = metadata.distribution(name)
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")}:
            source = Path(str(dist.locate_file(top)))
            if source.exists() and not (into / top).exists():
                (into / top).symlink_to(source)


def test_the_wheel_installs_into_a_new_venv_and_runs_a_suite_outside_the_repository(tmp_path: Path):
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        files = zf.namelist()
        meta = Parser().parsestr(zf.read(next(f for f in files if f.endswith(".dist-info/METADATA"))).decode())
    assert {"agent_eval/report/assets/report.js", "agent_eval/report/assets/report.html",
            "agent_eval/report/assets/report.css", "agent_eval/cli.py"} <= set(files)
    assert not [f for f in files if f.startswith("tests/") or "/tests/" in f or f.startswith("cases/")]
    assert meta["Name"] == DIST
    requires = meta.get_all("Requires-Dist") or []
    runtime = [line for line in requires if "extra ==" not in line]
    assert sorted(runtime) == sorted(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    real = os.environ.get("AGENT_EVAL_REAL_INSTALL") == "1"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)]
    subprocess.run(install if real else [*install, "--no-deps", "--no-index"], check=True, capture_output=True,
                   timeout=600)
    if not real:
        link_dependencies(runtime_closure(runtime), tmp_path / "deps")
        site = next((venv / "lib").glob("python3*/site-packages"))
        (site / "runtime_dependencies.pth").write_text(str(tmp_path / "deps") + "\n")

    work = tmp_path / "work"  # the user's repository: a suite of their own, no agent-eval source
    work.mkdir()
    (work / "tools.py").write_text(TOOLS)
    (work / "bank_agent.py").write_text(AGENT)
    suite = {"name": "bank", "tools": "tools.py", "agent": "bank_agent.py:agent",
             "initial_env": {"balances": {"alice": 42}}}
    cases = [{"id": "balance", "query": "How much does Alice have?", "expected_tools": [{"name": "get_balance"}],
              "expect": {"contains": "42 euros"}}]
    (work / "cases.json").write_bytes(orjson.dumps({"suite": suite, "cases": cases}))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AGENT_EVAL_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1", COLUMNS="200")

    def sh(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True, timeout=300)

    where = sh(str(python), "-c", "import agent_eval, importlib.util as u; "
               "print(agent_eval.__file__); print(u.find_spec('mcp'), u.find_spec('pytest'))")
    assert where.returncode == 0, where.stderr
    assert where.stdout.splitlines() == [f"{next((venv / 'lib').glob('python3*/site-packages'))}/agent_eval/"
                                         "__init__.py", "None None"]
    agent_eval = str(venv / "bin" / "agent-eval")
    version = sh(agent_eval, "--version")
    assert (version.returncode, version.stdout) == (0, f"agent-eval {meta['Version']}\n")
    valid = sh(agent_eval, "validate", "--cases", "cases.json")
    assert valid.returncode == 0, valid.stdout + valid.stderr
    ran = sh(agent_eval, "run", "--cases", "cases.json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (report,) = (work / "reports").glob("*.json")
    assert orjson.loads(report.read_bytes())["summary"]["cases_passed"] == 1
    page = report.with_suffix(".html").read_text()
    assert "balance" in page and "<script" in page  # the page was drawn from the wheel's assets
