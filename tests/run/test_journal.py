"""The run journal: offsets of journaled runs, torn last lines, batched flushes."""
from __future__ import annotations

import orjson

from agent_eval.run.journal import Journal, scan_runs

HEADER = {"run_id": "r", "created_at": "t", "settings": {"repeat": 2}, "cases_file": "/x.json"}


def run_record(trial: int, status: str = "passed") -> dict:
    return {"trial": trial, "status": status, "success": status == "passed", "trace": {"steps": ["é", 1]}}


def test_scan_runs_finds_the_same_offsets_that_append_returned(tmp_path):
    path = tmp_path / "r.jsonl"
    journal = Journal(path, HEADER)
    written = [journal.append(case_id, t, run_record(t)) for case_id in ("a", "b\"é") for t in (0, 1)]
    journal.close()
    scanned = list(scan_runs(path))
    assert [(c, t) for c, t, _, _ in scanned] == [("a", 0), ("a", 1), ("b\"é", 0), ("b\"é", 1)]
    assert [position for *_, position in scanned] == written
    data = path.read_bytes()
    for _, trial, run, (offset, length) in scanned:
        assert orjson.loads(data[offset:offset + length]) == run == run_record(trial)


def test_reopening_appends_after_the_existing_runs_without_a_second_header(tmp_path):
    path = tmp_path / "r.jsonl"
    with_header = Journal(path, HEADER)
    with_header.append("a", 0, run_record(0))
    with_header.close()
    again = Journal(path, {"run_id": "other"})
    position = again.append("a", 1, run_record(1))
    again.close()
    lines = path.read_bytes().splitlines()
    assert orjson.loads(lines[0]) == HEADER and len(lines) == 3
    assert list(scan_runs(path))[-1][3] == position


def test_a_torn_last_line_is_skipped_then_cut_before_appending(tmp_path):
    path = tmp_path / "r.jsonl"
    journal = Journal(path, HEADER)
    journal.append("a", 0, run_record(0))
    journal.close()
    whole = path.stat().st_size
    with open(path, "ab") as f:
        f.write(b'{"case_id":"a","trial":1,"run":{"trial":1,"sta')  # killed mid-write
    assert [(c, t) for c, t, _, _ in scan_runs(path)] == [("a", 0)]
    Journal(path, drop_torn=True).close()
    assert path.stat().st_size == whole
    journal = Journal(path)
    journal.append("a", 1, run_record(1))
    journal.close()
    assert [(c, t) for c, t, _, _ in scan_runs(path)] == [("a", 0), ("a", 1)]


def test_drop_torn_tail_leaves_a_whole_journal_alone(tmp_path):
    path = tmp_path / "r.jsonl"
    Journal(path, HEADER).close()
    before = path.read_bytes()
    Journal(path, drop_torn=True).close()
    assert path.read_bytes() == before


def test_flush_if_pending_puts_a_lone_run_on_disk(tmp_path):
    path = tmp_path / "r.jsonl"
    journal = Journal(path, HEADER)
    journal.append("a", 0, run_record(0))  # one run, just after the header's flush: still buffered
    assert len(path.read_bytes().splitlines()) == 1
    journal.flush_if_pending()
    assert len(path.read_bytes().splitlines()) == 2
    journal.close()
