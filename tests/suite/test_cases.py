"""Case files: both shapes, the suite block, paths, env merging, validation, selection."""
from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from agent_eval.run.agents import load_agent
from agent_eval.suite.selection import select_cases, skip_reason
from agent_eval.suite.cases import (
    case_env,
    load_suite,
)
from agent_eval.errors import CaseFileError

TOOLS = '''
from agent_eval import tool


@tool
def get_order(order_id: str, env: dict) -> dict:
    """Look an order up."""
    return env["orders"][order_id]


@tool
def refund(order_id: str, env: dict) -> str:
    """Refund an order."""
    env["orders"][order_id]["status"] = "refunded"
    return "refunded"
'''

AGENT = '''
def agent(task):
    return "relative agent " + task.input
'''


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else orjson.dumps(data))
    return path


def suite_file(tmp_path: Path, cases: list, block: dict | None = None,
               name: str = "suite/cases.json") -> Path:
    """A case file in a sub-folder of tmp_path, with tools.py beside it."""
    path = tmp_path / name
    write(path.parent / "tools.py", TOOLS)
    return write(path, cases if block is None else {"suite": block, "cases": cases})


def problems_of(path: Path) -> list:
    with pytest.raises(CaseFileError) as info:
        load_suite(path)
    return info.value.problems


def where(problems: list) -> set[tuple]:
    return {(p.case_id, p.field) for p in problems}


CHECK = {"expect": {"contains": "x"}}


# ---------------------------------------------------------------- the two shapes


def test_bare_list_is_a_suite_without_settings(tmp_path):
    path = write(tmp_path / "seed.json", [{"id": "a", "query": "hi", **CHECK},
                                           {"id": "b", "messages": ["one", "two"], **CHECK}])
    suite = load_suite(path)
    assert [c["id"] for c in suite.cases] == ["a", "b"]
    assert suite.name == "seed"  # no suite block: the file's stem
    assert suite.settings == {}
    assert suite.initial_env == {}
    assert suite.cases[0]["initial_env"] is None and case_env(suite, suite.cases[0]) == {}


def test_a_bare_list_uses_the_tools_py_beside_it(tmp_path):
    cases = [{"id": "a", "query": "hi", "expected_tools": [{"name": "refund"}], "trajectory": "subset"}]
    path = suite_file(tmp_path, cases)  # a bare list, tools.py in the same folder
    assert load_suite(path).tools.names == {"get_order", "refund"}
    (path.parent / "tools.py").unlink()
    # No tools.py: the suite has no tools, so tool names cannot be checked (an imported case file for
    # `score` has none); with any tools module they are.
    assert load_suite(path).tools.names == frozenset()


def test_object_shape_reads_the_suite_block(tmp_path, monkeypatch):
    block = {"name": "shop", "tools": "tools.py", "system_prompt": "be brief", "model": "m1",
             "max_steps": 3, "pricing": {"m1": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}},
             "defaults": {"repeat": 2, "threshold": 0.5}}
    path = suite_file(tmp_path, [{"id": "a", "query": "hi", **CHECK}], block)
    monkeypatch.chdir(tmp_path)  # not the case file's folder: paths must not depend on the cwd
    suite = load_suite(path)
    assert suite.name == "shop"
    assert suite.settings["system_prompt"] == "be brief"
    assert suite.settings["defaults"] == {"repeat": 2, "threshold": 0.5}
    assert suite.tools.has("get_order") and suite.tools.has("refund")
    assert suite.base_dir == path.parent


