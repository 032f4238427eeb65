"""The gold agent (`--agent gold`) and the gold user (`--user gold`): an oracle run of a suite's own gold."""
from __future__ import annotations

from pathlib import Path

from tests.casefile_features import COUNTER_TOOLS, checks_of, run_suite_cli, runs_by_case

BLOCK = {"initial_env": {"start": 0}}
GOLD = [{"name": "bump", "args": {"by": 2}, "turn": 0}, {"name": "add_tag", "args": {"tag": "t"}, "turn": 1},
        {"name": "bump", "args": {"by": 3}, "turn": 1}]


def test_the_gold_agent_plays_each_turns_calls_and_says_its_gold_reply(tmp_path: Path) -> None:
    cases = [{"id": "turns", "messages": ["one", "two"], "expected_tools": GOLD, "trajectory": "strict",
              "gold_reply": ["first", "second"], "expected_env": "replay", "expect": {"contains": "second"}},
             {"id": "untimed", "messages": ["one", "two"], "gold_reply": "same",
              "expected_tools": [{"name": "bump", "args": {"by": 1}}, {"name": "bump", "args": {"by": 1}}],
              "expected_env_check": [{"path": ["count"], "equals": 2}]}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK, agent="gold")
    assert result.exit_code == 0, result.stdout + result.stderr
    runs = runs_by_case(report)
    trace = runs["turns"][0]["trace"]
    assert trace["replies"] == ["first", "second"]
    assert trace["turn_steps"] == [1, 3]  # bump in turn 0; add_tag and bump in turn 1
    assert [s["args"] for s in trace["steps"]] == [{"by": 2}, {"tag": "t"}, {"by": 3}]
    # Without `turn`, every gold call is made in the first turn; a string reply answers every turn.
    untimed = runs["untimed"][0]["trace"]
    assert untimed["turn_steps"] == [2, 2] and untimed["replies"] == ["same", "same"]


def test_the_gold_user_says_the_scenario_once_and_the_gold_agent_plays_everything_then(tmp_path: Path) -> None:
    cases = [{"id": "sim", "scenario": "I want my counter at 5", "gold_reply": "done, it is 5",
              "expected_tools": [{"name": "bump", "args": {"by": 2}}, {"name": "bump", "args": {"by": 3}}],
              "expected_env": "replay", "expect": {"contains": "is 5"}}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK, COUNTER_TOOLS, "--user", "gold", agent="gold")
    assert result.exit_code == 0, result.stdout + result.stderr
    run = runs_by_case(report)["sim"][0]
    assert run["trace"]["user_messages"] == ["I want my counter at 5"]
    assert run["trace"]["replies"] == ["done, it is 5"]
    assert checks_of(run)["expected_env"][0] is True and run["status"] == "passed"


def test_the_gold_agent_refuses_a_case_whose_gold_args_hold_a_matcher(tmp_path: Path) -> None:
    cases = [{"id": "fuzzy", "query": "q", "trajectory": "unordered",
              "expected_tools": [{"name": "bump", "args": {"by": {"$any": [1, 2]}}}]}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK, agent="gold")
    assert result.exit_code == 2 and report is None and "Traceback" not in result.stderr
    assert "case 'fuzzy'" in result.stderr and "expected_tools[0].args holds a matcher" in result.stderr
