"""The run journal: `<run_id>.jsonl`, a settings line then one line per finished run."""
from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

FLUSH_EVERY_RUNS = 64
FLUSH_EVERY_S = 1.0


def run_prefix(case_id: str, trial: int) -> bytes:
    """The bytes that precede a run's JSON on its journal line (the line ends with `}\\n`)."""
    return b'{"case_id":' + orjson.dumps(case_id) + b',"trial":' + str(trial).encode() + b',"run":'


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
        return self.append_json(case_id, trial, orjson.dumps(run))

    def append_json(self, case_id: str, trial: int, run_bytes: bytes) -> tuple[int, int]:
        """Write one run already encoded as JSON (by a worker); returns (offset, length) as `append`."""
        prefix = run_prefix(case_id, trial)
        offset = self._file.tell() + len(prefix)
        self._file.write(prefix + run_bytes + b"}\n")
        self._pending += 1
        if self._pending >= FLUSH_EVERY_RUNS or time.monotonic() - self._last_flush >= FLUSH_EVERY_S:
            self.flush()
        return offset, len(run_bytes)

    def flush_if_pending(self) -> None:
        """Flush when some run is not on disk yet (called on a timer by the runner)."""
        if self._pending:
            self.flush()

    def flush(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._pending = 0
        self._last_flush = time.monotonic()

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()


def scan_runs(path: Path) -> Iterator[tuple[str, int, dict[str, Any], tuple[int, int]]]:
    """Each journaled run as (case_id, trial, run, (offset, length) of its JSON), in file order.

    A torn last line (the process died mid-write) and lines that do not parse are skipped.
    """
    with open(path, "rb") as f:
        position = len(f.readline())
        for line in f:
            start, position = position, position + len(line)
            if not line.endswith(b"\n"):
                return
            try:
                record = orjson.loads(line)
                case_id, trial, run = record["case_id"], record["trial"], record["run"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                continue
            prefix = run_prefix(case_id, trial)
            if not line.startswith(prefix):
                continue
            yield case_id, trial, run, (start + len(prefix), len(line) - len(prefix) - 2)


def drop_torn_tail(path: Path) -> None:
    """Cut a half-written last line, so that appending starts on a line of its own."""
    with open(path, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - 65536)
            f.seek(start)
            chunk = f.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
        if end != size:
            f.truncate(end)


def usage_path(journal_path: Path) -> Path:
    """`<run_id>.usage.ndjson`: one line per process of a run, with what it spent on helper LLMs.

    Kept beside the journal, not in it: each line after the journal's header is one finished run.
    """
    return journal_path.with_name(journal_path.stem + ".usage.ndjson")


def append_usage(journal_path: Path, usage: dict[str, Any]) -> None:
    """Record what this process spent on the judge and the simulator, for a later --resume."""
    with open(usage_path(journal_path), "ab") as f:
        f.write(orjson.dumps(usage) + b"\n")


def read_usage(journal_path: Path) -> list[dict[str, Any]]:
    """What every earlier process of this run spent, in order; a damaged line is skipped."""
    path = usage_path(journal_path)
    if not path.exists():
        return []
    found = []
    for line in path.read_bytes().splitlines():
        try:
            found.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue
    return found
