"""OpenInference spans (Arize Phoenix's conventions) translated to the GenAI attributes `genai.py` reads.

`openinference.span.kind` LLM is an inference span, TOOL an execute_tool span (its arguments are its
`input.value`; `tool.parameters` is the tool's schema, never its arguments), AGENT an invoke_agent span.
"""
from __future__ import annotations

import re
from typing import Any

from agent_eval.ingest.otlp import HANDOFF, Span, by_index, json_value

KIND = "openinference.span.kind"
_HANDOFF = "handoff to "
_FLAT = {side: re.compile(rf"^llm\.{side}_messages\.(\d+)\.message\.(.+)$") for side in ("input", "output")}
_CALL = re.compile(r"^tool_calls\.(\d+)\.tool_call\.(.+)$")
_CONTENT = re.compile(r"^contents\.(\d+)\.message_content\.(.+)$")


def _messages(attrs: dict[str, Any], side: str) -> list[dict[str, Any]] | None:
    """`llm.{side}_messages.N.message.*` as OpenAI-format messages, in index order; None when absent."""
    found = by_index(attrs, _FLAT[side])
    if not found:
        return None
    out = []
    for fields in found:
        calls = by_index(fields, _CALL)
        texts = [t["text"] for t in by_index(fields, _CONTENT) if isinstance(t.get("text"), str)]
        content = fields.get("content")
        if content is None and texts:
            content = "\n".join(texts)
        message: dict[str, Any] = {"role": fields.get("role") or ("assistant" if side == "output" else "user"),
                                   "content": content}
        if calls:
            message["tool_calls"] = [{"id": c.get("id"), "function": {"name": c.get("function.name"),
                                                                      "arguments": c.get("function.arguments")}}
                                     for c in calls]
        if fields.get("tool_call_id") is not None:
            message["tool_call_id"] = fields["tool_call_id"]
        out.append(message)
    return out


def _llm(span: Span, out: dict[str, Any]) -> None:
    attrs = span.attributes
    out["gen_ai.operation.name"] = "chat"
    inputs = _messages(attrs, "input")
    if inputs is None:  # only the request body was recorded
        body = json_value(attrs.get("input.value"))
        inputs = body.get("messages") if isinstance(body, dict) and isinstance(body.get("messages"), list) else None
    if inputs is not None:
        out["gen_ai.input.messages"] = inputs
    outputs = _messages(attrs, "output")
    if outputs is not None:
        out["gen_ai.output.messages"] = outputs
    if attrs.get("llm.model_name"):
        out["gen_ai.request.model"] = attrs["llm.model_name"]
    for ours, theirs in (("input_tokens", "prompt"), ("output_tokens", "completion")):
        if attrs.get(f"llm.token_count.{theirs}") is not None:
            out[f"gen_ai.usage.{ours}"] = attrs[f"llm.token_count.{theirs}"]


def _tool(span: Span, out: dict[str, Any]) -> None:
    attrs = span.attributes
    if attrs.get("tool.name") is None and span.name.startswith(_HANDOFF):
        # the Agents SDK's handoff: input.value names the agent handing off, output.value the one handed to
        out[HANDOFF] = attrs.get("output.value") or span.name.removeprefix(_HANDOFF)
        return
    if attrs.get("input.value") in (None, ""):
        return  # a handoff span of older versions: no arguments, not a tool the agent ran
    out["gen_ai.operation.name"] = "execute_tool"
    out["gen_ai.tool.name"] = attrs.get("tool.name") or span.name
    out["gen_ai.tool.call.arguments"] = attrs["input.value"]
    if attrs.get("tool_call.id") is not None:
        out["gen_ai.tool.call.id"] = attrs["tool_call.id"]
    if attrs.get("output.value") is not None:
        out["gen_ai.tool.call.result"] = attrs["output.value"]


def _agent(span: Span, out: dict[str, Any]) -> None:
    out["gen_ai.operation.name"] = "invoke_agent"
    out["gen_ai.agent.name"] = span.attributes.get("agent.name") or span.name


_KINDS = {"LLM": _llm, "TOOL": _tool, "AGENT": _agent}


def translate(span: Span) -> dict[str, Any] | None:
    """The GenAI attributes an OpenInference span stands for; None when it is not one."""
    kind = span.attributes.get(KIND)
    if not isinstance(kind, str):
        return None
    out: dict[str, Any] = {}
    handler = _KINDS.get(kind.upper())
    if handler is not None:
        handler(span, out)
    return out
