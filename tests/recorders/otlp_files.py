"""The SDK's finished spans and log records as OTLP files: protobuf via opentelemetry-proto, and OTLP/JSON
(hex ids, as the collector's file exporter writes them)."""
from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

import orjson


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, dict):
        out = AnyValue()
        out.kvlist_value.values.extend(key_values(value))
        return out
    if isinstance(value, Sequence):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    return AnyValue(string_value=str(value))


def key_values(attrs: Any) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in dict(attrs or {}).items()]


def _span(span: Any) -> trace_pb2.Span:
    ctx = span.context
    out = trace_pb2.Span(trace_id=ctx.trace_id.to_bytes(16, "big"), span_id=ctx.span_id.to_bytes(8, "big"),
                         name=span.name, kind=span.kind.value + 1, start_time_unix_nano=span.start_time,
                         end_time_unix_nano=span.end_time)
    if span.parent is not None:
        out.parent_span_id = span.parent.span_id.to_bytes(8, "big")
    out.attributes.extend(key_values(span.attributes))
    for event in span.events:
        out.events.append(trace_pb2.Span.Event(time_unix_nano=event.timestamp, name=event.name,
                                               attributes=key_values(event.attributes)))
    out.status.code = span.status.status_code.value
    out.status.message = span.status.description or ""
    return out


def trace_request(spans: Sequence[Any]) -> ExportTraceServiceRequest:
    """One ExportTraceServiceRequest of the SDK's ReadableSpans, one resourceSpans per scope."""
    request = ExportTraceServiceRequest()
    for span in spans:
        rs = request.resource_spans.add()
        rs.resource.attributes.extend(key_values(span.resource.attributes))
        ss = rs.scope_spans.add()
        ss.scope.name = span.instrumentation_scope.name if span.instrumentation_scope else ""
        ss.spans.append(_span(span))
    return request


def logs_request(records: Sequence[Any]) -> ExportLogsServiceRequest:
    """One ExportLogsServiceRequest of the SDK's exported log data (ReadableLogRecord or LogData)."""
    request = ExportLogsServiceRequest()
    for item in records:
        record = getattr(item, "log_record", item)
        rl = request.resource_logs.add()
        sl = rl.scope_logs.add()
        out = logs_pb2.LogRecord(time_unix_nano=record.timestamp or 0,
                                 observed_time_unix_nano=record.observed_timestamp or 0)
        if record.body is not None:
            out.body.CopyFrom(any_value(record.body))
        out.attributes.extend(key_values(record.attributes))
        if getattr(record, "event_name", None):
            out.event_name = record.event_name
        if record.trace_id:
            out.trace_id = record.trace_id.to_bytes(16, "big")
            out.span_id = record.span_id.to_bytes(8, "big")
        sl.log_records.append(out)
    return request


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (bytes.fromhex(_b64hex(v)).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def _b64hex(value: str) -> str:
    import base64

    return base64.b64decode(value).hex()


def as_json(request: Any) -> dict:
    """The OTLP/JSON mapping of a request, ids in hex as the OTLP/JSON encoding writes them."""
    return _hex_ids(MessageToDict(request))


def write_jsonl(path: Path, requests: Sequence[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(as_json(r)) + b"\n" for r in requests))
    return path


def write_protobuf(path: Path, requests: Sequence[Any], delimited: bool = False) -> Path:
    """One request as it is (an OTLP/HTTP body), or several each preceded by its 4-byte big-endian length."""
    if not delimited:
        (request,) = requests
        path.write_bytes(request.SerializeToString())
    else:
        path.write_bytes(b"".join(struct.pack(">I", len(b)) + b for b in (r.SerializeToString() for r in requests)))
    return path
