"""The recording model endpoint: an agent's own SDK client pointed at task.base_url, forwarded to the
loopback server, every request in trace.llm_calls; the task's new fields; infrastructure errors."""
from __future__ import annotations

import asyncio

import openai
import pytest

from agent_eval.run.agents.python import PythonAgent
from agent_eval.run.episode import play_run
from agent_eval.run.world import EnvTemplate
from agent_eval.suite.tools import ToolSet
from tests.loopback import status, text, tool_calls


def lookup(key: str, env: dict) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return env["data"][key]


TOOLS = ToolSet.from_functions([lookup])
ENV = {"data": {"a": "1", "b": "2"}}


def play(fn, base_url, case=None, model="m1"):
    agent = PythonAgent("agent.py:fn", fn, {"model": model, "base_url": base_url, "api_key": "real-key"})
    the_case = case or {"id": "c1", "query": "what is a?"}
    return asyncio.run(play_run(the_case, 0, agent, TOOLS, EnvTemplate(ENV), "be brief", None))


async def sdk_loop(task, stream=False, include_usage=None):
    """A hand-written agent on the openai SDK: model, tools, model, until an answer."""
    client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
    messages = list(task.messages)
    seen_usage = []
    while True:
        extra = {}
        if include_usage is not None:
            extra["stream_options"] = {"include_usage": include_usage}
        if stream:
            calls, content = {}, ""
            async for chunk in await client.chat.completions.create(
                    model=task.model, messages=messages, tools=task.tool_schemas, stream=True, **extra):
                seen_usage.append(chunk.usage is not None)
                for choice in chunk.choices:
                    content += choice.delta.content or ""
                    for call in choice.delta.tool_calls or ():
                        entry = calls.setdefault(call.index, {"id": None, "name": "", "arguments": ""})
                        entry["id"] = call.id or entry["id"]
                        entry["name"] += call.function.name or ""
                        entry["arguments"] += call.function.arguments or ""
            tool_calls_ = [{"id": c["id"], "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls.values()]
        else:
            answer = await client.chat.completions.create(model=task.model, messages=messages,
                                                          tools=task.tool_schemas)
            content = answer.choices[0].message.content or ""
            tool_calls_ = [c.model_dump() for c in answer.choices[0].message.tool_calls or ()]
        if not tool_calls_:
            task.state["seen_usage"] = seen_usage
            return content
        messages.append({"role": "assistant", "content": None, "tool_calls": tool_calls_})
        for call in tool_calls_:
            import json

            result = await task.acall_tool(call["function"]["name"], call_id=call["id"],
                                           **json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


def test_every_completion_is_recorded_with_the_servers_usage(loopback) -> None:
    srv = loopback([tool_calls([("lookup", {"key": "a"}, "k1")], 7, 3), text("a is 1", 11, 4)])
    played = play(sdk_loop, srv.base_url)
    trace = played.trace
    assert played.error is None and trace["final_answer"] == "a is 1"
    calls = trace["llm_calls"]
    # The server's own usage, per completion, with no record_usage: (7, 3) then (11, 4).
    assert [(c["prompt_tokens"], c["completion_tokens"]) for c in calls] == [(7, 3), (11, 4)]
    assert [(c["path"], c["status"], c["retries"], c["model"]) for c in calls] == [
        ("/chat/completions", 200, 0, "m1")] * 2
    assert all(c["latency_s"] >= 0 and c["t_start_s"] >= 0 for c in calls)
    assert calls[1]["t_start_s"] > calls[0]["t_start_s"]
    # The real key went upstream; the agent only ever had the run token.
    assert {h["authorization"] for h in srv.request_headers} == {"Bearer real-key"}
    assert [s["executed"] for s in trace["steps"]] == [True]
    assert "call_id" not in trace["steps"][0]
    assert trace["framework_calls"] == []


def test_a_wrong_token_gets_401(loopback) -> None:
    srv = loopback([text("never")])

    async def agent(task):
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key="not-the-token", max_retries=0)
        try:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        except openai.AuthenticationError as exc:
            return f"refused {exc.status_code}"
        return "let in"

    played = play(agent, srv.base_url)
    assert played.trace["final_answer"] == "refused 401"
    assert srv.count == 0 and played.trace["llm_calls"] == []


@pytest.mark.parametrize("include_usage", [None, False, True])
def test_streaming_passes_through_and_usage_is_known(loopback, include_usage) -> None:
    srv = loopback([tool_calls([("lookup", {"key": "b"}, "s1")], 8, 2), text("b is 2", 9, 1)])

    async def agent(task):
        return await sdk_loop(task, stream=True, include_usage=include_usage)

    played = play(agent, srv.base_url)
    trace = played.trace
    assert trace["final_answer"] == "b is 2"
    assert [s["args"] for s in trace["steps"]] == [{"key": "b"}]
    assert [(c["prompt_tokens"], c["completion_tokens"]) for c in trace["llm_calls"]] == [(8, 2), (9, 1)]
    # agent-eval asked the server for usage on every streamed request...
    assert all(r["stream_options"] == {"include_usage": True} for r in srv.requests)


def test_the_usage_chunk_reaches_the_agent_only_when_asked(loopback) -> None:
    seen = {}
    for include_usage in (None, True):
        srv = loopback([text("hi")])

        async def agent(task, include_usage=include_usage):
            answer = await sdk_loop(task, stream=True, include_usage=include_usage)
            seen[include_usage] = sum(task.state["seen_usage"])
            return answer

        play(agent, srv.base_url)
    assert seen == {None: 0, True: 1}


def test_task_fields_and_state_across_turns(loopback) -> None:
    srv = loopback([text("one"), text("two")])
    seen = []

    async def agent(task):
        task.state["turns"] = task.state.get("turns", 0) + 1
        seen.append((task.system_prompt, task.model, task.base_url.endswith("/v1"), task.api_key.startswith("ae-"),
                     task.state["turns"]))
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        answer = await client.chat.completions.create(model=task.model, messages=task.messages)
        return answer.choices[0].message.content

    play(agent, srv.base_url, {"id": "c1", "messages": ["hi", "again"]})
    assert seen == [("be brief", "m1", True, True, 1), ("be brief", "m1", True, True, 2)]


def test_an_endpoint_that_is_down_makes_the_run_error_whatever_the_agent_does(loopback) -> None:
    srv = loopback([status(503, headers={"x-should-retry": "false"})])
    headers = {}

    async def agent(task):
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        try:
            raw = await client.chat.completions.with_raw_response.create(
                model=task.model, messages=task.messages)
        except openai.APIStatusError as exc:
            headers.update(exc.response.headers)
            return "I could not reach the model, sorry"  # the framework swallowed it
        return raw.parse().choices[0].message.content

    played = play(agent, srv.base_url)
    # The run is the infrastructure's error, naming the endpoint and the model, not a pass or a fail.
    assert played.error is not None
    assert "InternalServerError" in played.error and srv.base_url in played.error and "model m1" in played.error
    assert headers.get("x-should-retry") == "false"
    assert played.trace["llm_calls"][0]["status"] == 503


def test_a_later_success_clears_an_earlier_failure_and_other_4xx_are_the_agents(loopback) -> None:
    srv = loopback([status(500, headers={"x-should-retry": "false"}), text("fine"), status(400)])

    async def agent(task):
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        out = []
        for _ in range(3):
            try:
                answer = await client.chat.completions.create(model=task.model, messages=task.messages)
                out.append(answer.choices[0].message.content)
            except openai.APIStatusError as exc:
                out.append(str(exc.status_code))
        return " ".join(out)

    played = play(agent, srv.base_url)
    # 500 (after retries), then a success, then a 400: the 500 was followed by a success, the 400 is the
    # agent's own bad request: the run is judged as usual.
    assert played.error is None
    assert played.trace["final_answer"] == "500 fine 400"
    assert [c["status"] for c in played.trace["llm_calls"]] == [500, 200, 400]


def test_the_runs_tools_over_mcp(loopback) -> None:
    srv = loopback([tool_calls([("lookup", {"key": "a"}, "x1"), ("lookup", {"key": "zz"}, "x2")]), text("a is 1")])

    async def agent(task):
        import json

        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        async with httpx2.AsyncClient() as http, streamable_http_client(task.mcp_url, http_client=http) as (
                read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                       "parameters": t.input_schema}} for t in listed]
            messages = list(task.messages)
            errors = []
            while True:
                answer = (await client.chat.completions.create(model=task.model, messages=messages,
                                                               tools=tools)).choices[0].message
                if not answer.tool_calls:
                    return f"{answer.content} {[t['function']['name'] for t in tools]} {errors}"
                messages.append(answer.model_dump(exclude_none=True))
                for call in answer.tool_calls:
                    result = await session.call_tool(call.function.name, json.loads(call.function.arguments),
                                                     meta={"call_id": call.id})
                    errors.append(result.is_error)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result.content[0].text})

    played = play(agent, srv.base_url)
    trace = played.trace
    assert played.error is None, played.error
    assert trace["final_answer"] == "a is 1 ['lookup'] [False, True]"
    assert [(s["args"], s["executed"], s["output"]) for s in trace["steps"]] == [
        ({"key": "a"}, True, "1"), ({"key": "zz"}, True, None)]
    assert trace["steps"][1]["error"].startswith("KeyError")
    # The tool error reached the model as the built-in agent's observation text.
    assert srv.requests[1]["messages"][-1]["content"].startswith("Error: KeyError")


