"""Pairing the model's tool calls with the sandbox's steps after a run on the recording endpoint."""
from __future__ import annotations

from agent_eval.run.endpoint import Completion, RunLink
from agent_eval.run.pairing import NOT_EXECUTED, settle
from agent_eval.run.wire import ModelCall
from agent_eval.suite.tools import ToolSet


def lookup(key: str, env: dict) -> str:
    """Look a key up."""
    return env[key]


TOOLS = ToolSet.from_functions([lookup])


def link(*completions: Completion) -> RunLink:
    made = RunLink("t", "u", None, None, None, [], lambda: 0.0)
    made.completions.extend(completions)
    return made


def step(number: int, name: str, args, call_id=None) -> dict:
    made = {"step": number, "name": name, "args": args, "output": "x", "error": None, "error_traceback": None,
            "invalid_args": None, "latency_s": 0.1, "t_start_s": float(number), "executed": True}
    if call_id is not None:
        made["call_id"] = call_id
    return made


def test_steps_follow_the_models_order_and_calls_it_never_ran_are_unexecuted_steps() -> None:
    offered = {"lookup", "final_result"}
    calls = [ModelCall("c1", "lookup", '{"key": "a"}'), ModelCall("c2", "lookup", '{"key": "b"}'),
             ModelCall("c3", "nope", "{}"), ModelCall("c4", "lookup", '{"key": 3}'),
             ModelCall("c5", "lookup", '{"key": '), ModelCall("c6", "final_result", '{"answer": "x"}')]
    # The parallel batch finished out of order: b's step came first; a's step has no call id.
    steps = [step(0, "lookup", {"key": "b"}, "c2"), step(1, "lookup", {"key": "a"})]
    final, turn_steps, framework = settle(link(Completion(0, offered, calls, 2.5)), steps, [2], TOOLS)
    assert [(s["name"], s["args"], s["executed"]) for s in final] == [
        ("lookup", {"key": "a"}, True), ("lookup", {"key": "b"}, True), ("nope", {}, False),
        ("lookup", {"key": 3}, False), ("lookup", '{"key": ', False)]
    assert [s["step"] for s in final] == [0, 1, 2, 3, 4]
    assert [s["invalid_args"] for s in final[2:4]] == ["unknown tool", "args.key: 3 is not of type 'string'"]
    assert final[4]["invalid_args"] == "malformed JSON"
    assert [s["error"] for s in final[2:]] == [f"{NOT_EXECUTED} (unknown tool)", f"{NOT_EXECUTED} (invalid arguments)",
                                               f"{NOT_EXECUTED} (malformed JSON)"]
    assert all(s["output"] is None and s["t_start_s"] == 2.5 for s in final[2:])
    assert all("call_id" not in s for s in final)
    # final_result was offered by the framework and is no suite tool: not a step.
    assert framework == [{"name": "final_result", "args": {"answer": "x"}}]
    assert turn_steps == [5]


def test_turns_keep_their_steps_and_calls_made_without_the_model_stay_in_place() -> None:
    first = Completion(0, {"lookup"}, [ModelCall("c1", "lookup", '{"key": "a"}')], 1.0)
    second = Completion(1, {"lookup"}, [ModelCall("c2", "lookup", '{"key": "z"}')], 3.0)
    # Turn 0: the agent looked "pre" up by itself, then the model's a. Turn 1: the model's z was dropped.
    steps = [step(0, "lookup", {"key": "pre"}), step(1, "lookup", {"key": "a"}, "c1")]
    final, turn_steps, _ = settle(link(first, second), steps, [2, 2], TOOLS)
    assert [(s["args"], s["executed"]) for s in final] == [({"key": "pre"}, True), ({"key": "a"}, True),
                                                          ({"key": "z"}, False)]
    assert final[2]["error"] == NOT_EXECUTED and final[2]["invalid_args"] is None
    assert turn_steps == [2, 3]


def test_without_recorded_completions_the_steps_stay_as_the_sandbox_recorded_them() -> None:
    steps = [step(0, "lookup", {"key": "a"}, "x1")]
    final, turn_steps, framework = settle(link(), steps, [1], TOOLS)
    assert final == [step(0, "lookup", {"key": "a"})] and turn_steps == [1] and framework == []
