"""An `expect` key is one function and one row: registered here, it is validated and checked with no other edit."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_eval.errors import CaseFileError
from agent_eval.score.checks import check_run
from agent_eval.score.expect import EXPECT_CHECKS, ExpectKey
from agent_eval.suite.cases import load_suite

TOOLS = '''
from agent_eval import tool


@tool
def ping(env: dict) -> str:
    """Answer pong."""
    return "pong"
'''


def _at_least_words(value: Any, trace: dict, case: dict) -> tuple[bool, str]:
    words = len((trace.get("final_answer") or "").split())
    return words >= value, f"{words} word(s), at least {value} wanted"


def _positive(value: Any) -> list[str]:
    is_count = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return [] if is_count else ["must be a whole number >= 1"]


@pytest.fixture
def min_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EXPECT_CHECKS, "min_words", ExpectKey(_at_least_words, _positive))


def write_cases(tmp_path: Path, expect: dict) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"tools": "tools.py"},
                                   "cases": [{"id": "c1", "query": "hi", "expect": expect}]}))
    return path


def test_an_unregistered_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError) as info:
        load_suite(write_cases(tmp_path, {"min_words": 3}))
    assert [(p.case_id, p.field) for p in info.value.problems] == [("c1", "expect.min_words")]
    assert "unknown expect key" in str(info.value)


def test_a_registered_key_is_validated_from_its_row(tmp_path: Path, min_words: None) -> None:
    with pytest.raises(CaseFileError) as info:
        load_suite(write_cases(tmp_path, {"min_words": 0}))
    assert [(p.field, p.message) for p in info.value.problems] == [("expect.min_words", "must be a whole number >= 1")]


def test_a_registered_key_is_checked(tmp_path: Path, min_words: None) -> None:
    case = load_suite(write_cases(tmp_path, {"min_words": 3})).cases[0]
    trace = {"final_answer": "one two three", "steps": []}
    assert check_run(case, trace, {}, None) == [
        {"name": "expect:min_words", "passed": True, "detail": "3 word(s), at least 3 wanted"}]
    assert check_run(case, {**trace, "final_answer": "two words"}, {}, None)[0]["passed"] is False
