"""Simulated users: the dialogue loop, both simulator kinds, max_turns, errors, settings.

The LLM simulator and the `openai` agent share one loopback server, which routes on the request's
model name (`agent-m` plays the agent, `user-m` the user), through the real openai SDK.
"""
from __future__ import annotations

import asyncio
import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.run.agents.openai_loop import OpenAIAgent
from agent_eval.run.agents.python import PythonAgent
from agent_eval.report.dialogue import dialogue_turns
from agent_eval.run.episode import play_run
from agent_eval.errors import CaseFileError, ConfigError
from agent_eval.run.runner import lite_run
from agent_eval.run.world import EnvTemplate
from agent_eval.run.scenario import require_user, resolve_user
from tests.builders import flags_of
from agent_eval.suite.validation_scenario import validate_scenario_fields, validate_user_block
from agent_eval.score.pipeline import ScoringContext, score_run
from agent_eval.run.simulator import OPENING, STOP, LLMSimulator, PythonSimulator, user_sim_summary
from agent_eval.suite.tools import ToolSet
from tests.loopback import text, tool_calls


def get_booking(booking_id: str, env: dict) -> dict:
    """Look a booking up.

    Args:
        booking_id: The booking's id.
    """
    return env["bookings"][booking_id]


def cancel_booking(booking_id: str, env: dict) -> str:
    """Cancel a booking.

    Args:
        booking_id: The booking's id.
    """
    env["bookings"][booking_id]["status"] = "cancelled"
    return f"{booking_id} cancelled"


TOOLS = ToolSet.from_functions([get_booking, cancel_booking])
ENV = {"bookings": {"B7": {"status": "active", "hotel": "Seaside"}}}


def scenario_case(**fields) -> dict:
    base = {"id": "cancel-b7", "tags": [], "metadata": {},
            "scenario": "You want to cancel your hotel booking B7. Give the number only when asked.",
            "user_description": "A hurried traveller.",
            "expected_env_check": [{"path": ["bookings", "B7", "status"], "equals": "cancelled"}]}
    base.update(fields)
    return base


def play(case, agent, simulator, timeout=None):
    return asyncio.run(play_run(case, 0, agent, TOOLS, EnvTemplate(ENV), "Be helpful.", timeout, simulator))


def score(case, played):
    return asyncio.run(score_run(case, 0, played.trace, played.final_env, None, played.error,
                                 ScoringContext(pricing={}, model="agent-m")))


def agent_reply(messages: list[dict]):
    """The agent: asks for the booking number, then cancels the booking it is given."""
    last = messages[-1]
    if last["role"] == "tool":
        return text("Booking B7 is cancelled.", prompt_tokens=10, completion_tokens=5)
    if "B7" in (last.get("content") or ""):
        return tool_calls([("cancel_booking", {"booking_id": "B7"})], prompt_tokens=10, completion_tokens=5)
    return text("What is your booking number?", prompt_tokens=10, completion_tokens=5)


def user_reply(messages: list[dict]):
    """The simulated user (roles swapped: the agent's replies arrive with role `user`)."""
    last = messages[-1]["content"]
    if last == OPENING:
        answer = "I need to cancel my hotel booking."
    elif "booking number" in last:
        answer = "It is B7."
    elif "cancelled" in last:
        answer = f"Great, thanks! {STOP}"
    else:
        answer = "Hello?"
    return text(answer, prompt_tokens=100, completion_tokens=7)


def two_roles(user=user_reply, agent=agent_reply):
    """One loopback script for both roles, routed on the request's model name."""
    return lambda request, index: (user if request["model"] == "user-m" else agent)(request["messages"])