def test_relative_paths_resolve_against_the_case_file(tmp_path, monkeypatch):
    folder = tmp_path / "deep" / "suite"
    write(folder / "data" / "base.json", {"orders": {"A": {"status": "paid", "items": [1, 2]}}, "flag": True})
    write(folder / "data" / "case_env.json", {"orders": {"A": {"status": "delivered"}}})
    write(folder / "data" / "want.json", {"orders": {"A": {"status": "refunded"}}})
    write(folder / "agents" / "bot.py", AGENT)
    cases = [{"id": "a", "query": "refund A", "initial_env": "data/case_env.json",
              "expected_env": "data/want.json"}]
    path = suite_file(tmp_path, cases, {"tools": "tools.py", "agent": "agents/bot.py:agent",
                                        "initial_env": "data/base.json"}, name="deep/suite/cases.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    suite = load_suite(path)
    case = suite.cases[0]
    assert suite.tools.has("refund")
    assert suite.initial_env == {"orders": {"A": {"status": "paid", "items": [1, 2]}}, "flag": True}
    assert case["expected_env"] == {"orders": {"A": {"status": "refunded"}}}
    # The case's file env is deep-merged over the suite's file env.
    assert case_env(suite, case) == {"orders": {"A": {"status": "delivered", "items": [1, 2]}}, "flag": True}
    # The suite's agent SPEC is taken relative to the case file (the app passes suite.base_dir).
    agent = load_agent(suite.settings["agent"], suite.base_dir, {})
    assert agent.fn(type("T", (), {"input": "x"})()) == "relative agent x"


def test_a_missing_relative_file_is_reported_with_its_field(tmp_path):
    path = suite_file(tmp_path, [{"id": "a", "query": "q", "initial_env": "nope.json", **CHECK}],
                      {"initial_env": "missing.json"})
    found = where(problems_of(path))
    assert ("a", "initial_env") in found
    assert (None, "suite.initial_env") in found


def test_initial_env_is_a_merge_patch_objects_merge_by_key_other_values_replace(tmp_path):
    base = {"a": {"x": 1, "y": {"deep": 1, "keep": 2}}, "list": [1, 2, 3], "s": "suite", "n": {"k": 1}}
    own = {"a": {"y": {"deep": 9}, "z": 4}, "list": [9], "n": 5, "new": {"v": None}}
    path = suite_file(tmp_path, [{"id": "a", "query": "q", "initial_env": own, **CHECK},
                                 {"id": "b", "query": "q", **CHECK}], {"initial_env": base})
    suite = load_suite(path)
    merged = case_env(suite, suite.cases[0])
    # RFC 7386: a null in the patch is never written, also inside a new object.
    assert merged == {"a": {"x": 1, "y": {"deep": 9, "keep": 2}, "z": 4}, "list": [9], "s": "suite", "n": 5,
                      "new": {}}
    assert suite.initial_env == base  # merging never writes into the suite's env
    assert case_env(suite, suite.cases[1]) == base


# ---------------------------------------------------------------- validation


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    cases = [
        {"id": "dup", "query": "q", **CHECK},
        {"id": "dup", "query": "q", **CHECK},
        {"id": "no-input", **CHECK},
        {"id": "two-inputs", "query": "q", "messages": ["m"], **CHECK},
        {"id": "bad-mode", "query": "q", "expected_tools": [{"name": "get_order"}], "trajectory": "sorted"},
        {"id": "bad-matcher", "query": "q", "trajectory": "strict",
         "expected_tools": [{"name": "get_order", "args": {"order_id": {"$nope": 1}}}]},
        {"id": "bad-op", "query": "q", "expected_env_check": {"path": ["orders"], "equalz": 1}},
        {"id": "bad-expect", "query": "q", "expect": {"contians": "x"}},
        {"id": "no-check", "query": "q"},
        {"id": "tools-only", "query": "q", "expected_tools": [{"name": "get_order"}]},
        {"id": "replay-matcher", "query": "q", "expected_env": "replay",
         "expected_tools": [{"name": "refund", "args": {"order_id": {"$regex": "A"}}}]},
        {"id": "bad-fault", "query": "q", "faults": [{"tool": "launch_rocket"}], **CHECK},
        {"id": "unknown-expected-tool", "query": "q", "trajectory": "strict",
         "expected_tools": [{"name": "nah"}]},
        {"id": "good", "query": "q", **CHECK},
    ]
    path = suite_file(tmp_path, cases, {"tools": "tools.py"})
    problems = problems_of(path)
    found = where(problems)
    expected = {
        ("dup", "id"),
        ("no-input", "query"),
        ("two-inputs", "query"),
        ("bad-mode", "trajectory"),
        ("bad-matcher", "expected_tools[0].args.order_id"),
        ("bad-op", "expected_env_check[0].equalz"),
        ("bad-expect", "expect.contians"),
        ("no-check", "id"),
        ("tools-only", "expected_tools"),
        ("replay-matcher", "expected_tools[0].args"),
        ("bad-fault", "faults[0].tool"),
        ("unknown-expected-tool", "expected_tools[0].name"),
    }
    assert expected <= found, expected - found
    assert not any(p.case_id == "good" for p in problems)
    # Each problem names the file, and prints as one line with file, case id and field.
    assert all(p.path == str(path) for p in problems)
    text = str(next(p for p in problems if p.case_id == "bad-op"))
    assert str(path) in text and "'bad-op'" in text and "expected_env_check[0].equalz" in text
    tools_only = next(p for p in problems if p.case_id == "tools-only")
    assert "trajectory" in tools_only.message  # told to add trajectory or a state/output check


def test_two_type_errors_in_one_case_are_both_reported(tmp_path):
    path = suite_file(tmp_path, [{"id": "a", "query": "q", "tags": "not-a-list", "requires": 3, **CHECK}])
    found = where(problems_of(path))
    assert {("a", "tags"), ("a", "requires")} <= found


def test_a_case_with_a_type_error_still_gets_its_other_problems_reported(tmp_path):
    path = suite_file(tmp_path, [{"id": "a", "query": "q", **CHECK},
                                 {"id": "a", "tags": "not-a-list", **CHECK}])
    found = where(problems_of(path))
    assert {("a", "tags"), ("a", "query"), ("a", "id")} <= found  # type error, no input, duplicate id


def test_extra_unknown_case_fields_are_kept_for_custom_scorers(tmp_path):
    case = {"id": "a", "query": "q", "expected_output": "Paris", "context": ["doc 1"],
            "retrieval": {"k": 3}, **CHECK}
    suite = load_suite(suite_file(tmp_path, [case]))
    loaded = suite.cases[0]
    assert loaded["expected_output"] == "Paris"
    assert loaded["context"] == ["doc 1"]
    assert loaded["retrieval"] == {"k": 3}


def test_unknown_suite_key_is_reported(tmp_path):
    cases = [{"id": "a", "query": "q", **CHECK}]
    path = write(tmp_path / "c.json", {"suite": {}, "cases": cases, "extra": 1})
    assert (None, "extra") in where(problems_of(path))


def test_unreadable_and_malformed_files_raise_case_file_errors(tmp_path):
    missing = problems_of(tmp_path / "missing.json")
    assert missing[0].path.endswith("missing.json") and "cannot read" in missing[0].message
    broken = write(tmp_path / "broken.json", "[{")
    assert "not valid JSON" in problems_of(broken)[0].message
    empty = write(tmp_path / "empty.json", [])
    assert (None, "cases") in where(problems_of(empty))


def test_expected_env_check_object_becomes_a_list(tmp_path):
    case = {"id": "a", "query": "q", "expected_env_check": {"path": ["x"], "equals": 1}}
    suite = load_suite(suite_file(tmp_path, [case]))
    assert suite.cases[0]["expected_env_check"] == [{"path": ["x"], "equals": 1}]


# ---------------------------------------------------------------- selection and skipping


CASES = [
    {"id": "faq-shipping", "tags": ["kb"]},
    {"id": "refund-1", "tags": ["orders", "money"]},
    {"id": "order-status", "tags": ["orders"]},
    {"id": "hello", "tags": []},
]


@pytest.mark.parametrize(("filters", "ids"), [
    ([], ["faq-shipping", "refund-1", "order-status", "hello"]),
    (["faq"], ["faq-shipping"]),
    (["order"], ["refund-1", "order-status"]),  # "orders" tag on refund-1, id on order-status
    (["mon"], ["refund-1"]),  # a substring of a tag
    (["hello", "kb"], ["faq-shipping", "hello"]),  # repeated: any filter keeps a case, file order kept
    (["zzz"], []),
])
def test_filter_matches_substrings_of_ids_and_tags(filters, ids):
    assert [c["id"] for c in select_cases(CASES, filters)] == ids


def test_requires_skips_a_case_when_a_variable_is_unset():
    case = {"id": "a", "requires": ["NEEDED_A", "NEEDED_B"], "expect": {"contains": "x"}}
    reason = skip_reason(case, {"NEEDED_A": "1"}, judge_on=True)
    assert reason is not None and "NEEDED_B" in reason and "NEEDED_A" not in reason
    assert skip_reason(case, {"NEEDED_A": "1", "NEEDED_B": ""}, judge_on=True) is not None  # empty = unset
    assert skip_reason(case, {"NEEDED_A": "1", "NEEDED_B": "2"}, judge_on=True) is None


def test_rubric_only_case_is_skipped_without_the_judge():
    rubric_only = {"id": "a", "rubric": "be nice"}
    mixed = {"id": "b", "rubric": "be nice", "expect": {"contains": "x"}}
    assert skip_reason(rubric_only, {}, judge_on=False) == "judge disabled"
    assert skip_reason(rubric_only, {}, judge_on=True) is None
    assert skip_reason(mixed, {}, judge_on=False) is None


def test_a_rubric_case_under_a_suite_policy_still_runs_without_the_judge(tmp_path):
    # `policy` (its own or the suite's) is a check, so the case keeps a deterministic check.
    path = suite_file(tmp_path, [{"id": "a", "query": "hi", "rubric": "be nice"}],
                      {"tools": "tools.py", "policy": [{"forbid_tool": "refund"}]})
    (case,) = load_suite(path).cases
    assert skip_reason(case, {}, judge_on=False) is None


def test_initial_env_null_removes_a_key_and_replace_sets_one_as_it_is(tmp_path):
    base = {"users": {"u1": "Ann", "u2": "Bob"}, "flags": {"beta": True, "x": None}, "plan": "pro",
            "$replace": "a suite data key"}
    own = {"users": {"u2": None}, "plan": None, "flags": {"$replace": {"only": None}},
           "$$replace": "a case data key", "kept": {"$$replace": 1}}
    path = suite_file(tmp_path, [{"id": "a", "query": "q", "initial_env": own, **CHECK}], {"initial_env": base})
    suite = load_suite(path)
    assert suite.initial_env["flags"] == {"beta": True, "x": None}  # the suite's own null is a value
    assert case_env(suite, suite.cases[0]) == {
        "users": {"u1": "Ann"},  # null removed u2
        "flags": {"only": None},  # replaced as it is, its null kept
        "$replace": "a case data key",  # `$$replace` is the data key `$replace`
        "kept": {"$replace": 1},
    }
    assert suite.initial_env == base


def test_a_replace_object_with_other_keys_is_a_problem_naming_the_fix(tmp_path):
    cases = [{"id": "a", "query": "q", "initial_env": {"users": {"$replace": {}, "u1": "Ann"}}, **CHECK},
             {"id": "b", "query": "q", "initial_env": {"$replace": [1]}, **CHECK}]
    problems = problems_of(suite_file(tmp_path, cases, {"initial_env": {"users": {}}}))
    found = {(p.case_id, p.field): p.message for p in problems}
    assert "write it \"$$replace\"" in found[("a", "initial_env.users")]
    assert "must be an object" in found[("b", "initial_env")]
