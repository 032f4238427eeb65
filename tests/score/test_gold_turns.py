"""Per-turn gold: `expected_env: "replay_per_turn"` and `expected_observations: "replay"`, checked on runs."""
from __future__ import annotations

from pathlib import Path

from tests.casefile_features import checks_of, run_suite_cli, runs_by_case

BLOCK = {"initial_env": {"start": 0}}
# Turn 0: bump(2) -> count 2, observation "2"; turn 1: no gold; turn 2: bump(3) -> count 5, observation "5".
GOLD = [{"name": "bump", "args": {"by": 2}, "turn": 0}, {"name": "bump", "args": {"by": 3}, "turn": 2}]


def case(case_id: str, *turns: list, **extra: object) -> dict:
    return {"id": case_id, "messages": ["t0", "t1", "t2"], "expected_tools": GOLD,
            "expected_env": "replay_per_turn", "expected_observations": "replay",
            "metadata": {"turns": list(turns), **extra}}


def bump(by: int) -> list:
    return ["bump", {"by": by}]


def test_each_turn_with_gold_is_checked_on_its_state_and_observations(tmp_path: Path) -> None:
    cases = [case("gold", [bump(2)], [], [bump(3)]),
             # Two calls reach the same state 2 at turn 0 (observations "1", "2": "2" is among them); nothing
             # in turn 2, whose gold is non-empty: its state check fails, and "5" was never observed.
             case("split", [bump(1), bump(1)], [], []),
             # Nothing in turn 0, the gold of turn 0 in turn 1: turn 2's state (5) and observations (2, 5) pass.
             case("late", [], [bump(2)], [bump(3)]),
             case("wrong", [bump(7)], [], [bump(3)]),
             case("ended", [bump(2)], [], [bump(3)], raise_at=1)]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    runs = runs_by_case(report)
    checks = {cid: checks_of(runs[cid][0]) for cid in runs}
    # Turn 1 has no gold: no entry of its own.
    assert list(checks["gold"]) == ["expected_env[turn 0]", "expected_env[turn 2]",
                                    "expected_observations[turn 0]", "expected_observations[turn 2]"]
    assert all(passed for passed, _ in checks["gold"].values()) and runs["gold"][0]["status"] == "passed"
    split = checks["split"]
    assert split["expected_env[turn 0]"][0] is True
    assert split["expected_env[turn 2]"] == (False, "turn 2: no tool call")
    assert split["expected_observations[turn 0]"][0] is True
    assert split["expected_observations[turn 2]"] == (
        False, "turn 2: 1 of the 1 gold observation(s) missing from the run's, e.g. '5'")
    late = checks["late"]
    assert late["expected_env[turn 0]"] == (False, "turn 0: no tool call")
    assert late["expected_observations[turn 0]"][0] is False
    assert late["expected_env[turn 2]"][0] is True and late["expected_observations[turn 2]"][0] is True
    passed, detail = checks["wrong"]["expected_env[turn 0]"]
    assert not passed and "count: expected 2, found 7" in detail
    assert checks["wrong"]["expected_env[turn 2]"][0] is False  # 7 + 3 = 10, not 5
    ended = checks["ended"]
    assert ended["expected_env[turn 0]"][0] is True
    assert ended["expected_env[turn 2]"][0] is False and "ended before the agent answered user turn 2" in \
        ended["expected_env[turn 2]"][1]
    assert ended["expected_observations[turn 2]"][0] is False
    assert result.exit_code == 1


def test_the_gold_agent_passes_its_own_per_turn_checks(tmp_path: Path) -> None:
    result, report = run_suite_cli(tmp_path, [case("gold", [], [], [])], BLOCK, agent="gold")
    assert result.exit_code == 0, result.stdout
    assert runs_by_case(report)["gold"][0]["trace"]["turn_env_diffs"] == [
        [{"path": ["count"], "old": 0, "new": 2}], [{"path": ["count"], "old": 0, "new": 2}],
        [{"path": ["count"], "old": 0, "new": 5}]]


def test_turn_fields_are_validated(tmp_path: Path) -> None:
    cases = [{"id": "sim", "scenario": "s", "expected_tools": [{"name": "bump", "args": {"by": 1}, "turn": 0}],
              "expected_env": "replay_per_turn", "expected_observations": "replay"},
             {"id": "partial", "messages": ["a", "b"], "expected_env": "replay_per_turn",
              "expected_tools": [{"name": "bump", "args": {"by": 1}, "turn": 0}, {"name": "bump", "args": {"by": 1}}]},
             {"id": "far", "messages": ["a", "b"], "expected_env": "replay_per_turn",
              "expected_tools": [{"name": "bump", "args": {"by": 1}, "turn": 2}]},
             {"id": "fuzzy", "query": "q", "expected_observations": "replay",
              "expected_tools": [{"name": "bump", "args": {"by": {"$any": [1, 2]}}}]},
             {"id": "replies", "query": "q", "gold_reply": ["a", "b"], "expect": {"contains": "a"}}]
    result, _ = run_suite_cli(tmp_path, cases, BLOCK)
    err = result.stderr
    assert result.exit_code == 2 and "Traceback" not in err
    assert "expected_tools[0].turn" in err and "a scenario case has no scripted turns" in err
    assert "expected_observations" in err and "expected_env" in err
    assert "if one expected_tools entry has `turn`, all must" in err
    assert "must be between 0 and 1" in err
    assert "needs literal args" in err
    assert "a list (one reply per user turn) needs \"messages\"" in err


def test_rescore_checks_each_turn_again_from_the_trace(tmp_path: Path) -> None:
    import io

    import orjson
    from rich.console import Console

    from agent_eval.commands.rescore import rescore_command
    from tests.builders import flags_of

    result, report = run_suite_cli(tmp_path, [case("split", [bump(2)], [], [bump(1)])], BLOCK)
    assert checks_of(runs_by_case(report)["split"][0])["expected_env[turn 2]"][0] is False  # 3, not 5
    # The gold of turn 2 is corrected to what the agent did: rescoring replays it and reads turn_env_diffs.
    path = tmp_path / "cases.json"
    doc = orjson.loads(path.read_bytes())
    doc["cases"][0]["expected_tools"][1]["args"] = {"by": 1}
    path.write_bytes(orjson.dumps(doc))
    console = Console(file=io.StringIO(), width=200)
    assert rescore_command(flags_of(report=tmp_path / "reports" / f"{report['run_id']}.json"), console, console) == 0
    new = max((tmp_path / "reports").glob("*.json"), key=lambda p: p.stat().st_mtime)
    rescored = orjson.loads(new.read_bytes())["cases"][0]["runs"][0]
    assert all(passed for passed, _ in checks_of(rescored).values()) and len(rescored["checks"]) == 4
