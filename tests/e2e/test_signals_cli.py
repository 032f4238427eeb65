"""SIGTERM is Ctrl-C, and no process outlives the command, not even one that called setsid (docs/reference.md,
"What agent-eval guarantees"). `agent-eval run` is a subprocess; its MCP server (tests/fixtures/mcp/
hostile_server.py) starts helpers tagged with the test's tag, one of them in a session of its own."""
from __future__ import annotations

import os
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
    Path(task.metadata["folder"], f"started-{task.case_id}").touch()  # not __file__'s: Ray copies it
    await asyncio.sleep(float(task.metadata.get("sleep", 0)))
    return "ok " + out
'''


def suite(folder: Path, cases: int, sleep: float) -> tuple[Path, str]:
    tag = f"tag-{uuid.uuid4().hex}"
    rows = [{"id": f"c{n}", "query": "q", "metadata": {"tag": tag, "sleep": sleep, "folder": str(folder)},
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
    # Both runs in flight have their server and its two helpers (one in a session of its own).
    report = sigterm_mid_run(tmp_path, ["--concurrency", "2"], started=2, pids=4)
    assert [c["status"] for c in report["cases"]] == ["not_run"] * 6  # cancelled in flight: not journaled


@pytest.mark.parametrize("to_group", [False, True], ids=["driver", "group"])
def test_sigterm_under_workers_stops_every_worker_and_server_and_writes_the_partial_report(tmp_path: Path,
                                                                                       to_group: bool) -> None:
    # SIGTERM reaches the driver alone (as `timeout` sends it), or its whole process group (as a shell's
    # `kill -TERM -PGID` does). Two cases finish at once; four runs are in flight, each with its server
    # and the server's two helpers.
    report = sigterm_mid_run(tmp_path, ["--concurrency", "4", "--workers", "2"], quick=2, started=6, pids=12,
                             to_group=to_group)
    statuses = {c["id"]: c["status"] for c in report["cases"]}
    assert statuses == {"c0": "passed", "c1": "passed", **{f"c{n}": "not_run" for n in range(2, 6)}}


def test_sigterm_under_ray_stops_every_actor_and_server_and_writes_the_partial_report(tmp_path: Path) -> None:
    report = sigterm_mid_run(tmp_path, ["--concurrency", "4", "--ray", "--workers", "2"], quick=2, started=6,
                             pids=12)
    statuses = {c["id"]: c["status"] for c in report["cases"]}
    assert statuses == {"c0": "passed", "c1": "passed", **{f"c{n}": "not_run" for n in range(2, 6)}}


def sigterm_mid_run(tmp_path: Path, flags: list[str], *, started: int, pids: int, quick: int = 0,
                    to_group: bool = False) -> dict:
    """Six cases, the first `quick` of them done at once, the rest waiting an hour; SIGTERM once `started`
    runs have begun and `pids` tagged processes live. Checks exit 143, no traceback, secret or process
    left, and the resume hint; returns the partial report."""
    path, tag = suite(tmp_path, cases=6, sleep=3600)
    rows = orjson.loads(path.read_bytes())
    for row in rows["cases"][:quick]:
        row["metadata"]["sleep"] = 0
    path.write_bytes(orjson.dumps(rows))
    out = tmp_path / "out"
    proc = subprocess.Popen([CLI, "run", "--cases", str(path), "--output-dir", str(out), "--no-html", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env(OPENAI_API_KEY=SECRET), start_new_session=to_group)
    deadline = time.monotonic() + HANG_GUARD_S
    while len(list(tmp_path.glob("started-*"))) < started or len(live_pids(tag)) < pids:
        assert time.monotonic() < deadline and proc.poll() is None, "the runs never started"
        time.sleep(0.05)
    if to_group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert done.returncode == 143, stdout + stderr
    assert_clean(done, tmp_path, tag)
    (report_path,) = out.glob("*.json")
    report = orjson.loads(report_path.read_bytes())
    assert report["interrupted"] is True and report["exit_code"] == 143
    assert f"--resume {report['run_id']}" in stderr
    return report
