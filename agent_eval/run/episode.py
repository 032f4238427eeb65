"""Play one run: send the user messages to the agent in one sandbox and freeze the trace."""
from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from agent_eval.errors import InfrastructureError
from agent_eval.provider import keying, tape
from agent_eval.provider.waits import Waits, recording
from agent_eval.redaction import redact_secrets, redact_trace_errors
from agent_eval.records import Case, Step, StopReason, Trace
from agent_eval.run.agents import Agent, AgentStop, Reply, RunContext
from agent_eval.run.agents.base import call_agent
from agent_eval.suite.jsonsafe import dumps_safe, to_json_safe
from agent_eval.suite.cases import user_messages
from agent_eval.run.offer import offer_of
from agent_eval.run.scenario import max_turns
from agent_eval.run.turns import TurnWatch
from agent_eval.run.sandbox import Sandbox, ServerFault
from agent_eval.run.world import EnvTemplate
from agent_eval.suite.backend import BackendError

if TYPE_CHECKING:
    from agent_eval.run.mcp_sessions import RunServers, ServerPool
    from agent_eval.suite.tools import ToolSet

REPLAY_POLL_S = 0.05

@dataclass
class Played:
    """A finished run before scoring: its frozen trace, final env, and infrastructure error if any."""

    trace: Trace
    final_env: dict[str, Any]
    error: str | None
    trace_json: bytes | None = None  # the trace's JSON, encoded once and spliced into the journal line


def _replayed_s() -> float:
    """The recorded latency of the run's replayed answers so far (--replay): the agent's time, not waited for."""
    run_tape = tape.current()
    return run_tape.credit_s if run_tape is not None else 0.0


class Clock:
    """Counts the agent's time only, against an optional --timeout budget; time the agent spends waiting
    for the provider's rate limit (`waits`) is not its time, and the recorded latency of its replayed
    answers (--replay) is."""

    def __init__(self, timeout: float | None, waits: Waits | None = None) -> None:
        self.timeout = timeout
        self.used = 0.0
        self.waits = waits or Waits()

    def _own(self, started: float, credited: float) -> float:
        return time.perf_counter() - started - self.waits.within(started) + _replayed_s() - credited

    async def run(self, coro: Any) -> Any:
        started, credited = time.perf_counter(), _replayed_s()
        # A replayed answer's latency is credited at once: the deadline is looked at again this often.
        run_tape = tape.current()
        poll = REPLAY_POLL_S if run_tape is not None and run_tape.tape.replay else math.inf
        try:
            if self.timeout is None:
                return await coro
            remaining = self.timeout - self.used
            if remaining <= 0:
                coro.close()
                raise TimeoutError
            task = asyncio.ensure_future(coro)
            while (left := remaining - self._own(started, credited)) > 0:  # waiting moves the deadline on
                try:
                    done, _ = await asyncio.wait({task}, timeout=min(left, poll))
                except asyncio.CancelledError:
                    task.cancel()
                    raise
                if task in done:
                    if self._own(started, credited) > remaining:
                        # An async agent that blocked the event loop returned past the deadline: it cannot
                        # be cut, but it cannot pass either.
                        raise TimeoutError
                    return task.result()
            # Not wait_for: it waits for the cancelled task, and an agent that swallows cancellation
            # would hold the run past --timeout. The task is told to stop and left behind, like a
            # stuck sync agent's thread; its later tool calls raise ToolError (the sandbox is closed).
            task.cancel()
            if run_tape is not None:  # --record: what the agent was waiting for is recorded as abandoned now
                run_tape.abandon()
            raise TimeoutError
        finally:
            self.used += self._own(started, credited)


class User(Protocol):
    """Who speaks to the agent in a run: the case's script, or a simulator (run/simulator.py)."""

    async def next_message(self, case: Case, trial: int, messages: list[dict[str, Any]]) -> str | None:
        """The next user message, or None when the user is done."""
        ...


