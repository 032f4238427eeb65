"""The built-in `openai` agent: Chat Completions with tools, until a plain answer."""
from __future__ import annotations

import time
from typing import Any

import orjson

import agent_eval.llm as llm
from agent_eval.provider import tape, waits
from agent_eval.run.agents.base import BUILT_IN, AgentStop, Reply, RunContext


class OpenAIAgent:
    """The seed's production loop: model completions and tool calls until the model answers."""

    name = BUILT_IN

    def __init__(self, settings: dict[str, Any]) -> None:
        self.model: str = settings["model"]
        self.base_url: str | None = settings.get("base_url")
        self.api_key: str | None = settings.get("api_key")
        self.max_steps: int = settings["max_steps"]

    async def respond(self, ctx: RunContext) -> Reply:
        history = ctx.state.setdefault("history", [])
        if not history and ctx.system_prompt:
            history.append({"role": "system", "content": ctx.system_prompt})
        history.append(ctx.messages[-1])
        body: dict[str, Any] = {"model": self.model, "messages": history, "temperature": 0}
        if ctx.tool_schemas:
            body["tools"] = ctx.tool_schemas
        for _ in range(self.max_steps):
            started = time.perf_counter()
            run_tape = tape.current()
            credit = run_tape.credit_s if run_tape is not None else 0.0
            answer = await llm.complete(self.base_url, self.api_key, body)  # a ProviderError ends the run
            run_waits = waits.current()  # waiting for the rate limit is not the call's latency
            waited = run_waits.within(started) if run_waits is not None else 0.0
            if run_tape is not None:  # a replayed answer's recorded latency: reported, not waited for
                waited -= run_tape.credit_s - credit
            ctx.llm_calls.append({"latency_s": time.perf_counter() - started - waited,
                                  "t_start_s": started - ctx.sandbox.t0,
                                  "prompt_tokens": answer.prompt_tokens,
                                  "completion_tokens": answer.completion_tokens, "model": self.model,
                                  "path": "/chat/completions", "status": 200, "retries": answer.retries})
            calls = answer.tool_calls
            turn: dict[str, Any] = {"role": "assistant", "content": answer.content}
            if calls:
                turn["tool_calls"] = calls
            history.append(turn)
            if not calls:
                return Reply(answer.content or "")
            if answer.content:  # text sent beside tool calls (`expect.replies: "any"` reads it)
                ctx.assistant_texts.append(answer.content)
            for call in calls:
                function = call["function"]
                history.append({"role": "tool", "tool_call_id": call["id"],
                                "content": await _run_call(ctx, function["name"], function["arguments"])})
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
    return f"Error: {error}" if error is not None else output or ""
