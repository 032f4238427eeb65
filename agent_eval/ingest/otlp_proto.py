"""OTLP protobuf files: one ExportTraceServiceRequest / ExportLogsServiceRequest (an OTLP/HTTP body), or
several, each preceded by its length as a 4-byte big-endian integer. Read with opentelemetry-proto (the
optional extra `agent-eval-trials[otlp]`) into the OTLP/JSON shape the JSON reader takes.
"""
from __future__ import annotations

import struct
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.ingest.records import Unmappable

_FIELD_1_LEN = 0x0A  # a request's first byte: field 1 (resource_spans / resource_logs), length-delimited


def is_protobuf(data: bytes) -> bool:
    """Whether the bytes are protobuf rather than JSON: JSON starts with `{` or `[` after blanks."""
    head = data.lstrip()[:1]
    return bool(data) and head not in (b"{", b"[")


def _message_class(kind: str) -> Any:
    try:
        if kind == "logs":
            from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
            return ExportLogsServiceRequest
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
        return ExportTraceServiceRequest
    except ImportError:
        raise ConfigError("this file is OTLP protobuf, which needs opentelemetry-proto: "
                          "pip install 'agent-eval-trials[otlp]' (or export OTLP/JSON instead).") from None


def _bodies(data: bytes) -> list[tuple[str, bytes]] | str:
    """The request bodies with their labels, or why the framing is broken."""
    if data[:1] == bytes([_FIELD_1_LEN]):
        return [("request 1", data)]
    out: list[tuple[str, bytes]] = []
    at = 0
    while at < len(data):
        if at + 4 > len(data):
            return f"request {len(out) + 1}: {len(data) - at} trailing byte(s), not a 4-byte length"
        (size,) = struct.unpack(">I", data[at:at + 4])
        if at + 4 + size > len(data):
            return f"request {len(out) + 1}: its length says {size} bytes, {len(data) - at - 4} are left"
        out.append((f"request {len(out) + 1}", data[at + 4:at + 4 + size]))
        at += 4 + size
    return out


def read_protobuf(data: bytes, kind: str = "traces") -> tuple[list[tuple[str, Any]], list[Unmappable]]:
    """The requests of a protobuf file as OTLP/JSON-shaped dicts (ids base64), each with its label."""
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

    cls = _message_class(kind)
    bodies = _bodies(data)
    if isinstance(bodies, str):
        return [], [Unmappable("protobuf", bodies)]
    records: list[tuple[str, Any]] = []
    bad: list[Unmappable] = []
    for where, body in bodies:
        message = cls()
        try:
            message.ParseFromString(body)
        except (DecodeError, ValueError, RecursionError) as exc:
            bad.append(Unmappable(where, f"not an OTLP {kind} export request ({exc or 'cannot be parsed'})"))
            continue
        records.append((where, MessageToDict(message)))
    return records, bad
