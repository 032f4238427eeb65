"""The runner in-process: trials, multi-turn, isolation, hand-computed figures."""
from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console

from agent_eval.commands.run import run_command
from tests.builders import flags_of

TOOLS = '''
from agent_eval import tool


@tool
def bump(env: dict) -> int:
    """Add one to the counter and return the value seen before."""
    seen = env["counter"]
    env["counter"] = seen + 1
    return seen


@tool
def set_value(key: str, value: str, env: dict) -> str:
    """Store a value."""
    env["values"][key] = value
    return "ok"


@tool
def get_value(key: str, env: dict) -> str:
    """Read a value."""
    return env["values"][key]
'''

# Succeeds on a trial chosen by the case id; records 1000 prompt + 500 completion tokens of model "m".
AGENT = '''
import asyncio

SUCCEEDS = {
    "always": lambda t: True,
    "half": lambda t: t % 2 == 0,   # trials 0, 2 of 0..3
    "once": lambda t: t == 0,
    "never": lambda t: False,
}


async def agent(task):
    task.record_usage(1000, 500, model="m")
    if task.case_id == "isolated":
        seen = await task.acall_tool("bump")
        await asyncio.sleep(0.001)  # let other runs interleave
        return f"saw {seen}"
    if task.case_id == "multi":
        if "remember" in task.input:
            await task.acall_tool("set_value", key="color", value="blue")
            return "noted"
        return "it was " + await task.acall_tool("get_value", key="color")
    await task.acall_tool("get_value", key="color")
    return "ok" if SUCCEEDS[task.case_id](task.trial) else "no"
'''


def make_suite(tmp_path: Path, cases: list, **block) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "tools.py").write_text(TOOLS)
    (folder / "agent.py").write_text(AGENT)
    block = {"name": "scripted", "tools": "tools.py", "agent": "agent.py:agent",
             "initial_env": {"counter": 0, "values": {"color": "red"}},
             "pricing": {"m": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}}, **block}
    path = folder / "cases.json"
    path.write_bytes(orjson.dumps({"suite": block, "cases": cases}))
    return path


def run(path: Path, tmp_path: Path, **flags) -> tuple[int, dict]:
    out = tmp_path / "out"
    flags = {"cases": path, "output_dir": out, "quiet": True, **flags}
    console = Console(file=io.StringIO(), width=200)
    code = run_command(flags_of(**flags), console, Console(file=io.StringIO()))
    (report_path,) = out.glob("*.json")
    return code, orjson.loads(report_path.read_bytes())


def scripted(case_id: str) -> dict:
    return {"id": case_id, "query": "go", "expect": {"contains": "ok"},
            "expected_tools": [{"name": "get_value", "args": {"key": "color"}}]}


def test_k_trials_give_hand_computed_pass_hat_pass_at_k_and_cost(tmp_path):
    path = make_suite(tmp_path, [scripted("always"), scripted("half"), scripted("once"), scripted("never")])
    code, report = run(path, tmp_path, repeat=4, concurrency=3)
    cases = {c["id"]: c for c in report["cases"]}
    assert [r["trial"] for r in cases["half"]["runs"]] == [0, 1, 2, 3]
    assert [r["success"] for r in cases["half"]["runs"]] == [True, False, True, False]
    # pass_rate = c/n: always 4/4, half 2/4, once 1/4, never 0/4.
    assert [cases[i]["pass_rate"] for i in ("always", "half", "once", "never")] == [1.0, 0.5, 0.25, 0.0]
    assert [cases[i]["status"] for i in ("always", "half", "once", "never")] == ["passed", "failed", "failed",
                                                                                "failed"]
    assert code == 1 and report["exit_code"] == 1
    s = report["summary"]
    # pass_at_1 = (4/4 + 2/4 + 1/4 + 0/4) / 4 = 1.75 / 4
    assert s["pass_at_1"] == pytest.approx(0.4375)
    # pass^k = mean of C(c,k)/C(4,k) over the 4 cases
    # k=1: same as pass_at_1; k=2: (C(4,2)/6 + C(2,2)/6 + 0 + 0)/4 = (1 + 1/6)/4 = 7/24
    # k=3: (C(4,3)/4 + 0 + 0 + 0)/4 = 1/4; k=4: (1 + 0 + 0 + 0)/4 = 1/4
    assert s["pass_hat"] == pytest.approx({"1": 0.4375, "2": 7 / 24, "3": 0.25, "4": 0.25})
    assert s["pass_hat_k"] == pytest.approx(0.25)
    # pass@4 = mean of 1 - C(n-c,4)/C(4,4):
    #   always 1-C(0,4)=1, half 1-C(2,4)=1, once 1-C(3,4)=1, never 1-C(4,4)=0 -> 3/4
    assert s["pass_at_k"] == pytest.approx(0.75)
    # 16 runs x (1000*2/1e6 + 500*10/1e6 = 0.002 + 0.005 = 0.007 $) = 0.112 $; 4+2+1+0 = 7 successes
    assert s["cost_total_usd"] == pytest.approx(0.112)
    assert s["cost_per_success_usd"] == pytest.approx(0.112 / 7)  # 0.016
    assert s["tokens_total"] == 16 * 1500  # 24000
    assert s["tokens_per_success"] == pytest.approx(24000 / 7)
    # One get_value(color) per run, exactly as expected: recall = precision = params = efficiency = 1.
    assert s["tool_recall"] == s["tool_precision"] == s["param_accuracy"] == s["step_efficiency"] == 1.0
    # progress: the one check (expect:contains) passes on 7 of 16 runs
    assert s["progress"] == pytest.approx(7 / 16)
    assert s["loop_rate"] == 0.0 and s["recovery_rate"] is None and s["invalid_call_rate"] == 0.0
    assert (s["cases_total"], s["cases_passed"], s["cases_failed"], s["runs"]) == (4, 1, 3, 16)
    run0 = cases["half"]["runs"][0]
    assert run0["metrics"]["cost_usd"] == pytest.approx(0.007)
    assert run0["metrics"]["prompt_tokens"] == 1000 and run0["metrics"]["completion_tokens"] == 500


