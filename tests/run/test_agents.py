"""Agents: the Python agent contract, and the built-in `openai` loop on the loopback server."""
from __future__ import annotations

import asyncio
import copy

import orjson
import pytest

from agent_eval import ToolError
from agent_eval.run.agents.openai_loop import OpenAIAgent
from agent_eval.run.agents.python import PythonAgent
from agent_eval.score.envdiff import apply_diff
from agent_eval.run.episode import play_run
from agent_eval.run.world import EnvTemplate
from agent_eval.score.pipeline import ScoringContext, score_run
from agent_eval.suite.tools import ToolSet
from tests.loopback import message, status, text, tool_calls


def get_order(order_id: str, env: dict) -> dict:
    """Look an order up.

    Args:
        order_id: The order's id.
    """
    if order_id not in env["orders"]:
        raise KeyError(f"no order {order_id}")
    return env["orders"][order_id]


def append(x: str, env: dict) -> str:
    """Append x to the log."""
    env["log"].append(x)
    return f"appended {x}"


TOOLS = ToolSet.from_functions([get_order, append])
ENV = {"orders": {"A": {"status": "paid", "amount": 12.5}}, "log": []}
SYSTEM = "You are a careful support agent."


def case(**fields):
    base = {"id": "c1", "query": "where is A?", "metadata": {"customer": "C9"}, "tags": [],
            "expect": {"contains": "A"}}
    base.update(fields)
    return base


def play(agent, the_case=None, system_prompt=SYSTEM, trial=0, timeout=None):
    the_case = the_case or case()
    return asyncio.run(play_run(the_case, trial, agent, TOOLS, EnvTemplate(ENV), system_prompt, timeout))


def score(the_case, played, pricing=None, model=None):
    ctx = ScoringContext(pricing=pricing or {}, model=model)
    return asyncio.run(score_run(the_case, 0, played.trace, played.final_env, None, played.error, ctx))


def python_agent(fn):
    return PythonAgent("test:agent", fn)


# ---------------------------------------------------------------- the Python agent contract


def test_sync_agent_sees_the_task_and_calls_tools():
    seen = {}

    def agent(task):
        seen.update(case_id=task.case_id, trial=task.trial, metadata=task.metadata, input=task.input,
                    messages=[dict(m) for m in task.messages],
                    tools=sorted(s["function"]["name"] for s in task.tool_schemas))
        order = orjson.loads(task.call_tool("get_order", order_id="A"))
        with pytest.raises(ToolError) as info:
            task.call_tool("get_order", order_id="Z")
        seen["error"] = str(info.value)
        return {"answer": f"A is {order['status']}", "cards": [{"type": "order_card", "id": "A"}],
                "final_agent": "orders_agent"}

    played = play(python_agent(agent), trial=3)
    assert seen["case_id"] == "c1" and seen["trial"] == 3 and seen["metadata"] == {"customer": "C9"}
    assert seen["input"] == "where is A?"
    assert seen["messages"] == [{"role": "system", "content": SYSTEM},
                                {"role": "user", "content": "where is A?"}]
    assert seen["tools"] == ["append", "get_order"]
    assert seen["error"] == "KeyError: 'no order Z'"
    trace = played.trace
    assert played.error is None and trace["stop_reason"] == "completed" and trace["agent_error"] is None
    assert trace["replies"] == ["A is paid"] and trace["final_answer"] == "A is paid"
    assert trace["cards"] == [{"type": "order_card", "id": "A"}] and trace["final_agent"] == "orders_agent"
    assert [(s["name"], s["args"], s["error"]) for s in trace["steps"]] == [
        ("get_order", {"order_id": "A"}, None), ("get_order", {"order_id": "Z"}, "KeyError: 'no order Z'")]


def test_async_agent_uses_acall_tool_and_writes_its_private_env():
    async def agent(task):
        out = await task.acall_tool("append", x="one")
        with pytest.raises(ToolError):
            await task.acall_tool("no_such_tool")
        return out

    played = play(python_agent(agent))
    assert played.trace["replies"] == ["appended one"]
    assert played.final_env["log"] == ["one"] and ENV["log"] == []
    assert played.trace["steps"][1]["invalid_args"] == "unknown tool"
    assert apply_diff(copy.deepcopy(ENV), played.trace["final_env_diff"]) == played.final_env


