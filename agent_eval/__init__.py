"""agent-eval: a benchmark runner for tool-calling AI agents.

The public API: `tool` (declare a tool), `ToolError` (what `task.call_tool` raises), `Task` (what a
Python agent receives), `Reply` (what it may return), and `Scorer` and `scorer` (custom scorers).
"""
from agent_eval.errors import ToolError
from agent_eval.run.agents.base import Reply
from agent_eval.run.agents.python import Task
from agent_eval.score.custom import Scorer, scorer
from agent_eval.suite.tools import tool

__all__ = ["Reply", "Scorer", "Task", "ToolError", "scorer", "tool"]
__version__ = "0.1.0"
