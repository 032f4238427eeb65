"""agent-eval: a benchmark runner for tool-calling AI agents.

The public API: `tool` (declare a tool), `ToolError` (what `task.call_tool` raises), `Task` (what a
Python agent receives), `Reply` (what it may return), `Scorer` and `scorer` (custom scorers), and
`run_suite` (`agent-eval run` as a function that returns the report), `scripted_model` (a loopback
model answering from a script file, for tests), and `AgentEvalError`, the root of every error run_suite
raises (`CaseFileError`, `ConfigError`, ...).

Each name is imported when first used, so importing the package (as pytest does with its plugin) costs
next to nothing.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_eval.commands.library import run_suite, run_suite_async
    from agent_eval.errors import AgentEvalError, CaseFileError, ConfigError, ToolError
    from agent_eval.run.agents.base import Reply
    from agent_eval.run.agents.python import Task
    from agent_eval.score.custom import Scorer, scorer
    from agent_eval.scripted.server import scripted_model
    from agent_eval.suite.tools import tool

__all__ = ["AgentEvalError", "CaseFileError", "ConfigError", "Reply", "Scorer", "Task", "ToolError", "run_suite",
           "run_suite_async", "scorer", "scripted_model", "tool"]
__version__ = "0.1.0"

_HOMES = {**dict.fromkeys(("AgentEvalError", "CaseFileError", "ConfigError", "ToolError"), "agent_eval.errors"),
          "Reply": "agent_eval.run.agents.base",
          "Task": "agent_eval.run.agents.python", "Scorer": "agent_eval.score.custom",
          "scorer": "agent_eval.score.custom", "tool": "agent_eval.suite.tools",
          "run_suite": "agent_eval.commands.library", "run_suite_async": "agent_eval.commands.library",
          "scripted_model": "agent_eval.scripted.server"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'agent_eval' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
