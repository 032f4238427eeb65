"""The Python agent contract: `function(task)`, sync or async, once per user message."""
from __future__ import annotations

import asyncio
import copy
import inspect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from agent_eval.run.agents.base import AgentStop, Reply, RunContext
from agent_eval.errors import ToolError
from agent_eval.run.threads import run_in_thread
from agent_eval.tracebacks import call_user_or

if TYPE_CHECKING:
    from agent_eval.run.endpoint import RunLink


class Task:
    """What a Python agent sees for one user message."""

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self.case_id: str = ctx.case["id"]
        self.trial: int = ctx.trial
        # Each run gets its own copies: nothing one run does to them is seen by another.
        own = ctx.state.get(_OWN_COPIES)
        if own is None:
            own = ctx.state[_OWN_COPIES] = (_copy(ctx.case.get("metadata") or {}), _copy(ctx.tool_schemas),
                                            ctx.tool_schemas)
        elif own[2] is not ctx.tool_schemas:  # a turn that adds tools (`tools_added`) shows new schemas
            own = ctx.state[_OWN_COPIES] = (own[0], _copy(ctx.tool_schemas), ctx.tool_schemas)
        self.metadata: dict[str, Any] = own[0]
        system = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        self.messages: list[dict[str, Any]] = system + [dict(m) for m in ctx.messages]
        self.input: str = ctx.messages[-1]["content"]
        self.tool_schemas: list[dict[str, Any]] = own[1]
        self.system_prompt: str | None = ctx.system_prompt
        self.state: dict[str, Any] = ctx.state.setdefault(_USER_STATE, {})
        link = ctx.link
        self.model: str | None = link.model if link is not None else None
        self.base_url: str | None = link.base_url if link is not None else None
        self.api_key: str | None = link.token if link is not None else None
        self.mcp_url: str | None = link.mcp_url if link is not None else None

    def call_tool(self, name: str, /, *, call_id: str | None = None, **args: Any) -> str:
        """Call a tool; returns the observation, raises ToolError on a tool error.

        `call_id` is the model's id of the call, when the agent has it (it pairs the step with the
        model's completion)."""
        output, error = self._ctx.sandbox.call(name, args, call_id)
        if error is not None or output is None:  # exactly one of them is set
            raise ToolError(error or "the tool gave no observation")
        return output

    async def acall_tool(self, name: str, /, *, call_id: str | None = None, **args: Any) -> str:
        """The async twin of call_tool."""
        output, error = await self._ctx.sandbox.acall(name, args, call_id)
        if error is not None or output is None:  # exactly one of them is set
            raise ToolError(error or "the tool gave no observation")
        return output

    async def _observation(self, name: str, args: Any, call_id: str | None = None) -> str:
        """One tool call as the built-in agent makes it: the observation, or "Error: ..." on a tool error.

        Never raises (agent_eval.bridge's framework tools use this)."""
        try:
            output, error = await self._ctx.sandbox.acall(name, args, call_id)
        except ToolError as exc:  # the run has ended
            return f"Error: {exc}"
        return f"Error: {error}" if error is not None else output or ""

    def _observation_sync(self, name: str, args: Any, call_id: str | None = None) -> str:
        """The sync twin of `_observation`, for a framework's sync tool path."""
        try:
            output, error = self._ctx.sandbox.call(name, args, call_id)
        except ToolError as exc:
            return f"Error: {exc}"
        return f"Error: {error}" if error is not None else output or ""

    def record_usage(self, prompt_tokens: int, completion_tokens: int, model: str | None = None,
                     latency_s: float | None = None) -> None:
        """Record one LLM call made by the agent itself, for tokens and cost.

        A token count that is not an int in [0, 2**53 - 1] fails the run (agent_error) and raises ValueError.
        """
        for name, count in (("prompt_tokens", prompt_tokens), ("completion_tokens", completion_tokens)):
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_TOKENS:
                message = (f"record_usage: {name} must be an int between 0 and 2**53 - 1, "
                           f"got {_short_repr(count)}")
                self._ctx.fatal = self._ctx.fatal or message
                raise ValueError(message)
        ended = time.perf_counter() - self._ctx.sandbox.t0
        started = ended - latency_s if isinstance(latency_s, (int, float)) and latency_s >= 0 else ended
        self._ctx.llm_calls.append({"latency_s": latency_s, "t_start_s": started, "prompt_tokens": int(prompt_tokens),
                                    "completion_tokens": int(completion_tokens), "model": model})


MAX_TOKENS = 2**53 - 1  # the largest count a JSON reader holds exactly
_OWN_COPIES = "agent_eval.task_copies"
_USER_STATE = "agent_eval.task_state"


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (case metadata, tool schemas), at orjson's speed."""
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:
        return copy.deepcopy(value)


def _short_repr(value: Any) -> str:
    text = call_user_or(None, repr, value)  # a hostile __repr__ may raise anything
    if text is None:
        return f"<unrepresentable {type(value).__name__}>"
    return text if len(text) <= 80 else text[:79] + "…"


def to_reply(value: Any) -> Reply:
    """Normalise an agent's return value (str or {answer, cards, final_agent})."""
    if isinstance(value, str):
        return Reply(value)
    if isinstance(value, dict) and isinstance(value.get("answer", ""), str):
        cards = value.get("cards") or []
        if not isinstance(cards, list) or not all(isinstance(c, dict) for c in cards):
            raise AgentStop("agent_error", "the agent returned cards that are not a list of objects")
        return Reply(value.get("answer") or "", cards, value.get("final_agent"))
    raise AgentStop("agent_error", f"the agent returned {type(value).__name__}; return a str or "
                                   "{\"answer\": str, \"cards\": [...], \"final_agent\": str}")


class PythonAgent:
    """Calls the user's function; a sync one runs in a daemon thread that is never joined."""

    def __init__(self, spec: str, fn: Callable[..., Any], settings: dict[str, Any] | None = None) -> None:
        if not callable(fn):
            from agent_eval.errors import ConfigError

            raise ConfigError(f"agent {spec!r} is not callable; point the SPEC at a function")
        self.name = spec
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)
        self.settings = settings or {}

    async def prepare(self, ctx: RunContext) -> None:
        """Before each turn, outside the agent's --timeout: the run's path on the recording endpoint."""
        await open_link(ctx, self.settings)

    async def respond(self, ctx: RunContext) -> Reply:
        task = Task(ctx)
        return to_reply(await (self.fn(task) if self.is_async else in_daemon_thread(self.fn, task)))


async def open_link(ctx: RunContext, settings: dict[str, Any]) -> RunLink:
    """The run's path on the recording endpoint, opened at its first turn; its turn number kept current."""
    link = ctx.link
    if link is None:
        from agent_eval.run.endpoint import endpoint

        sandbox = ctx.sandbox
        link = ctx.link = (await endpoint()).open(settings.get("model"), settings.get("base_url"),
                                                 settings.get("api_key"), ctx.llm_calls, lambda: sandbox.t0)
        from agent_eval.provider.waits import current

        link.waits = current()
        from agent_eval.run.bridge_mcp import attach_mcp

        await attach_mcp(ctx, link)
    link.turn = sum(1 for message in ctx.messages if message.get("role") == "user") - 1
    return link


def in_daemon_thread(fn: Callable[[Any], Any], task: Any) -> asyncio.Future[Any]:
    """Run fn(task) in a daemon worker thread: a stuck agent can never keep the process alive."""
    return run_in_thread(fn, task, name=f"agent-{task.case_id}-{task.trial}")
