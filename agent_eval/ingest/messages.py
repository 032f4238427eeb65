"""Chat messages as GenAI spans record them: typed `parts` (v1.37 on), OpenAI-format messages (older
events, logfire, OpenInference), and OpenLLMetry's flattened `gen_ai.prompt.N.*` attributes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agent_eval.ingest.otlp import Span, by_index, json_value
from agent_eval.ingest.records import content_text

_INDEXED = {kind: re.compile(rf"^gen_ai\.{kind}\.(\d+)\.(.+)$") for kind in ("prompt", "completion")}
_TOOL_CALL = re.compile(r"^tool_calls\.(\d+)\.([^.]+)$")


@dataclass
class Call:
    """A tool call the model asked for in a message (`tool_call` part or OpenAI `tool_calls`)."""

    call_id: str | None
    name: str
    args: Any


@dataclass
class Message:
    """One chat message: its role, its text (None without a text part) and its tool calls."""

    role: str
    text: str | None
    calls: list[Call] = field(default_factory=list)
    response_to: str | None = None  # a tool result's call id
    response: Any = None


def _message(raw: Any) -> Message | None:
    if isinstance(raw, dict) and "role" not in raw and isinstance(raw.get("message"), dict):
        raw = raw["message"]  # an OpenAI choice
    if not isinstance(raw, dict):
        return None
    msg = Message(role=str(raw.get("role") or ""), text=None)
    texts: list[str] = []
    parts = raw.get("parts")
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("content"), str):
            texts.append(part["content"])
        elif kind == "tool_call":
            msg.calls.append(Call(str_or_none(part.get("id")), str(part.get("name") or ""),
                                  json_value(part.get("arguments"))))
        elif kind == "tool_call_response":
            msg.response_to, msg.response = str_or_none(part.get("id")), part.get("response")
    text = content_text(raw.get("content"), strings=True, fallback="content")
    if text is not None:
        texts.append(text)
    tool_calls = raw.get("tool_calls")
    for tc in tool_calls if isinstance(tool_calls, list) else ():
        if isinstance(tc, dict):
            function = tc.get("function")
            fn: dict[str, Any] = function if isinstance(function, dict) else tc
            msg.calls.append(Call(str_or_none(tc.get("id")), str(fn.get("name") or ""),
                                  json_value(fn.get("arguments"))))
    if msg.role == "tool" and raw.get("tool_call_id") is not None:
        msg.response_to, msg.response = str_or_none(raw.get("tool_call_id")), raw.get("content")
    msg.text = "\n".join(texts) if texts else None
    return msg


def str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _messages(value: Any, role: str) -> list[Message] | None:
    value = json_value(value)
    if isinstance(value, str):  # a text completion's bare prompt or completion
        return [Message(role=role, text=value)] if value else None
    if isinstance(value, dict):
        value = value.get("messages", [value]) if "role" in value or "messages" in value else [value]
    if not isinstance(value, list):
        return None
    return [m for m in (_message(item) for item in value) if m is not None]


def _indexed(span: Span, kind: str) -> list[Message] | None:
    """OpenLLMetry's flattened attributes: gen_ai.prompt.0.role, gen_ai.completion.0.tool_calls.0.name."""
    found = by_index(span.attributes, _INDEXED[kind])
    if not found:
        return None
    out = []
    for fields in found:
        raw = {"role": fields.get("role") or ("assistant" if kind == "completion" else "user"),
               "content": fields.get("content"),
               "tool_calls": [{"id": c.get("id"), "function": c} for c in by_index(fields, _TOOL_CALL)]}
        message = _message(raw)
        if message is not None:
            out.append(message)
    return out


def _span_messages(span: Span, side: str, older: str, role: str) -> list[Message] | None:
    """The `side` ("input"/"output") messages: the newer attribute, the older event, or indexed attributes."""
    if f"gen_ai.{side}.messages" in span.attributes:
        return _messages(span.attributes[f"gen_ai.{side}.messages"], role)
    for name, attrs in span.events:
        if name == f"gen_ai.content.{older}" and f"gen_ai.{older}" in attrs:
            return _messages(attrs[f"gen_ai.{older}"], role)
    return _indexed(span, older)


def input_messages(span: Span) -> list[Message] | None:
    """The span's input messages in either convention; None when none were recorded."""
    return _span_messages(span, "input", "prompt", "user")


def output_messages(span: Span) -> list[Message] | None:
    """The span's output messages in either convention; None when none were recorded."""
    return _span_messages(span, "output", "completion", "assistant")
