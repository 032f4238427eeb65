"""User simulators: a Python function or an LLM that plays the user of a scenario case.

Both kinds answer one question, `await simulator.next_message(case, trial, messages)`: the next user
message, or None to stop. `messages` is the conversation as the agent sees it (user messages with
role `user`, the agent's replies with role `assistant`, no tool messages). An answer that cannot be
used raises `SimulatorError`, which ends the run in `error`: the simulator's fault, never the agent's.
The simulator's calls, tokens and errors go to `SimUsage` (summary.user_sim), never to a run's metrics.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.records import Case
from agent_eval.errors import InfrastructureError
from agent_eval.score.usage import LLMUsage
from agent_eval.tracebacks import await_user

if TYPE_CHECKING:
    from agent_eval.run.scenario import UserSettings

STOP = "###STOP###"
SIM_ERROR = "user simulator error"
"""Every simulator error message starts with this, so a report reader can tell it from an agent's."""

SYSTEM_PROMPT = """You are playing the USER in a conversation with an AI assistant (a customer \
support agent that can use tools). You are not the assistant, and you never help, advise or answer \
as the assistant would.

## Your scenario
{scenario}
{persona}
## Rules
- Speak only as the user, in the first person, one message at a time. Write just the text of your \
next message: no role labels, no quotation marks, no narration, no stage directions.
- Keep each message short and natural, the way a real person types to a support chat. Do not give \
everything you know at once; answer what the assistant asks.
- Never invent facts that the scenario does not give you (order numbers, names, amounts, dates, \
addresses, ...). If the assistant asks for something you do not know, say that you do not know it.
- Stay in character, and pursue the goal of the scenario. Do not change your goal unless the \
scenario says you do.
- When your goal has been reached, or it clearly cannot be reached in this conversation, reply with \
{stop} alone, and nothing else.
"""
OPENING = ("(The conversation has not started yet. Write your first message to the assistant, as the "
           "user.)")
CORRECTION = ("(Your last reply could not be used: {problem}. Reply again with only the user's next "
              "message, in the user's own voice and without any role label, or with " + STOP
              + " if the goal has been reached or cannot be reached.)")


class SimulatorError(InfrastructureError):
    """The simulator gave no usable message (or failed): the run ends in `error`."""


ENDED_FIRST = "the simulated user ended before its first message"


def ended_before_speaking(label: str, what: str) -> SimulatorError:
    """A simulator whose first answer is the stop (or nothing): the run is an error, never the agent's failure,
    since the agent was never asked anything."""
    return SimulatorError(f"{SIM_ERROR}: {ENDED_FIRST} ({label} {what}); check the scenario, which must give "
                          "the user something to say")


class SimUsage(LLMUsage):
    """The simulator's own spend (summary.user_sim), kept apart from the agent's."""


@dataclass
class Sim:
    """What a Python simulator sees: the scenario and the conversation so far."""

    scenario: str
    user_description: str | None
    messages: list[dict[str, str]]
    case_id: str
    trial: int
    metadata: dict[str, Any] = field(default_factory=dict)


class PythonSimulator:
    """`function(sim)`, sync or async, returning the next user message or None to stop."""

    def __init__(self, spec: str, fn: Callable[..., Any]) -> None:
        from agent_eval.errors import ConfigError

        if not callable(fn):
            raise ConfigError(f"user simulator {spec!r} is not callable; point the SPEC at a function")
        self.label = spec
        self.model: str | None = None
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)
        self.usage = SimUsage()

    async def next_message(self, case: Case, trial: int, messages: list[dict[str, str]]) -> str | None:
        """The function's next message; None stops. Raising or returning a non-string is an error."""
        from agent_eval.run.agents.python import in_daemon_thread
        from agent_eval.run.threads import describe_user_error

        sim = Sim(case["scenario"], case.get("user_description"), [dict(m) for m in messages], case["id"],
                  trial, case.get("metadata") or {})
        self.usage.calls += 1
        # A sync simulator runs in a daemon thread, so it never blocks the other runs (or their clocks).
        called = await await_user(lambda: self.fn(sim) if self.is_async else in_daemon_thread(self.fn, sim))
        if called.error is not None:  # the simulator's bug (SystemExit too): an infrastructure error
            self.usage.errors += 1
            raise SimulatorError(f"{SIM_ERROR}: {self.label} raised {describe_user_error(called.error)}")
        value = called.value
        if not messages and (value is None or (isinstance(value, str) and not value.strip())):
            self.usage.errors += 1
            raise ended_before_speaking(self.label, "returned None" if value is None else "returned an empty message")
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            self.usage.errors += 1
            shown = "an empty message" if isinstance(value, str) else f"a {type(value).__name__}"
            raise SimulatorError(f"{SIM_ERROR}: {self.label} returned {shown}; return the next user message "
                                 "(a non-empty str), or None to stop")
        return value


