"""SIGTERM is Ctrl-C, and no process outlives the command, not even one that called setsid (docs/reference.md,
"What agent-eval guarantees"). `agent-eval run` is a subprocess; its MCP server (tests/fixtures/mcp/
hostile_server.py) starts helpers tagged with the test's tag, one of them in a session of its own."""
from __future__ import annotations

import signal
import subprocess
import time
import uuid
from pathlib import Path

import orjson
import pytest

from tests.builders import CLI, clean_env, write_suite
from tests.hostile import SECRET, assert_clean, live_pids

pytest.importorskip("mcp")

SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "mcp" / "hostile_server.py"
HANG_GUARD_S = 180

# Starts the helpers through the server, then (for the "slow" cases) waits long enough to be interrupted.
AGENT = '''
import asyncio
import os
from pathlib import Path


async def agent(task):
    out = await task.acall_tool("spawn_helper", tag=task.metadata["tag"])
    Path(__file__).with_name(f"started-{task.case_id}").touch()
    await asyncio.sleep(float(task.metadata.get("sleep", 0)))
    return "ok " + out
'''


def suite(folder: Path, cases: int, sleep: float) -> tuple[Path, str]:
    tag = f"tag-{uuid.uuid4().hex}"
    rows = [{"id": f"c{n}", "query": "q", "metadata": {"tag": tag, "sleep": sleep},
             "expect": {"contains": "ok spawned"}} for n in range(cases)]
    block = {"name": "signals", "tools": [{"mcp": {"command": ["python", str(SERVER), tag]}}],
             "agent": "agent.py:agent"}
    return write_suite(folder, rows, block, {"agent.py": AGENT}), tag


def test_helpers_that_left_the_process_group_do_not_outlive_the_command(tmp_path: Path) -> None:
    path, tag = suite(tmp_path, cases=2, sleep=0)
    out = tmp_path / "out"
    done = subprocess.run([CLI, "run", "--cases", str(path), "--output-dir", str(out), "--no-html"],
                          capture_output=True, text=True, timeout=HANG_GUARD_S, env=clean_env(OPENAI_API_KEY=SECRET))
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean(done, tmp_path, tag)  # the setsid helper of each run's server included


def test_sigterm_writes_the_partial_report_ends_every_process_and_exits_143(tmp_path: Path) -> None:
    path, tag = suite(tmp_path, cases=6, sleep=3600)
    out = tmp_path / "out"
    proc = subprocess.Popen([CLI, "run", "--cases", str(path), "--output-dir", str(out), "--no-html",
                             "--concurrency", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env(OPENAI_API_KEY=SECRET))
    deadline = time.monotonic() + HANG_GUARD_S
    # Both runs in flight have their server and its two helpers (one in a session of its own).
    while len(list(tmp_path.glob("started-*"))) < 2 or len(live_pids(tag)) < 4:
        assert time.monotonic() < deadline and proc.poll() is None, "the runs never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert done.returncode == 143, stdout + stderr
    assert_clean(done, tmp_path, tag)
    (report_path,) = out.glob("*.json")
    report = orjson.loads(report_path.read_bytes())
    assert report["interrupted"] is True and report["exit_code"] == 143
    assert [c["status"] for c in report["cases"]] == ["not_run"] * 6  # cancelled in flight: not journaled
    assert f"--resume {report['run_id']}" in stderr
