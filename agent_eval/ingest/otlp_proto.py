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


def _bodies(data: bytes) -> tuple[list[tuple[str, bytes]], str | None]:
    """The request bodies with their labels, and why the framing breaks after them (None when it does not):
    the requests before a cut-short one are kept."""
    if data[:1] == bytes([_FIELD_1_LEN]):
        return [("request 1", data)], None
    out: list[tuple[str, bytes]] = []
    at = 0
    while at < len(data):
        if at + 4 > len(data):
            return out, f"request {len(out) + 1}: {len(data) - at} trailing byte(s), not a 4-byte length"
        (size,) = struct.unpack(">I", data[at:at + 4])
        if at + 4 + size > len(data):
            return out, f"request {len(out) + 1}: its length says {size} bytes, {len(data) - at - 4} are left"
        out.append((f"request {len(out) + 1}", data[at + 4:at + 4 + size]))
        at += 4 + size
    return out, None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at `at` and where it ends; ValueError when it is cut short or longer than 10 bytes."""
    value = shift = 0
    for end in range(at, min(len(data), at + 10)):
        value |= (data[end] & 0x7F) << shift
        if data[end] < 0x80:
            return value, end + 1
        shift += 7
    raise ValueError("a length is cut short")


def _salvage(cls: Any, body: bytes, where: str, kind: str) -> tuple[Any, Unmappable]:
    """A request that does not parse whole, read resource by resource (its repeated field 1): the message of
    the resources before the first broken one, and that one, named and left out."""
    message = cls()
    field = cls.DESCRIPTOR.fields_by_number[1]
    resources = getattr(message, field.name)
    at, number = 0, 0
    while at < len(body):
        number += 1
        try:
            if body[at] != _FIELD_1_LEN:
                raise ValueError(f"an unexpected field (tag byte {body[at]:#04x})")
            size, start = _varint(body, at + 1)
            if start + size > len(body):
                raise ValueError(f"its length says {size} bytes, {len(body) - start} are left")
            resources.add().ParseFromString(body[start:start + size])
        except Exception as exc:  # noqa: BLE001 - DecodeError, ValueError: the resource is broken, named
            if len(resources) >= number:
                del resources[-1]
            return message, Unmappable(f"{where}, resource {number}", f"not an OTLP {kind} resource ({exc})")
        at = start + size
    return message, Unmappable(where, f"not an OTLP {kind} export request (cannot be parsed)")


def read_protobuf(data: bytes, kind: str = "traces") -> tuple[list[tuple[str, Any]], list[Unmappable]]:
    """The requests of a protobuf file as OTLP/JSON-shaped dicts (ids base64), each with its label."""
    cls = _message_class(kind)  # first: without the [otlp] extra, exit 2 naming it (protobuf comes with it)
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

    bodies, broken = _bodies(data)
    records: list[tuple[str, Any]] = []
    bad: list[Unmappable] = []
    for where, body in bodies:
        message = cls()
        try:
            message.ParseFromString(body)
        except (DecodeError, ValueError, RecursionError) as exc:
            message, broken_one = _salvage(cls, body, where, kind)
            if not len(getattr(message, cls.DESCRIPTOR.fields_by_number[1].name)):  # nothing readable in it
                bad.append(Unmappable(where, f"not an OTLP {kind} export request ({exc or 'cannot be parsed'})"))
                continue
            bad.append(broken_one)
        records.append((where, MessageToDict(message)))
    if broken is not None:
        where, _, why = broken.partition(": ")
        bad.append(Unmappable(where, f"{why}: cut short, left out"))
    return records, bad
