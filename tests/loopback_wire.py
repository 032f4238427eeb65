"""The loopback server's wire formats beyond a plain completion: Chat Completions stream events, and the
Responses API (`POST /v1/responses`): a scripted reply, written for Chat Completions (`text`,
`tool_calls`), turned into a Responses body, or into its server-sent events.

A script sees the Responses request as sent (`input`, `tools`, ...); `responses_router` gives it the
shape routers expect: the input items, with `function_call_output` items as the last entries when a
tool's result was just sent.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson


def response_body(request: dict, message: dict[str, Any], usage: tuple[int, int], number: int) -> dict:
    """A completed Response holding the reply's tool calls as `function_call` items and its text as a
    `message` item; usage as `input_tokens` / `output_tokens`."""
    items: list[dict] = []
    for k, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") or {}
        items.append({"type": "function_call", "id": f"fc_{number}_{k}", "call_id": call.get("id"),
                      "name": function.get("name"), "arguments": function.get("arguments"),
                      "status": "completed"})
    content = message.get("content")
    if content:
        items.append({"type": "message", "id": f"msg_{number}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": content, "annotations": []}]})
    prompt, completion = usage
    return {
        "id": f"resp_loopback_{number}", "object": "response", "created_at": int(time.time()),
        "status": "completed", "model": request.get("model") or "loopback", "output": items,
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
        "incomplete_details": None, "instructions": None, "metadata": {}, "temperature": None,
        "top_p": None, "text": {"format": {"type": "text"}},
        "usage": {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }


def response_events(body: dict) -> bytes:
    """The Response as a stream: created, each output item added and done, then completed."""
    started = {**body, "status": "in_progress", "output": [], "usage": None}
    events: list[dict] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(body["output"]):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": body})
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps({**e, "sequence_number": n})
                    + b"\n\n" for n, e in enumerate(events))


def responses_router(fn: Callable[[list[dict]], Any]) -> Callable[[dict, int], Any]:
    """A stateless script for Responses requests: `fn(items)` picks the reply from the input items."""
    def pick(request: dict, index: int) -> Any:
        given = request.get("input")
        items = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or ())
        return fn(items)

    return pick


def chat_events(request: dict, completion: dict) -> bytes:
    """A completion as Chat Completions stream events: role, content, one chunk per tool call, the finish,
    the usage chunk when `stream_options.include_usage` asks for it, then [DONE]."""
    options = request.get("stream_options") or {}
    with_usage = isinstance(options, dict) and options.get("include_usage") is True
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "object", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas: list[dict] = [{"role": "assistant", "content": ""}]
    if message.get("content"):
        deltas.append({"content": message["content"]})
    for index, call in enumerate(message.get("tool_calls") or ()):
        deltas.append({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                       "function": {"name": call["function"]["name"], "arguments": ""}}]})
        deltas.append({"tool_calls": [{"index": index, "function": {"arguments": call["function"]["arguments"]}}]})
    chunks = [{**head, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if with_usage:
        for chunk in chunks:
            chunk["usage"] = None
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return b"".join(b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
