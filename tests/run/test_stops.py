"""Stop tools (suite `stop_tools`: the episode ends after the turn that called one) and `max_tool_errors`."""
from __future__ import annotations

from pathlib import Path

from tests.casefile_features import COUNTER_TOOLS, run_suite_cli, runs_by_case, turns

BLOCK = {"initial_env": {"start": 0}, "stop_tools": ["add_tag"]}


def test_a_stop_tool_ends_the_episode_after_its_turn_completed(tmp_path: Path) -> None:
    cases = [{"id": "stop", "messages": ["a", "b", "c"], "expect": {"contains": "done"},
              "metadata": turns([["add_tag", {"tag": "x"}], ["bump", {"by": 1}]], [["bump", {"by": 5}]])},
             {"id": "go-on", "messages": ["a", "b"], "expect": {"contains": "done"},
              "metadata": turns([["bump", {"by": 1}]], [["bump", {"by": 5}]])}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    assert result.exit_code == 0, result.stdout
    runs = runs_by_case(report)
    stop = runs["stop"][0]["trace"]
    # The turn that called add_tag ran to its end (bump included, its reply kept); no later message was sent.
    assert stop["user_messages"] == ["a"] and stop["replies"] == ["done"]
    assert [s["name"] for s in stop["steps"]] == ["add_tag", "bump"] and stop["stop_reason"] == "completed"
    assert runs["go-on"][0]["trace"]["user_messages"] == ["a", "b"]


def test_max_tool_errors_ends_the_run_at_the_last_allowed_error(tmp_path: Path) -> None:
    calls = turns([["fail", {}], ["bump", {"by": 1}], ["fail", {}], ["bump", {"by": 1}]], [["bump", {"by": 1}]])
    cases = [{"id": "errors", "messages": ["a", "b"], "max_tool_errors": 2, "metadata": calls,
              "expected_env_check": [{"path": ["count"], "gte": 0}]},
             {"id": "roomy", "messages": ["a", "b"], "max_tool_errors": 3, "metadata": calls,
              "expected_env_check": [{"path": ["count"], "gte": 0}]}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    runs = runs_by_case(report)
    run = runs["errors"][0]
    trace = run["trace"]
    # fail, bump, fail: the second error is the limit; the agent's next call is refused and not recorded.
    assert [s["name"] for s in trace["steps"]] == ["fail", "bump", "fail"]
    assert trace["stop_reason"] == "max_tool_errors" and "2 tool errors" in trace["agent_error"]
    assert run["status"] == "failed" and trace["user_messages"] == ["a"]
    # Each fail adds 1000 before raising (a run's state is never undone): 1000 + 1 + 1000.
    assert trace["final_env_diff"] == [{"path": ["count"], "old": 0, "new": 2001}]
    roomy = runs["roomy"][0]
    assert roomy["status"] == "passed" and len(roomy["trace"]["steps"]) == 5
    assert result.exit_code == 1


def test_stop_tools_and_max_tool_errors_are_validated(tmp_path: Path) -> None:
    cases = [{"id": "c", "query": "q", "max_tool_errors": 0, "expect": {"contains": "done"}}]
    result, _ = run_suite_cli(tmp_path, cases, {"stop_tools": ["bmp"]}, COUNTER_TOOLS)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "suite.stop_tools[0]" in result.stderr and "did you mean" in result.stderr
    assert "max_tool_errors" in result.stderr and "whole number >= 1" in result.stderr
