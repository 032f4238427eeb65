"""Inspect AI logs (`.eval`, its zip, or `--log-format json`) as cases and as recorded runs for `score`.

Zip members are read in memory, never extracted, each capped at 256 MiB uncompressed. Inspect
compresses members with zstd (method 93), which Python's `zipfile` reads only from 3.14 on: those are
decompressed with `zstandard` (the optional extra `agent-eval-trials[inspect]`).
"""
from __future__ import annotations

import struct
import zipfile
from io import BytesIO
from pathlib import Path
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.ingest.records import Unmappable, read_bytes

MEMBER_CAP = 256 * 1024 * 1024
ZSTD = 93
_ATTACHMENT = "attachment://"


def is_inspect_log(data: bytes) -> bool:
    """A zip (an `.eval` log) or a JSON EvalLog (`eval` and `samples` at the top)."""
    if data[:4] == b"PK\x03\x04":
        return True
    head = data.lstrip()[:1]
    if head != b"{":
        return False
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return isinstance(doc, dict) and "eval" in doc and "samples" in doc


def _member(data: bytes, info: zipfile.ZipInfo, zf: zipfile.ZipFile) -> bytes:
    if info.file_size > MEMBER_CAP:
        raise ValueError(f"{info.file_size} bytes uncompressed, over the 256 MiB cap for one member")
    if info.compress_type != ZSTD:
        with zf.open(info) as f:
            out = f.read(MEMBER_CAP + 1)
    else:
        try:
            import zstandard
        except ImportError:
            raise ConfigError("this Inspect log compresses its members with zstd, which needs zstandard: "
                              "pip install 'agent-eval-trials[inspect]'.") from None
        at = info.header_offset
        name_len, extra_len = struct.unpack("<HH", data[at + 26:at + 30])
        start = at + 30 + name_len + extra_len
        raw = data[start:start + info.compress_size]
        try:
            out = zstandard.ZstdDecompressor().decompress(raw, max_output_size=MEMBER_CAP + 1)
        except zstandard.ZstdError as exc:
            raise ValueError(f"cannot be decompressed ({exc})") from None
    if len(out) > MEMBER_CAP:
        raise ValueError("over the 256 MiB cap for one member once decompressed")
    return out


def read_samples(path: Path) -> tuple[list[tuple[str, dict[str, Any]]], list[Unmappable]]:
    """Every sample of an Inspect log with its label, and the members or samples that cannot be read."""
    data = read_bytes(path)
    bad: list[Unmappable] = []
    samples: list[tuple[str, dict[str, Any]]] = []
    if data[:4] == b"PK\x03\x04":
        try:
            zf = zipfile.ZipFile(BytesIO(data))
        except zipfile.BadZipFile as exc:
            raise ConfigError(f"{path} is not a readable .eval log ({exc}); pass an Inspect log.") from None
        with zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if not (info.filename.startswith("samples/") and info.filename.endswith(".json")):
                    continue
                where = f"member {info.filename}"
                try:
                    raw = _member(data, info, zf)
                except (ValueError, zipfile.BadZipFile, NotImplementedError) as exc:
                    bad.append(Unmappable(where, str(exc) or "cannot be read"))
                    continue
                try:
                    sample = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    bad.append(Unmappable(where, f"not JSON ({exc})"))
                    continue
                if not isinstance(sample, dict):
                    bad.append(Unmappable(where, "a sample must be an object"))
                    continue
                samples.append((where, sample))
        return samples, bad
    doc = orjson.loads(data)
    for i, sample in enumerate(doc.get("samples") or []):
        if isinstance(sample, dict):
            samples.append((f"sample index {i}", sample))
        else:
            bad.append(Unmappable(f"sample index {i}", "a sample must be an object"))
    return samples, bad


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith(_ATTACHMENT):
        return attachments.get(value[len(_ATTACHMENT):], value)
    return value


def _text(content: Any, attachments: dict[str, Any]) -> str | None:
    content = _resolve(content, attachments)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [_resolve(c.get("text"), attachments) for c in content if isinstance(c, dict)
                 and c.get("type", "text") == "text"]
        texts = [t for t in texts if isinstance(t, str)]
        return "\n".join(texts) if texts else None
    return None


def _attachments(sample: dict[str, Any]) -> dict[str, Any]:
    found = sample.get("attachments")
    return found if isinstance(found, dict) else {}


def user_turns(sample: dict[str, Any]) -> list[str]:
    """The user turns of the sample's input (system, assistant and tool messages dropped)."""
    attachments = _attachments(sample)
    value = _resolve(sample.get("input"), attachments)
    if isinstance(value, str):
        return [value] if value.strip() else []
    turns = []
    for message in value if isinstance(value, list) else ():
        if isinstance(message, dict) and message.get("role") == "user":
            text = _text(message.get("content"), attachments)
            if text:
                turns.append(text)
    return turns


def recorded_calls(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The assistant messages' tool calls in order, each with its result and error from the tool message."""
    attachments = _attachments(sample)
    results: dict[str, dict[str, Any]] = {}
    for message in sample.get("messages") or ():
        if isinstance(message, dict) and message.get("role") == "tool" and message.get("tool_call_id") is not None:
            results[str(message["tool_call_id"])] = message
    calls = []
    for message in sample.get("messages") or ():
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            if not isinstance(call, dict):
                continue
            result = results.get(str(call.get("id")), {})
            error = result.get("error")
            calls.append({"id": call.get("id"), "name": str(call.get("function") or ""), "args": call.get("arguments"),
                          "output": _text(result.get("content"), attachments),
                          "error": (f"{error.get('type')}: {error.get('message')}" if isinstance(error, dict)
                                    else None if error is None else str(error)),
                          "invalid": call.get("parse_error")})
    return calls


def tool_times(sample: dict[str, Any]) -> dict[str, tuple[float, float | None]]:
    """Per tool call id, (working_start, working_time) of its `tool` event: seconds of the sample's
    working time, as Inspect counts them."""
    times: dict[str, tuple[float, float | None]] = {}
    for event in sample.get("events") or ():
        if not isinstance(event, dict) or event.get("event") != "tool" or event.get("id") is None:
            continue
        start = _seconds(event.get("working_start"))
        if start is not None:
            times.setdefault(str(event["id"]), (start, _seconds(event.get("working_time"))))
    return times


def _seconds(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def answer(sample: dict[str, Any]) -> str | None:
    """The text of the sample's last assistant message."""
    attachments = _attachments(sample)
    for message in reversed(sample.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            return _text(message.get("content"), attachments)
    return None
