"""The suite's `user` block: `prompt` (text or a file, `{scenario}` and `{user_description}` filled in; it
replaces the built-in simulator prompt) and `stop_tokens` (default ###STOP###)."""
from __future__ import annotations

from pathlib import Path

from tests.casefile_features import COUNTER_TOOLS, run_suite_cli, runs_by_case
from tests.loopback import text

CASE = {"id": "sim", "scenario": "You want a count.", "user_description": "terse",
        "expect": {"contains": "done"}}


def user_script(seen: list):
    def reply(request, index):
        seen.append(request["messages"][0]["content"])
        # First message, then a tau2-style ending token, with ###STOP### never said.
        return text("count please" if len(request["messages"]) == 2 else "thanks ###TRANSFER###")

    return reply


def test_the_suite_prompt_and_stop_tokens_drive_the_llm_user(loopback, tmp_path: Path) -> None:
    seen: list = []
    srv = loopback(user_script(seen))
    (tmp_path / "user.md").write_text("Act as: {scenario} Persona: {user_description}. Braces {stay}.")
    block = {"initial_env": {"start": 0},
             "user": {"model": "user-m", "prompt": "user.md", "stop_tokens": ["###TRANSFER###", "###OUT###"]}}
    result, report = run_suite_cli(tmp_path, [CASE], block, COUNTER_TOOLS, "--base-url", srv.base_url)
    assert result.exit_code == 0, result.stdout + result.stderr
    trace = runs_by_case(report)["sim"][0]["trace"]
    assert trace["user_messages"] == ["count please"] and trace["stop_reason"] == "completed"
    assert seen == ["Act as: You want a count. Persona: terse. Braces {stay}."] * 2


def test_without_stop_tokens_only_the_default_ends_the_dialogue(loopback, tmp_path: Path) -> None:
    seen: list = []
    srv = loopback(user_script(seen))
    block = {"initial_env": {"start": 0}, "user": {"model": "user-m", "prompt": "Be {scenario}"}}
    result, report = run_suite_cli(tmp_path, [{**CASE, "max_turns": 2}], block, COUNTER_TOOLS,
                                   "--base-url", srv.base_url)
    trace = runs_by_case(report)["sim"][0]["trace"]
    # ###TRANSFER### is an ordinary message here: it is sent, and the user is not done after max_turns.
    assert trace["user_messages"] == ["count please", "thanks ###TRANSFER###"]
    assert trace["stop_reason"] == "max_turns" and result.exit_code == 1
    assert seen[0] == "Be You want a count."


def test_a_bad_user_block_is_exit_2_naming_the_key(tmp_path: Path) -> None:
    block = {"user": {"model": "m", "prompt": "missing.md", "stop_tokens": [], "stop_token": ["x"]}}
    result, _ = run_suite_cli(tmp_path, [CASE], block, COUNTER_TOOLS)
    err = result.stderr
    assert result.exit_code == 2 and "Traceback" not in err
    assert "suite.user.prompt" in err and "missing.md" in err
    assert "suite.user.stop_tokens" in err and "non-empty list" in err
    assert "suite.user.stop_token" in err and "did you mean `stop_tokens`?" in err
