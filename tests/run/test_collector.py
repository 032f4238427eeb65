"""The command line holds garbage collection off while it starts (agent_eval/run/collector.py).

Each test is a fresh interpreter running the CLI as its process does (`main()` reading sys.argv): a
callback counts the full (generation 2) collections, which start-up would otherwise make several of.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders import ROOT, clean_env, write_suite
from tests.loopback import text

pytestmark = pytest.mark.e2e  # fresh interpreters

SCRIPT = '''
import gc, sys
full = []
gc.callbacks.append(lambda phase, info: full.append(1) if phase == "start" and info["generation"] == 2 else None)
from agent_eval.cli import main
sys.argv = ["agent-eval", *sys.argv[1:]]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code
print("RESULT", code, len(full), gc.isenabled(), gc.get_freeze_count() > 0)
'''


def cli_process(*args: str) -> list[str]:
    """`agent-eval ARGS...` as its own process: [exit code, full collections, collection on, anything frozen]."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, cwd=ROOT,
                          env=clean_env(OPENAI_API_KEY="k"), timeout=120)
    assert "RESULT" in done.stdout, done.stderr
    return done.stdout.rsplit("RESULT", 1)[1].split()


def test_a_one_case_run_makes_no_full_collection_and_ends_with_collection_on(loopback, tmp_path: Path) -> None:
    srv = loopback([text("done")])
    cases = write_suite(tmp_path, [{"id": "c1", "query": "hi", "expect": {"contains": "done"}}])
    result = cli_process("run", "--cases", str(cases), "--agent", "openai", "--model", "m", "--base-url",
                         srv.base_url, "--no-judge", "--no-html", "--quiet", "--output-dir", str(tmp_path / "out"))
    assert result == ["0", "0", "True", "False"]  # the runs' freeze undone when they ended
    assert srv.count == 1


def test_any_other_command_has_collection_back_on_when_its_work_begins() -> None:
    result = cli_process("validate", "--cases", str(ROOT / "cases" / "test_cases.json"))
    assert result == ["0", "0", "True", "True"]  # what the start-up made stays frozen


def test_a_library_thread_does_not_release_a_commands_hold_and_the_subreaper_flag_is_the_kernels() -> None:
    """The hold belongs to the command whose context made it: a thread of a library caller (which starts in
    a context of its own) neither sees nor releases it; the command's own release does, once. The reaper
    asks the kernel whether this process is a subreaper, before and after it becomes one."""
    script = '''
import gc, threading
from agent_eval.run import collector
from agent_eval.suite import reaper
collector.hold()
worker = threading.Thread(target=collector.release)
worker.start(); worker.join()
held_after_thread = not gc.isenabled()
collector.release()
on_after_release = gc.isenabled()
gc.disable(); collector.release()  # released already: a second release changes nothing
print("RESULT", held_after_thread, on_after_release, gc.isenabled(), reaper.is_subreaper(),
      reaper.become_subreaper(), reaper.is_subreaper())
'''
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=clean_env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-6:] == ["True", "True", "False", "False", "True", "True"]
