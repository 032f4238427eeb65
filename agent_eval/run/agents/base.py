"""What every agent kind shares: the reply, the run context, the agent protocol and the stop errors."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agent_eval.errors import InfrastructureError, ProviderError
from agent_eval.records import Case, StopReason
from agent_eval.run.sandbox import Sandbox

if TYPE_CHECKING:
    from agent_eval.run.endpoint import RunLink

__all__ = ["BUILT_IN", "COMMAND_PREFIX", "Agent", "AgentStop", "InfrastructureError", "ProviderError", "Reply",
           "RunContext"]

BUILT_IN = "openai"  # the SPEC of the built-in agent (and of the built-in user simulator)
COMMAND_PREFIX = "cmd:"  # what starts the SPEC of a program as the agent


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


class Agent(Protocol):
    name: str

    async def respond(self, ctx: RunContext) -> Reply:
        """Answer the newest user message in ctx.messages, calling tools through ctx.sandbox.

        An agent kind may also define `async prepare(ctx)`, awaited before each turn outside --timeout."""
