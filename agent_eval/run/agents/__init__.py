"""Agents: the built-in `openai` loop and Python functions behind the Task contract."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_eval.run.agents.base import Agent, AgentStop, InfrastructureError, ProviderError, Reply, RunContext

__all__ = ["Agent", "AgentStop", "InfrastructureError", "ProviderError", "Reply", "RunContext", "load_agent"]


def load_agent(spec: str, base_dir: Path, settings: dict[str, Any]) -> Agent:
    """Build the agent named by SPEC: `openai`, `cmd:COMMAND ARGS...`, `file.py:function` or `module:function`."""
    if spec == "openai":
        from agent_eval.run.agents.openai_loop import OpenAIAgent

        return OpenAIAgent(settings)
    if spec.startswith("cmd:"):
        from agent_eval.run.agents.command import CommandAgent

        return CommandAgent(spec, settings)
    from agent_eval.run.agents.python import PythonAgent
    from agent_eval.suite.imports import load_callable

    return PythonAgent(spec, load_callable(spec, base_dir, what="agent"), settings)
