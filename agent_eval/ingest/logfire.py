"""logfire spans translated to the GenAI attributes `genai.py` reads.

`instrument_openai` writes the request and response bodies (`request_data`, `response_data`) beside
its `gen_ai.*` attributes (older versions write only the bodies). A streamed call is a pair: the request
span (no response, no usage) and a "streaming response" log span holding both; the request half is
left out so the call counts once. Through the Agents SDK (`instrument_openai_agents`) model spans hold
`input` / `output` (chat) or `raw_input` / `response` (Responses API), and each tool call is a span
"Function: {name}" whose `input` is its arguments; a handoff is a span "Handoff: {from_agent} → {to_agent}",
which is the framework's own doing, not a step.
"""
from __future__ import annotations

from typing import Any

from agent_eval.ingest.otlp import HANDOFF, Span, json_value
from agent_eval.ingest.records import content_text

DROP = "agent_eval.drop"  # the translation's verdict: this span repeats another one
_STREAMING = "streaming response from"
_TEMPLATE = "logfire.msg_template"


def _responses_items(items: Any) -> list[dict[str, Any]]:
    """Responses API input or output items as OpenAI chat messages."""
    out: list[dict[str, Any]] = []
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": item.get("call_id"), "function": {"name": item.get("name"),
                                                         "arguments": item.get("arguments")}}]})
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        elif kind in (None, "message") and item.get("role"):
            content = item.get("content")
            if isinstance(content, list):
                content = content_text(content, any_type=True)
            out.append({"role": item["role"], "content": content})
    return out


def _usage(usage: Any, out: dict[str, Any]) -> None:
    if not isinstance(usage, dict):
        return
    for ours, names in (("input_tokens", ("prompt_tokens", "input_tokens")),
                        ("output_tokens", ("completion_tokens", "output_tokens"))):
        value = next((usage[n] for n in names if isinstance(usage.get(n), int)), None)
        if value is not None:
            out[f"gen_ai.usage.{ours}"] = value


def _openai(span: Span, request: dict[str, Any], out: dict[str, Any]) -> None:
    """`instrument_openai`: the request body, and the response's first message and usage."""
    out["gen_ai.operation.name"] = "chat"
    if isinstance(request.get("messages"), list):
        out["gen_ai.input.messages"] = request["messages"]
    if request.get("model"):
        out["gen_ai.request.model"] = request["model"]
    response = json_value(span.attributes.get("response_data"))
    if isinstance(response, dict):
        if isinstance(response.get("message"), dict):
            out["gen_ai.output.messages"] = [response["message"]]
        elif isinstance(response.get("combined_chunk_content"), str):
            out["gen_ai.output.messages"] = [{"role": "assistant", "content": response["combined_chunk_content"]}]
        _usage(response.get("usage"), out)


def _agents_model(span: Span, out: dict[str, Any]) -> None:
    """`instrument_openai_agents`: a model call's `input`/`output` (chat) or `raw_input`/`response`."""
    attrs = span.attributes
    out["gen_ai.operation.name"] = "chat"
    response = json_value(attrs.get("response"))
    if "raw_input" in attrs or isinstance(response, dict):
        out["gen_ai.input.messages"] = _responses_items(json_value(attrs.get("raw_input")))
        if isinstance(response, dict):
            out["gen_ai.output.messages"] = _responses_items(response.get("output"))
            _usage(response.get("usage"), out)
        return
    inputs, outputs = json_value(attrs.get("input")), json_value(attrs.get("output"))
    if isinstance(inputs, list):
        out["gen_ai.input.messages"] = inputs
    if isinstance(outputs, list):
        out["gen_ai.output.messages"] = outputs
    _usage(json_value(attrs.get("usage")), out)


def _function(span: Span, out: dict[str, Any]) -> None:
    attrs = span.attributes
    out["gen_ai.operation.name"] = "execute_tool"
    out["gen_ai.tool.name"] = attrs.get("name") or span.name.removeprefix("Function:").strip()
    if "input" in attrs:
        out["gen_ai.tool.call.arguments"] = attrs["input"]
    if attrs.get("output") is not None:
        out["gen_ai.tool.call.result"] = attrs["output"]


def _is_stream_log(span: Span) -> bool:
    return str(span.attributes.get(_TEMPLATE) or span.name).startswith(_STREAMING)


def _is_unanswered_request(span: Span) -> bool:
    """A logfire model span with no answer on it: no response body, no output messages, no usage."""
    attrs = span.attributes
    return ("request_data" in attrs and not _is_stream_log(span) and "response_data" not in attrs
            and "gen_ai.output.messages" not in attrs
            and not any(key.startswith("gen_ai.usage.") for key in attrs))


def streamed_request_halves(spans: list[Span]) -> set[int]:
    """The request halves of streamed calls, as `id()`s of their spans. With only the latest GenAI
    conventions logfire's request span says nothing of the stream (`request_data` is just the model): each
    "streaming response" log is paired with the latest unanswered request span of its trace and model that
    started before it, and that one is the half left out, so the call counts once."""
    waiting: dict[tuple[str, Any], list[Span]] = {}
    for span in sorted(spans, key=lambda s: s.start_ns):
        model = json_value(span.attributes.get("request_data"))
        key = (span.trace_id, model.get("model") if isinstance(model, dict) else None)
        if _is_unanswered_request(span):
            waiting.setdefault(key, []).append(span)
    halves: set[int] = set()
    for log in sorted((s for s in spans if _is_stream_log(s) and "request_data" in s.attributes),
                      key=lambda s: s.end_ns):
        model = json_value(log.attributes.get("request_data"))
        candidates = waiting.get((log.trace_id, model.get("model") if isinstance(model, dict) else None), [])
        before = [span for span in candidates if span.start_ns <= log.end_ns]
        if before:
            half = before[-1]
            candidates.remove(half)
            halves.add(id(half))
    return halves


def translate(span: Span) -> dict[str, Any] | None:
    """The GenAI attributes a logfire span stands for; None when it is not one of logfire's LLM spans."""
    attrs = span.attributes
    template = str(attrs.get(_TEMPLATE) or span.name)
    out: dict[str, Any] = {}
    if template.startswith("Function:") or span.name.startswith("Function:"):
        _function(span, out)
        return out
    if template.startswith("Handoff:") and attrs.get("to_agent") is not None:
        out[HANDOFF] = attrs["to_agent"]  # the framework handing over: not a step
        return out
    if "logfire.span_type" in attrs and (("input" in attrs and "output" in attrs) or "raw_input" in attrs):
        _agents_model(span, out)  # the Agents SDK's model call (newer versions add request_data beside)
        return out
    request = json_value(attrs.get("request_data"))
    if isinstance(request, dict):
        if template.startswith(_STREAMING):
            duration = attrs.get("duration")
            if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration >= 0:
                span.start_ns = span.end_ns - int(duration * 1e9)  # a log: it has no length of its own
        elif request.get("stream") and "response_data" not in attrs:
            return {DROP: True}  # the streamed call's request half: its "streaming response" span holds it
        _openai(span, request, out)
        return out
    return None
