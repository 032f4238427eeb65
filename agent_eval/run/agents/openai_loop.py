"""The built-in `openai` agent: Chat Completions with tools, until a plain answer."""
from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from agent_eval.run.agents.base import AgentStop, ProviderError, Reply, RunContext

_CLIENTS: dict[tuple[str | None, str | None], tuple[Any, Any]] = {}  # endpoint -> (event loop, client)


def shared_client(base_url: str | None, api_key: str | None) -> Any:
    """One AsyncOpenAI client per endpoint for the whole run, using the SDK's retry rule.

    Tied to the running event loop as well: a client's connection pool belongs to the loop that
    opened it, and a process that calls asyncio.run twice (rescore, tests) must not reuse it.
    """
    loop = asyncio.get_running_loop()
    key = (base_url, api_key)
    entry = _CLIENTS.get(key)
    if entry is None or entry[0] is not loop:
        from openai import AsyncOpenAI

        entry = _CLIENTS[key] = (loop, AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=8))
    return entry[1]


def usage_record(response: Any, model: str, latency_s: float) -> dict[str, Any]:
    """One `llm_calls` entry from a Chat Completions response (usage may be absent)."""
    usage = getattr(response, "usage", None)
    return {"latency_s": latency_s, "prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
            "completion_tokens": getattr(usage, "completion_tokens", 0) or 0, "model": model}


class OpenAIAgent:
    """The seed's production loop: model completions and tool calls until the model answers."""

    name = "openai"

    def __init__(self, settings: dict[str, Any]) -> None:
        self.model: str = settings["model"]
        self.base_url: str | None = settings.get("base_url")
        self.api_key: str | None = settings.get("api_key")
        self.max_steps: int = settings["max_steps"]

    async def respond(self, ctx: RunContext) -> Reply:
        import openai

        client = shared_client(self.base_url, self.api_key)
        history = ctx.state.setdefault("history", [])
        if not history and ctx.system_prompt:
            history.append({"role": "system", "content": ctx.system_prompt})
        history.append(ctx.messages[-1])
        tools = ctx.tool_schemas or openai.omit
        for _ in range(self.max_steps):
            started = time.perf_counter()
            try:
                response = await client.chat.completions.create(
                    model=self.model, messages=history, tools=tools, temperature=0)
            except openai.APIError as exc:
                raise ProviderError(f"{type(exc).__name__}: {exc}") from None
            ctx.llm_calls.append(usage_record(response, self.model, time.perf_counter() - started))
            if not response.choices:
                raise ProviderError("the provider returned no choices")
            message = response.choices[0].message
            calls = message.tool_calls or []
            turn: dict[str, Any] = {"role": "assistant", "content": message.content}
            if calls:
                turn["tool_calls"] = [{"id": c.id, "type": "function",
                                       "function": {"name": c.function.name, "arguments": c.function.arguments}}
                                      for c in calls]
            history.append(turn)
            if not calls:
                return Reply(message.content or "")
            for call in calls:
                history.append({"role": "tool", "tool_call_id": call.id,
                                "content": await _run_call(ctx, call.function.name, call.function.arguments)})
        raise AgentStop("max_steps", f"reached --max-steps {self.max_steps} model completions in one user turn")


async def _run_call(ctx: RunContext, name: str, raw_args: str | None) -> str:
    """Dispatch one tool call; malformed JSON and tool errors become error observations for the model."""
    try:
        args = orjson.loads(raw_args or "{}")
    except orjson.JSONDecodeError:
        args = raw_args
    if not isinstance(args, (dict, str)):
        args = raw_args or ""
    output, error = await ctx.sandbox.acall(name, args)
    return output if error is None else f"Error: {error}"
