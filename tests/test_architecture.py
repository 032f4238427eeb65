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


# ---------------------------------------------------------------- the layering table

ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
COMMANDS = ("commands", "cli")
FIXED_STAGES = ("suite", "run", "score", "report", "ingest", "provider", "bridge")


def package_of(module: str) -> str:
    """The row of the layering table a module belongs to: its subpackage, its top-level module's name, or
    `agent_eval` for the package's __init__ (the public API)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layering_table(text: str) -> dict[str, set[str]]:
    """The table under "## Layering" of docs/architecture.md: package -> the packages it may import."""
    section = text.split("## Layering", 1)[1].split("\n## ", 1)[0]
    table: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        allowed = {name.strip().strip("`") for name in cells[1].split(",")} if cells[1] != "nothing" else set()
        table[cells[0].strip("`")] = allowed
    return table


def table_problems(table: dict[str, set[str]]) -> list[str]:
    """The fixed rules, checked on the table itself: no stage may import commands/ or the CLI, no two
    packages may import each other, and every package named is a row."""
    problems = []
    for pkg, allowed in sorted(table.items()):
        if pkg in FIXED_STAGES and allowed & set(COMMANDS):
            problems.append(f"stage {pkg} may import {sorted(allowed & set(COMMANDS))}")
        problems += [f"{pkg} and {other} may import each other" for other in sorted(allowed)
                     if pkg < other and pkg in table.get(other, ())]
        problems += [f"{pkg} may import {other}, which has no row" for other in sorted(allowed - set(table))]
    return problems


def layering_violations(graph: dict[str, set[str]], table: dict[str, set[str]]) -> list[str]:
    """Every import between packages that the table does not allow, as "module -> module (a -> b)"."""
    out = []
    for module, deps in sorted(graph.items()):
        pkg = package_of(module)
        if pkg not in table:
            out.append(f"{module}: its package {pkg!r} has no row in the table")
            continue
        for dep in sorted(deps):
            other = package_of(dep)
            if other != pkg and other not in table[pkg]:
                out.append(f"{module} -> {dep} ({pkg} may not import {other})")
    return out


def test_the_written_layering_holds() -> None:
    table = layering_table(ARCHITECTURE.read_text(encoding="utf-8"))
    assert {"suite", "run", "score", "report", "ingest", "commands", "cli", "records", "llm"} <= set(table)
    assert table_problems(table) == []
    assert layering_violations(import_graph(), table) == []


def test_the_layering_check_fails_on_a_bad_graph_or_table() -> None:
    table = layering_table("## Layering\n| Package | May import |\n| --- | --- |\n| `records` | nothing |\n"
                           "| `score` | `records` |\n| `run` | `score`, `records` |\n| `commands` | `run`, `score` |\n"
                           "## Next\n| `ignored` | `run` |\n")
    assert table == {"records": set(), "score": {"records"}, "run": {"score", "records"},
                     "commands": {"run", "score"}}
    good = {"agent_eval.run.player": {"agent_eval.score.pipeline", "agent_eval.run.sandbox"},
            "agent_eval.run.sandbox": set(), "agent_eval.score.pipeline": {"agent_eval.records"},
            "agent_eval.records": set()}
    assert layering_violations(good, table) == []
    # score reaching back into run, a stage importing a command, a package with no row
    bad = {**good, "agent_eval.score.rescore": {"agent_eval.run.sandbox"},
           "agent_eval.run.x": {"agent_eval.commands.run"}, "agent_eval.newpkg.y": set()}
    assert layering_violations(bad, table) == [
        "agent_eval.newpkg.y: its package 'newpkg' has no row in the table",
        "agent_eval.run.x -> agent_eval.commands.run (run may not import commands)",
        "agent_eval.score.rescore -> agent_eval.run.sandbox (score may not import run)"]
    assert table_problems(table) == []
    assert table_problems({**table, "score": {"records", "run"}, "run": {"score", "commands"}}) == [
        "commands and run may import each other", "stage run may import ['commands']",
        "run and score may import each other"]
    assert table_problems({"run": {"nowhere"}}) == ["run may import nowhere, which has no row"]


# ---------------------------------------------------------------- one guard around user code

GUARD = "agent_eval/tracebacks.py"
# The process boundaries, each a place where whatever ended the work must be caught, not a call of user code.
BOUNDARIES = {
    ("agent_eval/run/worker.py", "process_main"),  # a worker process's top level: the driver shows the bug
    ("agent_eval/suite/mcp_client.py", "Connection._own"),  # the task owning an MCP session, awaited by no one
    ("agent_eval/commands/library.py", "_Call._play"),  # a run_suite call's thread: its caller raises what it got
}


def _catches_everything(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(name is None or (isinstance(name, ast.Name) and name.id == "BaseException") for name in names)


def _suppresses_everything(node: ast.Call) -> bool:
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return called == "suppress" and any(isinstance(a, ast.Name) and a.id == "BaseException" for a in node.args)


def catch_all_sites(tree: ast.AST) -> list[str]:
    """The functions (`Class.method`) holding an `except BaseException`, a bare `except:` or a
    `suppress(BaseException)`, once per occurrence; `<module>` outside any function."""
    found: list[str] = []

    def visit(node: ast.AST, where: list[str]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            where = [*where, node.name]
        if (isinstance(node, ast.ExceptHandler) and _catches_everything(node)) or (
                isinstance(node, ast.Call) and _suppresses_everything(node)):
            found.append(".".join(where) or "<module>")
        for child in ast.iter_child_nodes(node):
            visit(child, where)

    visit(tree, [])
    return found


def test_except_base_exception_only_in_the_guard_and_at_process_boundaries() -> None:
    sites = sorted((str(path.relative_to(PACKAGE.parent)), function)
                   for path in PACKAGE.rglob("*.py") if str(path.relative_to(PACKAGE.parent)) != GUARD
                   for function in catch_all_sites(ast.parse(path.read_text(encoding="utf-8"))))
    stray = [f"{file}: {function}" for file, function in sites if (file, function) not in BOUNDARIES]
    assert not stray, ("user code is called through agent_eval/tracebacks.py (call_user, await_user, call_user_or); "
                       f"cleanup is a try/finally; a new process boundary joins BOUNDARIES: {stray}")
    assert set(sites) == BOUNDARIES  # a boundary that is gone leaves the list too
    guarded = catch_all_sites(ast.parse((PACKAGE.parent / GUARD).read_text(encoding="utf-8")))
    assert set(guarded) == {"call_user", "await_user", "call_user_or"}


def test_the_catch_all_checker_sees_each_form() -> None:
    source = """
try:
    f()
except BaseException:
    pass
class C:
    def m(self):
        try:
            f()
        except (ValueError, BaseException):
            pass
def g():
    try:
        f()
    except:
        pass
    with contextlib.suppress(BaseException):
        f()
def fine():
    try:
        f()
    except Exception:
        pass
    with suppress(OSError):
        f()
"""
    assert catch_all_sites(ast.parse(source)) == ["<module>", "C.m", "g", "g"]
