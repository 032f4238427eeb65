"""tau2's own verdict on a scripted trajectory: tau2's Orchestrator plays it (its greeting, its environment's
tool responses, its limits of 200 steps and 10 tool errors, its stop tokens) and tau2's `evaluate_simulation`
grades the run (evaluation type ALL: reward DB x COMMUNICATE for airline and retail).

A trajectory is plain data, as agent-eval's gold agent or a scripted agent plays it: a list of turns
`{"calls": [{"name", "args"}...], "reply": text}`. The user says `user_text(i)` before turn i and
`###STOP###` after the last reply; the agent makes the turn's calls one message each, then sends its reply.
"""
from __future__ import annotations

from typing import Any

from agent_eval.bench.tau2 import upstream as up

MAX_STEPS = 200  # tau2's DEFAULT_MAX_STEPS (its command line's default)


def user_text(turn: int) -> str:
    """What the scripted user says before the agent's turn `turn`."""
    return f"Scripted user message {turn + 1}."


def _scripted_agent(turns: list[dict[str, Any]]) -> Any:
    base = up.module("agent.base")
    msg = up.module("data_model.message")
    queue: list[dict[str, Any]] = []  # made into messages when sent: tau2 orders a trajectory by timestamp
    for n, turn in enumerate(turns):
        for i, call in enumerate(turn.get("calls") or []):
            queue.append({"tool_calls": [msg.ToolCall(id=f"call_{n}_{i}", name=call["name"],
                                                      arguments=dict(call.get("args") or {}))]})
        queue.append({"content": turn.get("reply") or "OK."})

    local_agent: Any = base.LocalAgent

    class ScriptedAgent(local_agent):
        def get_init_state(self, message_history: Any = None) -> Any:
            return None

        def generate_next_message(self, message: Any, state: Any) -> Any:
            return msg.AssistantMessage(role="assistant", **queue.pop(0)), state

    return ScriptedAgent(tools=[], domain_policy="")


def _scripted_user(n_turns: int) -> Any:
    user_module = up.module("user.user_simulator")
    user_base = up.module("user.base")
    msg = up.module("data_model.message")
    said = [user_text(i) for i in range(n_turns)] + [user_base.STOP]

    simulator: Any = user_module.UserSimulator

    class ScriptedUser(simulator):
        def get_init_state(self, message_history: Any = None) -> Any:
            return user_base.UserState(system_messages=[], messages=[])

        def generate_next_message(self, message: Any, state: Any) -> Any:
            return msg.UserMessage(role="user", content=said.pop(0)), state

    return ScriptedUser()


def verdict(domain: str, task: Any, turns: list[dict[str, Any]], registered: str | None = None) -> dict[str, Any]:
    """tau2's reward for the trajectory `turns` on `task`: {"reward", "termination", "db_match",
    "communicate": [met...]}. `registered`: the name under which `register_fast` put the domain (else tau2's
    own constructor, which reads db.json for every environment)."""
    registry = up.module("registry").registry
    orchestrator = up.module("orchestrator.orchestrator")
    evaluator = up.module("evaluator.evaluator")
    name = registered or domain
    run = orchestrator.Orchestrator(
        domain=name, agent=_scripted_agent(turns), user=_scripted_user(len(turns)),
        environment=registry.get_env_constructor(name)(), task=task, max_steps=MAX_STEPS,
        max_errors=up.max_errors()).run()
    info = evaluator.evaluate_simulation(run, task, evaluator.EvaluationType.ALL, False, name)
    return {"reward": float(info.reward), "termination": str(run.termination_reason.value),
            "db_match": None if info.db_check is None else bool(info.db_check.db_match),
            "communicate": [bool(c.met) for c in info.communicate_checks or []]}


def register_fast(domain: str) -> str:
    """Register with tau2's registry, under a name of agent-eval's, the domain's own `get_environment` given a
    run's copy of the database (runtime.run_copy) validated once (tau2's own constructor reads and validates
    db.json for every environment, three per verdict); returns that name. The parity set's verdicts are
    made with tau2's own constructor."""
    from agent_eval.bench.tau2.runtime import run_copy

    name = f"agent-eval:{domain}"
    registry = up.module("registry").registry
    if name in registry.get_domains():
        return name
    get_environment = up.module(f"domains.{domain}.environment").get_environment
    db_class, _ = up.domain_classes(domain)
    pristine = db_class.load(str(up.data_files(domain)["db"]))

    def construct(solo_mode: bool = False) -> Any:
        return get_environment(db=run_copy(pristine), solo_mode=solo_mode)

    registry.register_domain(construct, name)
    return name
