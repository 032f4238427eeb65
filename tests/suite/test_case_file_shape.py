"""The shape of a case file, split in one place (records.split_case_file): a JSON list of cases, or an
object {"suite": ..., "cases": [...]}. Every reader of a case file says a wrong shape the same way."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.commands.judging import load_case_data
from agent_eval.errors import ConfigError
from agent_eval.records import CASE_FILE_SHAPE, split_case_file
from agent_eval.report.history import cases_in_file
from tests.cli import run_cli

CASE = {"id": "a", "query": "q", "expect": {"contains": "x"}}
WRONG = [{"cases": {"a": CASE}}, {"suite": {}}, "cases", 7, None]


def test_the_two_shapes_and_the_rest() -> None:
    assert split_case_file([CASE]) == ({}, [CASE])
    assert split_case_file({"suite": {"name": "s"}, "cases": [CASE]}) == ({"name": "s"}, [CASE])
    assert split_case_file({"suite": None, "cases": []}) == ({}, [])  # a null block is no block
    assert split_case_file({"suite": 5, "cases": []}) == (5, [])  # the block as written: the caller checks it
    assert all(split_case_file(doc) is None for doc in WRONG)


@pytest.mark.parametrize("doc", WRONG[:2])
def test_every_reader_says_a_wrong_shape_the_same_way(tmp_path: Path, doc: object) -> None:
    bad = tmp_path / "cases.json"
    bad.write_bytes(orjson.dumps(doc))
    validated = run_cli("validate", "--cases", bad, cwd=tmp_path)
    assert validated.exit_code == 2 and f"expected {CASE_FILE_SHAPE}" in validated.stdout + validated.stderr
    goldens = tmp_path / "goldens.jsonl"
    goldens.write_bytes(orjson.dumps({"name": "a", "input": "hi", "expected_output": "hello"}) + b"\n")
    imported = run_cli("import", "deepeval", goldens, "--into", bad, cwd=tmp_path)
    assert imported.exit_code == 2 and f"not a case file ({CASE_FILE_SHAPE})" in imported.stderr
    with pytest.raises(ConfigError, match="is not a case file"):
        load_case_data({}, tmp_path / "report.json", bad, Console(quiet=True))
    assert cases_in_file(bad) is None


def test_the_history_counts_the_cases_of_either_shape(tmp_path: Path) -> None:
    listed, wrapped = tmp_path / "listed.json", tmp_path / "wrapped.json"
    listed.write_bytes(orjson.dumps([CASE, {**CASE, "id": "b"}]))
    wrapped.write_bytes(orjson.dumps({"suite": {"name": "s"}, "cases": [CASE]}))
    assert (cases_in_file(listed), cases_in_file(wrapped)) == (2, 1)
