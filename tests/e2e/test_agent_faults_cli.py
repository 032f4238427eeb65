"""The agent's own faults and concurrency, through `agent-eval run`.

A raising agent fails only its own run; a hung agent, async or sync, is cut by --timeout, its slot goes
to the next run, and a sync agent's sleeping thread does not keep the process alive (so that one runs
as a subprocess: the process's exit is under test); every run's env is private under --concurrency 50.
"""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from agent_eval.score.envdiff import apply_diff
from tests import cli
from tests.builders import write_suite

# A hang guard only. The hung agents below sleep 600 s, so a run that waited for one would trip it.
HANG_GUARD_S = 120

TOOLS = '''
from agent_eval import tool


@tool
def bump(env: dict, who: str) -> int:
    """Add one to the counter and log who did it."""
    env["counter"] += 1
    env["log"].append(who)
    return env["counter"]
'''

SYNC_AGENT = '''
import time


def agent(task):
    if task.case_id == "boom":
        raise RuntimeError("kaboom")
    task.call_tool("bump", who=task.case_id)
    if task.case_id == "hang":
        time.sleep(600)
    return "done"
'''

ASYNC_AGENT = '''
import asyncio


async def agent(task):
    if task.case_id == "boom":
        raise RuntimeError("kaboom")
    await task.acall_tool("bump", who=task.case_id)
    if task.case_id == "hang":
        await asyncio.sleep(600)
    return "done"
'''

# Bumps k times (k from the case id), yielding between calls so that 50 runs interleave.
BUSY_AGENT = '''
import asyncio


async def agent(task):
    k = int(task.case_id.split("-")[1]) % 5 + 1
    for _ in range(k):
        await task.acall_tool("bump", who=task.case_id)
        await asyncio.sleep(0)
    return f"bumped {k}"
'''


def faults_suite(folder: Path, agent_source: str, case_ids: list[str]) -> Path:
    cases = [{"id": cid, "query": "go", "expect": {"contains": "done"}} for cid in case_ids]
    block = {"name": "faults", "tools": "tools.py", "agent": "agent.py:agent",
             "initial_env": {"counter": 0, "log": []}}
    return write_suite(folder, cases, block, {"tools.py": TOOLS, "agent.py": agent_source})


def run_cli(tmp_path: Path, cases: Path, *args: str, process: bool = False) -> tuple[int, dict, str]:
    out = tmp_path / "reports"
    call = cli.run_cli_process if process else cli.run_cli
    proc = call("run", "--cases", cases, "--output-dir", out, "--quiet", *args, cwd=Path.cwd(), env=dict(os.environ),
                timeout=HANG_GUARD_S)
    (report,) = out.glob("*.json")
    return proc.returncode, orjson.loads(report.read_bytes()), proc.stderr


@pytest.mark.parametrize("agent_source", [SYNC_AGENT, ASYNC_AGENT], ids=["sync", "async"])
def test_a_raising_and_a_hung_agent_fail_only_their_own_runs(tmp_path, agent_source):
    cases = faults_suite(tmp_path, agent_source, ["first", "hang", "boom", "last"])
    # The sync agent's thread sleeps on after its run is cut: the process must exit all the same.
    code, report, err = run_cli(tmp_path, cases, "--timeout", "0.5", "--concurrency", "1",
                                process=agent_source is SYNC_AGENT)
    assert code == 1 and "Traceback" not in err
    runs = {c["id"]: c["runs"][0] for c in report["cases"]}
    assert {cid: r["status"] for cid, r in runs.items()} == {"first": "passed", "hang": "failed",
                                                             "boom": "failed", "last": "passed"}
    hang, boom = runs["hang"]["trace"], runs["boom"]["trace"]
    assert hang["stop_reason"] == "timeout" and "--timeout 0.5s" in hang["agent_error"]
    assert [s["name"] for s in hang["steps"]] == ["bump"]  # what it did before it hung is kept
    assert boom["stop_reason"] == "agent_error" and boom["agent_error"] == "RuntimeError: kaboom"
    assert runs["hang"]["error"] is None and runs["boom"]["error"] is None  # failures, not errors
    summary = report["summary"]
    assert summary["runs"] == 4 and summary["runs_errored"] == 0 and summary["pass_at_1"] == 0.5


def test_every_run_sees_only_its_own_writes_at_concurrency_50(tmp_path):
    case_ids = [f"c-{n}" for n in range(200)]
    cases = faults_suite(tmp_path, BUSY_AGENT, case_ids)
    rows = orjson.loads(cases.read_bytes())
    for case in rows["cases"]:
        case["expect"] = {"contains": "bumped"}
    cases.write_bytes(orjson.dumps(rows))
    code, report, err = run_cli(tmp_path, cases, "--concurrency", "50", "--repeat", "2")
    assert code == 0, err
    for entry in report["cases"]:
        k = int(entry["id"].split("-")[1]) % 5 + 1
        assert len(entry["runs"]) == 2
        for run in entry["runs"]:
            final_env = apply_diff({"counter": 0, "log": []}, run["trace"]["final_env_diff"])
            assert final_env == {"counter": k, "log": [entry["id"]] * k}
            assert [s["output"] for s in run["trace"]["steps"]] == [str(i) for i in range(1, k + 1)]
