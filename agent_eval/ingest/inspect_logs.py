"""Inspect AI logs (`.eval`, its zip, or `--log-format json`) as cases and as recorded runs for `score`.

Zip members are read in memory one at a time, never extracted, each capped at 256 MiB uncompressed and
all of them within a total budget of 1 GiB decompressed. Inspect
compresses members with zstd (method 93), which Python's `zipfile` reads only from 3.14 on: those are
decompressed with `zstandard` (the optional extra `agent-eval-trials[inspect]`).
"""
from __future__ import annotations

import os
import struct
import zipfile
import zlib
from functools import partial
from io import BytesIO
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from agent_eval.errors import ConfigError
from agent_eval.ingest.zip_scan import Break, Local, local_members
from agent_eval.ingest.records import Unmappable, content_text, partial_document, read_bytes

MEMBER_CAP = 256 * 1024 * 1024
TOTAL_BUDGET = 2**30  # decompressed bytes of one log across all its members
_PIECE = 1 << 20
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
        doc, broke = orjson.loads(data), None
    except orjson.JSONDecodeError:  # a log cut short: its members before the break
        if b'"eval"' not in data:
            return False
        doc, broke = partial_document(data)
    if broke is not None:  # cut inside `eval` itself, or after it
        return isinstance(doc, dict) and ("eval" in doc or "in `eval`" in broke)
    return isinstance(doc, dict) and "eval" in doc and "samples" in doc


class _Budget:
    """What is left of the total decompressed budget of one log, across all its members."""

    def __init__(self, path: Path) -> None:
        self.path, self.left = path, TOTAL_BUDGET

    def spend(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise ConfigError(f"{self.path}: the Inspect log decompresses to more than the total budget of "
                              f"{TOTAL_BUDGET:,} bytes ({_shown(TOTAL_BUDGET)}) across its members; split the log "
                              "(inspect log dump, or fewer samples per log) and import the parts.")


def _shown(size: int) -> str:
    return f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size / 2**20:.3g} MiB"


def _read_capped(read: Any, budget: _Budget) -> bytearray:
    """Read a member's decompressed stream in pieces, at most MEMBER_CAP + 1 bytes, each piece spent from
    the budget as it comes (a member never holds more than one cap in memory)."""
    out = bytearray()
    while len(out) <= MEMBER_CAP:
        piece = read(min(_PIECE, MEMBER_CAP + 1 - len(out)))
        if not piece:
            break
        budget.spend(len(piece))
        out += piece
    if len(out) > MEMBER_CAP:
        raise ValueError("over the 256 MiB cap for one member once decompressed")
    return out  # as it is: a copy would hold the member twice


def _member(file: Any, info: zipfile.ZipInfo, zf: zipfile.ZipFile, budget: _Budget) -> bytearray:
    if info.file_size > MEMBER_CAP:
        raise ValueError(f"{info.file_size} bytes uncompressed, over the 256 MiB cap for one member")
    if info.compress_type != ZSTD:
        with zf.open(info) as f:
            return _read_capped(f.read, budget)
    file.seek(info.header_offset + 26)
    name_len, extra_len = struct.unpack("<HH", file.read(4))
    file.seek(info.header_offset + 30 + name_len + extra_len)
    return _zstd(file.read(info.compress_size), budget)


def _zstd(raw: bytes, budget: _Budget) -> bytearray:
    try:
        import zstandard
    except ImportError:
        raise ConfigError("this Inspect log compresses its members with zstd, which needs zstandard: "
                          "pip install 'agent-eval-trials[inspect]'.") from None
    try:
        with zstandard.ZstdDecompressor().stream_reader(BytesIO(raw)) as reader:
            return _read_capped(reader.read, budget)
    except zstandard.ZstdError as exc:
        raise ValueError(f"cannot be decompressed ({exc})") from None


def _local_member(file: Any, member: Local, budget: _Budget) -> bytearray:
    """A member found by its local header (a zip cut short): stored, deflate or zstd, its CRC checked."""
    if member.file_size > MEMBER_CAP:
        raise ValueError(f"{member.file_size} bytes uncompressed, over the 256 MiB cap for one member")
    file.seek(member.data_offset)
    raw = file.read(member.compress_size)
    if member.method == ZSTD:
        out = _zstd(raw, budget)
    elif member.method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        inflate = zlib.decompressobj(-15) if member.method == zipfile.ZIP_DEFLATED else None
        left = [raw]

        def read(size: int) -> bytes:
            if inflate is None:
                piece, left[0] = left[0][:size], left[0][size:]
                return piece
            try:
                piece = inflate.decompress(left[0], size)
            except zlib.error as exc:
                raise ValueError(f"cannot be decompressed ({exc})") from None
            left[0] = inflate.unconsumed_tail
            return piece
        out = _read_capped(read, budget)
    else:
        raise ValueError(f"compression method {member.method} is not one Inspect writes")
    if zlib.crc32(out) != member.crc:
        raise ValueError("its data does not match its CRC (broken)")
    return out