def test_threshold_lets_a_flaky_case_pass(tmp_path):
    path = make_suite(tmp_path, [scripted("half")])
    code, report = run(path, tmp_path, repeat=4, threshold=0.5)
    assert report["cases"][0]["status"] == "passed" and code == 0  # 2/4 >= 0.5


def test_multi_turn_case_runs_in_one_sandbox(tmp_path):
    case = {"id": "multi", "messages": ["remember blue", "what was it?"], "expect": {"contains": "blue"},
            "expected_env_check": {"path": ["values", "color"], "equals": "blue"}}
    code, report = run(make_suite(tmp_path, [case]), tmp_path)
    (run_record,) = report["cases"][0]["runs"]
    trace = run_record["trace"]
    assert trace["user_messages"] == ["remember blue", "what was it?"]
    assert trace["replies"] == ["noted", "it was blue"] and trace["final_answer"] == "it was blue"
    assert [s["name"] for s in trace["steps"]] == ["set_value", "get_value"]
    assert [c["passed"] for c in run_record["checks"]] == [True, True]
    assert code == 0


def test_runs_never_see_each_others_writes_under_concurrency(tmp_path):
    case = {"id": "isolated", "query": "bump", "expect": {"contains": "saw 0"},
            "expected_env_check": {"path": ["counter"], "equals": 1}}
    code, report = run(make_suite(tmp_path, [case]), tmp_path, repeat=12, concurrency=6)
    runs = report["cases"][0]["runs"]
    assert len(runs) == 12 and all(r["success"] for r in runs)
    assert all(r["trace"]["final_env_diff"] == [{"path": ["counter"], "old": 0, "new": 1}] for r in runs)
    assert code == 0


def test_requires_skips_and_all_skipped_exits_2(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_EVAL_TEST_NEVER_SET", raising=False)
    case = {**scripted("always"), "requires": ["AGENT_EVAL_TEST_NEVER_SET"]}
    code, report = run(make_suite(tmp_path, [case]), tmp_path)
    entry = report["cases"][0]
    assert entry["status"] == "skipped" and entry["runs"] == []
    assert "AGENT_EVAL_TEST_NEVER_SET" in entry["skip_reason"]
    assert report["summary"]["cases_skipped"] == 1 and report["summary"]["pass_at_1"] is None
    assert code == 2


def test_skipped_case_is_left_out_of_the_figures(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENT_EVAL_TEST_NEVER_SET", raising=False)
    cases = [scripted("always"), {**scripted("never"), "requires": ["AGENT_EVAL_TEST_NEVER_SET"]}]
    code, report = run(make_suite(tmp_path, cases), tmp_path)
    assert report["summary"]["pass_at_1"] == 1.0 and report["summary"]["cases_total"] == 2
    assert code == 0


def test_journal_has_a_header_then_one_line_per_run(tmp_path):
    path = make_suite(tmp_path, [scripted("always"), scripted("never")])
    code, report = run(path, tmp_path, repeat=2)
    lines = (tmp_path / "out" / f"{report['run_id']}.jsonl").read_bytes().splitlines()
    header, runs = orjson.loads(lines[0]), [orjson.loads(line) for line in lines[1:]]
    assert header["run_id"] == report["run_id"] and header["settings"]["repeat"] == 2
    assert sorted((r["case_id"], r["trial"]) for r in runs) == [("always", 0), ("always", 1), ("never", 0),
                                                               ("never", 1)]
    by_key = {(r["case_id"], r["trial"]): r["run"] for r in runs}
    assert by_key[("never", 1)] == report["cases"][1]["runs"][1]
