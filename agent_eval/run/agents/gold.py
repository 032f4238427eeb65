"""The gold agent (`--agent gold`): it plays each case's `expected_tools` and answers with its `gold_reply`.

Turn by turn when the gold calls carry `turn`, all in the first turn otherwise (and in scenario cases). An
oracle run (`--agent gold --user gold --no-judge`) checks that a suite's gold satisfies its own checks.
"""
from __future__ import annotations

from typing import Any

from agent_eval.errors import ConfigError, ToolError
from agent_eval.records import Case
from agent_eval.run.agents.base import Reply, RunContext
from agent_eval.run.world import frozen
from agent_eval.score.gold import gold_turn
from agent_eval.score.matchers import is_literal

GOLD = "gold"  # the SPEC of the gold agent, and of the gold user


def gold_calls(case: Case, turn: int) -> list[dict[str, Any]]:
    """The gold calls the gold agent makes in user turn `turn` (0-based)."""
    calls = case.get("expected_tools") or []
    timed = case.get("scenario") is None and any(call.get("turn") is not None for call in calls)
    if timed:
        return [call for call in calls if gold_turn(call) == turn]
    return list(calls) if turn == 0 else []


def gold_reply(case: Case, turn: int) -> str:
    """The gold agent's reply in user turn `turn`: the case's `gold_reply` (one string for every turn, or the
    turn's item of a list), or empty."""
    reply = case.get("gold_reply")
    if isinstance(reply, list):
        return reply[turn] if turn < len(reply) else ""
    return reply if isinstance(reply, str) else ""


class GoldAgent:
    """Plays the gold calls of the turn through the sandbox, as any agent's calls are recorded."""

    name = GOLD

    async def respond(self, ctx: RunContext) -> Reply:
        turn = sum(1 for message in ctx.messages if message.get("role") == "user") - 1
        for call in gold_calls(ctx.case, turn):
            try:
                await ctx.sandbox.acall(call["name"], frozen(call.get("args") or {}))
            except ToolError:  # the run has ended (timeout)
                break
        return Reply(gold_reply(ctx.case, turn))


def require_gold(spec: str, runnable: list[Case], cases_file: Any) -> None:
    """Exit-2 check: the gold agent can only play literal gold args, not matchers."""
    if spec != GOLD:
        return
    for case in runnable:
        for i, call in enumerate(case.get("expected_tools") or []):
            if not is_literal(call.get("args") or {}):
                raise ConfigError(f"case {case['id']!r} of {cases_file}: --agent gold plays expected_tools, and "
                                  f"expected_tools[{i}].args holds a matcher ($any, $regex, ...), which it cannot "
                                  "call. Fix: write the literal args the gold agent should send, or leave the case "
                                  "out (--filter).")
