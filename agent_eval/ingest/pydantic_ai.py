"""pydantic-ai's own instrumentation: GenAI spans already, plus the framework's own tools to tell apart.

A chat span's `model_request_parameters` lists the request's `function_tools` (the agent's) and its
`output_tools` (`final_result`, pydantic-ai's way of asking for a structured answer). A call of an
output tool has no tool span: it is the framework's own, never a step the agent failed to run.
"""
from __future__ import annotations

from typing import Any

from agent_eval.ingest.otlp import FRAMEWORK_TOOLS, Span, json_value


def translate(span: Span) -> dict[str, Any] | None:
    """The names of the framework's own tools the span's request offered; None when it records none."""
    params = json_value(span.attributes.get("model_request_parameters"))
    if not isinstance(params, dict) or not isinstance(params.get("output_tools"), list):
        return None
    names = [t["name"] for t in params["output_tools"] if isinstance(t, dict) and isinstance(t.get("name"), str)]
    return {FRAMEWORK_TOOLS: names} if names else None