def system_prompt(case: Case, template: str | None = None) -> str:
    """The LLM simulator's system prompt: the scenario, the persona, and the rules of the role; or the suite's
    own `template`, its `{scenario}` and `{user_description}` filled in (nothing else in it is a placeholder)."""
    persona = case.get("user_description")
    if template is not None:
        return template.replace("{scenario}", case["scenario"]).replace("{user_description}", persona or "")
    return SYSTEM_PROMPT.format(scenario=case["scenario"].strip(), stop=STOP,
                                persona=f"\n## Who you are\n{persona.strip()}\n" if persona else "")


def swap_roles(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The conversation from the simulator's side: its own messages are `assistant`, the agent's `user`."""
    swapped = {"user": "assistant", "assistant": "user"}
    return [{"role": swapped[m["role"]], "content": m["content"] or ""} for m in messages]


def problem_of(answer: str) -> str | None:
    """Why an LLM answer cannot be sent as the user's message, or None when it can."""
    text = answer.strip()
    if not text:
        return "it was empty"
    if text.lower().startswith("assistant:"):
        return "it spoke as the assistant (it started with \"Assistant:\")"
    return None


class LLMSimulator:
    """An LLM playing the user: temperature 0, never cached, roles swapped, `###STOP###` to stop."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None,
                 timeout_s: float | None = None, prompt: str | None = None, stop_tokens: tuple[str, ...] = ()) -> None:
        self.prompt = prompt
        self.stop_tokens = stop_tokens or (STOP,)
        self.label = model
        self.timeout_s = timeout_s
        self.model: str | None = model
        self.base_url = base_url
        self.api_key = api_key
        self.usage = SimUsage()

    async def next_message(self, case: Case, trial: int, messages: list[dict[str, str]]) -> str | None:
        """The model's next user message; None on `###STOP###`. One corrective retry, then an error."""
        prompt = [{"role": "system", "content": system_prompt(case, self.prompt)}]
        prompt += swap_roles(messages) if messages else [{"role": "user", "content": OPENING}]
        answer = await self._complete(prompt)
        stop = self._stop_in(answer)
        if not messages and stop:
            self.usage.errors += 1
            raise ended_before_speaking(self.label, f"answered {stop}")
        problem = problem_of(answer) if not stop else None
        if problem is not None:
            correction = CORRECTION.format(problem=problem).replace(STOP, self.stop_tokens[0])
            retry = prompt + [{"role": "assistant", "content": answer}, {"role": "user", "content": correction}]
            answer = await self._complete(retry)
            stop = self._stop_in(answer)
            second = problem_of(answer) if not stop else None
            if not messages and second is None and stop:
                self.usage.errors += 1
                raise ended_before_speaking(self.label, f"answered nothing, then {stop}")
            if second is not None:
                self.usage.errors += 1
                ended = f"{ENDED_FIRST}: " if not messages else ""
                raise SimulatorError(f"{SIM_ERROR}: {ended}{self.label} gave no usable user message twice "
                                     f"(first {problem}; then {second})")
        return None if stop else answer.strip()

    def _stop_in(self, answer: str) -> str | None:
        """The stop token the answer holds (it ends the dialogue), or None."""
        return next((token for token in self.stop_tokens if token in answer), None)

    async def _complete(self, prompt: list[dict[str, str]]) -> str:
        from agent_eval.errors import ProviderError
        from agent_eval.llm import complete

        self.usage.calls += 1
        try:
            answer = await complete(self.base_url, self.api_key,
                                    {"model": self.model, "messages": prompt, "temperature": 0},
                                    self.timeout_s, role="user")
        except ProviderError as exc:
            self.usage.errors += 1
            raise SimulatorError(f"{SIM_ERROR}: {exc}") from None
        self.usage.add(answer)
        return answer.content or ""


class GoldUser:
    """`--user gold`: says the scenario once and stops after the agent's first reply (an oracle run)."""

    def __init__(self) -> None:
        self.label = "gold"
        self.model: str | None = None
        self.usage = SimUsage()

    async def next_message(self, case: Case, trial: int, messages: list[dict[str, str]]) -> str | None:
        self.usage.calls += 1
        return None if messages else case["scenario"]


Simulator = PythonSimulator | LLMSimulator | GoldUser


def user_sim_summary(simulator: Simulator | None, pricing: Mapping[str, Any] | None) -> dict[str, Any]:
    """summary.user_sim of this process's simulator, or zeros when none was used."""
    if simulator is None:
        return SimUsage().as_summary(None, None)
    return simulator.usage.as_summary(simulator.model, pricing)


def build_simulator(user: UserSettings) -> Simulator | None:
    """The simulator of these settings, or None; ConfigError when it cannot load."""
    if user.spec == "gold":
        return GoldUser()
    if user.spec:
        from agent_eval.suite.imports import load_callable

        return PythonSimulator(user.spec, load_callable(user.spec, user.spec_base or Path.cwd(),
                                                        what="user simulator"))
    if user.model:
        return LLMSimulator(user.model, user.base_url, user.api_key, user.timeout_s, user.prompt, user.stop_tokens)
    return None
