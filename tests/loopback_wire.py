"""The loopback server's wire formats: the package's (agent_eval/scripted/wire.py: Chat Completions bodies
and stream events, the Responses API's body and events), and a router for Responses requests.

A script sees the Responses request as sent (`input`, `tools`, ...); `responses_router` gives it the
shape routers expect: the input items, with `function_call_output` items as the last entries when a
tool's result was just sent.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_eval.scripted.wire import chat_events, completion_body, error_body, response_body, response_events

__all__ = ["chat_events", "completion_body", "error_body", "response_body", "response_events", "responses_router"]


def responses_router(fn: Callable[[list[dict]], Any]) -> Callable[[dict, int], Any]:
    """A stateless script for Responses requests: `fn(items)` picks the reply from the input items."""
    def pick(request: dict, index: int) -> Any:
        given = request.get("input")
        items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or ())
        return fn(items)

    return pick
