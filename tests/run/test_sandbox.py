"""The sandbox: private env copies, recorded dispatch, faults, replay."""
from __future__ import annotations

import asyncio
import copy

import pytest

from agent_eval.errors import ToolError
from agent_eval.run.sandbox import DEFAULT_FAULT_ERROR, Sandbox
from agent_eval.run.world import EnvTemplate, replay_expected_tools
from agent_eval.suite.tools import ToolSet


def put(key: str, value: int, env: dict) -> str:
    """Store a value.

    Args:
        key: Where.
        value: What.
    """
    env.setdefault("calls", 0)
    env["calls"] += 1
    env[key] = value
    return f"stored {key}"


def half_write(key: str, env: dict) -> str:
    """Write, then fail half way."""
    env[key] = "partial"
    env.setdefault("nested", {})["touched"] = True
    raise RuntimeError("disk full")


def read(key: str, env: dict) -> dict:
    """Read a value."""
    return {"key": key, "value": env.get(key)}


TOOLS = ToolSet.from_functions([put, half_write, read])

NESTED = {
    "orders": {"A": {"status": "paid", "items": [{"sku": "x", "qty": 2, "price": 19.99}], "note": None}},
    "users": [{"id": 1, "name": "김민수", "flags": [True, False]}, {"id": 2, "tags": []}],
    "counter": 0,
    "big": 2**53 + 1,
    "ratio": 0.1,
    "empty": {},
}


# ---------------------------------------------------------------- private env copies


def test_fresh_equals_deepcopy_on_a_nested_env():
    template = EnvTemplate(NESTED)
    fresh = template.fresh()
    assert fresh == copy.deepcopy(NESTED)
    assert type(fresh["big"]) is int and fresh["big"] == 2**53 + 1
    assert type(fresh["ratio"]) is float and fresh["users"][0]["name"] == "김민수"


def test_fresh_copies_share_nothing():
    template = EnvTemplate(copy.deepcopy(NESTED))
    one, two = template.fresh(), template.fresh()
    one["orders"]["A"]["items"][0]["qty"] = 99
    one["users"].append({"id": 3})
    one["empty"]["x"] = 1
    assert two == NESTED
    assert template.env == NESTED
    assert template.fresh() == NESTED


def test_runs_never_see_each_others_writes():
    template = EnvTemplate({"counter": 0})
    first = Sandbox(TOOLS, template.fresh())
    second = Sandbox(TOOLS, template.fresh())
    first.call("put", {"key": "counter", "value": 5})
    output, error = second.call("read", {"key": "counter"})
    assert error is None and output == '{"key":"counter","value":0}'
    assert first.env["counter"] == 5 and second.env == {"counter": 0} and template.env == {"counter": 0}


# ---------------------------------------------------------------- recorded dispatch


def test_a_call_is_recorded_as_a_step():
    box = Sandbox(TOOLS, {})
    output, error = box.call("put", {"key": "a", "value": 1})
    assert (output, error) == ("stored a", None)
    (step,) = box.steps
    assert step["step"] == 0 and step["name"] == "put" and step["args"] == {"key": "a", "value": 1}
    assert step["output"] == "stored a" and step["error"] is None and step["invalid_args"] is None
    assert step["latency_s"] >= 0 and step["t_start_s"] >= 0


def test_a_tool_exception_is_recorded_as_type_and_message():
    box = Sandbox(TOOLS, {})
    output, error = box.call("half_write", {"key": "k"})
    assert output is None and error == "RuntimeError: disk full"
    assert box.steps[0]["error"] == "RuntimeError: disk full" and box.steps[0]["output"] is None


def test_unknown_tool_is_an_error_and_invalid_and_never_executes():
    box = Sandbox(TOOLS, {"calls": 0})
    output, error = box.call("delete_everything", {"key": "a"})
    assert output is None and error is not None and "delete_everything" in error
    step = box.steps[0]
    assert step["invalid_args"] == "unknown tool" and step["error"] == error
    assert box.env == {"calls": 0}


def test_schema_invalid_args_are_recorded_and_still_executed():
    box = Sandbox(TOOLS, {})
    output, error = box.call("put", {"key": "a", "value": "not an int"})
    assert error is None and output == "stored a"
    assert box.env == {"calls": 1, "a": "not an int"}  # the tool decided, as in production
    assert box.steps[0]["invalid_args"] and "value" in box.steps[0]["invalid_args"]
    box.call("put", {"key": "b"})  # a missing required argument: invalid, and the tool raises
    step = box.steps[1]
    assert step["invalid_args"] and "value" in step["invalid_args"]
    assert step["error"].startswith("TypeError:")


