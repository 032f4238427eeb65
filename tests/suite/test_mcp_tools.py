"""Loading a suite whose tools include MCP servers (agent_eval/suite/mcp_tools.py, mcp_spec.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agent_eval.errors import CaseFileError
from agent_eval.suite.cases import load_suite
from tests.builders import FIXTURES

# Each test starts real MCP server processes (about a second of imports each): `make test` runs them,
# `make test-fast` leaves them out.
pytestmark = pytest.mark.slow

pytest.importorskip("mcp")

SERVER = FIXTURES / "mcp" / "bank_server.py"
STDIO = {"command": ["python", str(SERVER)], "state_resource": "state://env"}
CHECK = {"path": ["accounts", "alice"], "equals": 100}
ENV_TOOL = '''
from agent_eval import tool


@tool
def note(env: dict, text: str) -> str:
    """Write a note."""
    env["note"] = text
    return "ok"
'''


def write(folder: Path, tools: list, cases: list[dict] | None = None, **suite: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.py").write_text(ENV_TOOL)
    cases = cases or [{"id": "c", "query": "x", "expected_env_check": CHECK}]
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"tools": tools, **suite}, "cases": cases}))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(CaseFileError) as info:
        load_suite(path)
    return [f"{p.case_id}|{p.field}|{p.message}" for p in info.value.problems]


def test_tools_come_from_tools_list_with_the_name_prefix(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, ["notes.py", {"mcp": {**STDIO, "name": "bank", "state_resource": None}}],
                             [{"id": "c", "query": "x", "expect": {"contains": "x"}}]))
    assert sorted(suite.tools.names) == ["bank__balance", "bank__crash", "bank__deposit", "bank__hang",
                                         "bank__logo", "bank__report", "bank__withdraw", "note"]
    schema = next(s for s in suite.tools.schemas if s["function"]["name"] == "bank__deposit")["function"]
    assert schema["description"] == "Add money to an account."
    assert schema["parameters"]["required"] == ["account", "amount"]
    assert suite.tools.remote["bank__deposit"].remote == "deposit"


def test_entry_problems_are_named_with_the_fix(tmp_path: Path) -> None:
    found = problems(write(tmp_path, [
        {"mcp": {"comand": ["python", "x.py"]}},
        {"mcp": {"url": "http://127.0.0.1:9/mcp", "isolation": "per_run"}},
        {"mcp": {"url": "ftp://x", "isolation": "sometimes"}},
    ]))
    text = "\n".join(found)
    assert "suite.tools[0].mcp.comand|unknown key; did you mean 'command'?" in text
    assert "suite.tools[0].mcp|give exactly one of \"command\"" in text
    assert "suite.tools[1].mcp.isolation|a url server is one server that every run talks to" in text
    assert "suite.tools[2].mcp.url|must be an http:// or https:// URL" in text
    assert "suite.tools[2].mcp.isolation|must be \"per_run\"" in text


def test_duplicate_tool_names_suggest_a_server_name(tmp_path: Path) -> None:
    (tmp_path / "more.py").write_text(
        'from agent_eval import tool\n\n\n@tool\ndef balance(account: str) -> str:\n    """B."""\n    return "0"\n')
    found = problems(write(tmp_path, ["more.py", {"mcp": STDIO}]))
    assert any("two tools are called 'balance'" in p and "give an MCP server a \"name\"" in p for p in found)


def test_env_checks_need_a_state_resource(tmp_path: Path) -> None:
    found = problems(write(tmp_path, [{"mcp": {"command": STDIO["command"]}}]))
    assert found == ["c|expected_env_check|this suite's env lives in its MCP server, and no server names a "
                     "\"state_resource\" to read it from. Fix: add \"state_resource\": \"state://env\" to the "
                     "server entry (docs/mcp.md shows the server side), or remove the check."]


def test_replay_needs_python_tools(tmp_path: Path) -> None:
    case = {"id": "c", "query": "x", "expected_tools": [{"name": "deposit", "args": {"account": "a", "amount": 1}}],
            "expected_env": "replay"}
    found = problems(write(tmp_path, [{"mcp": STDIO}], [case]))
    assert len(found) == 1 and found[0].startswith("c|expected_env|\"replay\" runs expected_tools as Python")


def test_one_env_per_suite(tmp_path: Path) -> None:
    found = problems(write(tmp_path, ["notes.py", {"mcp": STDIO}]))
    assert any("the Python tool 'note' takes the env" in p for p in found)
    found = problems(write(tmp_path, [{"mcp": {**STDIO, "name": "a"}}, {"mcp": {**STDIO, "name": "b"}}]))
    assert any("suite.tools[1].mcp.state_resource|a suite has one env" in p for p in found)


def test_a_server_that_cannot_start_is_named(tmp_path: Path) -> None:
    found = problems(write(tmp_path, [{"mcp": {**STDIO, "command": [*STDIO["command"], "--fail-start"]}}]))
    assert len(found) == 1
    assert found[0].startswith(f"None|suite.tools[0].mcp|MCP server {SERVER} failed to start")
    assert "refusing to start (--fail-start)" in found[0]  # the tail of its stderr
    assert found[0].endswith("Fix: check that the server runs on its own (the command, its cwd and env).")


@pytest.mark.e2e  # a fresh CLI process that cannot import mcp
def test_without_the_mcp_package_the_fix_is_the_install_command(tmp_path: Path) -> None:
    shim = tmp_path / "shim" / "mcp"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('no mcp here')\n")
    path = write(tmp_path / "suite", [{"mcp": STDIO}])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([str(Path(sys.executable).parent / "agent-eval"), "validate", "--cases", str(path)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert "pip install 'agent-eval-trials[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr
