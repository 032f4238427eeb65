"""The recording endpoint under the Responses API (`/v1/responses`): an Agents SDK agent on its default
Responses model, and a hand-written agent streaming Responses events; usage, tool calls and pairing."""
from __future__ import annotations

import json

import openai

from tests.loopback import text, tool_calls
from tests.loopback_wire import responses_router
from tests.run.test_endpoint import play


def test_an_agents_sdk_agent_on_its_responses_model_is_recorded_and_paired(loopback) -> None:
    def pick(items: list[dict]):
        # A lookup first; once its output is in the input, the answer.
        if any(item.get("type") == "function_call_output" for item in items):
            return text("a is 1", 13, 6)
        return tool_calls([("lookup", {"key": "a"}, "r1")], 9, 4)

    srv = loopback(responses_router(pick))

    async def agent(task):
        from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled

        from agent_eval.bridge import openai_agents as bridge

        set_tracing_disabled(True)
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        model = OpenAIResponsesModel(model=task.model, openai_client=client)
        helper = Agent(name="helper", instructions=task.system_prompt, tools=bridge.tools(task), model=model)
        return (await Runner.run(helper, task.input)).final_output

    played = play(agent, srv.base_url)
    trace = played.trace
    assert played.error is None and trace["final_answer"] == "a is 1"
    # Usage read from the Responses shape (input_tokens, output_tokens): (9, 4) then (13, 6).
    assert [(c["path"], c["status"], c["prompt_tokens"], c["completion_tokens"]) for c in trace["llm_calls"]] == [
        ("/responses", 200, 9, 4), ("/responses", 200, 13, 6)]
    assert [(s["name"], s["args"], s["executed"]) for s in trace["steps"]] == [("lookup", {"key": "a"}, True)]
    assert trace["framework_calls"] == []
    assert all(r["model"] == "m1" for r in srv.requests) and len(srv.requests) == 2


def test_a_streamed_responses_call_the_agent_drops_is_a_step_not_executed(loopback) -> None:
    def pick(items: list[dict]):
        if any(item.get("type") == "function_call_output" for item in items):
            return text("done", 21, 2)
        # Three calls in one answer: a suite tool twice, and one the suite does not have.
        return tool_calls([("lookup", {"key": "b"}, "s1"), ("erase_all", {}, "s2"), ("lookup", {"key": "a"}, "s3")],
                          17, 8)

    srv = loopback(responses_router(pick))

    async def agent(task):
        client = openai.AsyncOpenAI(base_url=task.base_url, api_key=task.api_key, max_retries=0)
        tools = [{"type": "function", **t["function"]} for t in task.tool_schemas]
        tools.append({"type": "function", "name": "erase_all", "parameters": {"type": "object", "properties": {}}})
        inputs: list = [{"role": "user", "content": task.input}]
        while True:
            calls, answer = [], ""
            async for event in await client.responses.create(model=task.model, input=inputs, tools=tools,
                                                             stream=True):
                if event.type == "response.completed":
                    answer = event.response.output_text
                    calls = [item for item in event.response.output if item.type == "function_call"]
            if not calls:
                return answer
            for call in calls:
                inputs.append({"type": "function_call", "call_id": call.call_id, "name": call.name,
                               "arguments": call.arguments})
                # The agent runs the first call only; the others it answers itself, never reaching the sandbox.
                output = (await task.acall_tool(call.name, call_id=call.call_id, **json.loads(call.arguments))
                          if call.call_id == "s1" else "refused")
                inputs.append({"type": "function_call_output", "call_id": call.call_id, "output": output})

    played = play(agent, srv.base_url)
    trace = played.trace
    assert played.error is None and trace["final_answer"] == "done"
    assert [(c["path"], c["prompt_tokens"], c["completion_tokens"]) for c in trace["llm_calls"]] == [
        ("/responses", 17, 8), ("/responses", 21, 2)]
    # erase_all was offered in the request's tools but is not a suite tool: the framework's (agent's) own.
    # The dropped suite call is a step that never ran, in the order the model issued it.
    assert [(s["name"], s["args"], s["executed"]) for s in trace["steps"]] == [
        ("lookup", {"key": "b"}, True), ("lookup", {"key": "a"}, False)]
    assert trace["steps"][1]["output"] is None and trace["steps"][1]["error"].startswith("not executed")
    assert trace["framework_calls"] == [{"name": "erase_all", "args": {}}]
    assert all(r.get("stream") is True and "stream_options" not in r for r in srv.requests)
