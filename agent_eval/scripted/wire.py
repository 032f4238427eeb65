"""What an OpenAI-compatible server sends: a Chat Completions body and its stream events, a Responses body
and its events, an error body. The scripted model serves these, and the tests' loopback server too: the one
place that writes the wire format of an answer.

A reply is written as a Chat Completions assistant message (`content`, `tool_calls` in wire form); the
Responses shapes are made from it.
"""
from __future__ import annotations

import time
from typing import Any

import orjson

_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
    429: "rate_limit_exceeded", 500: "server_error", 503: "server_error",
}


def error_body(code: int, message: str) -> dict[str, Any]:
    """An OpenAI-style error object for HTTP status `code`."""
    kind = _ERROR_TYPES.get(code, "server_error" if code >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def completion_body(request: dict[str, Any], message: dict[str, Any], finish_reason: str,
                    usage: tuple[int, int], number: int, **extra: Any) -> dict[str, Any]:
    """A Chat Completions answer holding `message`, echoing the request's model; `extra` adds top-level fields."""
    prompt, completion = usage
    return {
        "id": f"chatcmpl-loopback-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or "loopback",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        **extra,
    }


def chat_events(request: dict[str, Any], completion: dict[str, Any]) -> bytes:
    """A completion as Chat Completions stream events: role, content, one chunk per tool call, the finish,
    the usage chunk when `stream_options.include_usage` asks for it, then [DONE]."""
    options = request.get("stream_options") or {}
    with_usage = isinstance(options, dict) and options.get("include_usage") is True
    choice = completion["choices"][0]
    message = choice["message"]
    head = {k: completion[k] for k in ("id", "object", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
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


def response_body(request: dict[str, Any], message: dict[str, Any], usage: tuple[int, int],
                  number: int) -> dict[str, Any]:
    """A completed Response holding the reply's tool calls as `function_call` items and its text as a
    `message` item; usage as `input_tokens` / `output_tokens`."""
    items: list[dict[str, Any]] = []
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


def response_events(body: dict[str, Any]) -> bytes:
    """The Response as a stream: created, each output item added and done, then completed."""
    started = {**body, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(body["output"]):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": body})
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps({**e, "sequence_number": n})
                    + b"\n\n" for n, e in enumerate(events))
