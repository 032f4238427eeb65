"""Tools per case: `tools` (the suite tools a case offers) and `tools_added` (offered from a later turn)."""
from __future__ import annotations

from pathlib import Path

from tests.casefile_features import checks_of, run_suite_cli, runs_by_case

BLOCK = {"initial_env": {"start": 0}}


def test_the_agent_sees_only_offered_schemas_and_early_or_unoffered_calls_are_marked(tmp_path: Path) -> None:
    metadata = {"show_tools": True, "turns": [
        [["add_tag", {"tag": "x"}], ["bump", {"by": 1}], ["set_tags", {"tags": []}]],  # add_tag early; set_tags never
        [["add_tag", {"tag": "y"}]]]}
    cases = [{"id": "miss", "messages": ["first", "second"], "tools": ["bump"], "tools_added": {"1": ["add_tag"]},
              "metadata": metadata, "expected_env_check": [{"path": ["tags"], "equals": ["x", "y"]}]}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    run = runs_by_case(report)["miss"][0]
    # Turn 0 offers `tools` only; turn 1 adds add_tag (schemas in the suite's order: bump, set_tags, add_tag, fail).
    assert run["trace"]["replies"] == ["bump", "bump,add_tag"]
    steps = run["trace"]["steps"]
    assert [(s["name"], s.get("not_yet_offered", False), s["invalid_args"], s["error"]) for s in steps] == [
        ("add_tag", True, "not yet offered", None),  # runs, as BFCL's executor runs it
        ("bump", False, None, None),
        ("set_tags", False, "unknown tool", "UnknownTool: no tool named 'set_tags'"),  # outside both: not run
        ("add_tag", False, None, None)]
    assert checks_of(run)["env:tags:equals"][0] is True  # the early add_tag ran: ["x", "y"]
    assert run["metrics"]["invalid_calls"] == 2  # the early call and the unknown one
    assert result.exit_code == 0


def test_without_tools_every_suite_tool_not_added_later_is_offered(tmp_path: Path) -> None:
    cases = [{"id": "rest", "messages": ["a", "b"], "tools_added": {"1": ["fail"]}, "metadata": {"show_tools": True},
              "expect": {"contains": "fail"}}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    assert runs_by_case(report)["rest"][0]["trace"]["replies"] == ["bump,set_tags,add_tag",
                                                                     "bump,set_tags,add_tag,fail"]


def test_bad_tool_lists_are_exit_2_naming_case_field_and_fix(tmp_path: Path) -> None:
    cases = [{"id": "typo", "query": "q", "tools": ["bumpp"], "expect": {"contains": "x"}},
             {"id": "key", "messages": ["a", "b"], "tools_added": {"0": ["bump"], "2": ["fail"]},
              "expect": {"contains": "x"}},
             {"id": "both", "messages": ["a", "b"], "tools": ["bump"], "tools_added": {"1": ["bump"]},
              "expect": {"contains": "x"}},
             {"id": "one-turn", "query": "q", "tools_added": {"1": ["bump"]}, "expect": {"contains": "x"}}]
    result, _ = run_suite_cli(tmp_path, cases, BLOCK)
    err = result.stderr
    assert result.exit_code == 2 and "Traceback" not in err
    assert "typo" in err and "tools[0]" in err and "did you mean `bump`?" in err
    assert "tools_added.0" in err and "tools_added.2" in err and "from 1 to 1" in err
    assert "'bump' is in \"tools\" already" in err
    assert "one-turn" in err and "need \"messages\"" in err
