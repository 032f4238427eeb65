"""The members of a zip cut short (its central directory gone), read from their local headers in order.

`zipfile` needs the central directory at the end of the file; a file cut mid-way has none. Each member's
local header gives its name, method and sizes, so the members whose data is whole can still be read, up to
the break, which is named by its byte offset.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

LOCAL = b"PK\x03\x04"
CENTRAL = b"PK\x01\x02"
_HEAD = struct.Struct("<4sHHHHHIIIHH")


@dataclass(frozen=True)
class Local:
    """One member as its local header describes it, its data whole in the file."""

    name: str
    method: int
    crc: int
    compress_size: int
    file_size: int
    data_offset: int


@dataclass(frozen=True)
class Break:
    """Where the members stop: the byte offset and what was being read there."""

    offset: int
    inside: str

    def __str__(self) -> str:
        return f"byte {self.offset:,}, {self.inside}"


def local_members(file: BinaryIO, size: int) -> Iterator[Local | Break]:
    """Each member whose header and data are whole, in file order, then a Break naming where they stop (the
    central directory itself when only that is cut)."""
    at = 0
    while True:
        file.seek(at)
        head = file.read(_HEAD.size)
        if head[:4] == CENTRAL or (len(head) < 4 and CENTRAL.startswith(head)):
            yield Break(at, "in the zip's central directory (every member before it is whole)")
            return
        if len(head) < _HEAD.size or head[:4] != LOCAL:
            yield Break(at, "in a member's local header" if LOCAL.startswith(head[:4]) else "not a zip member there")
            return
        _, _, flags, method, _, _, crc, compressed, plain, name_len, extra_len = _HEAD.unpack(head)
        raw_name = file.read(name_len)
        name = raw_name.decode("utf-8", "replace")
        start = at + _HEAD.size + name_len + extra_len
        if len(raw_name) < name_len or start > size:
            yield Break(at, "in a member's local header")
            return
        if flags & 8 or 0xFFFFFFFF in (compressed, plain):
            yield Break(at, f"at member {name}, whose sizes only the central directory gives")
            return
        if start + compressed > size:
            yield Break(at, f"inside member {name}")
            return
        yield Local(name, method, crc, compressed, plain, start)
        at = start + compressed
