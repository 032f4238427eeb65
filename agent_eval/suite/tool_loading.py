"""Load a tools module in either form: the seed's TOOL_REGISTRY + TOOLS_SCHEMA, or
functions decorated with `agent_eval.tool`. Every failure is one ConfigError paragraph, never a traceback.
"""
from __future__ import annotations

from typing import Any

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

from agent_eval.errors import ConfigError
from agent_eval.tracebacks import describe
from agent_eval.suite.backend import backend_of
from agent_eval.suite.imports import import_module_ref
from agent_eval.suite.tools import TOOL_MARK, ToolMark, ToolSet, build_schema, marked_name, normalize_schema

TOOLS_FIX = ("Fix the suite's `tools` setting: a .py path (relative to the case file's folder) or a "
             "dotted module name that is importable.")


def load_tools(spec: str, base_dir: Path) -> ToolSet:
    """Load the tools module `spec` (a .py path relative to `base_dir`, or a dotted module name).

    Raises ConfigError, naming the module and the fix, when it cannot be imported or holds no tools.
    """
    module = import_module_ref(spec, Path(base_dir), "tools module", TOOLS_FIX)
    where = str(Path(base_dir) / spec) if spec.endswith(".py") or "/" in spec or "\\" in spec else spec
    try:
        tools = ToolSet(_collect(module, where))
        tools.backend = backend_of(module, where)
    except ConfigError as e:
        msg = str(e)
        raise ConfigError(msg if msg.startswith(where) else f"{where}: {msg}") from None
    return tools


def _collect(module: ModuleType, where: str) -> list[tuple[str, Callable[..., Any], dict[str, Any]]]:
    """Gather (name, function, schema) from the seed form and from decorated functions, in a stable order."""
    registry = getattr(module, "TOOL_REGISTRY", None)
    schemas = getattr(module, "TOOLS_SCHEMA", None)
    decorated = _decorated(module)
    if registry is None and schemas is None and not decorated:
        raise ConfigError(f"{where}: no tools found. Fix: define TOOL_REGISTRY = {{name: function}} "
                          "with TOOLS_SCHEMA = [OpenAI function schemas], or decorate functions "
                          "with @agent_eval.tool.")
    if registry is not None and not (isinstance(registry, Mapping) and all(
            isinstance(k, str) and callable(v) for k, v in registry.items())):
        raise ConfigError(f"{where}: TOOL_REGISTRY must map tool names (str) to functions. Fix it.")
    if schemas is not None and not isinstance(schemas, (list, tuple)):
        raise ConfigError(f"{where}: TOOLS_SCHEMA must be a list of OpenAI function schemas. Fix it.")
    functions: dict[str, Callable[..., Any]] = dict(registry or {})
    given: dict[str, dict[str, Any]] = {}
    for item in schemas or []:
        full = normalize_schema(item)
        name = full["function"]["name"]
        if not name:
            raise ConfigError(f"{where}: a TOOLS_SCHEMA entry has no function name. Fix: add \"name\".")
        if name in given:
            raise ConfigError(f"{where}: TOOLS_SCHEMA defines tool {name!r} twice. Fix: keep one entry.")
        if name not in functions:
            raise ConfigError(f"{where}: TOOLS_SCHEMA has a schema for {name!r} but no function. Fix: add "
                              f"{name!r} to TOOL_REGISTRY, or remove its schema.")
        given[name] = full
    given_order = list(given)
    for name, (fn, mark) in decorated.items():
        if name in functions and functions[name] is not fn:
            raise ConfigError(f"{where}: tool {name!r} is defined twice. Fix: rename one of them "
                              "(@tool(name=...)) or remove it from TOOL_REGISTRY.")
        functions[name] = fn
        if mark.schema is not None and name not in given:
            given[name] = normalize_schema(mark.schema, name)
    order = list(dict.fromkeys([*given_order, *functions]))
    entries = []
    for name in order:
        fn = functions[name]
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise ConfigError(f"{where}: tool {name!r} is a generator function (it yields); a tool returns "
                              "its result, which the agent sees. Fix: return the items (a list, or text) "
                              "instead of yielding them.")
        schema = given.get(name)
        if schema is None:
            try:
                schema = build_schema(fn, name)
            except Exception as e:  # noqa: BLE001 - pydantic rejects many hints, each its own way
                raise ConfigError(f"{where}: cannot build the schema of tool {name!r} from its type hints "
                                  f"({describe(e)}). Fix: use JSON-compatible type hints, or give the "
                                  "schema explicitly (@tool(schema=...) or a TOOLS_SCHEMA entry).") from None
        entries.append((name, fn, schema))
    return entries


def _decorated(module: ModuleType) -> dict[str, tuple[Callable[..., Any], ToolMark]]:
    """The module's @tool functions by tool name, in definition order (aliases of one function count once)."""
    found: dict[str, tuple[Callable[..., Any], ToolMark]] = {}
    for value in list(vars(module).values()):
        mark = getattr(value, TOOL_MARK, None) if callable(value) else None
        if not isinstance(mark, ToolMark):
            continue
        name = marked_name(value, mark)
        if name in found and found[name][0] is not value:
            raise ConfigError(f"tool {name!r} is defined twice by @tool. "
                              "Fix: rename one of them (@tool(name=...)).")
        found[name] = (value, mark)
    return found
