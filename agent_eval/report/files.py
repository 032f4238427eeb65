"""Report files: the JSON report, streamed so that traces never sit in memory together."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

import orjson

from agent_eval.records import Report
from agent_eval.report.model import HEAD_KEYS, TAIL_KEYS

_UMASK = os.umask(0o022)
os.umask(_UMASK)

# The names of the files a command writes, each written once.
HISTORY_FILE = "history.sqlite"


def report_path_of(output_dir: Path, run_id: str) -> Path:
    """`<output-dir>/<run id>.json`: the JSON report."""
    return output_dir / f"{run_id}.json"


def journal_path_of(output_dir: Path, run_id: str) -> Path:
    """`<output-dir>/<run id>.jsonl`: the run's journal, one line per finished run (what --resume reads)."""
    return output_dir / f"{run_id}.jsonl"


def history_path_of(output_dir: Path) -> Path:
    """`<output-dir>/history.sqlite`: the run history."""
    return output_dir / HISTORY_FILE


def page_path_of(report: Path) -> Path:
    """`<report stem>.html` beside the report: its page."""
    return report.with_suffix(".html")


def labels_path_of(report: Path) -> Path:
    """`<report stem>.labels.jsonl` beside the report: its human labels."""
    return report.with_name(f"{report.stem}.labels.jsonl")


def calibration_path_of(report: Path) -> Path:
    """`<report stem>.calibration.json` beside the report: the judge's agreement with its labels."""
    return report.with_name(f"{report.stem}.calibration.json")


def write_json_report(path: Path, report: Report, run_bytes: Iterable[list[bytes]]) -> None:
    """Write `report` (whose cases' runs are left out) with each case's runs spliced in from raw JSON.

    `run_bytes` yields, per entry of report["cases"] in order, the list of that case's runs as JSON bytes.
    The file is written beside its target and renamed, so a reader never sees half a report.
    """
    with atomic_file(path) as f:
        f.writelines(report_bytes(report, run_bytes))


def report_bytes(report: Report, run_bytes: Iterable[list[bytes]]) -> Iterator[bytes]:
    """The JSON report's bytes, piece by piece: `report` with each case's runs spliced in from raw JSON."""
    yield b"{"
    yield from (orjson.dumps(key) + b":" + orjson.dumps(report.get(key)) + b"," for key in HEAD_KEYS)
    yield b'"cases":['
    for i, (case, runs) in enumerate(zip(report["cases"], run_bytes, strict=True)):
        entry = {k: v for k, v in case.items() if k != "runs"}
        head = orjson.dumps(entry)[:-1]
        yield (b"," if i else b"") + head + b',"runs":[' + b",".join(runs) + b"]}"
    yield b"]"
    yield from (b"," + orjson.dumps(key) + b":" + orjson.dumps(report.get(key)) for key in TAIL_KEYS)
    yield b"}"


def make_parent(path: Path) -> Path:
    """Create the folder `path` goes in (with its parents) when missing: an output path may name a new
    folder (`--junit ci/results.xml`). Returns `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A file written under a temporary name in path's folder and renamed into place when the block ends,
    so a reader never sees half a file; on any error the temporary file is removed and path is untouched."""
    path = make_parent(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    written = False
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide the report from other users
        with open(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        written = True
    finally:
        if not written:  # whatever stopped it (an error, Ctrl-C): the temporary file goes
            with suppress(OSError):
                os.unlink(tmp)


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write data (str as UTF-8) to path through a temporary file and a rename."""
    with atomic_file(path) as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)

