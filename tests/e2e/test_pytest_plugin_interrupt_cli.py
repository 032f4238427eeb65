"""Ctrl-C in a pytest session under xdist: the controller still writes the partial report and the one
journal, and `agent-eval run --resume RUN_ID` plays the case-file cases that were left."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.builders import clean_env, write_suite
from tests.cli import run_cli

AGENT = '''
import time
from pathlib import Path

HERE = Path(__file__).parent


def agent(task):
    if task.case_id.startswith("slow"):
        (HERE / "started" / task.case_id).touch()
        while (HERE / "hold").exists():  # until the test lets go (after the Ctrl-C)
            time.sleep(0.05)
    return "42"
'''


def test_ctrl_c_under_xdist_writes_the_partial_report_and_one_journal_that_resume_reads(tmp_path: Path) -> None:
    rows = [{"id": f"{kind}{n}", "query": "q", "expect": {"contains": "42"}} for kind in ("fast", "slow")
            for n in range(3)]
    cases = write_suite(tmp_path, rows, {"agent": "agent.py:agent"}, {"agent.py": AGENT})
    (tmp_path / "started").mkdir()
    (tmp_path / "hold").touch()
    env = clean_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "xdist.plugin", "-p",
                             "agent_eval.pytest_plugin", "-n", "2", "--agent-eval", str(cases),
                             "--agent-eval-concurrency", "3", "--agent-eval-output-dir", "out"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # Ctrl-C at a terminal signals the whole group
    try:
        deadline = time.monotonic() + 120
        while len(list((tmp_path / "started").iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # the fast cases' runs finish meanwhile
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    (tmp_path / "hold").unlink()
    assert proc.returncode == 2, out  # pytest's "interrupted"
    folder = tmp_path / "out"
    [report_path] = folder.glob("*.json")
    report = orjson.loads(report_path.read_bytes())
    run_id = report["run_id"]
    assert report["interrupted"] is True and report["exit_code"] == 130
    statuses = {c["id"]: c["status"] for c in report["cases"]}
    assert sorted(statuses) == sorted(r["id"] for r in rows), out
    assert set(statuses.values()) <= {"passed", "not_run"} and "not_run" in statuses.values()
    assert [p.name for p in folder.glob("*.jsonl")] == [f"{run_id}.jsonl"]  # one journal, no worker's left
    assert f"agent-eval run --resume {run_id}" in out
    played = [c for c, s in statuses.items() if s == "passed"]

    resumed = run_cli("run", "--resume", run_id, "--output-dir", folder, "--no-html", cwd=tmp_path)
    assert resumed.exit_code == 0, resumed.stdout + resumed.stderr
    final = orjson.loads(report_path.read_bytes())
    assert {c["id"]: c["status"] for c in final["cases"]} == {r["id"]: "passed" for r in rows}
    journal = [orjson.loads(line) for line in (folder / f"{run_id}.jsonl").read_bytes().splitlines()[1:]]
    assert sorted(line["case_id"] for line in journal) == sorted(r["id"] for r in rows)  # each played once
    assert all(line["case_id"] not in played for line in journal[len(played):])
