"""OpenLLMetry (traceloop) spans translated to the GenAI attributes `genai.py` reads.

Its model-call spans already carry `gen_ai.*` (the flattened `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`
messages, read by `messages.py`); what it adds is its decorators' spans: `traceloop.span.kind` `tool`
(`traceloop.entity.name`, and `traceloop.entity.input` holding `{"args": [...], "kwargs": {...}}`) and
`agent` / `workflow`.
"""
from __future__ import annotations

from typing import Any

from agent_eval.ingest.otlp import Span, json_value

KIND = "traceloop.span.kind"


def translate(span: Span) -> dict[str, Any] | None:
    """The GenAI attributes a traceloop decorator span stands for; None when it is not one."""
    kind = span.attributes.get(KIND)
    if not isinstance(kind, str):
        return None
    name = span.attributes.get("traceloop.entity.name") or span.name.rsplit(".", 1)[0]
    if kind == "tool":
        out: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        entity = json_value(span.attributes.get("traceloop.entity.input"))
        if isinstance(entity, dict):
            kwargs = entity.get("kwargs") if isinstance(entity.get("kwargs"), dict) else None
            out["gen_ai.tool.call.arguments"] = kwargs if kwargs is not None else entity
        result = span.attributes.get("traceloop.entity.output")
        if result is not None:
            out["gen_ai.tool.call.result"] = result
        return out
    if kind in ("agent", "workflow"):
        return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
    return {}
