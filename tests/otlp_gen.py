"""A small OTLP/JSON generator for tests: agent traces under the GenAI semantic conventions.

Attribute names follow the conventions exactly. `Trace.chat` writes the current convention
(`gen_ai.input.messages` / `gen_ai.output.messages` with typed parts) or, with `legacy=True`, the
older one (`gen_ai.content.prompt` / `gen_ai.content.completion` events holding OpenAI messages).
"""
from __future__ import annotations

import base64
import itertools
from typing import Any

import orjson

T0_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
_span_ids = itertools.count(1)


def any_value(value: Any, int_as_number: bool = False) -> dict[str, Any]:
    """The OTLP AnyValue of a plain value; intValue is a string unless `int_as_number`."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": value if int_as_number else str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(v, int_as_number) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": any_value(v, int_as_number)}
                                           for k, v in value.items()]}}
    raise TypeError(value)


def key_values(attrs: dict[str, Any], int_as_number: bool = False) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v, int_as_number)} for k, v in attrs.items()]


def as_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def encode_id(hex_id: str, style: str) -> str:
    """`hex` (lower), `HEX` (upper) or `base64` (the protobuf JSON mapping)."""
    if style == "base64":
        return base64.b64encode(bytes.fromhex(hex_id)).decode()
    return hex_id.upper() if style == "HEX" else hex_id


# --- messages, current convention (parts) ---------------------------------------------------

def user(text: str) -> dict:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def system(text: str) -> dict:
    return {"role": "system", "parts": [{"type": "text", "content": text}]}


def assistant(text: str) -> dict:
    return {"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}


def calls(*items: tuple[str, str, dict]) -> dict:
    """An assistant message asking for tool calls: (call id, tool name, arguments)."""
    return {"role": "assistant", "finish_reason": "tool_call",
            "parts": [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in items]}


def tool_result(call_id: str, response: Any) -> dict:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": response}]}


# --- messages, older convention (OpenAI format) ---------------------------------------------

def oa_user(text: str) -> dict:
    return {"role": "user", "content": text}


def oa_system(text: str) -> dict:
    return {"role": "system", "content": text}


def oa_assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def oa_calls(*items: tuple[str, str, dict]) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": as_json(a)}}
                           for i, n, a in items]}


def oa_tool(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


class Trace:
    """Spans of one trace; times are milliseconds after T0_NS plus `offset_ms`."""

    def __init__(self, trace_id: str, offset_ms: float = 0.0) -> None:
        self.trace_id = trace_id
        self.offset_ms = offset_ms
        self.spans: list[dict[str, Any]] = []

    def _ns(self, ms: float) -> int:
        return T0_NS + int(round((self.offset_ms + ms) * 1_000_000))

    def span(self, name: str, start_ms: float, end_ms: float, attrs: dict[str, Any], parent: str | None = None,
             events: list[dict] | None = None, error: str | None = None) -> str:
        span_id = f"{next(_span_ids):016x}"
        span: dict[str, Any] = {"traceId": self.trace_id, "spanId": span_id, "name": name, "kind": 1,
                                "startTimeUnixNano": str(self._ns(start_ms)),
                                "endTimeUnixNano": str(self._ns(end_ms)), "attributes": attrs}
        if parent:
            span["parentSpanId"] = parent
        if events:
            span["events"] = events
        if error is not None:
            span["status"] = {"code": 2, "message": error}
        self.spans.append(span)
        return span_id

    def agent(self, start_ms: float, end_ms: float, name: str = "support", error: str | None = None,
              usage: tuple[int, int] | None = None) -> str:
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        if usage:
            attrs.update({"gen_ai.usage.input_tokens": usage[0], "gen_ai.usage.output_tokens": usage[1]})
        return self.span(f"invoke_agent {name}", start_ms, end_ms, key_values(attrs), error=error)

    def chat(self, start_ms: float, end_ms: float, inputs: list[dict], outputs: list[dict],
             model: str = "gpt-test", usage: tuple[int, int] = (0, 0), parent: str | None = None,
             legacy: bool = False, structured: bool = False, operation: str = "chat") -> str:
        """An inference span; `structured` writes the messages as AnyValues instead of JSON strings."""
        attrs: dict[str, Any] = {"gen_ai.operation.name": operation, "gen_ai.request.model": model,
                                 "gen_ai.usage.input_tokens": usage[0], "gen_ai.usage.output_tokens": usage[1]}
        events = None
        if legacy:
            events = [
                {"timeUnixNano": str(self._ns(start_ms)), "name": "gen_ai.content.prompt",
                 "attributes": key_values({"gen_ai.prompt": as_json(inputs)})},
                {"timeUnixNano": str(self._ns(end_ms)), "name": "gen_ai.content.completion",
                 "attributes": key_values({"gen_ai.completion": as_json(outputs)})},
            ]
        else:
            attrs["gen_ai.input.messages"] = inputs if structured else as_json(inputs)
            attrs["gen_ai.output.messages"] = outputs if structured else as_json(outputs)
        return self.span(f"{operation} {model}", start_ms, end_ms, key_values(attrs, int_as_number=legacy),
                         parent, events)

    def tool(self, start_ms: float, end_ms: float, name: str, call_id: str | None = None,
             arguments: Any = None, result: Any = None, error_type: str | None = None,
             parent: str | None = None, status_error: str | None = None) -> str:
        """An execute_tool span; `arguments` is written as a JSON string (a str is written as it is)."""
        attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
        if call_id is not None:
            attrs["gen_ai.tool.call.id"] = call_id
        if arguments is not None:
            attrs["gen_ai.tool.call.arguments"] = arguments if isinstance(arguments, str) else as_json(arguments)
        if result is not None:
            attrs["gen_ai.tool.call.result"] = result
        if error_type is not None:
            attrs["error.type"] = error_type
        return self.span(f"execute_tool {name}", start_ms, end_ms, key_values(attrs), parent,
                         error=status_error)

    def plain(self, start_ms: float, end_ms: float, name: str = "http GET") -> str:
        return self.span(name, start_ms, end_ms, key_values({"http.request.method": "GET"}))


def export_request(spans: list[dict], id_style: str = "hex") -> dict[str, Any]:
    """One ExportTraceServiceRequest holding `spans`, ids written in `id_style`."""
    out = []
    for span in spans:
        span = dict(span)
        span["traceId"] = encode_id(span["traceId"], id_style)
        span["spanId"] = encode_id(span["spanId"], id_style)
        if "parentSpanId" in span:
            span["parentSpanId"] = encode_id(span["parentSpanId"], id_style)
        out.append(span)
    return {"resourceSpans": [{
        "resource": {"attributes": key_values({"service.name": "shop-agent"})},
        "scopeSpans": [{"scope": {"name": "tests.otlp_gen"}, "spans": out}],
    }]}


def jsonl(requests: list[dict]) -> bytes:
    """JSON Lines, one export request per line, as the collector's file exporter writes them."""
    return b"".join(orjson.dumps(r) + b"\n" for r in requests)
