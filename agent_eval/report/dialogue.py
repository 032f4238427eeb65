"""The dialogue of a run, turn by turn, from its trace's `turn_steps`.

For each reply, `turn_steps` holds how many steps had been recorded when it came, so the tool calls
of turn i are `steps[turn_steps[i-1]:turn_steps[i]]` (from 0 for the first turn). The loop that
plays the dialogue is episode.play_run.
"""
from __future__ import annotations

from agent_eval.records import Trace

from typing import Any


COMPACT_OUTPUT_CHARS = 300


def dialogue_turns(trace: Trace) -> list[dict[str, Any]]:
    """The dialogue turn by turn: [{user, steps, reply}]; `reply` is None for an unanswered message."""
    users = trace.get("user_messages") or []
    replies = trace.get("replies") or []
    steps = trace.get("steps") or []
    bounds = list(trace.get("turn_steps") or [])
    turns, start = [], 0
    for i, user in enumerate(users):
        end = bounds[i] if i < len(bounds) else len(steps)
        reply = replies[i] if i < len(replies) else None
        turns.append({"user": user, "steps": steps[start:end], "reply": reply})
        start = end
    return turns


def compact_dialogue(trace: Trace) -> dict[str, Any]:
    """The dialogue keys of a trace, with tool outputs shortened: what the terminal keeps of a failed run."""
    steps = []
    for step in trace.get("steps") or []:
        output = step.get("output")
        if isinstance(output, str) and len(output) > COMPACT_OUTPUT_CHARS:
            output = output[:COMPACT_OUTPUT_CHARS] + "…"
        steps.append({"step": step.get("step"), "name": step.get("name"), "args": step.get("args"),
                      "output": output, "error": step.get("error")})
    return {"user_messages": trace.get("user_messages") or [], "replies": trace.get("replies") or [],
            "turn_steps": trace.get("turn_steps") or [], "steps": steps}