def test_llm_simulator_and_openai_agent_hold_the_whole_conversation(loopback) -> None:
    srv = loopback(two_roles())
    agent = OpenAIAgent({"model": "agent-m", "base_url": srv.base_url, "api_key": "k", "max_steps": 4})
    sim = LLMSimulator("user-m", srv.base_url, "k")
    case = scenario_case()
    played = play(case, agent, sim)
    trace = played.trace
    assert played.error is None and trace["stop_reason"] == "completed"
    assert trace["user_messages"] == ["I need to cancel my hotel booking.", "It is B7."]
    assert trace["replies"] == ["What is your booking number?", "Booking B7 is cancelled."]
    assert trace["final_answer"] == "Booking B7 is cancelled."
    assert trace["turn_steps"] == [0, 1]  # no call in turn 1, cancel_booking in turn 2
    assert played.final_env["bookings"]["B7"]["status"] == "cancelled"
    # Only the agent's 3 completions are in the trace: 1 in turn 1, 2 in turn 2 (tool call, answer).
    assert [c["model"] for c in trace["llm_calls"]] == ["agent-m"] * 3
    # The simulator: 3 calls (opening, answer, stop) of 100 + 7 tokens each, kept apart.
    assert user_sim_summary(sim, {"user-m": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}) == {
        "calls": 3, "prompt_tokens": 300, "completion_tokens": 21,
        "cost_usd": pytest.approx((300 * 1.0 + 21 * 2.0) / 1e6), "errors": 0}
    run = score(case, played)
    assert run["status"] == "passed"
    assert run["metrics"]["turns"] == 2
    assert (run["metrics"]["prompt_tokens"], run["metrics"]["completion_tokens"]) == (30, 15)

    sim_requests = [r for r in srv.requests if r["model"] == "user-m"]
    assert all(r["temperature"] == 0 for r in sim_requests)
    system = sim_requests[0]["messages"][0]
    assert system["role"] == "system"
    assert case["scenario"] in system["content"] and "A hurried traveller." in system["content"]
    assert STOP in system["content"] and "never invent facts" in system["content"].lower()
    assert sim_requests[0]["messages"][1:] == [{"role": "user", "content": OPENING}]
    # Roles swapped: the simulator's own message is `assistant`, the agent's reply is `user`.
    assert sim_requests[1]["messages"][1:] == [
        {"role": "assistant", "content": "I need to cancel my hotel booking."},
        {"role": "user", "content": "What is your booking number?"}]


def test_python_simulator_sees_the_dialogue_as_the_agent_does() -> None:
    seen = []

    async def simulate(sim):
        seen.append((sim.case_id, sim.trial, sim.scenario, sim.user_description, list(sim.messages)))
        return ["cancel B7 please", "thanks"][len(sim.messages) // 2] if len(sim.messages) < 4 else None

    def agent(task):
        task.call_tool("cancel_booking", booking_id="B7")
        return f"done ({len(task.messages)})"

    case = scenario_case()
    played = play(case, PythonAgent("t:agent", agent), PythonSimulator("t:sim", simulate))
    assert played.trace["stop_reason"] == "completed"
    assert played.trace["user_messages"] == ["cancel B7 please", "thanks"]
    assert played.trace["turn_steps"] == [1, 2]
    assert len(seen) == 3
    assert seen[0][:4] == ("cancel-b7", 0, case["scenario"], "A hurried traveller.") and seen[0][4] == []
    # No tool messages, no system prompt: the user's messages and the agent's replies only.
    assert seen[2][4] == [{"role": "user", "content": "cancel B7 please"},
                          {"role": "assistant", "content": "done (2)"},
                          {"role": "user", "content": "thanks"},
                          {"role": "assistant", "content": "done (4)"}]
    assert score(case, played)["metrics"]["turns"] == 2


def test_a_simulator_that_never_stops_ends_at_max_turns_and_fails_the_run() -> None:
    calls = []

    def simulate(sim):
        calls.append(len(sim.messages))
        return f"message {len(sim.messages) // 2 + 1}"

    agent = PythonAgent("t:agent", lambda task: "ok")
    case = scenario_case(max_turns=2, expected_env_check=None, expect={"contains": "ok"})
    played = play(case, agent, PythonSimulator("t:sim", simulate))
    # Asked 3 times: messages 1 and 2 are sent; message 3, after max_turns, is not.
    assert calls == [0, 2, 4]
    assert played.trace["user_messages"] == ["message 1", "message 2"]
    assert played.trace["stop_reason"] == "max_turns" and "max_turns (2)" in played.trace["agent_error"]
    run = score(case, played)
    assert (run["status"], run["error"], run["success"]) == ("failed", None, False)
    assert run["metrics"]["turns"] == 2


def test_stopping_right_after_max_turns_completes() -> None:
    def simulate(sim):
        return None if len(sim.messages) == 6 else "again"

    case = scenario_case(max_turns=3, expected_env_check=None, expect={"contains": "ok"})
    played = play(case, PythonAgent("t:agent", lambda task: "ok"), PythonSimulator("t:sim", simulate))
    assert played.trace["stop_reason"] == "completed" and len(played.trace["user_messages"]) == 3
    assert score(case, played)["status"] == "passed"


def test_an_agent_that_never_answers_the_question_fails() -> None:
    def simulate(sim):
        if sim.messages and "active" in sim.messages[-1]["content"]:
            return None
        return "Is booking B7 still active?"

    agent = PythonAgent("t:agent", lambda task: "Hello! How can I help you today?")
    case = scenario_case(max_turns=3, expected_env_check=None, expect={"contains": "active"})
    played = play(case, agent, PythonSimulator("t:sim", simulate))
    assert played.trace["user_messages"] == ["Is booking B7 still active?"] * 3
    run = score(case, played)
    assert run["status"] == "failed" and played.trace["stop_reason"] == "max_turns"
    assert [c["passed"] for c in run["checks"]] == [False]  # and the last reply lacks the answer


def test_an_empty_llm_reply_twice_is_an_error_not_an_agent_failure(loopback) -> None:
    srv = loopback(two_roles(user=lambda messages: text("   ")))
    agent = OpenAIAgent({"model": "agent-m", "base_url": srv.base_url, "api_key": "k", "max_steps": 4})
    sim = LLMSimulator("user-m", srv.base_url, "k")
    case = scenario_case()
    played = play(case, agent, sim)
    assert played.error.startswith("user simulator error") and "twice" in played.error
    assert played.trace["user_messages"] == [] and srv.count == 2  # the agent was never called
    retry = srv.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "   "}
    assert "could not be used" in retry[-1]["content"]
    run = score(case, played)
    assert (run["status"], run["success"]) == ("error", False)
    assert sim.usage.errors == 1 and sim.usage.calls == 2


