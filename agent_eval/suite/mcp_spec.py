"""MCP server entries of a suite's `tools` list (docs/mcp.md): `{"mcp": {...}}`, checked and typed."""
from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_eval.limits import MCP_TIMEOUT_S

INSTALL_HINT = "pip install 'agent-eval-trials[mcp]'"
ENV_FILE_VAR = "AGENT_EVAL_ENV_FILE"
MAX_TIMEOUT_S = 86400.0
KEYS = ("command", "env", "cwd", "url", "headers", "name", "isolation", "state_resource", "timeout",
        "start_timeout")
ISOLATIONS = ("per_run", "shared")
# A bare interpreter name means the interpreter agent-eval runs in, so `["python", "server.py"]` finds the
# packages agent-eval was installed with (a shell's `python` may be another one, without `mcp`).
_PYTHONS = ("python", "python3")


@dataclass(frozen=True)
class ServerSpec:
    """One MCP server of the suite: how to reach it, its tool prefix, isolation and state resource."""

    index: int
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    isolation: str = "per_run"
    state_resource: str | None = None
    timeout: float = MCP_TIMEOUT_S  # seconds one request may take
    start_timeout: float = MCP_TIMEOUT_S  # seconds the start and `initialize` may take

    @property
    def label(self) -> str:
        """How messages name the server: its `name`, else its script (or program), else its URL."""
        if self.name:
            return self.name
        if self.url:
            from agent_eval.llm import redact_url

            return str(redact_url(self.url))
        scripts = [a for a in self.command[1:] if a.endswith((".py", ".js", ".ts", ".mjs"))]
        return scripts[0] if scripts else " ".join(self.command)[:80]

    @property
    def is_per_run(self) -> bool:
        return self.isolation == "per_run"

    def executable(self) -> tuple[str, list[str]]:
        """The program and its arguments, a bare `python`/`python3` being agent-eval's interpreter."""
        program = sys.executable if self.command[0] in _PYTHONS else self.command[0]
        return program, list(self.command[1:])

    def tool_name(self, remote: str) -> str:
        """The suite's name of the server's tool `remote`: `<name>__<tool>` when the server has a name."""
        return f"{self.name}__{remote}" if self.name else remote


def parse_server(raw: Any, index: int, base_dir: Path) -> tuple[ServerSpec | None, list[tuple[str, str]]]:
    """Check one `{"mcp": {...}}` entry of `suite.tools[index]`; the spec, or None and its problems."""
    where = f"suite.tools[{index}]"
    if not isinstance(raw, dict) or set(raw) != {"mcp"} or not isinstance(raw["mcp"], dict):
        return None, [(where, "a tools entry is a .py path, a dotted module, or {\"mcp\": {...}} "
                              "(command or url, and the settings of docs/mcp.md)")]
    body = raw["mcp"]
    where += ".mcp"
    problems: list[tuple[str, str]] = []
    add = lambda key, message: problems.append((f"{where}.{key}" if key else where, message))
    for key in body:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1, cutoff=0.6)
            add(key, "unknown key" + (f"; did you mean {close[0]!r}?" if close else
                                      f"; the keys are {', '.join(KEYS)}"))
    command, url = body.get("command"), body.get("url")
    if (command is None) == (url is None):
        add(None, "give exactly one of \"command\" (a stdio server: [\"python\", \"server.py\", ...]) "
                  "or \"url\" (a streamable HTTP server: \"http://127.0.0.1:8000/mcp\")")
    if command is not None and (not isinstance(command, list) or not command
                                or not all(isinstance(a, str) and a for a in command)):
        add("command", "must be a non-empty list of strings: the program, then its arguments")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        add("url", "must be an http:// or https:// URL such as \"http://127.0.0.1:8000/mcp\"")
    for key in ("env", "headers"):
        value = body.get(key)
        if value is not None and not (isinstance(value, dict) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
            add(key, "must be an object of strings")
    if url is not None and body.get("env") is not None:
        add("env", "sets the environment of a stdio server; a url server runs elsewhere (remove it)")
    if command is not None and body.get("headers") is not None:
        add("headers", "are sent to a url server; a stdio server has none (remove them)")
    cwd = body.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or url is not None):
        add("cwd", "must be a folder (relative to the case file) for a stdio server")
    name = body.get("name")
    if name is not None and (not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum()):
        add("name", "must be letters, digits, '_' or '-' (it prefixes the tool names: <name>__<tool>)")
    isolation = body.get("isolation", "shared" if url is not None else "per_run")
    if isolation not in ISOLATIONS:
        add("isolation", "must be \"per_run\" (a fresh server for every run) or \"shared\"")
    elif isolation == "per_run" and url is not None:
        add("isolation", "a url server is one server that every run talks to, so it can only be \"shared\"; "
                         "use a stdio command for a fresh server per run")
    state = body.get("state_resource")
    if state is not None and (not isinstance(state, str) or "://" not in state):
        add("state_resource", "must be the URI of an MCP resource, such as \"state://env\"")
    for key in ("timeout", "start_timeout"):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 < value <= MAX_TIMEOUT_S):
            add(key, f"must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (the default is "
                     f"{MCP_TIMEOUT_S:g})")
    if problems:
        return None, problems
    folder = (base_dir / cwd) if cwd is not None else base_dir
    if command is not None and not folder.is_dir():
        return None, [(f"{where}.cwd", f"{folder} is not a folder; fix the path (relative to the case file)")]
    return ServerSpec(index=index, command=tuple(command or ()), env=dict(body.get("env") or {}),
                      cwd=folder if command is not None else None, url=url,
                      headers=dict(body.get("headers") or {}), name=name, isolation=isolation,
                      state_resource=state, timeout=float(body.get("timeout") or MCP_TIMEOUT_S),
                      start_timeout=float(body.get("start_timeout") or MCP_TIMEOUT_S)), []


def require_mcp() -> str | None:
    """None when the `mcp` package can be imported, else the message that says how to install it."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return f"MCP servers need the mcp package, which is not installed. Fix: {INSTALL_HINT}"
    return None
