"""The bridge's framework helpers in-process: pydantic-ai's own output tool is the framework's call, not a
step; the Agents SDK's handoff likewise."""
from __future__ import annotations

import asyncio

from pydantic import BaseModel

from agent_eval.run.agents.python import PythonAgent
from agent_eval.run.episode import play_run
from agent_eval.run.world import EnvTemplate
from agent_eval.suite.tools import ToolSet
from tests.loopback import text, tool_calls


def lookup(key: str, env: dict) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return env["data"][key]


TOOLS = ToolSet.from_functions([lookup])


def play(fn, base_url: str):
    agent = PythonAgent("agent.py:fn", fn, {"model": "m1", "base_url": base_url, "api_key": "k"})
    case = {"id": "c1", "query": "what is a?"}
    return asyncio.run(play_run(case, 0, agent, TOOLS, EnvTemplate({"data": {"a": "1"}}), "be brief", None))


class Answer(BaseModel):
    value: str


def test_pydantic_ais_final_result_is_a_framework_call_not_a_step(loopback) -> None:
    srv = loopback([tool_calls([("lookup", {"key": "a"}, "p1")]),
                    tool_calls([("final_result", {"value": "1"}, "p2")])])

    async def agent(task):
        from pydantic_ai import Agent

        from agent_eval.bridge import pydantic_ai as bridge

        helper = Agent(bridge.model(task), output_type=Answer, toolsets=[bridge.toolset(task)])
        return (await helper.run(task.input)).output.value

    played = play(agent, srv.base_url)
    trace = played.trace
    assert trace["final_answer"] == "1"
    assert [(s["name"], s["executed"]) for s in trace["steps"]] == [("lookup", True)]
    assert trace["framework_calls"] == [{"name": "final_result", "args": {"value": "1"}}]
    # The schema the model saw is the suite's, unchanged.
    sent = {t["function"]["name"]: t["function"]["parameters"] for t in srv.requests[0]["tools"]}
    assert sent["lookup"] == TOOLS.schemas[0]["function"]["parameters"]


def test_an_agents_sdk_handoff_is_a_framework_call_not_a_step(loopback) -> None:
    srv = loopback([tool_calls([("transfer_to_billing", {}, "h1")]),
                    tool_calls([("lookup", {"key": "a"}, "h2")]), text("a is 1")])

    async def agent(task):
        from agents import Agent, Runner, set_tracing_disabled

        from agent_eval.bridge import openai_agents as bridge

        set_tracing_disabled(True)
        billing = Agent(name="billing", tools=bridge.tools(task), model=bridge.model(task))
        front = Agent(name="front", handoffs=[billing], model=bridge.model(task))
        result = await Runner.run(front, task.input)
        return {"answer": result.final_output, "final_agent": result.last_agent.name}

    played = play(agent, srv.base_url)
    trace = played.trace
    assert (trace["final_answer"], trace["final_agent"]) == ("a is 1", "billing")
    assert [(s["name"], s["executed"]) for s in trace["steps"]] == [("lookup", True)]
    assert trace["framework_calls"] == [{"name": "transfer_to_billing", "args": {}}]
