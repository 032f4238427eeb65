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


def _case_file_and_goldens(tmp_path: Path) -> tuple[Path, Path]:
    target = tmp_path / "cases.json"
    target.write_bytes(orjson.dumps({"suite": {"name": "s"}, "cases": [{"id": "a", "query": "q",
                                                                       "expect": {"contains": "x"}}]}))
    goldens = tmp_path / "goldens.jsonl"
    goldens.write_bytes(orjson.dumps({"name": "a", "input": "hi", "expected_output": "hello"}) + b"\n")
    return target, goldens


def test_a_second_import_keeps_the_first_original_and_names_each_backup(tmp_path: Path) -> None:
    target, goldens = _case_file_and_goldens(tmp_path)
    original = target.read_bytes()
    first = run_cli("import", "deepeval", goldens, "--into", target, cwd=tmp_path)
    assert first.exit_code == 0, first.stderr
    after_first = target.read_bytes()
    for n, before in enumerate([after_first, None], 1):
        again = run_cli("import", "deepeval", goldens, "--into", target, cwd=tmp_path)
        assert again.exit_code == 0, again.stderr
        assert f"(the original is kept as {tmp_path / f'cases.json.bak.{n}'})" in " ".join(again.stderr.split())
        if before is not None:
            assert (tmp_path / f"cases.json.bak.{n}").read_bytes() == before
    assert (tmp_path / "cases.json.bak").read_bytes() == original  # never overwritten
    assert len(orjson.loads((tmp_path / "cases.json.bak.2").read_bytes())["cases"]) == 3  # a, a-2, a-3


def test_a_backup_name_that_is_a_link_is_refused_and_the_file_left_alone(tmp_path: Path) -> None:
    target, goldens = _case_file_and_goldens(tmp_path)
    original = target.read_bytes()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    first = tmp_path / "cases.json.bak"
    later = tmp_path / "cases.json.bak.1"
    for link, points_to in ((first, victim), (later, tmp_path / "nowhere")):  # the first name; a later, dangling
        if link is later:
            first.unlink()
            first.write_text("an earlier backup")
        link.symlink_to(points_to)
        done = run_cli("import", "deepeval", goldens, "--into", target, cwd=tmp_path)
        assert done.exit_code == 2 and "Traceback" not in done.stderr
        assert f"{link} is a symbolic link" in " ".join(done.stderr.split())
        assert target.read_bytes() == original and victim.read_text() == "keep me"
    assert (tmp_path / "cases.json.bak").read_text() == "an earlier backup"
