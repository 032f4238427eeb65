"""Report files: the JSON report, streamed so that traces never sit in memory together."""
from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from agent_eval.report.model import HEAD_KEYS, TAIL_KEYS



def write_json_report(path: Path, report: dict[str, Any], run_bytes: Iterable[list[bytes]]) -> None:
    """Write `report` (whose cases' runs are left out) with each case's runs spliced in from raw JSON.

    `run_bytes` yields, per entry of report["cases"] in order, the list of that case's runs as JSON bytes.
    The file is written beside its target and renamed, so a reader never sees half a report.
    """
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as f:
        f.write(b"{")
        f.writelines(orjson.dumps(key) + b":" + orjson.dumps(report.get(key)) + b"," for key in HEAD_KEYS)
        f.write(b'"cases":[')
        for i, (case, runs) in enumerate(zip(report["cases"], run_bytes, strict=True)):
            entry = {k: v for k, v in case.items() if k != "runs"}
            head = orjson.dumps(entry)[:-1]
            f.write((b"," if i else b"") + head + b',"runs":[' + b",".join(runs) + b"]}")
        f.write(b"]")
        f.writelines(b"," + orjson.dumps(key) + b":" + orjson.dumps(report.get(key)) for key in TAIL_KEYS)
        f.write(b"}")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
