"""A scripted agent and user for tau2 parity: the agent plays its case's `metadata.replay` (at user turn t, the
calls of turn t in order, a tool error being an observation it ignores, then turn t's reply); the user says the
lines its scenario holds (a JSON list), one per turn, then stops."""
from __future__ import annotations

import json
from typing import Any

from agent_eval import ToolError


def agent(task: Any) -> str:
    turn = sum(1 for message in task.messages if message["role"] == "user") - 1
    replay = task.metadata["replay"]
    if turn >= len(replay):
        return ""
    for call in replay[turn]["calls"]:
        try:
            task.call_tool(call["name"], **call["args"])
        except ToolError:
            pass
    return str(replay[turn]["reply"])


def user(sim: Any) -> str | None:
    lines = json.loads(sim.scenario)
    said = sum(1 for message in sim.messages if message["role"] == "user")
    return lines[said] if said < len(lines) else None