class ScriptedUser:
    """The case's scripted user messages (`query` or `messages`), sent in order."""

    def __init__(self, case: Case) -> None:
        self._messages = iter(user_messages(case))

    async def next_message(self, case: Case, trial: int, messages: list[dict[str, Any]]) -> str | None:
        return next(self._messages, None)


async def play_run(case: Case, trial: int, agent: Agent, tools: ToolSet, template: EnvTemplate,
                   system_prompt: str | None, timeout: float | None, simulator: User | None = None,
                   servers: ServerPool | None = None, env_blob: bytes | None = None,
                   stop_tools: frozenset[str] = frozenset()) -> Played:
    """Play one run: the user (scripted, or `simulator` for a scenario case) and the agent take turns.

    Never raises for the agent's faults. With a simulator, after the agent has answered
    message number `max_turns` the simulator is asked once more: if it has more to say, the run ends
    with stop_reason `max_turns` and that message is not sent; `latency_s` and `--timeout` then count
    the agent's turns only. The trace's `turn_steps` holds, for each reply, how many steps had been
    recorded when it came, so the calls of turn i are `steps[turn_steps[i-1]:turn_steps[i]]`.
    """
    if template.error is not None:  # the backend could not build the case's initial state
        return errored_run(template.error)
    if servers is not None:  # the suite's MCP servers
        from agent_eval.run.mcp_sessions import play_with_servers

        return await play_with_servers(servers, env_blob, template, lambda env, base, remote: _play(
            case, trial, agent, tools, base, env, system_prompt, timeout, simulator, remote, stop_tools), errored_run)
    try:
        world = template.fresh()
    except BackendError as exc:
        return errored_run(str(exc))
    return await _play(case, trial, agent, tools, template, world, system_prompt, timeout, simulator, None,
                       stop_tools)


