"""One reason per case (a tool's exception included), the same string in the terminal, Markdown, JUnit and
the HTML page; `-v` lists each raised tool call with the user's frames. The CLI runs in-process."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from tests.builders import clean_env
from tests.cli import run_cli

# Line numbers matter: reset_password raises on line 7 of tools.py.
TOOLS = '''from agent_eval import ToolError, tool


@tool
def reset_password(user: str, env: dict) -> str:
    """Reset a user's password."""
    accounts = env["accounts"]
    return accounts[user]


@tool
def refuse(env: dict) -> str:
    """A tool error the tool means."""
    raise ToolError("not allowed")
'''

AGENT = '''
from agent_eval import ToolError


def agent(task):
    try:
        task.call_tool("refuse")
    except ToolError:
        pass
    if task.input == "reset":
        try:
            task.call_tool("reset_password", user="ann")
        except ToolError:
            return "sorry"
    if task.input == "crash":
        task.call_tool("reset_password", user="ann")
    return "sorry"
'''


def invoke(*args: object) -> tuple[int, str, str]:
    """`agent-eval ARGS...` in this process, 200 columns wide: (exit code, stdout, stderr)."""
    result = run_cli(*args, env={**clean_env(), "COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "desk"
    folder.mkdir()
    (folder / "tools.py").write_text(TOOLS)
    (folder / "desk_agent.py").write_text(AGENT)
    cases = [{"id": "reset", "query": "reset", "expect": {"contains": "done"}},
             {"id": "crash", "query": "crash", "expect": {"contains": "done"}},
             {"id": "refused", "query": "other", "expect": {"contains": "done"}}]
    block = {"name": "desk", "tools": "tools.py", "agent": "desk_agent.py:agent", "initial_env": {}}
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": block, "cases": cases}))
    return path


def test_a_raising_tool_is_the_reason_everywhere_and_v_lists_its_frames(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = invoke("run", "--cases", suite, "--output-dir", out, "-v",
                                  "--junit", out / "results.xml", "--markdown", out / "summary.md")
    assert code == 1, stdout + stderr
    tool = "tool KeyError: 'accounts' (tools.py:7 in reset_password)"
    reasons = {"reset": f"expect:contains: reply lacks [\"done\"]; reply: \"sorry\"; {tool}",
               "crash": f"agent_error: ToolError: KeyError: 'accounts' (desk_agent.py:16 in agent); {tool}",
               # A ToolError the tool raised on purpose is a tool error the agent handles, not a bug.
               "refused": "expect:contains: reply lacks [\"done\"]; reply: \"sorry\""}
    flat = " ".join(stdout.split())
    for reason in reasons.values():
        assert reason in flat, (reason, stdout)
    # -v: each raised tool call with the user's frames (the agent's own frames for its exception).
    assert "tool reset_password (step 1) raised KeyError: 'accounts'" in stdout
    assert "at tools.py:7 in reset_password" in stdout and "at desk_agent.py:16 in agent" in stdout

    markdown = (out / "summary.md").read_text()
    for case_id, reason in reasons.items():
        assert f"| `{case_id}` | failed | 0% | `{reason}` |" in markdown, markdown
    junit = {c.get("name"): c for c in ET.parse(out / "results.xml").getroot().iter("testcase")}
    for case_id, reason in reasons.items():
        assert junit[case_id].find("failure").get("message") == f"1/1 runs failed; first: {reason}"
    (page,) = out.glob("2*.html")
    data = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page.read_text(), re.S)
    assert data is not None and json.loads(data.group(1))["reasons"] == list(reasons.values())
