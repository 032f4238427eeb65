"""The Python agent contract: `function(task)`, sync or async, once per user message."""
from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any

from agent_eval.run.agents.base import AgentStop, ProviderError, Reply, RunContext
from agent_eval.errors import ToolError
from agent_eval.tracebacks import user_traceback


class Task:
    """What a Python agent sees for one user message."""

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx
        self.case_id: str = ctx.case["id"]
        self.trial: int = ctx.trial
        self.metadata: dict[str, Any] = ctx.case.get("metadata") or {}
        system = [{"role": "system", "content": ctx.system_prompt}] if ctx.system_prompt else []
        self.messages: list[dict[str, Any]] = system + ctx.messages
        self.input: str = ctx.messages[-1]["content"]
        self.tool_schemas: list[dict[str, Any]] = ctx.tool_schemas

    def call_tool(self, name: str, /, **args: Any) -> str:
        """Call a tool; returns the observation, raises ToolError on a tool error."""
        output, error = self._ctx.sandbox.call(name, args)
        if error is not None:
            raise ToolError(error)
        return output

    async def acall_tool(self, name: str, /, **args: Any) -> str:
        """The async twin of call_tool."""
        output, error = await self._ctx.sandbox.acall(name, args)
        if error is not None:
            raise ToolError(error)
        return output

    def record_usage(self, prompt_tokens: int, completion_tokens: int, model: str | None = None,
                     latency_s: float | None = None) -> None:
        """Record one LLM call made by the agent itself, for tokens and cost."""
        self._ctx.llm_calls.append({"latency_s": latency_s, "prompt_tokens": int(prompt_tokens),
                                    "completion_tokens": int(completion_tokens), "model": model})


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


def _is_provider_error(exc: BaseException) -> bool:
    openai = __import__("sys").modules.get("openai")
    return openai is not None and isinstance(exc, openai.APIError)


def _endpoint_of(exc: BaseException) -> str:
    """ " (URL)" of the request an SDK error came from, secrets removed; "" when it has none."""
    from agent_eval.llm import redact_url

    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    return f" ({redact_url(str(url))})" if url is not None else ""


class PythonAgent:
    """Calls the user's function; a sync one runs in a daemon thread that is never joined."""

    def __init__(self, spec: str, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            from agent_eval.errors import ConfigError

            raise ConfigError(f"agent {spec!r} is not callable; point the SPEC at a function")
        self.name = spec
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)

    async def respond(self, ctx: RunContext) -> Reply:
        task = Task(ctx)
        try:
            value = await (self.fn(task) if self.is_async else in_daemon_thread(self.fn, task))
        except (AgentStop, asyncio.CancelledError):
            raise
        except Exception as exc:
            if _is_provider_error(exc):
                raise ProviderError(f"{type(exc).__name__}: {exc}{_endpoint_of(exc)}") from None
            raise AgentStop("agent_error", f"{type(exc).__name__}: {exc}", user_traceback(exc)) from None
        return to_reply(value)


def in_daemon_thread(fn: Callable[[Any], Any], task: Any) -> asyncio.Future:
    """Run fn(task) in a fresh daemon thread: a stuck agent can never keep the process alive."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()

    def settle(value: Any, exc: BaseException | None) -> None:
        if future.done():
            return
        if exc is None:
            future.set_result(value)
        else:
            future.set_exception(exc)

    def target() -> None:
        try:
            value, exc = fn(task), None
        except BaseException as caught:  # handed to the event loop, which decides
            value, exc = None, caught
        try:
            loop.call_soon_threadsafe(settle, value, exc)
        except RuntimeError:
            pass  # the loop is gone: the run was abandoned long ago

    threading.Thread(target=target, name=f"agent-{task.case_id}-{task.trial}", daemon=True).start()
    return future