def _sample(where: str, read: Callable[[], bytearray]) -> tuple[str, dict[str, Any]] | Unmappable:
    try:
        raw = read()
    except (ValueError, zipfile.BadZipFile, NotImplementedError, EOFError) as exc:
        return Unmappable(where, str(exc) or "cannot be read")
    try:
        sample = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return Unmappable(where, f"not JSON ({exc})")
    del raw
    return (where, sample) if isinstance(sample, dict) else Unmappable(where, "a sample must be an object")


def _is_sample(name: str) -> bool:
    return name.startswith("samples/") and name.endswith(".json")


def iter_samples(path: Path) -> Iterator[tuple[str, dict[str, Any]] | Unmappable]:
    """Each sample of an Inspect log with its label, or a member or sample that cannot be read, one at a
    time: a `.eval` zip is read member by member (never extracted) within TOTAL_BUDGET decompressed bytes
    in all (ConfigError past it, naming the file), so memory stays flat in the number of samples."""
    with _open(path) as file:
        if file.read(4) != b"PK\x03\x04":
            yield from _json_samples(path)
            return
        budget = _Budget(path)
        try:
            zf = zipfile.ZipFile(file)
        except (zipfile.BadZipFile, OSError):
            yield from _cut_zip_samples(path, file, budget)
            return
        with zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if _is_sample(info.filename):
                    yield _sample(f"member {info.filename}", partial(_member, file, info, zf, budget))


def _cut_zip_samples(path: Path, file: Any, budget: _Budget) -> Iterator[tuple[str, dict[str, Any]] | Unmappable]:
    """A `.eval` zip with no central directory (cut short): the whole members before the break, read from
    their local headers in order, then the break named; exit 2 when no sample member is whole."""
    read = 0
    for item in local_members(file, os.fstat(file.fileno()).st_size):
        if isinstance(item, Break):
            if not read:
                raise ConfigError(f"{path} is cut short or broken at {item}, before any whole sample; nothing in "
                                  "it can be read. Pass the whole log (the log Inspect is still writing is whole "
                                  "once it is done).")
            yield Unmappable("the log", f"{path} is cut short or broken at {item}; what follows is left out")
            return
        if _is_sample(item.name):
            read += 1
            yield _sample(f"member {item.name}", partial(_local_member, file, item, budget))


def _open(path: Path) -> Any:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc.strerror or exc}); pass the path of an existing file.") \
            from None


def _json_samples(path: Path) -> Iterator[tuple[str, dict[str, Any]] | Unmappable]:
    """A `--log-format json` log: one document, held whole, within the same budget. A log cut short keeps
    the complete samples before the break, and the break is named (exit 2 when no sample is whole)."""
    if path.stat().st_size > TOTAL_BUDGET:
        _Budget(path).spend(path.stat().st_size)
    data = read_bytes(path)
    try:
        doc, broke = orjson.loads(data), None
    except orjson.JSONDecodeError:
        doc, broke = partial_document(data)
    del data
    found = doc.get("samples") if isinstance(doc, dict) else None
    samples = found if isinstance(found, list) else []
    if broke is not None and not samples:
        raise ConfigError(f"{path} is cut short or broken at {broke}, before any whole sample; nothing in it can "
                          "be read. Pass the whole log (inspect log dump, or the log Inspect is still writing "
                          "once it is done).")
    for i, sample in enumerate(samples):
        yield (f"sample index {i}", sample) if isinstance(sample, dict) else Unmappable(
            f"sample index {i}", "a sample must be an object")
    if broke is not None:
        inside = isinstance(doc, dict) and "`samples`" in broke
        yield Unmappable(f"sample index {len(samples)}" if inside else "the log",
                         f"{path} is cut short or broken at {broke}; "
                         + ("this sample and any after it are left out" if inside else "what follows is left out"))


def _resolve(value: Any, attachments: dict[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith(_ATTACHMENT):
        return attachments.get(value[len(_ATTACHMENT):], value)
    return value


def _text(content: Any, attachments: dict[str, Any]) -> str | None:
    return content_text(content, resolve=lambda value: _resolve(value, attachments))


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