def test_a_client_that_hangs_up_cancels_the_upstream_call(loopback) -> None:
    from tests.loopback import stall

    srv = loopback([stall(None)])

    async def agent(task):
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        try:
            await asyncio.wait_for(client.chat.completions.create(model=task.model, messages=task.messages), 1.0)
        except (TimeoutError, openai.APITimeoutError):
            pass
        for _ in range(100):  # the endpoint notices the hang-up on its own loop turn
            if task._ctx.llm_calls[0]["status"] is not None:
                break
            await asyncio.sleep(0.05)
        return "gave up"

    played = play(agent, srv.base_url)
    assert played.error is None  # the agent's own choice, not an outage
    assert [c["status"] for c in played.trace["llm_calls"]] == ["client_closed"]


def test_a_long_conversation_over_a_mebibyte_is_forwarded(loopback) -> None:
    srv = loopback([text("read it")])
    long = "x" * (3 * 2**20)  # 3 MiB of context: past aiohttp's own 1 MiB limit on a request body

    async def agent(task):
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        answer = await client.chat.completions.create(model=task.model, messages=[
            {"role": "user", "content": long}])
        return answer.choices[0].message.content

    played = play(agent, srv.base_url)
    assert played.error is None and played.trace["final_answer"] == "read it"
    assert srv.requests[0]["messages"][0]["content"] == long
    assert [c["status"] for c in played.trace["llm_calls"]] == [200]


