"""deepeval's files as golden records: a goldens file (JSON list or JSONL), the CSV `save_as` writes
(`|`-joined list columns, JSON in the tool, turns and metadata columns), and a test-run file
(`{"testCases": [...]}` with camelCase keys, or the same under `testRunData` as in
`.deepeval/.latest_test_run.json`). Keys are returned in deepeval's snake_case."""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import orjson

from agent_eval.ingest.records import Unmappable, read_bytes, read_records

_JSON_COLUMNS = ("tools_called", "expected_tools", "additional_metadata", "custom_column_key_values", "turns")
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(record: dict[str, Any]) -> dict[str, Any]:
    out = {_CAMEL.sub("_", k).lower(): v for k, v in record.items()}
    if "metadata" in out and "additional_metadata" not in out:  # a test case's metadata is its golden's
        out["additional_metadata"] = out.pop("metadata")
    return out


def _csv_records(data: bytes) -> tuple[list[tuple[str, Any]], list[Unmappable]]:
    records: list[tuple[str, Any]] = []
    bad: list[Unmappable] = []
    reader = csv.DictReader(io.StringIO(data.decode("utf-8-sig", errors="replace"), newline=""), strict=True)
    rows: list[dict[str, Any]] = []
    try:
        rows.extend(reader)
    except csv.Error as exc:  # a quoted field left open: the file is cut short here
        bad.append(Unmappable(f"row {len(rows) + 2}", f"cut short or broken, left out ({exc})"))
    if rows and not bad and not data.rstrip(b" \t").endswith((b"\n", b"\r")) and None in rows[-1].values():
        last = rows.pop()  # the file stops mid-row: that row has fewer columns than the header
        bad.append(Unmappable(f"row {len(rows) + 2}", f"cut short: {sum(v is not None for v in last.values())} of "
                                                      f"{len(last)} columns, left out"))
    for number, row in enumerate(rows, start=2):  # line 1 is the header
        where = f"row {number}"
        record: dict[str, Any] = {k: (v if v != "" else None) for k, v in row.items() if k}
        for column in _JSON_COLUMNS:
            if isinstance(record.get(column), str):
                try:
                    record[column] = orjson.loads(record[column])
                except orjson.JSONDecodeError as exc:
                    bad.append(Unmappable(where, f"column {column} is not JSON ({exc})"))
                    record = {}
                    break
        if record:
            records.append((where, record))
    return records, bad


def _looks_like_csv(data: bytes) -> bool:
    """deepeval's CSV: not JSON, and a header row naming its input or scenario column."""
    header = data.lstrip().split(b"\n", 1)[0]
    return header[:1] not in (b"{", b"[") and (header.startswith(b"input,") or header.startswith(b"scenario,"))


def read_goldens(path: Path) -> tuple[list[tuple[str, Any]], list[Unmappable]]:
    """The goldens (or test cases) of a deepeval file, each with its label, keys in snake_case."""
    data = read_bytes(path)
    if _looks_like_csv(data):
        return _csv_records(data)
    records, bad = read_records(path)
    if len(records) == 1 and isinstance(records[0][1], dict):
        doc: dict[str, Any] = records[0][1]
        inner = doc.get("testRunData")
        run: dict[str, Any] = inner if isinstance(inner, dict) else doc
        if "testCases" in run or "conversationalTestCases" in run:
            cases = [(f"testCases[{i}]", c) for i, c in enumerate(run.get("testCases") or [])]
            cases += [(f"conversationalTestCases[{i}]", c) for i, c in enumerate(run.get("conversationalTestCases")
                                                                                 or [])]
            return [(w, _snake(c) if isinstance(c, dict) else c) for w, c in cases], bad
    return [(w, _snake(r) if isinstance(r, dict) else r) for w, r in records], bad
