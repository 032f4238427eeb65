"""A Python agent that plays the trajectory in its case's `metadata.replay`: at user turn t, the calls of
`replay[t]` in order (a tool error is an observation it ignores), then an empty reply."""
from __future__ import annotations

from typing import Any

from agent_eval import ToolError


def agent(task: Any) -> str:
    turn = sum(1 for message in task.messages if message["role"] == "user") - 1
    replay = task.metadata["replay"]
    for name, args in replay[turn] if turn < len(replay) else []:
        try:
            task.call_tool(name, **args)
        except ToolError:
            pass
    return ""
