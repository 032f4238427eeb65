"""The run journal: `<run_id>.jsonl`, a settings line then one line per finished run."""
from __future__ import annotations

import fcntl
import os
import time
import typing
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import orjson

from agent_eval.errors import ConfigError
from agent_eval.provider import events
from agent_eval.records import RunRecord, RunStatus
from agent_eval.suite.jsonsafe import dumps_safe

RUN_STATUSES: tuple[RunStatus, ...] = typing.get_args(RunStatus)
FLUSH_EVERY_RUNS = 64
FLUSH_EVERY_S = 1.0


def run_prefix(case_id: str, trial: int) -> bytes:
    """The bytes that precede a run's JSON on its journal line (the line ends with `}\\n`)."""
    return b'{"case_id":' + orjson.dumps(case_id) + b',"trial":' + str(trial).encode() + b',"run":'


class Journal:
    """Appends finished runs; fsyncs in batches so a killed process keeps all up to its last flush.

    The process that opens a journal holds an exclusive lock on it until it exits or closes it: a second
    process opening the same journal gets a ConfigError naming the first. When the file cannot be written
    (disk full), `failed` says why and every later append is refused (returns None).
    """

    def __init__(self, path: Path, header: dict[str, Any] | None = None, run_id: str | None = None,
                 drop_torn: bool = False) -> None:
        self.path = path
        self.failed: str | None = None
        self.listeners = events.Listeners()  # the command's: told of each run once it is written
        self._file = open(path, "ab")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.close()
            holder = _lock_holder(path)
            raise ConfigError(f"run {run_id or path.stem} is being written by "
                              f"{f'process {holder}' if holder else 'another process'} ({path}); wait for "
                              "it to finish, or stop it, before resuming the run.") from None
        if drop_torn:
            _drop_torn_tail(path, self._file.fileno())
        is_new = self._file.seek(0, os.SEEK_END) == 0
        self._pending = 0
        self._last_flush = time.monotonic()
        # Each run's JSON as written, compressed: the report is built from these, never from the file,
        # which anyone who can write the output folder (an agent, say) may truncate or overwrite meanwhile.
        self._kept: dict[int, bytes] = {}
        if header is not None and is_new:
            self._write(orjson.dumps(header) + b"\n")
            self.flush()

    def append(self, case_id: str, trial: int, run: RunRecord,
               trace_json: bytes | None = None) -> tuple[int, int] | None:
        """Write one run; returns (offset, length) of the run's JSON inside the file, or None once the
        journal has failed. `trace_json` is the run's trace already encoded (it is spliced in as it is)."""
        if self.failed:
            return None
        return self.append_json(case_id, trial, encode_run(run, trace_json)[1])

    def append_json(self, case_id: str, trial: int, run_bytes: bytes) -> tuple[int, int] | None:
        """Write one run already encoded as JSON (by a worker); returns (offset, length) as `append`."""
        if self.failed:
            return None
        prefix = run_prefix(case_id, trial)
        offset = self._file.tell() + len(prefix)
        self._write(prefix + run_bytes + b"}\n")
        self._kept[offset] = zlib.compress(run_bytes, 1)
        if not self.failed:
            self.listeners.journaled(case_id, trial, run_bytes)
        self._pending += 1
        if self._pending >= FLUSH_EVERY_RUNS or time.monotonic() - self._last_flush >= FLUSH_EVERY_S:
            self.flush()
        return None if self.failed else (offset, len(run_bytes))

    def hold(self, position: tuple[int, int]) -> None:
        """Keep a run already in the file (a resumed run's earlier ones), read now, before any agent runs."""
        offset, length = position
        with open(self.path, "rb") as f:
            f.seek(offset)
            self._kept[offset] = zlib.compress(f.read(length), 1)

    def run_json(self, position: tuple[int, int]) -> bytes:
        """The JSON of the run written at `position`, as agent-eval wrote (or first read) it."""
        kept = self._kept.get(position[0])
        if kept is not None:
            return zlib.decompress(kept)
        offset, length = position
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def changed(self) -> str | None:
        """A warning when the file no longer holds the runs as they were written (it was truncated or
        overwritten while the command ran); None when it does."""
        differ = 0
        try:
            with open(self.path, "rb") as f:
                for offset, kept in self._kept.items():
                    run = zlib.decompress(kept)
                    f.seek(offset)
                    if f.read(len(run)) != run:
                        differ += 1
        except OSError as exc:
            return (f"warning: the journal {self.path} cannot be read back ({exc.strerror or exc}); the report "
                    "was built from the runs agent-eval holds.")
        if not differ:
            return None
        return (f"warning: the journal {self.path} was truncated or overwritten while the command ran ({differ} "
                f"of {len(self._kept)} run(s) no longer match what was written); the report was built from the "
                "runs agent-eval holds, but a --resume of this run would read the damaged file.")

    def flush_if_pending(self) -> None:
        """Flush when some run is not on disk yet (called on a timer by the runner)."""
        if self._pending:
            self.flush()

    def flush(self) -> None:
        if self.failed:
            return
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            self._fail(exc)
        self._pending = 0
        self._last_flush = time.monotonic()

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            try:
                self._file.close()
            except OSError as exc:  # the buffer could not reach the disk
                self._fail(exc)

    def _write(self, data: bytes) -> None:
        try:
            self._file.write(data)
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        self.failed = self.failed or (exc.strerror or str(exc))


