"""`import --into CASEFILE` as a careless user runs it: a case file reached through a symlink is updated
where it lives (the link stays a link), with its mode kept."""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from tests.cli import run_cli


def test_into_a_symlinked_case_file_updates_the_file_it_points_to(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    real = shared / "cases.json"
    real.write_bytes(orjson.dumps({"suite": {"name": "s"}, "cases": [{"id": "a", "query": "q",
                                                                     "expect": {"contains": "x"}}]}))
    os.chmod(real, 0o640)
    work = tmp_path / "work"
    work.mkdir()
    link = work / "cases.json"
    link.symlink_to(real)
    goldens = work / "goldens.jsonl"
    goldens.write_bytes(orjson.dumps({"name": "a", "input": "hi", "expected_output": "hello"}) + b"\n")
    done = run_cli("import", "deepeval", goldens, "--into", link, cwd=work)
    assert done.exit_code == 0, done.stdout + done.stderr
    assert link.is_symlink() and link.resolve() == real
    assert [c["id"] for c in orjson.loads(real.read_bytes())["cases"]] == ["a", "a-2"]
    assert (real.stat().st_mode & 0o777) == 0o640 and (shared / "cases.json.bak").is_file()
    assert not [p for p in shared.iterdir() if p.name.endswith(".tmp")]