def test_malformed_json_keeps_the_raw_string_and_does_not_execute():
    box = Sandbox(TOOLS, {})
    raw = '{"key": "a", "value": '
    output, error = box.call("put", raw)
    assert output is None and error is not None
    step = box.steps[0]
    assert step["args"] == raw
    assert step["invalid_args"].startswith("malformed JSON")
    assert box.env == {}


def test_a_closed_sandbox_refuses_and_records_nothing():
    box = Sandbox(TOOLS, {})
    box.closed = True
    with pytest.raises(ToolError):
        box.call("put", {"key": "a", "value": 1})
    assert box.steps == [] and box.env == {}


# ---------------------------------------------------------------- faults


def test_fault_fails_the_first_n_calls_without_executing():
    box = Sandbox(TOOLS, {}, [{"tool": "put", "fail_times": 2}])
    results = [box.call("put", {"key": "a", "value": i}) for i in range(3)]
    assert results[0] == (None, DEFAULT_FAULT_ERROR) and results[1] == (None, DEFAULT_FAULT_ERROR)
    assert "503" in DEFAULT_FAULT_ERROR
    assert results[2] == ("stored a", None)
    assert box.env == {"calls": 1, "a": 2}  # only the third call ran
    assert [s["error"] for s in box.steps] == [DEFAULT_FAULT_ERROR, DEFAULT_FAULT_ERROR, None]
    assert [s["output"] for s in box.steps] == [None, None, "stored a"]
    # Another tool is untouched by the fault.
    assert box.call("read", {"key": "a"})[1] is None


def test_fault_with_its_own_error_message_and_zero_times():
    box = Sandbox(TOOLS, {}, [{"tool": "put", "fail_times": 1, "error": "Timeout: upstream timed out"},
                              {"tool": "read", "fail_times": 0}])
    assert box.call("put", {"key": "a", "value": 1}) == (None, "Timeout: upstream timed out")
    assert box.call("put", {"key": "a", "value": 1}) == ("stored a", None)
    assert box.call("read", {"key": "a"})[1] is None


def test_faults_are_per_run():
    faults = [{"tool": "put", "fail_times": 1}]
    for _ in range(2):  # each run gets its own count of failures
        box = Sandbox(TOOLS, {}, faults)
        assert box.call("put", {"key": "a", "value": 1})[1] == DEFAULT_FAULT_ERROR
        assert box.call("put", {"key": "a", "value": 1})[1] is None


def test_delay_ms_delays_every_call_sync_and_async(monkeypatch):
    import agent_eval.run.sandbox as sandbox_mod

    slept: list[float] = []
    monkeypatch.setattr(sandbox_mod.time, "sleep", lambda s: slept.append(s))

    async def fake_sleep(s):
        slept.append(s)

    box = Sandbox(TOOLS, {}, [{"tool": "read", "delay_ms": 250}])
    assert box.call("read", {"key": "a"})[1] is None  # a delay alone does not fail the call
    assert box.call("read", {"key": "a"})[1] is None
    box.call("put", {"key": "a", "value": 1})  # other tools are not delayed
    monkeypatch.setattr(sandbox_mod.asyncio, "sleep", fake_sleep)
    result = asyncio.run(box.acall("read", {"key": "a"}))
    assert result[1] is None
    assert slept == [0.25, 0.25, 0.25]


# ---------------------------------------------------------------- replay


def test_replay_skips_an_erroring_gold_call_and_undoes_its_partial_writes():
    template = EnvTemplate({"nested": {"kept": 1}})
    expected = [
        {"name": "put", "args": {"key": "a", "value": 1}},
        {"name": "half_write", "args": {"key": "b"}},
        {"name": "put", "args": {"key": "c", "value": 3}},
    ]
    env = replay_expected_tools(TOOLS, template, expected)
    assert env == {"nested": {"kept": 1}, "calls": 2, "a": 1, "c": 3}
    assert template.env == {"nested": {"kept": 1}}  # the template itself is never written


def test_replay_with_no_calls_is_the_initial_env():
    template = EnvTemplate({"x": [1, 2]})
    assert replay_expected_tools(TOOLS, template, []) == {"x": [1, 2]}
