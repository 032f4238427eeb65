"""OTLP/JSON trace files: one export request, or JSON Lines of them (the collector's file exporter).

Parsed over orjson rather than with protobuf's `json_format`: the OTLP/JSON encoding writes trace and
span ids as hex, which `json_format` reads as base64 without complaint and turns into wrong bytes.
"""
from __future__ import annotations

import base64
import binascii
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_eval.ingest.records import Unmappable, read_bytes, read_records

STATUS_ERROR = 2


# Set by a convention's translation on a span that records a framework handing the conversation to
# another agent (the Agents SDK's handoff): its value is the agent handed to. Such a span is not a step.
HANDOFF = "agent_eval.handoff_to"
# Set by a convention on a span whose request offered tools of the framework's own (pydantic-ai's
# `final_result`): the list of their names. A call of one is the framework's, not a step.
FRAMEWORK_TOOLS = "agent_eval.framework_tools"


@dataclass
class Span:
    """One span, decoded: ids lower-case hex, times in nanoseconds, attributes as plain values."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status_code: int = 0
    status_message: str = ""
    where: str = ""

    @property
    def is_error(self) -> bool:
        return self.status_code == STATUS_ERROR

    @property
    def is_backwards(self) -> bool:
        """The span ends before it starts: it has no latency."""
        return self.end_ns < self.start_ns


def decode_id(value: Any, size: int) -> str | None:
    """An id of `size` bytes as lower-case hex, from hex (any case) or base64; None if it is neither."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) == 2 * size:
        try:
            return bytes.fromhex(value).hex()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        try:
            raw = base64.urlsafe_b64decode(value)
        except (binascii.Error, ValueError):
            return None
    return raw.hex() if len(raw) == size else None


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)  # OverflowError for an infinity: the caller reports the span
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return int(float(value))
    raise ValueError(f"not an integer: {value!r}")


def any_value(value: Any) -> Any:
    """The plain value of an OTLP AnyValue (`stringValue`, `intValue`, `arrayValue`, `kvlistValue`, ...)."""
    if not isinstance(value, dict):
        return value  # some exporters write attribute values bare
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return _int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values") or [])
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    """A key/value list (or an object) of attributes as a dict of plain values."""
    if isinstance(items, dict):
        return {str(k): any_value(v) for k, v in items.items()}
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"))
    return out


def by_index(attrs: Mapping[str, Any], pattern: re.Pattern[str]) -> list[dict[str, Any]]:
    """Flattened attributes (`prefix.N.rest`, `pattern`'s groups N and rest) as one {rest: value} per N,
    in index order: how OpenInference and OpenLLMetry write lists of messages and tool calls."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        m = pattern.match(key)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [fields for _, fields in sorted(found.items())]


def json_value(value: Any) -> Any:
    """An attribute that may hold JSON as a string (messages, arguments): parsed when it parses."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _span(raw: Any, where: str) -> Span:
    if not isinstance(raw, dict):
        raise ValueError("a span must be an object")
    trace_id = decode_id(raw.get("traceId"), 16)
    if trace_id is None:
        raise ValueError(f"traceId {raw.get('traceId')!r} is neither 32 hex digits nor base64 of 16 bytes")
    span_id = decode_id(raw.get("spanId"), 8) or ""
    parent = decode_id(raw.get("parentSpanId"), 8) or ""
    start = _int(raw.get("startTimeUnixNano") or 0)
    end = _int(raw.get("endTimeUnixNano") or start)
    status = raw.get("status") or {}
    code = status.get("code", 0) if isinstance(status, dict) else 0
    if isinstance(code, str):
        code = STATUS_ERROR if code.upper().endswith("ERROR") else (int(code) if code.isdigit() else 0)
    events = [(str(e.get("name") or ""), attributes(e.get("attributes"))) for e in raw.get("events") or []
              if isinstance(e, dict)]
    return Span(trace_id, span_id, parent, str(raw.get("name") or ""), start, end,
                attributes(raw.get("attributes")), events, int(code or 0),
                str(status.get("message") or "") if isinstance(status, dict) else "", where)


def _requests(doc: Any) -> list[Any]:
    """The export requests in one record: a request, or a list of them."""
    return doc if isinstance(doc, list) else [doc]


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _raw_spans(request: dict[str, Any], where: str, bad: list[Unmappable]) -> list[Any]:
    """The raw spans of one export request; a request of the wrong shape is reported, not raised."""
    found = []
    for rs in _listed(request.get("resourceSpans")):
        if not isinstance(rs, dict):
            bad.append(Unmappable(where, "a resourceSpans entry is not an object"))
            continue
        for ss in _listed(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans")):
            if not isinstance(ss, dict):
                bad.append(Unmappable(where, "a scopeSpans entry is not an object"))
                continue
            found.extend(_listed(ss.get("spans")))
    return found


def read_documents(path: Path, kind: str = "traces") -> tuple[list[tuple[str, Any]], list[Unmappable]]:
    """The export requests of an OTLP file: JSON (one document or JSON Lines) or protobuf, by its content."""
    from agent_eval.ingest.otlp_proto import is_protobuf, read_protobuf

    data = read_bytes(path)
    if is_protobuf(data):
        return read_protobuf(data, kind)
    return read_records(path)


def read_spans(path: Path) -> tuple[dict[str, list[Span]], list[Unmappable]]:
    """Every span of the file grouped by trace id, each trace's spans ordered by start time."""
    records, bad = read_documents(path)
    traces: dict[str, list[Span]] = defaultdict(list)
    for where, doc in records:
        for request in _requests(doc):
            if not isinstance(request, dict) or "resourceSpans" not in request:
                bad.append(Unmappable(where, "not an OTLP export request (no \"resourceSpans\")"))
                continue
            for raw in _raw_spans(request, where, bad):
                try:
                    span = _span(raw, where)
                except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
                    name = raw.get("name") if isinstance(raw, dict) else None
                    label = f"span {str(name)[:80]!r}" if name else "a span"
                    bad.append(Unmappable(where, f"{label}: {exc}"))
                    continue
                traces[span.trace_id].append(span)
    for spans in traces.values():
        spans.sort(key=lambda s: (s.start_ns, s.end_ns))
    return dict(traces), bad
