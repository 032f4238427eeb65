"""The package's shape: no import cycles (imports inside functions count) and no module past 400 lines."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "agent_eval"
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The agent_eval modules this tree imports, anywhere but under `if TYPE_CHECKING:`."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            # `from pkg import mod` imports the submodule pkg.mod when there is one.
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {name for name in found if name in known and name != module}


def import_graph() -> dict[str, set[str]]:
    """Every agent_eval module and the agent_eval modules it imports."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(files)
    return {name: _imports(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py", known)
            for name, path in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    edges = graph
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(edges[node]):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checker_sees_a_cycle_through_a_function_level_import() -> None:
    graph = {"p": set(), "p.a": {"p.b"}, "p.b": set()}
    assert find_cycle(graph) is None
    graph["p.b"] = {"p.a"}
    assert find_cycle(graph) in (["p.a", "p.b", "p.a"], ["p.b", "p.a", "p.b"])
    tree = ast.parse("def f():\n    from p import a\nif TYPE_CHECKING:\n    import p.b\n")
    assert _imports(tree, "p.c", False, {"p", "p.a", "p.b", "p.c"}) == {"p", "p.a"}


def test_no_module_is_over_400_lines() -> None:
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_at_most_8_modules_directly_in_the_package() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


STAGES = ("suite", "run", "score", "report", "ingest")


def stage_imports_of_commands(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(stage module, commands/ or cli module) for every import of a command by a stage."""
    def is_command(name: str) -> bool:
        return name in ("agent_eval.cli", "agent_eval.commands") or name.startswith("agent_eval.commands.")

    def is_stage(name: str) -> bool:
        return any(name == f"agent_eval.{s}" or name.startswith(f"agent_eval.{s}.") for s in STAGES)

    return sorted((m, dep) for m, deps in graph.items() if is_stage(m) for dep in deps if is_command(dep))


def test_no_stage_imports_commands_or_the_cli() -> None:
    assert stage_imports_of_commands(import_graph()) == []
    # the checker sees one
    assert stage_imports_of_commands({"agent_eval.run.x": {"agent_eval.commands.run"},
                                      "agent_eval.commands.run": {"agent_eval.run.x"}}) == [
        ("agent_eval.run.x", "agent_eval.commands.run")]
