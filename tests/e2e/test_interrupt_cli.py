"""Ctrl-C and --resume, with `agent-eval run` as a subprocess sent real SIGINTs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.builders import write_suite
from tests.cli import run_cli

CLI = str(Path(sys.executable).parent / "agent-eval")
HANG_GUARD_S = 60  # generous bounds, so that a hang fails the test instead of stalling the suite
CASES = 300

TOOLS = '''
from agent_eval import tool


@tool
def note(env: dict, text: str) -> str:
    """Append a note."""
    env["notes"].append(text)
    return "noted"
'''

# Deterministic verdicts (every 5th case fails); AGENT_DELAY_S slows it down so that Ctrl-C lands mid-run.
AGENT = '''
import asyncio
import os


async def agent(task):
    await task.acall_tool("note", text=task.case_id)
    await asyncio.sleep(float(os.environ.get("AGENT_DELAY_S", "0")))
    return "no" if int(task.case_id.split("-")[1]) % 5 == 0 else "ok"
'''

# Ignores cancellation: only a second Ctrl-C, or the runner's grace period, gets past it.
STUBBORN_AGENT = '''
import asyncio
from pathlib import Path


async def agent(task):
    Path(__file__).with_name("started").touch()
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue
'''


def interruptible_suite(folder: Path, agent_source: str, cases: int = CASES) -> Path:
    rows = [{"id": f"case-{n}", "query": "go", "expect": {"contains": "ok"}} for n in range(cases)]
    block = {"name": "interruptible", "tools": "tools.py", "agent": "agent.py:agent",
             "initial_env": {"notes": []}}
    return write_suite(folder, rows, block, {"tools.py": TOOLS, "agent.py": agent_source})


def start(cases: Path, out: Path, *args: str, delay_s: float = 0.0) -> subprocess.Popen:
    env = {**os.environ, "AGENT_DELAY_S": str(delay_s)}
    return subprocess.Popen([CLI, "run", "--cases", str(cases), "--output-dir", str(out), "--quiet",
                             *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def journal_lines(out: Path) -> list[bytes]:
    journals = list(out.glob("*.jsonl"))
    return journals[0].read_bytes().splitlines() if journals else []


def comparable(report: dict) -> dict:
    summary = {k: v for k, v in report["summary"].items() if "latency" not in k and "ttfa" not in k}
    return {"summary": summary, "exit_code": report["exit_code"],
            "cases": [(c["id"], c["status"], c["pass_rate"], [r["status"] for r in c["runs"]])
                      for c in report["cases"]]}


def test_ctrl_c_saves_finished_runs_and_resume_completes_the_same_report(tmp_path):
    cases = interruptible_suite(tmp_path / "suite", AGENT)
    out = tmp_path / "interrupted"
    proc = start(cases, out, "--repeat", "2", "--concurrency", "4", delay_s=0.05)
    wait_for(lambda: len(journal_lines(out)) >= 3, "finished runs in the journal")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 130, stderr
    run_id = next(out.glob("*.jsonl")).stem
    assert f"agent-eval run --resume {run_id} --output-dir {out}" in stderr and "Traceback" not in stderr

    partial = orjson.loads((out / f"{run_id}.json").read_bytes())
    assert partial["interrupted"] is True and partial["exit_code"] == 130
    journaled = [orjson.loads(line) for line in journal_lines(out)[1:]]
    assert 0 < len(journaled) < 2 * CASES
    # Runs cancelled in flight are not journaled at all, so none shows up as a failure of the agent.
    for record in journaled:
        expected = "failed" if int(record["case_id"].split("-")[1]) % 5 == 0 else "passed"
        assert record["run"]["status"] == expected and record["run"]["trace"]["stop_reason"] == "completed"
    assert sum(len(c["runs"]) for c in partial["cases"]) == len(journaled)
    # A case none of whose runs finished never ran: `not_run`, not an `error` with an empty reason.
    never = [c for c in partial["cases"] if not c["runs"]]
    assert never and all(c["status"] == "not_run" and c["pass_rate"] is None for c in never)
    assert partial["summary"]["cases_not_run"] == len(never) and partial["summary"]["cases_errored"] == 0

    # The interrupted process is under test; the resume and the whole run are not (in-process).
    resumed = run_cli("run", "--resume", run_id, "--output-dir", out, "--quiet", "--concurrency", "16",
                      cwd=Path.cwd(), env=dict(os.environ), timeout=HANG_GUARD_S)
    assert resumed.returncode == 1, resumed.stderr
    lines = journal_lines(out)
    assert len(lines) == 1 + 2 * CASES  # the missing runs only, appended to the same journal
    assert len({(r["case_id"], r["trial"]) for r in map(orjson.loads, lines[1:])}) == 2 * CASES
    final = orjson.loads((out / f"{run_id}.json").read_bytes())
    assert final["interrupted"] is False and final["created_at"] == partial["created_at"]

    whole = run_cli("run", "--cases", cases, "--output-dir", tmp_path / "whole", "--quiet", "--repeat", "2",
                    "--concurrency", "16", cwd=Path.cwd(), env=dict(os.environ), timeout=HANG_GUARD_S)
    (whole_report,) = (tmp_path / "whole").glob("*.json")
    assert comparable(final) == comparable(orjson.loads(whole_report.read_bytes()))
    assert whole.returncode == 1


def test_one_ctrl_c_gets_past_an_agent_that_ignores_cancellation(tmp_path):
    cases = interruptible_suite(tmp_path / "suite", STUBBORN_AGENT, cases=2)
    out = tmp_path / "out"
    proc = start(cases, out)
    wait_for((tmp_path / "suite" / "started").exists, "the agent to start")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 130, stderr
    (report,) = out.glob("*.json")
    partial = orjson.loads(report.read_bytes())
    assert partial["interrupted"] is True and partial["summary"]["runs"] == 0
    assert journal_lines(out)[1:] == []


def test_a_second_ctrl_c_exits_at_once(tmp_path):
    cases = interruptible_suite(tmp_path / "suite", STUBBORN_AGENT, cases=2)
    out = tmp_path / "out"
    proc = start(cases, out)
    wait_for((tmp_path / "suite" / "started").exists, "the agent to start")
    proc.send_signal(signal.SIGINT)  # the runner now waits for the stubborn agent to stop
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 130
    assert "interrupted again: exiting now" in stderr and "Traceback" not in stderr
    assert list(out.glob("*.json")) == []  # it did not wait to write the report
    assert len(journal_lines(out)) == 1  # the journal's header was on disk from the start