async def _play(case: Case, trial: int, agent: Agent, tools: ToolSet, template: EnvTemplate, env: dict[str, Any],
                system_prompt: str | None, timeout: float | None, simulator: User | None,
                remote: RunServers | None = None, stop_tools: frozenset[str] = frozenset()) -> Played:
    user = simulator or ScriptedUser(case)
    limit = max_turns(case) if simulator is not None else None
    sandbox = Sandbox(tools, env, case.get("faults"), None, case.get("injection"), remote)
    offer = offer_of(case, tools)
    if offer is not None:
        sandbox.allowed = offer.allowed
    ctx = RunContext(case=case, trial=trial, sandbox=sandbox, tool_schemas=tools.schemas,
                     system_prompt=system_prompt)
    watch = TurnWatch(case, template, sandbox, stop_tools)
    sandbox.max_errors = case.get("max_tool_errors")
    waits = Waits()  # time waiting for the provider's limit: not the agent's (trace.rate_limit_wait_s)
    clock = Clock(timeout, waits)
    sent: list[str] = []
    replies: list[Reply] = []
    turn_steps: list[int] = []
    t0: float | None = None
    started_at_unix_ns: int | None = None  # the wall clock at t0, for the spans of --otel
    first_reply_at: float | None = None
    stop_reason: StopReason = "completed"
    agent_error: str | None = None
    agent_tb: str | None = None
    error: str | None = None
    recorded = recording(waits)
    recorded.__enter__()
    try:
        keying.at_turn(0)  # a loopback model's X-Agent-Eval-Turn: the user message being written or answered
        while (text := await user.next_message(case, trial, ctx.messages)) is not None:
            if len(sent) == limit:
                stop_reason = "max_turns"
                agent_error = f"the simulated user was not done after max_turns ({limit}) turns"
                break
            if t0 is None:
                # Times in the trace start with the agent's first turn, not with a simulator's opening.
                t0 = sandbox.t0 = time.perf_counter()
                started_at_unix_ns = time.time_ns()
            sent.append(text)
            ctx.messages.append({"role": "user", "content": text})
            if offer is not None:  # the schemas of this turn: the case's tools and those added so far
                sandbox.offered = offer.offered_at(len(sent) - 1)
                ctx.tool_schemas = offer.schemas_at(tools, len(sent) - 1)
            prepare = getattr(agent, "prepare", None)
            if prepare is not None:  # the recording endpoint's path for agents that use it
                await call_agent(prepare, ctx)
            reply = await clock.run(call_agent(agent.respond, ctx))
            if sandbox.stop is not None:  # the case's max_tool_errors was reached in this turn
                raise AgentStop("max_tool_errors", sandbox.stop)
            if sandbox.infra:
                raise InfrastructureError(sandbox.infra)
            if ctx.fatal:
                raise AgentStop("agent_error", ctx.fatal)
            if first_reply_at is None:
                first_reply_at = time.perf_counter() - t0 - waits.within(t0) + _replayed_s()
            replies.append(reply)
            ctx.assistant_texts.append(reply.answer)
            turn_steps.append(len(sandbox.steps))
            ctx.messages.append({"role": "assistant", "content": reply.answer})
            if watch.turn_done(turn_steps[-2] if len(turn_steps) > 1 else 0):
                break  # a stop tool was called in this turn: the episode ends, completed
            keying.at_turn(len(sent))
    except AgentStop as stop:
        stop_reason, agent_error, agent_tb = stop.stop_reason, ctx.fatal or str(stop), stop.traceback
        if sandbox.stop is not None:  # the agent was cut at its last allowed tool error, whatever it made of it
            stop_reason, agent_error, agent_tb = "max_tool_errors", sandbox.stop, None
    except TimeoutError:
        stop_reason, agent_error = "timeout", f"the agent outran --timeout {timeout:g}s"
    except (InfrastructureError, ServerFault, BackendError) as exc:
        error = str(exc)
    finally:
        recorded.__exit__(None, None, None)
        sandbox.close()
        if ctx.link is not None:
            ctx.link.close()
    if sandbox.infra and error is None:  # agent-eval's argument check broke: never the agent's failure
        error, agent_error, agent_tb = sandbox.infra, None, None
    wall = time.perf_counter() - t0 - waits.within(t0) if t0 is not None else 0.0
    elapsed = clock.used if simulator is not None else wall + _replayed_s()  # clock.used holds the credit
    steps = sandbox.steps
    try:
        env = template.state(sandbox.env)  # the world's state: the env itself, or the backend's snapshot
    except BackendError as exc:
        env, error = {}, error or str(exc)
    if stop_reason == "timeout":
        # A sync agent's thread may still be inside a tool: freeze what it has done so far. orjson holds
        # the GIL while it copies, so the snapshot cannot tear even if that tool is writing.
        steps, env = list(steps), _snapshot(env)
    if remote is not None:  # the server's faults make the run `error`; its state is the final env
        from agent_eval.run.mcp_sessions import finish_with_servers

        env, error, agent_error = await finish_with_servers(remote, env, error, stop_reason, agent_error, timeout)
    framework_calls = None
    if ctx.link is not None:  # an agent on the recording endpoint: every call the model issued is a step
        from agent_eval.run.pairing import settle

        steps, turn_steps, framework_calls = settle(ctx.link, list(steps), turn_steps, tools)
        error = ctx.link.infrastructure_error() or error  # the provider error itself, however it was wrapped
    try:
        env_diff = template.diff(env)
    except RecursionError:  # a tool nested the env past what Python can walk: keep it cut at depth 100
        env = to_json_safe(env)
        env_diff = template.diff(env)
    trace = build_trace(sent, replies, steps, ctx.llm_calls, stop_reason, agent_error,
                        elapsed, first_reply_at, env_diff, agent_tb, waits.within(-math.inf))
    if waits.intervals and t0 is not None and steps:  # ttfa_s is the agent's time too: not the waiting
        started = steps[0]["t_start_s"] or 0.0  # a played step is always timed
        first_step = started - waits.within(t0, t0 + started)
        trace["ttfa_s"] = first_step if first_reply_at is None else min(first_step, first_reply_at)
    run_tape = tape.current()
    if run_tape is not None and run_tape.credits and t0 is not None and steps:  # --replay: the model's time
        at = min(s["t_start_s"] or 0.0 for s in steps)  # a played step is always timed
        first_step = at - waits.within(t0, t0 + at) + run_tape.credit_at(t0 + at)
        trace["ttfa_s"] = first_step if first_reply_at is None else min(first_step, first_reply_at)
    if run_tape is not None and run_tape.credits and t0 is not None:
        _advance_by_credits(run_tape, t0, [*trace["steps"], *trace["llm_calls"]])
    trace["turn_steps"] = turn_steps
    if watch.diffs is not None:
        trace["turn_env_diffs"] = watch.diffs
    if len(ctx.assistant_texts) > len(replies):  # the agent also spoke beside its tool calls
        trace["assistant_texts"] = [text for text in ctx.assistant_texts if text]
    if framework_calls is not None:
        trace["framework_calls"] = framework_calls
    trace["started_at_unix_ns"] = started_at_unix_ns
    if remote is not None and remote.pool.state is not None:
        trace["state_resource"] = remote.pool.state.state_resource  # rescore keeps its env checks
    redact_trace_errors(trace)  # an exception of user code may quote a key
    trace, trace_json = dumps_safe(trace)
    return Played(trace, env, error and redact_secrets(error), trace_json)


