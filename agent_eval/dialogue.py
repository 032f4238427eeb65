"""Play one scenario run (DESIGN §9): the simulated user and the agent take turns in one sandbox.

The simulator speaks, the agent replies (one agent turn, with all its tool calls), and so on. After
the agent has answered message number `max_turns`, the simulator is asked once more: if it stops,
the run is `completed`; if not, it ends with stop_reason `max_turns` and that message is not sent.
Only the agent's turns count against `--timeout` and in `latency_s`; the simulator's time never does.

The trace gains `turn_steps`: for each reply, how many steps had been recorded when it came, so the
tool calls of turn i are `steps[turn_steps[i-1]:turn_steps[i]]` (from 0 for the first turn).
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

from agent_eval.agents import AgentStop, ProviderError, Reply, RunContext
from agent_eval.envdiff import diff_env
from agent_eval.episode import Clock, Played, build_trace
from agent_eval.sandbox import EnvTemplate, Sandbox
from agent_eval.scenario import max_turns
from agent_eval.simulator import SimulatorError

COMPACT_OUTPUT_CHARS = 300


async def play_dialogue(case: dict, trial: int, agent: Any, tools: Any, template: EnvTemplate,
                        system_prompt: str | None, timeout: float | None, simulator: Any) -> Played:
    """Hold the conversation of a scenario case between `simulator` and `agent`; never raises for faults."""
    sandbox = Sandbox(tools, template.fresh(), case.get("faults"))
    ctx = RunContext(case=case, trial=trial, sandbox=sandbox, tool_schemas=tools.schemas,
                     system_prompt=system_prompt)
    clock = Clock(timeout)
    limit = max_turns(case)
    sent: list[str] = []
    replies: list[Reply] = []
    turn_steps: list[int] = []
    agent_t0: float | None = None
    first_reply_at: float | None = None
    stop_reason, agent_error, error = "completed", None, None
    try:
        while True:
            text = await simulator.next_message(case, trial, ctx.messages)
            if text is None:
                break
            if len(sent) == limit:
                stop_reason = "max_turns"
                agent_error = f"the simulated user was not done after max_turns ({limit}) turns"
                break
            if agent_t0 is None:
                # Times in the trace start with the agent's first turn, not with the simulator's opening.
                agent_t0 = sandbox.t0 = time.perf_counter()
            sent.append(text)
            ctx.messages.append({"role": "user", "content": text})
            reply = await clock.run(agent.respond(ctx))
            if first_reply_at is None:
                first_reply_at = time.perf_counter() - agent_t0
            replies.append(reply)
            turn_steps.append(len(sandbox.steps))
            ctx.messages.append({"role": "assistant", "content": reply.answer})
    except AgentStop as stop:
        stop_reason, agent_error = stop.stop_reason, str(stop)
    except asyncio.TimeoutError:
        stop_reason, agent_error = "timeout", f"the agent outran --timeout {timeout:g}s"
    except (ProviderError, SimulatorError) as exc:
        error = str(exc)
    finally:
        sandbox.closed = True
    trace = build_trace(sent, replies, sandbox.steps, ctx.llm_calls, stop_reason, agent_error, clock.used,
                        first_reply_at, diff_env(template.env, sandbox.env))
    trace["turn_steps"] = turn_steps
    return Played(trace, sandbox.env, error)


def dialogue_turns(trace: dict) -> list[dict[str, Any]]:
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


def compact_dialogue(trace: dict) -> dict[str, Any]:
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
