"""A suite's `tools` setting as a whole: Python modules and MCP servers, their tools discovered at load.

Validation starts each MCP server once, lists its tools (tools/list) and reads its state resource, so a
server that cannot start, list or show its state is a problem of the case file (exit 2), named.
"""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_eval.records import Case
from agent_eval.errors import ConfigError
from agent_eval.suite.mcp_spec import ServerSpec, parse_server, require_mcp
from agent_eval.suite.tools import RemoteTool, ToolSet

if TYPE_CHECKING:
    from agent_eval.suite.cases import Suite

Problems = list[tuple[str, str]]


def load_suite_tools(spec: Any, base_dir: Path, initial_env: dict[str, Any] | None,
                     ) -> tuple[ToolSet | None, list[ServerSpec], Problems]:
    """Load `suite.tools` (one entry or a list of them); the merged tools, the MCP servers and the problems."""
    from agent_eval.suite.tool_loading import load_tools

    entries = spec if isinstance(spec, list) else [spec]
    problems: Problems = []
    sources: list[tuple[str, list[tuple[str, Any, dict[str, Any]]]]] = []
    servers: list[ServerSpec] = []
    backends: list[Any] = []
    for index, entry in enumerate(entries):
        where = f"suite.tools[{index}]" if isinstance(spec, list) else "suite.tools"
        if isinstance(entry, str):
            try:
                module_tools = load_tools(entry, base_dir)
            except ConfigError as exc:
                problems.append((where, str(exc)))
                continue
            sources.append((entry, module_tools.entries()))
            if module_tools.backend is not None:
                backends.append(module_tools.backend)
            continue
        server, found = parse_server(entry, index, base_dir)
        problems.extend(found)
        if server is not None:
            servers.append(server)
    if servers:
        missing = require_mcp()
        if missing:
            return None, [], problems + [("suite.tools", missing)]
        listed, found = discover(servers, initial_env)
        problems.extend(found)
        sources.extend(listed)
    problems.extend(_check_servers(servers))
    merged, found = _merge(sources)
    problems.extend(found)
    if problems:
        return None, servers, problems
    try:
        tools = ToolSet(merged)
    except ConfigError as exc:
        return None, servers, [("suite.tools", str(exc))]
    state = state_server(servers)
    if len(backends) > 1 or (backends and state is not None):
        other = backends[1].where if len(backends) > 1 else f"MCP server {state.label if state else ''}"
        return None, servers, [("suite.tools", f"a suite has one env, and both {backends[0].where} (its "
                                f"backend) and {other} keep it. Fix: keep the state in one of them.")]
    tools.backend = backends[0] if backends else None
    takes_env = tools.env_tools()
    if state is not None and takes_env:
        return None, servers, [("suite.tools", f"a suite has one env, and here it is the state resource of "
                                f"MCP server {state.label}, yet the Python tool {takes_env[0]!r} takes the "
                                "env (an `env` or `context` parameter). Fix: drop the state_resource, or "
                                "move that tool's state into the server.")]
    return tools, servers, []


def state_server(servers: list[ServerSpec]) -> ServerSpec | None:
    """The server whose state resource is the suite's env, if one has it."""
    return next((s for s in servers if s.state_resource), None)


def check_case_env(case: Case, suite: Suite) -> Problems:
    """What an MCP suite cannot check: env checks with nowhere to read the env, replay of server tools."""
    servers = suite.servers
    if not servers:
        return []
    problems: Problems = []
    has_env = state_server(servers) is not None or bool(suite.tools and suite.tools.env_tools())
    for key in ("expected_env_check", "expected_env"):
        if case.get(key) is not None and not has_env:
            problems.append((key, "this suite's env lives in its MCP server, and no server names a "
                             "\"state_resource\" to read it from. Fix: add \"state_resource\": "
                             "\"state://env\" to the server entry (docs/mcp.md shows the server side), "
                             "or remove the check."))
    if case.get("expected_env") == "replay":
        remote = sorted({c["name"] for c in case.get("expected_tools") or ()
                         if suite.tools is not None and c["name"] in suite.tools.remote})
        if remote or state_server(servers) is not None:
            problems.append(("expected_env", "\"replay\" runs expected_tools as Python functions, and "
                             f"{'the tool ' + repr(remote[0]) + ' is' if remote else 'the env is'} served by "
                             "an MCP server. Fix: write the expected final env as an object, or use "
                             "expected_env_check."))
    return problems


def _merge(sources: list[tuple[str, list[tuple[str, Any, dict[str, Any]]]]]) -> tuple[list[Any], Problems]:
    """All tools in order; a name given by two sources is a problem that suggests a server `name`."""
    seen: dict[str, str] = {}
    merged, problems = [], []
    for source, entries in sources:
        for name, fn, schema in entries:
            if name in seen:
                problems.append(("suite.tools", f"two tools are called {name!r} (from {seen[name]} and from "
                                 f"{source}). Fix: give an MCP server a \"name\", which calls its tools "
                                 "<name>__<tool>, or rename one of them."))
                continue
            seen[name] = source
            merged.append((name, fn, schema))
    return merged, problems


def _check_servers(servers: list[ServerSpec]) -> Problems:
    stateful = [s for s in servers if s.state_resource]
    if len(stateful) > 1:
        return [(f"suite.tools[{stateful[1].index}].mcp.state_resource",
                 f"a suite has one env, and both {stateful[0].label} and {stateful[1].label} name a "
                 "state_resource. Fix: keep the state_resource of the server that holds the env.")]
    return []


def discover(servers: list[ServerSpec], initial_env: dict[str, Any] | None) -> tuple[list[Any], Problems]:
    """Start every server once (together), list its tools and read its state; (sources, problems)."""
    blob = orjson.dumps(initial_env) if initial_env is not None else None
    results: list[Any] = []

    def work() -> None:
        results.extend(asyncio.run(_discover_all(servers, blob)))

    # A thread of its own, so that loading a suite works inside a running event loop as well.
    thread = threading.Thread(target=work, name="mcp-discovery", daemon=True)
    thread.start()
    thread.join()
    sources, problems = [], []
    for server, outcome in zip(servers, results, strict=True):
        where = f"suite.tools[{server.index}].mcp"
        if isinstance(outcome, str):
            problems.append((where, outcome))
            continue
        entries = []
        for tool in outcome:
            schema = {"type": "function", "function": {
                "name": server.tool_name(tool.name), "description": tool.description or "",
                "parameters": dict(tool.input_schema or {"type": "object", "properties": {}})}}
            entries.append((server.tool_name(tool.name), RemoteTool(server.index, tool.name), schema))
        if not entries:
            problems.append((where, f"MCP server {server.label} lists no tools (tools/list is empty)"))
        sources.append((f"MCP server {server.label}", entries))
    return sources, problems


async def _discover_all(servers: list[ServerSpec], blob: bytes | None) -> list[Any]:
    return list(await asyncio.gather(*(_discover_one(s, blob) for s in servers)))


async def _discover_one(server: ServerSpec, blob: bytes | None) -> Any:
    """The server's tools, or a one-paragraph message saying why they cannot be had."""
    from agent_eval.suite.mcp_client import Connection, ServerError

    connection = Connection(server, blob if server.is_per_run else None)
    fix = ("Fix: check that the server runs on its own (the command, its cwd and env)"
           if server.url is None else "Fix: start the server, or correct the url and headers")
    try:
        await connection.start()
        tools = await connection.list_tools()
        if server.state_resource:
            await connection.read_json(server.state_resource)
        return tools
    except ServerError as exc:
        return f"{exc}. {fix}."
    finally:
        await connection.close()
