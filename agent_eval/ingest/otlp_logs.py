"""GenAI content recorded as OTLP log records (`--logs LOGS`), joined to their spans by trace and span id.

Two shapes are read: the one event holding a whole call (`gen_ai.client.inference.operation.details`,
its `gen_ai.input.messages` / `gen_ai.output.messages` attributes), and the older one event per
message (`gen_ai.{system,user,assistant,tool}.message`, `gen_ai.choice`), whose body is the message.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from agent_eval.ingest.otlp import Span, any_value, attributes, decode_id
from agent_eval.ingest.otlp import read_documents
from agent_eval.ingest.records import Unmappable

_INPUT_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                 "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
_CHOICE = "gen_ai.choice"


def _records(doc: Any) -> list[Any]:
    found: list[Any] = []
    for rl in doc.get("resourceLogs") or [] if isinstance(doc, dict) else []:
        for sl in (rl.get("scopeLogs") or []) if isinstance(rl, dict) else []:
            found.extend((sl.get("logRecords") or []) if isinstance(sl, dict) else [])
    return found


def read_logs(path: Path) -> tuple[dict[tuple[str, str], list[tuple[str, dict[str, Any], Any]]], list[Unmappable]]:
    """The GenAI log records of an OTLP logs file by (trace id, span id): (event name, attributes, body)."""
    docs, bad = read_documents(path, "logs")
    found: dict[tuple[str, str], list[tuple[str, dict[str, Any], Any]]] = defaultdict(list)
    for where, doc in docs:
        if not isinstance(doc, dict) or "resourceLogs" not in doc:
            bad.append(Unmappable(f"{path.name} {where}", "not an OTLP logs export request (no \"resourceLogs\")"))
            continue
        for i, record in enumerate(_records(doc)):
            if not isinstance(record, dict):
                continue
            attrs = attributes(record.get("attributes"))
            name = str(record.get("eventName") or attrs.get("event.name") or "")
            if not name.startswith("gen_ai.") and not any(k.startswith("gen_ai.") for k in attrs):
                continue
            trace_id, span_id = decode_id(record.get("traceId"), 16), decode_id(record.get("spanId"), 8)
            if trace_id is None or span_id is None:
                bad.append(Unmappable(f"{path.name} {where} log record {i}",
                                      f"{name or 'a GenAI event'} names no trace and span id, so no span to join"))
                continue
            found[(trace_id, span_id)].append((name, attrs, any_value(record.get("body"))))
    return dict(found), bad


def _message(role: str, body: Any) -> dict[str, Any]:
    body = body if isinstance(body, dict) else {"content": body}
    message = {"role": body.get("role") or role, "content": body.get("content")}
    if body.get("tool_calls"):
        message["tool_calls"] = body["tool_calls"]
    if role == "tool" and body.get("id") is not None:
        message["tool_call_id"] = body["id"]
    return message


def join_logs(traces: dict[str, list[Span]], logs: dict[tuple[str, str], list[tuple[str, dict[str, Any], Any]]],
              ) -> list[Unmappable]:
    """Add each span's log records to it as GenAI attributes (never over its own); the records that match no span."""
    spans = {(s.trace_id, s.span_id): s for found in traces.values() for s in found}
    bad = []
    for key, records in logs.items():
        span = spans.get(key)
        if span is None:
            bad.append(Unmappable(f"log records of trace {key[0]} span {key[1]}",
                                  f"{len(records)} GenAI event(s) whose span is not in the traces"))
            continue
        inputs: list[dict[str, Any]] = []
        outputs: list[dict[str, Any]] = []
        for name, attrs, body in records:
            for k, v in attrs.items():
                if k.startswith("gen_ai."):
                    span.attributes.setdefault(k, v)
            if name in _INPUT_EVENTS:
                inputs.append(_message(_INPUT_EVENTS[name], body))
            elif name == _CHOICE:
                choice = body if isinstance(body, dict) else {}
                outputs.append(_message("assistant", choice.get("message") or {}))
        if inputs:
            span.attributes.setdefault("gen_ai.input.messages", inputs)
        if outputs:
            span.attributes.setdefault("gen_ai.output.messages", outputs)
    return bad