def test_each_event_loop_s_runs_get_their_own_mcp_server() -> None:
    """Runs on event loops one after the other in one process (each `run` is one): every run's tools answer
    over MCP, never "the run has ended" from a server an earlier loop's endpoint left behind."""
    import gc

    async def agent(task):
        import httpx2
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient() as http, streamable_http_client(task.mcp_url, http_client=http) as (
                read, write, *_), ClientSession(read, write) as session:
            await session.initialize()
            result = await asyncio.wait_for(session.call_tool("lookup", {"key": "b"}), 10)
            return f"{result.is_error} {result.content[0].text}"

    from agent_eval.run.bridge_mcp import McpServer

    def servers() -> int:
        return len([kept for kept in gc.get_objects() if isinstance(kept, McpServer)])

    gc.collect()
    before = servers()  # another test's, in the same worker process, may still be alive (or die meanwhile)
    alive = []
    for _ in range(6):
        played = play(agent, "http://127.0.0.1:9/v1")  # no model is asked
        assert played.error is None, played.error
        assert played.trace["final_answer"] == "False 2"
        gc.collect()  # the ended loop's endpoint is freed, and a later one may be given its address
        alive.append(servers())
    # the servers of ended loops are not kept: no more after 6 loops than after 2 (each loop kept its own before)
    assert alive[-1] <= alive[1] <= before + 2
