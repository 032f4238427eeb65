"""A base install of agent-eval for the tests whose subject is the installed process: the wheel built
from the sources, installed into a new venv outside the repository that sees only the declared runtime
dependencies. Built once per pytest process (the `base_install` fixture in tests/e2e/conftest.py) and
shared by the wheel test and the base-install commands test.

To stay cheap it does not download the dependencies again. The venv gets agent-eval from the wheel alone
(`pip install --no-deps --no-index`), and sees, through a .pth line, a folder that holds only the
distributions the wheel's own Requires-Dist names and what they require in turn, taken from this
environment. So the package's files come from the wheel, the dependencies are exactly the declared runtime
ones (no extra, no dev tool: `mcp` and pytest are absent), and nothing of the repository is on the path.
AGENT_EVAL_REAL_INSTALL=1 installs the dependencies from the package index instead (about a minute).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import Parser
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]

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



@dataclass(frozen=True)
class BaseInstall:
    """The wheel, its METADATA, and the venv it is installed in."""

    wheel: Path
    meta: Message
    venv: Path

    @property
    def runtime(self) -> list[str]:
        """The wheel's Requires-Dist lines that no extra guards."""
        return [line for line in self.meta.get_all("Requires-Dist") or [] if "extra ==" not in line]


def make_base_install(tmp: Path) -> BaseInstall:
    """Build the wheel under `tmp` and install it into `tmp/venv` with the runtime dependencies only."""
    wheel = build_wheel(tmp)
    with zipfile.ZipFile(wheel) as zf:
        meta = Parser().parsestr(zf.read(next(f for f in zf.namelist() if f.endswith(".dist-info/METADATA"))).decode())
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    real = os.environ.get("AGENT_EVAL_REAL_INSTALL") == "1"
    install = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", str(wheel)]
    subprocess.run(install if real else [*install, "--no-deps", "--no-index"], check=True, capture_output=True,
                   timeout=600)
    done = BaseInstall(wheel, meta, venv)
    if not real:
        link_dependencies(runtime_closure(done.runtime), tmp / "deps")
        site = next((venv / "lib").glob("python3*/site-packages"))
        (site / "runtime_dependencies.pth").write_text(str(tmp / "deps") + "\n")
    return done