def test_a_reply_that_speaks_as_the_assistant_is_asked_again_once(loopback) -> None:
    answers = iter(["Assistant: How can I help you?", "Cancel B7 please.", STOP])
    srv = loopback(two_roles(user=lambda messages: text(next(answers)),
                             agent=lambda messages: text("Booking B7 is cancelled.")))
    agent = OpenAIAgent({"model": "agent-m", "base_url": srv.base_url, "api_key": "k", "max_steps": 4})
    sim = LLMSimulator("user-m", srv.base_url, "k")
    played = play(scenario_case(), agent, sim)
    assert played.error is None and played.trace["user_messages"] == ["Cancel B7 please."]
    assert "spoke as the assistant" in srv.requests[1]["messages"][-1]["content"]
    assert (sim.usage.calls, sim.usage.errors) == (3, 0)


def test_a_simulator_that_raises_or_returns_a_non_string_is_an_error() -> None:
    agent = PythonAgent("t:agent", lambda task: "ok")

    def broken(sim):
        raise RuntimeError("bug in the simulator")

    played = play(scenario_case(), agent, PythonSimulator("t:sim", broken))
    assert played.error == "user simulator error: t:sim raised RuntimeError: bug in the simulator"
    played = play(scenario_case(), agent, PythonSimulator("t:sim", lambda sim: 42))
    assert "returned a int" in played.error


async def _slow_user(sim):
    await asyncio.sleep(0.1)
    return None if sim.messages else "cancel B7"


def test_the_simulators_time_is_not_the_agents() -> None:
    # The simulator takes 0.2 s in all, more than --timeout; the agent answers at once.
    played = play(scenario_case(), PythonAgent("t:agent", lambda task: "ok"),
                  PythonSimulator("t:sim", _slow_user), timeout=0.15)
    assert played.trace["stop_reason"] == "completed" and played.trace["user_messages"] == ["cancel B7"]


def test_case_fields_and_the_user_block_are_validated() -> None:
    assert validate_scenario_fields(scenario_case(max_turns=5)) == []
    bad = validate_scenario_fields(scenario_case(max_turns=True, scenario=" "))
    assert [f for f, _ in bad] == ["scenario", "max_turns"]
    assert [f for f, _ in validate_scenario_fields({"id": "q", "query": "hi", "max_turns": 3})] == ["max_turns"]
    assert validate_user_block({"user": {"agent": "u.py:f"}}) == []
    assert [f for f, _ in validate_user_block({"user": {"agent": "u.py:f", "model": "m"}})] == ["suite.user"]
    assert [f for f, _ in validate_user_block({"user": {"modle": "m"}})] == ["suite.user.modle", "suite.user"]


