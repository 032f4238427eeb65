"""What every agent kind shares: the reply, the run context, the agent protocol and the stop errors."""
from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from agent_eval.errors import InfrastructureError, ProviderError
from agent_eval.records import Case, StopReason
from agent_eval.run.sandbox import Sandbox, ServerFault
from agent_eval.run.threads import UserBaseException
from agent_eval.tracebacks import await_user, describe, user_traceback

if TYPE_CHECKING:
    from agent_eval.run.endpoint import RunLink

__all__ = ["BUILT_IN", "COMMAND_PREFIX", "Agent", "AgentStop", "Reply", "RunContext", "call_agent"]

BUILT_IN = "openai"  # the SPEC of the built-in agent (and of the built-in user simulator)
COMMAND_PREFIX = "cmd:"  # what starts the SPEC of a program as the agent
T = TypeVar("T")


@dataclass
class Reply:
    """The assistant's answer to one user message."""

    answer: str
    cards: list[dict[str, Any]] = field(default_factory=list)
    final_agent: str | None = None


class AgentStop(Exception):
    """Ends the run early with a stop_reason other than `completed` (the agent's fault)."""

    def __init__(self, stop_reason: StopReason, message: str, traceback: str | None = None) -> None:
        super().__init__(message)
        self.stop_reason = stop_reason
        self.traceback = traceback  # the user's frames, when user code raised (trace.agent_error_traceback)


@dataclass
class RunContext:
    """What an agent may read and write during one run."""

    case: Case
    trial: int
    sandbox: Sandbox
    tool_schemas: list[dict[str, Any]]
    system_prompt: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)  # user/assistant turns only
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)  # an agent's private per-run memory
    fatal: str | None = None  # set when the agent broke the contract (bad record_usage): the run fails
    link: RunLink | None = None  # the run's path on the recording endpoint, once opened
    assistant_texts: list[str] = field(default_factory=list)  # text sent beside tool calls, then each reply


class Agent(Protocol):
    name: str

    async def respond(self, ctx: RunContext) -> Reply:
        """Answer the newest user message in ctx.messages, calling tools through ctx.sandbox.

        An agent kind may also define `async prepare(ctx)`, awaited before each turn outside --timeout."""


async def call_agent(respond: Callable[[RunContext], Awaitable[T]], ctx: RunContext) -> T:
    """The one call site of every agent kind's `respond` (and `prepare`): whatever it raises ends the run as
    the agent's failure with its traceback (its own TimeoutError included), never the command; agent-eval's
    own stops and infrastructure errors go through as they are, and a provider's error is a ProviderError."""
    called = await await_user(respond, ctx)
    if called.error is None:
        return called.value  # type: ignore[return-value]
    exc = called.error
    if isinstance(exc, (AgentStop, InfrastructureError, ServerFault)):
        raise exc
    if isinstance(exc, UserBaseException):  # a sync agent's SystemExit... handed over from its thread
        raise AgentStop("agent_error", str(exc), user_traceback(exc.original)) from None
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(exc, openai.APIError):
        from agent_eval.redaction import redact_url

        url = getattr(getattr(exc, "request", None), "url", None)
        raise ProviderError(describe(exc) + (f" ({redact_url(str(url))})" if url is not None else "")) from None
    raise AgentStop("agent_error", describe(exc), user_traceback(exc)) from None