def test_record_usage_feeds_tokens_and_cost():
    def agent(task):
        task.record_usage(1000, 200, model="big")
        task.record_usage(3000, 100)  # no model: priced as the run's model
        return "A"

    the_case = case()
    played = play(python_agent(agent))
    assert [(c["prompt_tokens"], c["completion_tokens"], c["model"]) for c in played.trace["llm_calls"]] == [
        (1000, 200, "big"), (3000, 100, None)]
    pricing = {"big": {"input_per_mtok": 5.0, "output_per_mtok": 15.0},
               "small": {"input_per_mtok": 0.5, "output_per_mtok": 1.5}}
    run = score(the_case, played, pricing, model="small")
    metrics = run["metrics"]
    assert metrics["prompt_tokens"] == 4000 and metrics["completion_tokens"] == 300  # 1000+3000, 200+100
    # big: 1000*5/1e6 + 200*15/1e6 = 0.005 + 0.003 = 0.008
    # small: 3000*0.5/1e6 + 100*1.5/1e6 = 0.0015 + 0.00015 = 0.00165
    assert metrics["cost_usd"] == pytest.approx(0.008 + 0.00165)
    # A model without a price makes the cost null.
    assert score(the_case, played, {"big": pricing["big"]}, model="unpriced")["metrics"]["cost_usd"] is None


def test_str_reply_has_no_cards():
    played = play(python_agent(lambda task: "A"))
    assert played.trace["cards"] == [] and played.trace["final_agent"] is None
    assert score(case(), played)["status"] == "passed"


@pytest.mark.parametrize("value", [42, None, ["A"], {"answer": 3}, {"answer": "A", "cards": ["x"]}])
def test_a_bad_return_value_is_an_agent_error_and_fails_the_run(value):
    played = play(python_agent(lambda task: value))
    assert played.error is None
    assert played.trace["stop_reason"] == "agent_error" and played.trace["agent_error"]
    run = score(case(), played)
    assert run["status"] == "failed" and run["success"] is False and run["error"] is None


def test_an_agent_that_raises_fails_the_run_with_its_message():
    async def agent(task):
        raise ValueError("model said no")

    played = play(python_agent(agent))
    assert played.trace["stop_reason"] == "agent_error"
    assert played.trace["agent_error"] == "ValueError: model said no"
    assert score(case(), played)["status"] == "failed"


def test_multi_turn_messages_reach_the_agent_in_one_sandbox():
    turns = []

    def agent(task):
        turns.append([m["role"] for m in task.messages])
        task.call_tool("append", x=task.input)
        return f"reply {len(turns)}"

    played = play(python_agent(agent), case(query=None, messages=["first", "second"]), system_prompt=None)
    assert turns == [["user"], ["user", "assistant", "user"]]
    assert played.trace["user_messages"] == ["first", "second"]
    assert played.trace["replies"] == ["reply 1", "reply 2"] and played.trace["final_answer"] == "reply 2"
    assert played.final_env["log"] == ["first", "second"]


# ---------------------------------------------------------------- the openai agent


def openai_agent(srv, max_steps=8):
    return OpenAIAgent({"model": "loop-model", "base_url": srv.base_url, "api_key": "test-key",
                        "max_steps": max_steps})


def tool_messages(request):
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_openai_agent_calls_a_tool_then_answers(loopback):
    srv = loopback([tool_calls([("get_order", {"order_id": "A"})]), text("A is paid")])
    played = play(openai_agent(srv))
    assert played.error is None and played.trace["stop_reason"] == "completed"
    assert played.trace["replies"] == ["A is paid"]
    assert [(s["name"], s["args"]) for s in played.trace["steps"]] == [("get_order", {"order_id": "A"})]
    first, second = srv.requests
    # temperature 0, the model, the system prompt first, and the tools schema.
    assert first["temperature"] == 0 and first["model"] == "loop-model"
    assert first["messages"] == [{"role": "system", "content": SYSTEM},
                                 {"role": "user", "content": "where is A?"}]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["append", "get_order"]
    (observation,) = tool_messages(second)
    assert observation["tool_call_id"] == "call_0"
    assert orjson.loads(observation["content"]) == {"status": "paid", "amount": 12.5}
    assert second["messages"][2]["role"] == "assistant"
    assert second["messages"][2]["tool_calls"][0]["id"] == "call_0"


def test_openai_agent_runs_parallel_tool_calls_in_order(loopback):
    srv = loopback([tool_calls([("append", {"x": "1"}), ("append", {"x": "2"}), ("append", {"x": "3"})]),
                    text("done")])
    played = play(openai_agent(srv))
    assert [s["args"]["x"] for s in played.trace["steps"]] == ["1", "2", "3"]
    assert played.final_env["log"] == ["1", "2", "3"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages(srv.requests[1])] == [
        ("call_0", "appended 1"), ("call_1", "appended 2"), ("call_2", "appended 3")]


