"""One run under --timeout: hung async and sync agents, and a sync agent's late tool calls."""
from __future__ import annotations

import asyncio
import threading

from agent_eval import ToolError
from agent_eval.run.agents.python import PythonAgent
from agent_eval.run.episode import play_run
from agent_eval.run.world import EnvTemplate
from agent_eval.suite.tools import ToolSet


def bump(env: dict) -> int:
    """Add one to the counter."""
    env["counter"] += 1
    return env["counter"]


TOOLS = ToolSet.from_functions([bump])
CASE = {"id": "c1", "query": "go", "expect": {"contains": "done"}}
WAIT_S = 30  # a hang guard only: every wait below is released by an event long before this


def play(fn, timeout):
    return asyncio.run(play_run(CASE, 0, PythonAgent("t:agent", fn), TOOLS, EnvTemplate({"counter": 0}),
                                None, timeout))


def test_a_hung_async_agent_is_cut_by_the_timeout():
    async def agent(task):
        await task.acall_tool("bump")
        await asyncio.sleep(3600)

    played = play(agent, timeout=0.05)
    assert played.trace["stop_reason"] == "timeout" and "--timeout" in played.trace["agent_error"]
    assert played.error is None  # the agent's fault, not an infrastructure error
    assert [s["name"] for s in played.trace["steps"]] == ["bump"]
    assert played.final_env == {"counter": 1}


def test_an_async_agent_that_swallows_cancellation_is_still_cut_at_the_timeout():
    async def agent(task):
        await task.acall_tool("bump")
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass  # ignores being told to stop, and carries on
        await asyncio.sleep(0.01)
        await task.acall_tool("bump")
        return "done"

    # asyncio.wait_for would wait for this agent and take its "done": the run must end at the timeout.
    played = play(agent, timeout=0.05)
    assert played.trace["stop_reason"] == "timeout"
    assert played.trace["replies"] == [] and [s["name"] for s in played.trace["steps"]] == ["bump"]
    assert played.final_env == {"counter": 1}


def test_a_hung_sync_agent_is_cut_and_its_late_tool_call_raises_and_is_not_recorded():
    release, finished = threading.Event(), threading.Event()
    late: list[BaseException | None] = []

    def agent(task):
        task.call_tool("bump")
        release.wait(WAIT_S)  # stuck in the worker thread past the timeout
        try:
            task.call_tool("bump")
            late.append(None)
        except BaseException as exc:  # noqa: BLE001
            late.append(exc)
        finished.set()
        return "done"

    played = play(agent, timeout=0.05)
    steps_at_timeout = list(played.trace["steps"])
    release.set()
    assert finished.wait(WAIT_S)
    assert played.trace["stop_reason"] == "timeout"
    assert isinstance(late[0], ToolError) and "not recorded" in str(late[0])
    assert played.trace["steps"] == steps_at_timeout and len(steps_at_timeout) == 1
    assert played.final_env == {"counter": 1}  # the late call never ran the tool
    assert played.trace["final_env_diff"] == [{"path": ["counter"], "old": 0, "new": 1}]


def test_the_frozen_trace_ignores_a_tool_that_finishes_after_the_timeout():
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()
    outcome: list[BaseException | None] = []

    def slow(env: dict) -> str:
        """Write, then block until released."""
        env["written"] = True
        entered.set()
        release.wait(WAIT_S)
        return "slow"

    tools = ToolSet.from_functions([slow])

    def agent(task):
        try:
            task.call_tool("slow")
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001
            outcome.append(exc)
        finished.set()
        return "done"

    async def main():
        run = asyncio.ensure_future(play_run(CASE, 0, PythonAgent("t:agent", agent), tools,
                                             EnvTemplate({}), None, 0.05))
        while not entered.is_set():  # the timeout may only strike once the tool is running
            await asyncio.sleep(0.001)
        return await run

    played = asyncio.run(main())
    release.set()
    assert finished.wait(WAIT_S)
    assert played.trace["stop_reason"] == "timeout"
    assert isinstance(outcome[0], ToolError)  # the call outlived its run: refused, not recorded
    assert played.trace["steps"] == []


def test_a_sync_agent_thread_is_a_daemon_so_it_cannot_keep_the_process_alive():
    names: list[tuple[str, bool]] = []
    release = threading.Event()

    def agent(task):
        me = threading.current_thread()
        names.append((me.name, me.daemon))
        release.wait(WAIT_S)
        return "done"

    played = play(agent, timeout=0.05)
    still_running = [t for t in threading.enumerate() if t.name == "agent-c1-0" and t.is_alive()]
    release.set()
    assert played.trace["stop_reason"] == "timeout"
    assert names == [("agent-c1-0", True)]
    assert still_running  # the run ended without waiting for the thread, which was never joined