def encode_run(run: RunRecord, trace_json: bytes | None = None) -> tuple[RunRecord, bytes]:
    """The run as stored, and its JSON, with its trace spliced in from `trace_json` when the trace was
    encoded already. A value JSON cannot hold is converted (the slow path runs only when orjson refuses):
    the run as stored is then a converted copy, else the run itself."""
    if trace_json is not None and "trace" in run:
        rest = {k: v for k, v in run.items() if k != "trace"}
        stored, rest_json = dumps_safe(rest)
        return (run if stored is rest else cast(RunRecord, {**stored, "trace": run["trace"]}),
                rest_json[:-1] + b',"trace":' + trace_json + b"}")
    return dumps_safe(run)


def scan_runs(path: Path, strict: bool = True) -> Iterator[tuple[str, int, RunRecord, tuple[int, int]]]:
    """Each journaled run as (case_id, trial, run, (offset, length) of its JSON), in file order.

    A torn last line (the process died mid-write) is skipped; any other line that is not a run record
    is a ConfigError naming the file and the line. Without `strict`, the run itself is not checked (the
    caller checks its shape).
    """
    with open(path, "rb") as f:
        position = len(f.readline())
        for number, line in enumerate(f, start=2):
            start, position = position, position + len(line)
            if not line.endswith(b"\n"):
                return
            record = _run_record(line, strict)
            if record is None:
                raise ConfigError(f"{path}, line {number}: not a run record of an agent-eval journal; the "
                                  "journal is damaged. Remove that line (the run will be played again), "
                                  "or start a new run without --resume.")
            case_id, trial, run = record
            prefix = run_prefix(case_id, trial)
            yield case_id, trial, run, (start + len(prefix), len(line) - len(prefix) - 2)


def _run_record(line: bytes, strict: bool) -> tuple[str, int, RunRecord] | None:
    try:
        record = orjson.loads(line)
        case_id, trial, run = record["case_id"], record["trial"], record["run"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if not (isinstance(case_id, str) and type(trial) is int and trial >= 0 and isinstance(run, dict)
            and line.startswith(run_prefix(case_id, trial))):
        return None
    # An errored run is played again on resume, so it needs no trace (a lost worker leaves none).
    if strict and not (run.get("status") in RUN_STATUSES
                       and (run["status"] == "error" or isinstance(run.get("trace"), dict))):
        return None
    return case_id, trial, cast(RunRecord, run)  # its shape checked above


def _drop_torn_tail(path: Path, fd: int) -> None:
    """Cut a half-written last line, so that appending starts on a line of its own."""
    with open(path, "rb") as reader:
        size = end = reader.seek(0, os.SEEK_END)
        while end > 0:
            start = max(0, end - 65536)
            reader.seek(start)
            chunk = reader.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
    if end != size:
        os.ftruncate(fd, end)


def _lock_holder(path: Path) -> int | None:
    """The process id holding a flock on path, from /proc/locks (Linux); None when it cannot be told."""
    try:
        st = path.stat()
        locks = Path("/proc/locks").read_text()
    except OSError:
        return None
    inode = f":{st.st_ino}"
    for line in locks.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].endswith(inode):
            dev = fields[5].rsplit(":", 1)[0]
            major, minor = (int(x, 16) for x in dev.split(":"))
            if (major, minor) == (os.major(st.st_dev), os.minor(st.st_dev)):
                try:
                    return int(fields[4])
                except ValueError:
                    return None
    return None


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