def test_malformed_json_and_unknown_tool_are_fed_back_as_errors(loopback):
    raw = '{"order_id": "A"'
    srv = loopback([tool_calls([("get_order", raw), ("teleport", {"to": "mars"})]), text("sorry")])
    played = play(openai_agent(srv))
    assert played.trace["stop_reason"] == "completed"
    bad_json, unknown = played.trace["steps"]
    assert bad_json["args"] == raw and bad_json["invalid_args"].startswith("malformed JSON")
    assert bad_json["error"] is not None and bad_json["output"] is None
    assert unknown["name"] == "teleport" and unknown["invalid_args"] == "unknown tool" and unknown["error"]
    fed_back = tool_messages(srv.requests[1])
    assert [m["tool_call_id"] for m in fed_back] == ["call_0", "call_1"]
    assert fed_back[0]["content"].startswith("Error:") and "JSON" in fed_back[0]["content"]
    assert fed_back[1]["content"].startswith("Error:") and "teleport" in fed_back[1]["content"]


def test_usage_is_summed_across_completions(loopback):
    srv = loopback([tool_calls([("get_order", {"order_id": "A"})], prompt_tokens=100, completion_tokens=20),
                    tool_calls([("append", {"x": "y"})], prompt_tokens=150, completion_tokens=30),
                    text("A", prompt_tokens=200, completion_tokens=7)])
    played = play(openai_agent(srv))
    assert len(played.trace["llm_calls"]) == 3
    pricing = {"loop-model": {"input_per_mtok": 1.0, "output_per_mtok": 4.0}}
    metrics = score(case(), played, pricing, model="loop-model")["metrics"]
    assert metrics["prompt_tokens"] == 450 and metrics["completion_tokens"] == 57  # 100+150+200, 20+30+7
    assert metrics["cost_usd"] == pytest.approx(450 * 1.0 / 1e6 + 57 * 4.0 / 1e6)  # 0.00045 + 0.000228


def test_max_steps_ends_the_run_with_stop_reason_max_steps(loopback):
    srv = loopback(lambda request, index: tool_calls([("append", {"x": str(index)})]))
    played = play(openai_agent(srv, max_steps=3))
    assert srv.count == 3  # --max-steps caps the completions of one user turn
    assert played.trace["stop_reason"] == "max_steps" and played.error is None
    assert len(played.trace["steps"]) == 3
    run = score(case(expect={"not_contains": "zzz"}), played)
    assert run["status"] == "failed" and run["success"] is False


def test_openai_agent_keeps_the_conversation_across_user_messages(loopback):
    srv = loopback([text("hello"), text("A")])
    played = play(openai_agent(srv), case(query=None, messages=["hi", "where is A?"]))
    assert played.trace["replies"] == ["hello", "A"]
    assert [m["role"] for m in srv.requests[1]["messages"]] == ["system", "user", "assistant", "user"]


def test_a_provider_400_is_an_infrastructure_error(loopback):
    srv = loopback([status(400)])
    played = play(openai_agent(srv))
    assert played.error is not None and "400" in played.error
    run = score(case(), played)
    assert run["status"] == "error" and run["success"] is False
    assert srv.count == 1  # a 400 is not retried


def test_odd_answers_reach_the_trace_as_the_plain_ones_do(loopback):
    # content as a list of parts, unknown fields, arguments as an object: read as the plain answer would be
    call = {"id": "c9", "type": "function", "index": 0,
            "function": {"name": "get_order", "arguments": {"order_id": "A"}}}
    srv = loopback([message({"role": "assistant", "content": None, "tool_calls": [call]}, system_fingerprint="x"),
                    message({"role": "assistant", "content": [{"type": "text", "text": "A is "},
                                                              {"type": "text", "text": "paid"}]})])
    played = play(openai_agent(srv))
    assert played.error is None and played.trace["replies"] == ["A is paid"]
    assert [(s["name"], s["args"]) for s in played.trace["steps"]] == [("get_order", {"order_id": "A"})]
    assert srv.requests[1]["messages"][2]["tool_calls"] == [
        {"id": "c9", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id":"A"}'}}]


def test_a_malformed_answer_is_an_infrastructure_error_naming_endpoint_and_model(loopback):
    srv = loopback([message({"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]})])
    played = play(openai_agent(srv))
    assert played.error == f"the provider's tool call 1 has no function ({srv.base_url}, model loop-model)"
    assert played.trace["stop_reason"] == "completed" and played.trace["steps"] == []
    assert score(case(), played)["status"] == "error"
