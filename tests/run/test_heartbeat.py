"""A long run is never silent: the heartbeat's line in a log (commands/heartbeat.py), driven by its own
clock, then by its thread at a short interval, then through `run` with the interval given as a value."""
from __future__ import annotations

import threading
import time

from agent_eval.commands.heartbeat import Heartbeat


def test_the_line_counts_runs_and_names_the_slowest_in_flight() -> None:
    now = [100.0]
    beat = Heartbeat(lambda line: None, total=40, done=10, clock=lambda: now[0])
    assert beat.line(now[0]) is None  # nothing in flight: nothing to say
    beat.run_started("refund-3", 1)
    now[0] = 110.0
    beat.run_started("lookup-1", 0)
    beat.run_started("cancel-2", 2)
    beat.run_finished("cancel-2", {"trial": 2, "status": "failed"})
    beat.run_finished("x", {"trial": 0, "status": "error"})
    beat.run_finished("y", {"trial": 0, "status": "passed"})
    assert beat.line(173.0) == ("progress: 13/40 runs done, 1 failed, 1 error, 2 in flight; slowest in flight: "
                                "refund-3 (trial 1) for 73.0s")


def test_the_thread_says_the_line_every_interval_until_the_command_ends() -> None:
    said: list[str] = []
    beat = Heartbeat(said.append, total=2, every_s=0.02)
    beat.run_started("slow", 0)
    beat.start()
    deadline = time.monotonic() + 5
    while len(said) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    beat.command_finished()
    count = len(said)
    assert count >= 3 and all(line.startswith("progress: 0/2 runs done") for line in said)
    time.sleep(0.1)
    assert len(said) == count  # stopped
    assert not any(t.name == "agent-eval-heartbeat" for t in threading.enumerate())


def test_run_in_a_log_says_progress_while_a_slow_run_is_in_flight(tmp_path, monkeypatch) -> None:
    from agent_eval.commands import heartbeat
    from tests.builders import clean_env, write_suite
    from tests.cli import run_cli

    monkeypatch.setattr(heartbeat, "EVERY_S", 0.05)
    agent = "import time\n\n\ndef agent(task):\n    time.sleep(0.6 if task.input == 'slow' else 0)\n    return 'ok'\n"
    cases = [{"id": "quick", "query": "quick", "expect": {"contains": "ok"}},
             {"id": "slow", "query": "slow", "expect": {"contains": "ok"}}]
    path = write_suite(tmp_path / "s", cases, {"agent": "a.py:agent"}, {"a.py": agent})
    done = run_cli("run", "--cases", str(path), "--output-dir", str(tmp_path / "out"), "--no-html",
                   "--concurrency", "1", cwd=tmp_path, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("progress: ")]
    assert lines and "progress: 1/2 runs done, 0 failed, 0 errors, 1 in flight; slowest in flight: slow (trial 0)" \
        in lines[-1]
