"""The run journal (DESIGN §7): `<run_id>.jsonl`, a settings line then one line per finished run."""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

FLUSH_EVERY_RUNS = 64
FLUSH_EVERY_S = 1.0


class Journal:
    """Appends finished runs; fsyncs in batches so a killed process keeps all up to its last flush."""

    def __init__(self, path: Path, header: dict[str, Any] | None = None) -> None:
        self.path = path
        is_new = not path.exists() or path.stat().st_size == 0
        self._file = open(path, "ab")
        self._pending = 0
        self._last_flush = time.monotonic()
        if header is not None and is_new:
            self._file.write(orjson.dumps(header) + b"\n")
            self.flush()

    def append(self, case_id: str, trial: int, run: dict[str, Any]) -> tuple[int, int]:
        """Write one run; returns (offset, length) of the run's JSON inside the file."""
        run_bytes = orjson.dumps(run)
        prefix = b'{"case_id":' + orjson.dumps(case_id) + b',"trial":' + str(trial).encode() + b',"run":'
        offset = self._file.tell() + len(prefix)
        self._file.write(prefix + run_bytes + b"}\n")
        self._pending += 1
        if self._pending >= FLUSH_EVERY_RUNS or time.monotonic() - self._last_flush >= FLUSH_EVERY_S:
            self.flush()
        return offset, len(run_bytes)

    def flush(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._pending = 0
        self._last_flush = time.monotonic()

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()

    def read_run(self, offset: int, length: int) -> bytes:
        """The raw JSON of one journaled run."""
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(length)


def read_journal(path: Path) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """The header and an iterator over the journaled runs ({case_id, trial, run}); a torn last line is dropped."""
    f = open(path, "rb")
    header = orjson.loads(f.readline())

    def runs() -> Iterator[dict[str, Any]]:
        with f:
            for line in f:
                try:
                    yield orjson.loads(line)
                except orjson.JSONDecodeError:
                    return  # the process died mid-write: the rest was never flushed

    return header, runs()