def empty_trace() -> Trace:
    """The trace of a run in which no turn was played (it could not start, or its worker was lost)."""
    trace = build_trace([], [], [], [], "completed", None, 0.0, None, [])
    trace["turn_steps"] = []
    return trace


def errored_run(error: str) -> Played:
    """A run that could not start (an MCP server did not): no turn was played."""
    return Played(empty_trace(), {}, error)


def _snapshot(env: dict[str, Any]) -> dict[str, Any]:
    try:
        return orjson.loads(orjson.dumps(env))
    except TypeError:  # a tool stored a value JSON cannot hold: keep the live env
        return env


def _advance_by_credits(run_tape: tape.RunTape, t0: float, timed: list[Any]) -> None:
    """--replay: each step's and model call's start moves on by the recorded latency credited before it, as
    if the model's answers had taken their time (so that --otel spans follow one another, never overlap)."""
    for item in timed:
        at = item.get("t_start_s")
        if isinstance(at, int | float) and not isinstance(at, bool):
            item["t_start_s"] = at + run_tape.credit_at(t0 + at)


def build_trace(user_msgs: list[str], replies: list[Reply], steps: list[Step], llm_calls: list[dict[str, Any]],
                stop_reason: StopReason, agent_error: str | None, latency_s: float,
                first_reply_at: float | None, env_diff: list[dict[str, Any]],
                agent_error_traceback: str | None = None, rate_limit_wait_s: float = 0.0) -> Trace:
    """The frozen trace (docs/reference.md#the-json-report) from what one run produced."""
    last = replies[-1] if replies and len(replies) == len(user_msgs) else None
    first_step = min((t for s in steps if (t := s["t_start_s"]) is not None), default=None)
    firsts = [t for t in (first_step, first_reply_at) if t is not None]
    return {
        "user_messages": user_msgs,
        "replies": [r.answer for r in replies],
        "final_answer": last.answer if last else None,
        "cards": last.cards if last else [],
        "final_agent": last.final_agent if last else None,
        "stop_reason": stop_reason,
        "agent_error": agent_error,
        "agent_error_traceback": agent_error_traceback,
        "steps": steps,
        "llm_calls": llm_calls,
        "latency_s": latency_s,
        "ttfa_s": min(firsts) if firsts else None,
        "rate_limit_wait_s": round(rate_limit_wait_s, 6),
        "final_env_diff": env_diff,
    }