def test_a_case_file_with_scenarios_loads_and_bad_fields_are_reported(tmp_path: Path) -> None:
    from agent_eval.suite.cases import load_suite

    path = tmp_path / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"user": {"model": "m", "agent": "x.py:f"}}, "cases": [
        {"id": "ok", "scenario": "s", "expect": {"contains": "x"}},
        {"id": "bad", "scenario": "s", "max_turns": 0, "expect": {"contains": "x"}}]}))
    with pytest.raises(CaseFileError) as info:
        load_suite(path)
    where = [(p.case_id, p.field) for p in info.value.problems]
    assert where == [(None, "suite.user"), ("bad", "max_turns")]


def test_the_simulator_comes_from_the_flag_then_the_environment_then_the_suite(tmp_path: Path) -> None:
    block = {"user": {"agent": "sim.py:simulate"}}
    env = {"AGENT_EVAL_USER_MODEL": "env-m"}
    assert resolve_user(flags_of(**{}), block, tmp_path, {}, None, None).spec_base == tmp_path
    assert resolve_user(flags_of(**{}), block, tmp_path, env, "http://a", "ka").model == "env-m"
    flagged = resolve_user(flags_of(**{"user": "mine.py:f"}), block, tmp_path, env, None, None)
    assert (flagged.spec, flagged.model) == ("mine.py:f", None)
    llm = resolve_user(flags_of(**{"user_model": "flag-m"}), block, tmp_path,
                       {"AGENT_EVAL_USER_API_KEY": "ku"}, "http://agent", "ka")
    assert (llm.label, llm.base_url, llm.api_key) == ("flag-m", "http://agent", "ku")
    with pytest.raises(ConfigError):
        resolve_user(flags_of(**{"user": "a.py:f", "user_model": "m"}), {}, tmp_path, {}, None, None)


def test_a_scenario_case_without_a_simulator_says_what_to_set(tmp_path: Path) -> None:
    nobody = resolve_user(flags_of(**{}), {}, tmp_path, {}, None, None)
    with pytest.raises(ConfigError) as info:
        require_user(nobody, [{"id": "q", "query": "hi"}, scenario_case()], "cases.json")
    message = str(info.value)
    assert "'cancel-b7'" in message and "--user" in message and "AGENT_EVAL_USER_MODEL" in message
    require_user(nobody, [{"id": "q", "query": "hi"}], "cases.json")  # no scenario: nothing needed
    keyless = resolve_user(flags_of(**{"user_model": "m"}), {}, tmp_path, {}, None, None)
    with pytest.raises(ConfigError, match="AGENT_EVAL_USER_API_KEY"):
        require_user(keyless, [scenario_case()], "cases.json")


def test_a_failed_scenario_run_keeps_its_dialogue_for_the_terminal() -> None:
    from agent_eval.report.terminal import render_report

    def simulate(sim):
        return "cancel B7" if not sim.messages else "you did not cancel it"

    def agent(task):
        task.call_tool("get_booking", booking_id="B7")
        return "B7 is active"

    case = scenario_case(max_turns=2)
    run = score(case, play(case, PythonAgent("t:agent", agent), PythonSimulator("t:sim", simulate)))
    lite = lite_run(run, case)
    assert lite["trace"]["user_messages"] == ["cancel B7", "you did not cancel it"]
    assert [len(t["steps"]) for t in dialogue_turns(lite["trace"])] == [1, 1]
    report = {"settings": {"user": "t:sim"}, "summary": {"user_sim": {"calls": 3}}, "exit_code": 1,
              "cases": [{"id": "cancel-b7", "status": "failed", "runs": [lite]}]}
    out = io.StringIO()
    render_report(report, Console(file=out, width=120, no_color=True))
    shown = out.getvalue()
    order = ["user  1  cancel B7", "get_booking", "agent  1  B7 is active", "user  2  you did not cancel it",
             "agent  2  B7 is active", "user simulator (t:sim): 3 calls"]
    positions = [shown.find(line) for line in order]
    assert -1 not in positions and positions == sorted(positions), shown
    assert "max_turns" in shown


def test_a_simulator_endpoint_that_never_answers_is_an_error_after_the_judge_timeout(loopback) -> None:
    from tests.loopback import stall

    srv = loopback(lambda request, index: stall(None))
    agent = OpenAIAgent({"model": "agent-m", "base_url": srv.base_url, "api_key": "k", "max_steps": 4})
    sim = LLMSimulator("user-m", srv.base_url, "k", timeout_s=0.3)
    played = play(scenario_case(), agent, sim)
    assert played.error == (f"user simulator error: no answer within --judge-timeout 0.3s "
                            f"({srv.base_url}, model user-m)")
    assert played.trace["user_messages"] == [] and sim.usage.errors == 1
