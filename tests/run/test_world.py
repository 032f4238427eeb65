"""Stateful backends (`backend(env)` / `snapshot(obj)` in the tools module) and arguments recorded as values."""
from __future__ import annotations

from pathlib import Path

import orjson

from agent_eval.commands.rescore import rescore_command
from tests.builders import flags_of
from tests.casefile_features import COUNTER_TOOLS, checks_of, run_suite_cli, runs_by_case, turns

BLOCK = {"initial_env": {"start": 5}}
TAG_CALLS = turns([["set_tags", {"tags": ["a"]}], ["add_tag", {"tag": "b"}]])
TAG_GOLD = [{"name": "set_tags", "args": {"tags": ["a"]}}, {"name": "add_tag", "args": {"tag": "b"}}]


def test_each_run_has_its_own_backend_and_every_state_check_reads_the_snapshot(tmp_path: Path) -> None:
    cases = [{"id": "bump", "query": "go", "metadata": turns([["bump", {"by": 2}], ["bump", {"by": 3}]]),
              "expected_env_check": [{"path": ["count"], "equals": 10}],
              "expected_tools": [{"name": "bump", "args": {"by": 2}}, {"name": "bump", "args": {"by": 3}}],
              "expected_env": "replay"}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK, COUNTER_TOOLS, "-k", "3")
    assert result.exit_code == 0, result.stdout + result.stderr
    runs = runs_by_case(report)["bump"]
    # 5 + 2 + 3 = 10 in every trial: a backend shared between runs would read 15 and 20 in the later ones.
    assert [r["status"] for r in runs] == ["passed"] * 3
    for run in runs:
        assert checks_of(run)["env:count:equals"] == (True, "count: equals 10")
        assert checks_of(run)["expected_env"][0] is True  # the replay's snapshot is {"count": 10, "tags": []}
        # The diff is relative to snapshot(backend(initial env)) = {"count": 5, "tags": []}.
        assert run["trace"]["final_env_diff"] == [{"path": ["count"], "old": 5, "new": 10}]


def test_a_wrong_state_fails_with_the_snapshot_in_the_detail(tmp_path: Path) -> None:
    cases = [{"id": "short", "query": "go", "metadata": turns([["bump", {"by": 2}]]),
              "expected_tools": [{"name": "bump", "args": {"by": 2}}, {"name": "bump", "args": {"by": 3}}],
              "expected_env": "replay"}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    assert result.exit_code == 1
    passed, detail = checks_of(runs_by_case(report)["short"][0])["expected_env"]
    assert not passed and "count: expected 10, found 7" in detail


def test_a_gold_call_that_errors_is_skipped_with_what_it_wrote_undone(tmp_path: Path) -> None:
    # fail() adds 1000 and raises: the replay rebuilds the backend and replays bump(2) alone, so 5 + 2 = 7.
    cases = [{"id": "undo", "query": "go", "metadata": turns([["bump", {"by": 2}]]),
              "expected_tools": [{"name": "bump", "args": {"by": 2}}, {"name": "fail", "args": {}}],
              "expected_env": "replay"}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    assert result.exit_code == 0, result.stdout
    assert checks_of(runs_by_case(report)["undo"][0])["expected_env"][0] is True


def test_rescore_rebuilds_the_backend_from_the_tools_module(tmp_path: Path) -> None:
    cases = [{"id": "bump", "query": "go", "metadata": turns([["bump", {"by": 2}]]),
              "expected_env_check": [{"path": ["count"], "equals": 7}]}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    assert result.exit_code == 0
    # The check is corrected to a wrong value; rescoring rebuilds 5 from backend() and applies the diff: 7.
    path = tmp_path / "cases.json"
    doc = orjson.loads(path.read_bytes())
    doc["cases"][0]["expected_env_check"] = [{"path": ["count"], "equals": 8}]
    path.write_bytes(orjson.dumps(doc))
    from rich.console import Console
    import io

    console = Console(file=io.StringIO(), width=200)
    code = rescore_command(flags_of(report=tmp_path / "reports" / f"{report['run_id']}.json"), console, console)
    assert code == 1
    new = max((tmp_path / "reports").glob("*.json"), key=lambda p: p.stat().st_mtime)
    run = orjson.loads(new.read_bytes())["cases"][0]["runs"][0]
    assert checks_of(run)["env:count:equals"] == (False, "count: expected 8, found 7")


def test_a_backend_that_raises_makes_the_run_an_error_naming_the_module(tmp_path: Path) -> None:
    tools = COUNTER_TOOLS.replace("    BUILT.append(1)\n", "    raise RuntimeError('db down')\n")
    cases = [{"id": "c", "query": "go", "expect": {"contains": "done"}}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK, tools)
    assert result.exit_code != 0 and "Traceback" not in result.stderr
    run = runs_by_case(report)["c"][0]
    assert run["status"] == "error"
    assert "tools.py: backend(env) raised RuntimeError: db down" in run["error"]


def test_a_snapshot_that_is_not_an_object_makes_the_run_an_error(tmp_path: Path) -> None:
    tools = COUNTER_TOOLS.replace('return {"count": counter.count, "tags": list(counter.tags)}',
                                  "return [counter.count]")
    cases = [{"id": "c", "query": "go", "expect": {"contains": "done"}}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK, tools)
    assert "Traceback" not in result.stderr
    run = runs_by_case(report)["c"][0]
    assert run["status"] == "error" and "snapshot(obj) returned list, not a JSON object" in run["error"]


def test_a_backend_without_a_snapshot_is_exit_2_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    tools = COUNTER_TOOLS.replace("def snapshot(counter):", "def snap(counter):")
    cases = [{"id": "c", "query": "go", "expect": {"contains": "done"}}]
    result, _ = run_suite_cli(tmp_path, cases, BLOCK, tools)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "tools.py: defines backend but not snapshot" in result.stderr
    assert "snapshot(obj) -> dict" in result.stderr


def test_recorded_args_are_values_not_the_list_a_tool_kept(tmp_path: Path) -> None:
    # set_tags keeps the very list it was given, and add_tag appends to it: the first step must still say
    # the agent sent ["a"].
    cases = [{"id": "tags", "query": "go", "metadata": TAG_CALLS,
              "expected_env_check": [{"path": ["tags"], "equals": ["a", "b"]}],
              "expected_tools": TAG_GOLD,
              "trajectory": "strict"}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK, COUNTER_TOOLS, "-k", "2")
    assert result.exit_code == 0, result.stdout
    for run in runs_by_case(report)["tags"]:
        assert [s["args"] for s in run["trace"]["steps"]] == [{"tags": ["a"]}, {"tag": "b"}]


def test_gold_args_are_copied_before_the_replay(tmp_path: Path) -> None:
    # The replay's set_tags keeps its list and add_tag appends to it: were the case's own args handed over,
    # the case would then expect set_tags(["a", "b"]) and the strict trajectory would fail.
    cases = [{"id": "tags", "query": "go", "metadata": TAG_CALLS,
              "expected_tools": TAG_GOLD,
              "trajectory": "strict", "expected_env": "replay"}]
    result, report = run_suite_cli(tmp_path, cases, BLOCK)
    assert result.exit_code == 0, result.stdout
    assert [c["passed"] for c in runs_by_case(report)["tags"][0]["checks"]] == [True, True]
