"""Every feature works from the base install: agent_eval imports only what pyproject.toml declares
(a base dependency, or what a declared extra of one brings: `openai[aiohttp]` brings aiohttp), and an
optional extra's packages only lazily (inside a function, never at a module's top level) with the install
hint `pip install 'agent-eval-trials[EXTRA]'` in the package. An undeclared import such as `httpx` (which
the dev extras happen to bring) fails here, not on a user's machine."""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[([^\]]*)\])?")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement(text: str) -> tuple[str, list[str]]:
    match = _NAME.match(text)
    assert match, text
    return _norm(match.group(1)), [e.strip() for e in (match.group(2) or "").split(",") if e.strip()]


def _extra_requirements(dist: str, extra: str) -> set[str]:
    """The distributions `dist[extra]` adds, from the installed metadata."""
    try:
        found = requires(dist) or []
    except PackageNotFoundError:
        return set()
    return {_requirement(r)[0] for r in found if re.search(rf"extra\s*==\s*['\"]{re.escape(extra)}['\"]", r)}


# A package only its host imports (pytest loads agent_eval/pytest_plugin through its pytest11 entry point),
# so the host is there whenever the package is.
HOSTED = {"agent_eval/pytest_plugin/": "pytest"}


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """(the base install's declared distributions, {extra: the distributions installing it brings})."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base: set[str] = set()
    for text in project["dependencies"]:
        name, extras = _requirement(text)
        base.add(name)
        for extra in extras:
            base |= _extra_requirements(name, extra)
    extras = {extra: {_requirement(r)[0] for r in reqs} - base  # what it names, never its whole tree
              for extra, reqs in project["optional-dependencies"].items() if extra != "dev"}
    return base, extras


def imports(root: Path = ROOT) -> list[tuple[str, int, str, bool]]:
    """(file, line, top-level module, imported at the module's top level) of each import in agent_eval."""
    found = []
    for path in sorted((root / "agent_eval").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        top_level = {id(node) for node in tree.body}
        guarded = {id(n) for node in tree.body if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for n in ast.walk(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "agent_eval" or id(node) in guarded:
                    continue
                if any(str(path.relative_to(root)).startswith(where) and top == host
                       for where, host in HOSTED.items()):
                    continue
                found.append((str(path.relative_to(root)), node.lineno, top, id(node) in top_level))
    return found


def test_agent_eval_imports_only_declared_dependencies_and_extras_lazily() -> None:
    base, extras = declared()
    owners = packages_distributions()
    problems = []
    used_extras = set()
    for file, line, module, at_top in imports():
        dists = {_norm(d) for d in owners.get(module, [module])}
        if dists & base:
            continue
        extra = next((name for name, brought in extras.items() if dists & brought), None)
        if extra is None:
            problems.append(f"{file}:{line}: imports {module}, which pyproject.toml does not declare")
        elif at_top:
            problems.append(f"{file}:{line}: imports {module} (extra {extra}) at the top level: import it lazily")
        else:
            used_extras.add(extra)
    source = "".join(p.read_text() for p in (ROOT / "agent_eval").rglob("*.py"))
    problems += [f"no install hint names agent-eval-trials[{extra}]" for extra in sorted(used_extras)
                 if f"agent-eval-trials[{extra}]" not in source]
    assert problems == []


def test_the_scan_sees_an_undeclared_import(tmp_path: Path) -> None:
    # The check itself: httpx (brought only by the dev extras), even imported lazily, is refused.
    (tmp_path / "agent_eval").mkdir()
    (tmp_path / "agent_eval" / "sender.py").write_text("def send():\n    import httpx\n    return httpx\n")
    assert imports(tmp_path) == [("agent_eval/sender.py", 2, "httpx", False)]
    base, extras = declared()
    dists = {_norm(d) for d in packages_distributions().get("httpx", ["httpx"])}
    assert not dists & base and not any(dists & brought for brought in extras.values())
