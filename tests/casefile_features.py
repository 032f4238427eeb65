"""Builders for the tests of the case-file features (backends, per-turn gold, tools per case, ...): a scripted
Python agent that makes the calls its case's metadata lists for each user turn, and the CLI run around it."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from tests.builders import write_suite
from tests.cli import CliResult, run_cli

# metadata.turns[t] = [[name, args], ...]: the calls of user turn t; metadata.replies[t]: its reply.
SCRIPTED_AGENT = '''
from agent_eval import ToolError


def agent(task):
    turn = sum(1 for m in task.messages if m["role"] == "user") - 1
    if turn == task.metadata.get("raise_at"):
        raise RuntimeError("the agent broke")
    turns = task.metadata.get("turns") or []
    for name, args in (turns[turn] if turn < len(turns) else []):
        try:
            task.call_tool(name, **args)
        except ToolError:
            pass
    if task.metadata.get("show_tools"):
        return ",".join(s["function"]["name"] for s in task.tool_schemas)
    replies = task.metadata.get("replies") or []
    return replies[turn] if turn < len(replies) else "done"
'''

# A stateful backend: the run's state is a Counter object, not a dict.
COUNTER_TOOLS = '''
from agent_eval import tool

BUILT = []


class Counter:
    def __init__(self, start, tags):
        self.count = start
        self.tags = tags


def backend(env):
    BUILT.append(1)
    return Counter(env["start"], list(env.get("tags", [])))


def snapshot(counter):
    return {"count": counter.count, "tags": list(counter.tags)}


@tool
def bump(by: int, env: Counter) -> int:
    """Add to the counter."""
    env.count += by
    return env.count


@tool
def set_tags(tags: list[str], env: Counter) -> str:
    """Replace the tags (the list is kept as it is)."""
    env.tags = tags
    return "ok"


@tool
def add_tag(tag: str, env: Counter) -> str:
    """Add one tag."""
    env.tags.append(tag)
    return "ok"


@tool
def fail(env: Counter) -> str:
    """Change the counter, then fail."""
    env.count += 1000
    raise ValueError("no")
'''


def turns(*calls_per_turn: list[list[Any]]) -> dict[str, Any]:
    """The metadata of a scripted case: the calls of each turn."""
    return {"turns": list(calls_per_turn)}


def run_suite_cli(folder: Path, cases: list[dict[str, Any]], block: dict[str, Any] | None = None,
                  tools: str = COUNTER_TOOLS, *args: str, agent: str = "agent.py:agent",
                  ) -> tuple[CliResult, dict[str, Any] | None]:
    """Write the suite (tools.py, agent.py, cases.json) into folder, run it, and return (result, report)."""
    path = write_suite(folder, cases, {"tools": "tools.py", **(block or {})},
                       {"tools.py": tools, "agent.py": SCRIPTED_AGENT})
    out = folder / "reports"
    result = run_cli("run", "--cases", path, "--agent", agent, "--output-dir", out, "--no-html", "-q", *args,
                     cwd=folder)
    reports = sorted(out.glob("*.json"), key=lambda p: p.stat().st_mtime) if out.is_dir() else []
    return result, orjson.loads(reports[-1].read_bytes()) if reports else None


def runs_by_case(report: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {c["id"]: c["runs"] for c in report["cases"]}


def checks_of(run: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    return {c["name"]: (c["passed"], c["detail"]) for c in run["checks"]}
