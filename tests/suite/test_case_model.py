"""records.Case is the case model: validation checks a case against it, and its keys are the known fields."""
from __future__ import annotations

import orjson
import pytest

from agent_eval.errors import CaseFileError
from agent_eval.records import Case
from agent_eval.suite.cases import case_fields, load_suite

TOOLS = ("from agent_eval import tool\n\n@tool\ndef get_user(user_id: str) -> str:\n"
         "    \"\"\"A user.\"\"\"\n    return 'u'\n")


def _problems(tmp_path, *cases: dict) -> list[str]:
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "cases.json"
    path.write_bytes(orjson.dumps({"suite": {"tools": "tools.py"}, "cases": list(cases)}))
    try:
        load_suite(path)
    except CaseFileError as exc:
        return [f"{p.field}: {p.message}" for p in exc.problems]
    return []


def test_the_known_fields_are_the_keys_of_records_case() -> None:
    # every public key of the TypedDict, but the field other tools write (kept quietly, never a "did you mean")
    assert set(case_fields()) >= {"scenario", "max_turns", "tools_added", "gold_reply", "max_tool_errors", "injection"}
    assert set(case_fields()) - set(Case.__annotations__) == set()  # no built-in family adds a field of its own
    assert set(Case.__annotations__) - set(case_fields()) == {"_safety", "expected_output"}


def test_a_field_misspelled_is_named_with_the_field_of_the_model(tmp_path) -> None:
    problems = _problems(tmp_path, {"id": "a", "query": "q", "expect": {"contains": "u"}, "max_turn": 3})
    assert problems == ["max_turn: unknown field; did you mean `max_turns`? (a field a custom scorer reads must "
                        "be one of its parameters or column_map names)"]


@pytest.mark.parametrize(("given", "expected"), [
    ({"expected_tools": [3]}, "expected_tools[0]: Input should be a valid dictionary or instance of ExpectedCall"),
    ({"faults": ["x"]}, "faults[0]: Input should be a valid dictionary or instance of Fault"),
    ({"expected_tools": [{"name": "get_user", "argz": {}}]}, "expected_tools[0].argz: unknown field; did you mean "
                                                             "`args`?"),
    ({"faults": [{"tool": "get_user", "fail_time": 1}]}, "faults[0].fail_time: unknown field; did you mean "
                                                         "`fail_times`?"),
    ({"expected_tools": [{"name": "get_user", "turn": True}]}, "expected_tools[0].turn: Input should be a valid "
                                                               "integer"),
    ({"trajectory": "fuzzy", "expected_tools": []}, "trajectory: Input should be 'unordered', 'strict', 'subset' "
                                                    "or 'superset'"),
])
def test_a_value_of_the_wrong_type_is_named_as_pydantic_words_it(tmp_path, given, expected) -> None:
    case = {"id": "a", "query": "q", "expect": {"contains": "u"}, **given}
    assert _problems(tmp_path, case)[0] == expected


def test_a_fault_is_read_as_the_model_reads_it(tmp_path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "cases.json"
    faults = [{"tool": "get_user", "fail_times": "2", "delay_ms": 5, "error": None}]
    case = {"id": "a", "query": "q", "expect": {"contains": "u"}, "faults": faults}
    path.write_bytes(orjson.dumps({"suite": {"tools": "tools.py"}, "cases": [case]}))
    case = load_suite(path).cases[0]
    assert case["faults"] == [{"tool": "get_user", "fail_times": 2, "delay_ms": 5.0}]
    assert case["tags"] == [] and case["requires"] == [] and case["metadata"] == {}
